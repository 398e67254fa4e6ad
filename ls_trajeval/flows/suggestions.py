"""Storing a judge's suggestions in a project: one prediction per task and model version, and the task fields that
say what the task's suggestions are least sure of (the review queue's Data Manager column) and, where annotators start
from a blank trace, what the workbench shows beside each step; and choosing between the two (``judge show``).

Used by ``judge`` (an LLM judge's verdicts) and ``judge merge`` (several judges as one). Storing again under the
same model version updates that prediction in place (or leaves it when nothing changed), so a rerun never adds a
second one; older duplicates of the version on a task are removed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from ..core import labelconfig, results
from ..core.config import Config
from ..core.fields import LEAST_CONFIDENCE, N_STEPS, NUMBER_FIELDS, SUGGESTED, SUGGESTIONS_BY
from ..core.labelconfig import shows_suggestions
from ..core.labels import TraceLabels
from ..core.layouts import layout_of
from ..core.suggestions import beside, suggestion_fields
from ..studio import client as studio
from .prelabels import as_prediction
from .projects import project_config

#: the Data Manager tab that orders a project's tasks by their least confident suggestion, least first
REVIEW_TAB = "Least confident first"


@dataclass
class StoreCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def describe(self) -> str:
        return f"{self.created} predictions created, {self.updated} updated, {self.unchanged} unchanged"


class SuggestionStore:
    """Writes suggestions of one model version into a project's tasks (as Label Studio lists them, predictions
    included)."""

    def __init__(self, client, project_id: int, config: Config, label_config: str, model_version: str):
        self.client, self.project_id, self.config = client, project_id, config
        self.layout, self.suggested = layout_of(label_config), shows_suggestions(label_config, config)
        self.model_version = model_version
        self.counts = StoreCounts()

    def _same(self, stored: dict, new: dict, n_steps: int) -> bool:
        if stored.get("score") != new["score"]:
            return False
        old, now = (results.decode(p.get("result") or [], self.config, n_steps, prediction=True)
                    for p in (stored, new))
        return old.steps == now.steps and old.whole_trace == now.whole_trace

    def put(self, task: dict, labels: TraceLabels) -> str:
        """Store ``labels`` as the task's prediction of this model version, and the task fields that describe them
        (from every label: an LLM judge's confidence that a step is correct counts, though the transcript layout's
        prediction keeps only the marks). Returns ``created``, ``updated`` or ``unchanged``."""
        data = task.get("data") or {}
        prediction = as_prediction(labels, self.model_version, self.config, self.layout, data, self.suggested)
        mine = sorted((p for p in task.get("predictions") or [] if p.get("model_version") == self.model_version),
                      key=lambda p: p.get("id") or 0)
        for older in mine[:-1]:
            studio.delete_prediction(self.client, older["id"])
        if not mine:
            studio.create_prediction(self.client, task["id"], prediction)
            outcome = "created"
        elif self._same(mine[-1], prediction, data[N_STEPS]):
            outcome = "unchanged"
        else:
            studio.update_prediction(self.client, mine[-1]["id"], prediction)
            outcome = "updated"
        setattr(self.counts, outcome, getattr(self.counts, outcome) + 1)
        fields = suggestion_fields(labels, self.config.trajectory, self.model_version)
        if not self.config.suggestions.prelabel:  # annotators start from a blank trace, these beside its steps
            fields[SUGGESTED] = beside(labels, self.config, self.model_version)
        if any(data.get(k) != v for k, v in fields.items()):
            # read afresh and merged: the ML backend may have written the task's scores since it was listed
            studio.update_task_data(self.client, task["id"], fields)
        return outcome

    def finish(self, prelabel: bool = False) -> list[str]:
        """The review tab (made once), and with ``prelabel`` this model version made the project's, so that Label
        Studio fills new annotations from these suggestions; what changed."""
        changes = []
        if studio.find_tab(self.client, self.project_id, REVIEW_TAB) is None:
            studio.ensure_tab(self.client, self.project_id, REVIEW_TAB, ordering=[f"tasks:data.{LEAST_CONFIDENCE}"],
                              numbers=NUMBER_FIELDS)
            changes.append(f"added the Data Manager tab {REVIEW_TAB!r} (ordered by {LEAST_CONFIDENCE})")
        if prelabel:
            changes += studio.set_prelabel(self.client, self.project_id, True, self.model_version)
        return changes


@dataclass
class ShowSummary:
    project_id: int
    prelabel: bool
    model_version: str | None = None
    config_changed: bool = False
    #: tasks whose suggestions beside the steps were written (``beside``)
    written: int = 0
    changes: list[str] = field(default_factory=list)

    def describe(self) -> list[str]:
        how = (f"start from the suggestions of {self.model_version!r}" if self.prelabel else
               f"start from a blank trace, the suggestions beside each step ({self.written} tasks written)")
        return [f"project {self.project_id}: annotators {how}", *self.changes]


def _shown_version(task: dict, model_version: str | None) -> dict | None:
    """The prediction a task's suggestions are shown from: the latest of ``model_version``, else of the version its
    ``suggestions_by`` names (the judge last stored), else its latest."""
    predictions = sorted(task.get("predictions") or [], key=lambda p: p.get("id") or 0)
    for version in (model_version, (task.get("data") or {}).get(SUGGESTIONS_BY)):
        mine = [p for p in predictions if version and p.get("model_version") == version]
        if mine:
            return mine[-1]
    return None if model_version else (predictions[-1] if predictions else None)


def show_suggestions(client, project_id: int, *, prelabel: bool, model_version: str | None = None,
                     config: Config | None = None) -> ShowSummary:
    """Whether the project's annotators start from the suggestions (``prelabel``: Label Studio's "use predictions to
    prelabel tasks", from ``model_version``'s, by default the version the tasks' ``suggestions_by`` names most) or
    from a blank trace with the suggestions beside each step (written into each task from its prediction first, then
    the label config that shows them). Idempotent."""
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    config = replace(config, suggestions=replace(config.suggestions, prelabel=prelabel))
    summary = ShowSummary(project_id, prelabel)
    versions: Counter = Counter()
    for task in studio.iter_tasks(client, project_id, page_size=50):
        data = task.get("data") or {}
        if isinstance(data.get(SUGGESTIONS_BY), str):
            versions[data[SUGGESTIONS_BY]] += 1
        if prelabel:
            continue
        prediction = _shown_version(task, model_version)
        labels = results.decode(prediction.get("result") or [], config, data[N_STEPS], prediction=True) \
            if prediction else TraceLabels([])
        shown = beside(labels, config, str((prediction or {}).get("model_version") or ""))
        if data.get(SUGGESTED) != shown:
            studio.update_task_data(client, task["id"], {SUGGESTED: shown})
            summary.written += 1
    xml = labelconfig.generate(config, layout_of(project.get("label_config") or ""))
    if (project.get("label_config") or "").strip() != xml.strip():
        studio.validate_label_config(client, project_id, xml)
        studio.set_label_config(client, project_id, xml)
        summary.config_changed = True
        how = "prelabel: true" if prelabel else "prelabel: false, shown beside each step"
        summary.changes.append(f"label config regenerated (suggestions.{how})")
    summary.model_version = model_version or (versions.most_common(1)[0][0] if versions else None)
    summary.changes += studio.set_prelabel(client, project_id, prelabel, summary.model_version)
    return summary
