"""``ls-trajeval judge merge``: several judges' predictions on a project (the rule detectors', imported label files',
LLM judges') merged into one prediction per task (:func:`ls_trajeval.core.suggestions.merge`): per step the more
confident suggestion, each region naming its judge."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core import results
from ..core.config import Config
from ..core.fields import n_steps
from ..core.suggestions import merge
from ..studio import client as studio
from .projects import project_config
from .suggestions import StoreCounts, SuggestionStore

DEFAULT_VERSION = "merged"


@dataclass
class MergeSummary:
    project_id: int
    model_version: str
    tasks: int = 0
    merged: int = 0
    #: tasks with no prediction of any judge merged
    without: int = 0
    #: model version -> tasks it had a prediction on (those merged)
    judges: Counter = field(default_factory=Counter)
    stored: StoreCounts = field(default_factory=StoreCounts)
    warnings: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)


def merge_project(client, project_id: int, *, versions: Sequence[str] | None = None,
                  model_version: str = DEFAULT_VERSION, default_confidence: Mapping[str, float] | None = None,
                  config: Config | None = None, prelabel: bool = False) -> MergeSummary:
    """Merge, per task, the latest prediction of each model version in ``versions`` (in that order of preference;
    by default every version the task has but ``model_version``, alphabetically) into one prediction of
    ``model_version``."""
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    summary = MergeSummary(project_id, model_version)
    store = SuggestionStore(client, project_id, config, project.get("label_config") or "", model_version)
    for task in studio.iter_tasks(client, project_id, page_size=50):
        summary.tasks += 1
        latest: dict[str, dict] = {}
        for p in sorted(task.get("predictions") or [], key=lambda p: p.get("id") or 0):
            version = p.get("model_version")
            if isinstance(version, str) and version != model_version:
                latest[version] = p
        chosen = [v for v in (versions if versions is not None else sorted(latest)) if v in latest]
        if not chosen:
            summary.without += 1
            continue
        n = n_steps(task.get("data") or {})
        judges = []
        for version in chosen:
            decoded = results.decode(latest[version].get("result") or [], config, n, prediction=True)
            summary.warnings.extend(f"task {task['id']} prediction {latest[version].get('id')} ({version}): {w}"
                                    for w in decoded.warnings)
            judges.append((version, decoded))
            summary.judges[version] += 1
        store.put(task, merge(judges, n, config.trajectory, default_confidence))
        summary.merged += 1
    summary.stored = store.counts
    summary.changes = store.finish(prelabel)
    return summary


def describe(summary: MergeSummary) -> list[str]:
    judges = ", ".join(f"{v} ({n} tasks)" for v, n in sorted(summary.judges.items()))
    return [f"project {summary.project_id}: merged {summary.merged} of {summary.tasks} tasks into "
            f"{summary.model_version!r} from {judges or 'no judge'}: {summary.stored.describe()}"
            + (f"; {summary.without} tasks have no prediction to merge" if summary.without else ""),
            *summary.changes]
