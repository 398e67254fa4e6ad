"""``ls-trajeval judge``: an LLM judge (:mod:`ls_trajeval.ml.llm_judge`) over a project's traces, its verdicts stored
as predictions of one model version (:mod:`.suggestions`), with each task's least confident verdict as a Data
Manager column.

Tasks are read page by page and judged concurrently; each verdict is stored as soon as it is back, so a run stopped
by its budget, an interruption or a refused key keeps everything paid for (and the cache keeps the answers).
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..core.config import Config
from ..core.errors import UserError
from ..core.labels import TraceLabels
from ..core.tasks import step_text
from ..core.trace import Trace, parse_trace
from ..ml.judge_cache import AnswerCache, default_path
from ..ml.llm_judge import JudgeInput, JudgeSettings, LLMJudge, Prompt, Verdict
from ..studio import client as studio
from .projects import project_config
from .suggestions import StoreCounts, SuggestionStore


@dataclass
class JudgeSummary:
    project_id: int
    model_version: str
    tasks: int = 0
    judged: int = 0
    #: traces answered wholly from the cache
    from_cache: int = 0
    stored: StoreCounts = field(default_factory=StoreCounts)
    requests: int = 0
    retries: int = 0
    invalid_answers: int = 0
    #: "trace (task N): why", for each trace the judge could not judge
    problems: list[str] = field(default_factory=list)
    #: tasks left unjudged when the budget stopped the run
    not_judged: int = 0
    stopped: bool = False
    usage: str = ""
    changes: list[str] = field(default_factory=list)
    cache: str | None = None


def default_model_version(model: str, template_text: str) -> str:
    """``llm-judge-<model>-<8 hex digits of the prompt template>``: another model or prompt is another judge."""
    return f"llm-judge-{model}-{hashlib.sha256(template_text.encode('utf-8')).hexdigest()[:8]}"


def _template(prompt_path: str | Path | None) -> tuple[str | None, str]:
    if prompt_path is None:
        return None, "judge_prompt.j2"
    try:
        return Path(prompt_path).read_text(encoding="utf-8"), str(prompt_path)
    except (OSError, UnicodeError) as exc:
        raise UserError(f"--prompt {prompt_path}: cannot read: {exc}") from None


def judge_project(client, project_id: int, settings: JudgeSettings, *, config: Config | None = None,
                  model_version: str | None = None, prompt_path: str | Path | None = None,
                  cache_path: str | Path | None = None, use_cache: bool = True, limit: int | None = None,
                  prelabel: bool = False, on_verdict: Callable[[Verdict], None] | None = None) -> JudgeSummary:
    """Judge the project's traces (the first ``limit`` tasks, in id order) and store the verdicts."""
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    template_text, source = _template(prompt_path)
    prompt = Prompt(config.trajectory, config.instructions, template_text, source)
    if model_version is None:
        model_version = default_model_version(settings.model, prompt.text)
    summary = JudgeSummary(project_id, model_version)
    cache = AnswerCache(cache_path or default_path()) if use_cache else None
    summary.cache = str(cache.path) if cache is not None else None
    judge = LLMJudge(settings, config.trajectory, prompt, cache)
    store = SuggestionStore(client, project_id, config, project.get("label_config") or "", model_version)
    waiting: dict[str, tuple[dict, str]] = {}  # key -> (task, trace id), while its trace is being judged

    def inputs() -> Iterator[JudgeInput]:
        for task in studio.iter_tasks(client, project_id, page_size=50):
            if limit is not None and summary.tasks >= limit:
                return
            summary.tasks += 1
            data = task.get("data") or {}
            trace = parse_trace(data, source=f"task {task['id']}", id_key=config.id_key, text_key=config.text_key,
                                trace_key=config.trace_key)
            if not isinstance(trace, Trace):
                summary.problems.append(f"task {task['id']}: its trace cannot be read: {trace}")
                continue
            key = str(task["id"])
            waiting[key] = (task, trace.trace_id)
            yield JudgeInput(key, trace.task or "", tuple((s.type or "", step_text(s)) for s in trace.steps))

    try:
        for verdict in judge.run(inputs()):
            task, trace_id = waiting.pop(verdict.key)
            summary.requests += verdict.requests
            summary.retries += verdict.retries
            summary.invalid_answers += verdict.invalid
            if verdict.steps is None:
                summary.problems.append(f"{trace_id} (task {task['id']}): {verdict.problem}")
            else:
                summary.judged += 1
                summary.from_cache += int(verdict.windows == verdict.cached)
                labels = TraceLabels(verdict.steps)
                store.put(task, labels)
            if on_verdict is not None:
                on_verdict(verdict)
        summary.stopped = judge.stopped
        if judge.stopped:
            total = int(project.get("task_number") or summary.tasks)
            summary.not_judged = min(total, limit if limit is not None else total) - summary.judged \
                - len(summary.problems)
        summary.changes = store.finish(prelabel)
    finally:
        summary.stored = store.counts
        summary.usage = judge.budget.describe()
        judge.close()
        if cache is not None:
            cache.close()
    return summary


def describe(summary: JudgeSummary) -> list[str]:
    """The summary as lines for people: what was judged and stored, what it cost, what was rejected."""
    lines = [f"project {summary.project_id}: judged {summary.judged} of {summary.tasks} traces "
             f"({summary.from_cache} from the cache) as {summary.model_version!r}: {summary.stored.describe()}",
             f"{summary.requests} requests ({summary.retries} retried: 429, 5xx, timeouts and invalid answers; "
             f"{summary.invalid_answers} invalid answers), {summary.usage}"]
    lines += summary.changes
    if summary.stopped:
        lines.append(f"stopped at the budget: {summary.not_judged} traces not judged. Run again with a larger "
                     f"budget to go on: traces judged already cost nothing (the cache: {summary.cache})")
    return lines
