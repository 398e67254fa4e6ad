"""``ls-trajeval adjudicate``: the traces whose annotators disagree, put in front of an adjudicator in Label Studio.

The disagreement finder (:mod:`ls_trajeval.analysis.disagreement`) reads every trace of the project that two or
more annotators labelled (each annotator's latest submitted annotation). Each disputed trace becomes a task of a
review project in the same layout and config: the trace as it was, each annotator's labels as a prediction whose
``model_version`` is the annotator (Label Studio shows them as tabs, and side by side in its compare view), and the
dispute's summary in the task data (:data:`ls_trajeval.core.fields.DISPUTE_FIELDS`: Data Manager columns; a tab
"Most disputed" sorts by ``disputedness``). Tasks are added most disputed first, so the label stream follows that
order too.

A rerun changes only what changed: a trace already in the review project (found by its trace id in the task's
meta) gets its summary and its predictions updated (one per annotator, replaced only when the labels differ), a
newly disputed trace is added, and a trace no longer disputed keeps its task (it may hold an adjudication) with
its summary brought up to date. The adjudicator's annotations are what ``export --gold`` takes.
"""
from __future__ import annotations

from collections.abc import Iterator, Set
from dataclasses import dataclass, field

from ..analysis.disagreement import Thresholds, TraceDisagreement, find_disagreements
from ..analysis.settings import from_config
from ..analysis.trace_groups import latest_per_annotator
from ..core import records, results
from ..core.config import Config
from ..core.errors import UserError
from ..core.fields import (
    DISPUTE_FIELDS,
    HEADER,
    META_SOURCE,
    META_TRACE_ID,
    META_WINDOW,
    NUMBER_FIELDS,
    initial_scores,
    n_steps,
    review_mark,
)
from ..core.labelconfig import from_label_config
from ..core.labels import TraceLabels
from ..core.layouts import layout_of
from ..core.scoring import share_kept
from ..core.trace import TraceError
from ..core.windows import labels_in, window_of
from ..studio import client as studio
from .export import (
    ExportSummary,
    author,
    per_trace,
    readable_record,
    readable_windows,
    submitted,
    windowed_records,
)
from .prelabels import as_prediction
from .projects import project_config

#: the review project's Data Manager tab, most disputed first
VIEW_TITLE = "Most disputed"
VIEW_ORDERING = ["-tasks:data.disputedness"]


@dataclass
class AdjudicationSummary:
    project_id: int
    review_project_id: int = 0
    #: the review project's "Most disputed" tab
    tab_id: int = 0
    created: bool = False
    compared: int = 0  # traces with two or more annotators
    disputed: int = 0
    tasks_added: int = 0
    tasks_updated: int = 0  # review tasks whose summary changed
    predictions_added: int = 0
    predictions_updated: int = 0
    #: traces the review project holds that are no longer disputed
    settled: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: the disputed traces, most disputed first
    disputes: list[TraceDisagreement] = field(default_factory=list)


@dataclass
class _Trace:
    #: the trace's task, or its window tasks in order (a trace worked in windows: each becomes a review task)
    tasks: list[dict]
    dispute: TraceDisagreement
    labels: dict  # annotator -> TraceLabels of the whole trace


def find_disputes(client, project: dict, config: Config, thresholds: Thresholds, summary: AdjudicationSummary,
                  held: Set[str] = frozenset(), page_size: int = 100) -> dict[str, _Trace]:
    """trace id -> the task, its disagreement and each annotator's labels, for every trace of ``project`` that two
    or more annotators labelled and that is disputed or in ``held`` (the others are counted in
    ``summary.compared`` and dropped: a large project's traces are not all held in memory)."""
    settings = from_config(config)
    layout = layout_of(project.get("label_config") or "")
    users = studio.users_by_id(client)
    found: dict[str, _Trace] = {}
    seen: dict[str, int] = {}  # trace id -> its task
    export = ExportSummary()

    def parsed(line: dict, task_id: int) -> records.AnnotationRecord | None:
        rec = records.parse_record(line, f"project {project['id']}", task_id, scheme=settings.scheme,
                                   default_correctness=settings.correct_labels[0])
        if isinstance(rec, TraceError):
            summary.warnings.append(f"task {task_id}: left out: {rec}")
            return None
        return rec

    def whole(task: dict) -> Iterator[tuple[list[dict], list, dict]]:
        recs, labels = [], {}
        n = n_steps(task.get("data") or {})
        for annotation in submitted(task):
            line = readable_record(task, annotation, config, layout=layout, users=users, summary=export)
            rec = None if line is None else parsed(line, task["id"])
            if rec is not None:
                recs.append(rec)
                labels[rec.annotator] = results.decode(annotation.get("result") or [], config, n)
        yield [task], recs, labels

    def merged(trace_id: str, tasks: list[dict]) -> Iterator[tuple[list[dict], list, dict]]:
        def build(parts: list[tuple[dict, dict]]) -> dict | None:
            return readable_windows(parts, config, layout=layout, users=users, summary=export)
        recs, labels = [], {}
        for line in windowed_records(trace_id, tasks, submitted, author, build, export, "annotations"):
            rec = parsed(line, tasks[0]["id"])
            if rec is not None:
                recs.append(rec)
                labels[rec.annotator] = TraceLabels(rec.steps, rec.labels)
        yield tasks, recs, labels

    annotated = studio.iter_tasks(client, project["id"], only_annotated=True, page_size=page_size)
    for tasks, recs, labels in per_trace(annotated, config.id_key, whole, merged):
        recs = latest_per_annotator(recs)
        if len(recs) < 2:
            continue
        tid = recs[0].trace_id
        if tid in seen:
            summary.warnings.append(f"task {tasks[0]['id']}: trace {tid!r} is also task {seen[tid]}; only that one is "
                                    f"compared")
            continue
        seen[tid] = tasks[0]["id"]
        dispute = find_disagreements(recs, settings, thresholds)
        if dispute.disputed or tid in held:
            found[tid] = _Trace(tasks, dispute, {r.annotator: labels[r.annotator] for r in recs})
    summary.compared = len(seen)
    summary.warnings.extend(export.warnings)
    return found


def review_project(client, source: dict, config: Config, layout: str, *, create_title: str | None,
                   into: int | None, summary: AdjudicationSummary) -> dict:
    """The review project: ``into``, or the one called ``create_title`` (made when there is none), checked to have
    the source's layout and taxonomy, marked as its review project."""
    title = create_title or ""  # one of the two is given (adjudicate checks)
    project = studio.get_project(client, into) if into else studio.find_project(client, title)
    if project is None:
        project = studio.create_project(client, config, layout, title)
        summary.created = True
    elif project["id"] == source["id"]:
        raise UserError(f"project {project['id']} is the project to adjudicate; the review needs a project of its own")
    else:
        theirs = from_label_config(project.get("label_config") or "", source=f"project {project['id']}")
        if layout_of(project.get("label_config") or "") != layout or theirs is None \
                or theirs.trajectory != config.trajectory:
            raise UserError(f"project {project['id']} ({project.get('title')!r}) does not have project "
                            f"{source['id']}'s {layout} layout and taxonomy: give another --into, or --create")
    mark = review_mark(source["id"])
    description = project.get("description") or ""
    if mark not in description.splitlines():
        # predictions shown: the annotators' labels are what the adjudicator compares
        studio.update_project(client, project["id"], description="\n".join(x for x in (description, mark) if x),
                              show_collab_predictions=True)
    return project


def _prediction(labels: TraceLabels, annotator: str, config: Config, layout: str, task_data: dict) -> dict:
    """An annotator's labels as a prediction named after them (a tab of the review task), its score the share of
    the running score they keep, which Label Studio shows as a percentage ("95.00%" for 95 of 100)."""
    prediction = as_prediction(labels, annotator, config, layout, task_data)
    return {**prediction, "score": round(share_kept(prediction["score"], config.trajectory), 4)}


def _labels_of(labels: TraceLabels, data: dict) -> TraceLabels:
    """A trace's labels as a task of it holds them: all of them, or a window task's steps'."""
    window = window_of(data)
    return labels if window is None else labels_in(labels, window)


def _same(a: TraceLabels, b: TraceLabels) -> bool:
    def key(t: TraceLabels):
        return ([(s.correctness, s.error_category, s.error_type, s.severity, s.rationale) for s in t.steps],
                {k: v for k, v in t.whole_trace.items() if v is not None})
    return key(a) == key(b)


def adjudicate(client, project_id: int, *, create_title: str | None = None, into: int | None = None,
               thresholds: Thresholds | None = None, config: Config | None = None,
               page_size: int = 100) -> AdjudicationSummary:
    """Find the disputed traces of project ``project_id`` and create or update the review project (see the module
    docstring). ``config`` defaults to the project's own."""
    if bool(create_title) == bool(into):
        raise UserError("give either --create TITLE or --into PROJECT")
    thresholds = thresholds or Thresholds()
    summary = AdjudicationSummary(project_id)
    source = studio.get_project(client, project_id)
    config = project_config(source, config)
    layout = layout_of(source.get("label_config") or "")
    project = review_project(client, source, config, layout, create_title=create_title, into=into, summary=summary)
    summary.review_project_id = pid = project["id"]
    held: dict[str, list[dict]] = {}  # trace id -> its review task, or its window tasks
    if not summary.created:
        for task in studio.iter_tasks(client, pid, page_size=page_size):
            tid = (task.get("meta") or {}).get(META_TRACE_ID) or (task.get("data") or {}).get(config.id_key)
            if tid is not None:
                held.setdefault(str(tid), []).append(task)
    traces = find_disputes(client, source, config, thresholds, summary, set(held), page_size)
    disputed = sorted((t for t in traces.values() if t.dispute.disputed),
                      key=lambda t: (-t.dispute.score, -len(t.dispute.steps), t.dispute.trace_id))
    summary.disputed = len(disputed)
    summary.disputes = [t.dispute for t in disputed]
    new = []
    for t in disputed:
        tid = t.dispute.trace_id
        if tid in held:
            for task in held[tid]:
                _update(client, task, t, config, layout, summary)
            continue
        for source_task in t.tasks:  # a trace worked in windows is reviewed in the same windows
            # HEADER: a task imported before the header existed has none, and Label Studio refuses a task without it
            data = {HEADER: "", **(source_task.get("data") or {}),
                    **initial_scores(config, n_steps(source_task.get("data") or {})), **t.dispute.summary()}
            meta: dict = {META_TRACE_ID: tid, META_SOURCE: {"project": project_id, "task": source_task["id"]}}
            window = window_of(data)
            if window is not None:
                meta[META_WINDOW] = window.index
            new.append({"data": data, "meta": meta,
                        "predictions": [_prediction(_labels_of(labels, data), who, config, layout, data)
                                        for who, labels in t.labels.items()]})
    for tid, tasks in held.items():
        settled = traces.get(tid)
        if settled is not None and not settled.dispute.disputed:
            summary.settled.append(tid)
            for task in tasks:
                _update(client, task, settled, config, layout, summary)

    refused: list[dict] = []

    def refuse(r: studio.Rejected) -> None:
        refused.append(r.task)
        summary.warnings.append(f"Label Studio refused trace {r.task['meta'][META_TRACE_ID]!r}: {r.message}")

    for start in range(0, len(new), page_size):
        batch = new[start:start + page_size]
        summary.tasks_added += studio.import_batch(client, pid, batch, on_rejected=refuse)
        summary.predictions_added += sum(len(t["predictions"]) for t in batch if not any(t is r for r in refused))
    # made once the tasks are there, so that it hides their data columns as Label Studio's own first tab would,
    # but for the dispute summary: beside the open task, what the adjudicator is to settle
    summary.tab_id = studio.ensure_tab(client, pid, VIEW_TITLE, ordering=VIEW_ORDERING, numbers=NUMBER_FIELDS,
                                       beside_task=DISPUTE_FIELDS)["id"]
    studio.number_columns(client, pid, NUMBER_FIELDS)
    return summary


def _update(client, task: dict, t: _Trace, config: Config, layout: str, summary: AdjudicationSummary) -> None:
    """A held review task: its summary fields and one prediction per annotator, changed only where they differ."""
    data = task.get("data") or {}
    fields = t.dispute.summary()
    if any(data.get(k) != fields[k] for k in DISPUTE_FIELDS):
        studio.update_task_data(client, task["id"], fields, data=data)
        summary.tasks_updated += 1
    by_version = {}
    for p in sorted(task.get("predictions") or [], key=lambda p: p.get("id") or 0):
        by_version[p.get("model_version")] = p
    n = n_steps(data)
    for who, whole in t.labels.items():
        labels = _labels_of(whole, data)
        old = by_version.get(who)
        prediction = _prediction(labels, who, config, layout, data)
        if old is not None and old.get("score") == prediction["score"] \
                and _same(results.decode(old.get("result") or [], config, n), labels):
            continue
        if old is None:
            studio.create_prediction(client, task["id"], prediction)
            summary.predictions_added += 1
        else:
            studio.update_prediction(client, old["id"], prediction)
            summary.predictions_updated += 1
