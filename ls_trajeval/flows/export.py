"""Label Studio annotations → ``trajectory_eval`` JSONL, one line per (trace, submitted annotation); or one line per
trace of gold labels (``--gold``: the adjudication, else the unanimous labels, else an aggregate), or a project's
predictions (``--predictions``: what a detector or judge said, for ``align``)."""
from __future__ import annotations

import pickle
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from ..analysis.gold import Adjudicator, build_gold, gold_line
from ..analysis.settings import AnalysisSettings, from_config
from ..analysis.trace_groups import group_by_trace, latest_per_annotator
from ..core.config import Config
from ..core.fields import review_mark
from ..core.jsonfiles import atomic_output
from ..core.layouts import layout_of
from ..core.records import (
    ANNOTATION_FIELDS,
    PREDICTION_FIELDS,
    TASK_FIELDS,
    AnnotationRecord,
    build_record,
    build_windowed_record,
    dumps,
    parse_record,
)
from ..core.trace import TraceError
from ..core.windows import Window, incomplete, window_of
from ..studio import client as studio
from .projects import project_config

#: what per_trace hands on: a record, or what a caller makes of a trace's tasks
T = TypeVar("T")


@dataclass
class ExportSummary:
    written: int = 0
    tasks: int = 0
    cancelled: int = 0  # skipped or cancelled annotations, left out
    drafts: int = 0  # unsubmitted drafts (the API key's user's), left out
    unreadable: int = 0  # annotations whose result could not be decoded, left out with a warning
    #: an annotator's (or model version's) work on a trace worked in windows that lacks a window, left out with a
    #: warning: its score would not be the trace's
    incomplete: int = 0
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def readable_record(task: dict, annotation: dict, config: Config, *, layout: str, users: dict,
                    summary: ExportSummary, annotator: str | None = None, what: str = "annotation",
                    model_version: str | None = None) -> dict | None:
    """The annotation's record, or None and a located warning when its result cannot be decoded (a result
    written through the API by another tool): it costs that one annotation, not the whole export. A prediction
    is read the same way (``what``), its ``annotator`` given. ``model_version`` is the project's (provenance)."""
    return _readable(lambda: build_record(task, annotation, config, layout=layout, users=users, annotator=annotator,
                                          prediction=what == "prediction", model_version=model_version),
                     f"task {task.get('id')} {what} {annotation.get('id')}", summary)


def readable_windows(parts: list[tuple[dict, dict]], config: Config, *, layout: str, users: dict,
                     summary: ExportSummary, annotator: str | None = None, what: str = "annotations",
                     model_version: str | None = None) -> dict | None:
    """The record of a trace worked in windows from each window's task and one author's annotation (or prediction,
    ``what``) of it (:func:`~ls_trajeval.core.records.build_windowed_record`), or None and a located warning when one
    cannot be decoded."""
    trace_id = (parts[0][0].get("data") or {}).get(config.id_key)
    return _readable(lambda: build_windowed_record(parts, config, layout=layout, users=users, annotator=annotator,
                                                   prediction=what == "predictions", model_version=model_version),
                     f"trace {trace_id!r} {what} {', '.join(str(a.get('id')) for _, a in parts)}", summary)


def _readable(build: Callable[[], tuple[dict, list[str]]], where: str, summary: ExportSummary) -> dict | None:
    try:
        record, warnings = build()
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        summary.unreadable += 1
        summary.warnings.append(f"{where}: left out, its result cannot be read ({type(exc).__name__}: "
                                f"{str(exc)[:200]})")
        return None
    summary.warnings.extend(warnings)
    return record


def author(annotation: dict) -> Any:
    """Who completed an annotation (their user id), as Label Studio gives it (an id or a user object)."""
    who = annotation.get("completed_by")
    return who.get("id") if isinstance(who, dict) else who


class _Windows:
    """The window tasks of traces worked in windows (:mod:`~ls_trajeval.core.windows`), held until each trace's
    are all read; they come one after another (imported together), so one trace's are held at a time."""

    def __init__(self, id_key: str):
        self.id_key = id_key
        self.held: dict[str, list[dict]] = {}

    def add(self, task: dict, window: Window) -> tuple[str, list[dict]] | None:
        """Hold ``task``; its trace id and window tasks, in window order, once the last of them came."""
        trace_id = str((task.get("data") or {}).get(self.id_key))
        group = self.held.setdefault(trace_id, [])
        group.append(task)
        return self.pop(trace_id) if len({_window(t).index for t in group}) >= window.count else None

    def pop(self, trace_id: str) -> tuple[str, list[dict]]:
        return trace_id, sorted(self.held.pop(trace_id), key=lambda t: (_window(t).index, t.get("id") or 0))

    def rest(self) -> Iterator[tuple[str, list[dict]]]:
        """The traces some of whose windows the project lacks."""
        for trace_id in list(self.held):
            yield self.pop(trace_id)


def _window(task: dict) -> Window:
    window = window_of(task.get("data") or {})
    assert window is not None  # only window tasks are held
    return window


def per_trace(tasks: Iterable[dict], id_key: str, whole: Callable[[dict], Iterable[T]],
              windowed: Callable[[str, list[dict]], Iterable[T]]) -> Iterator[T]:
    """Records (or what ``whole`` and ``windowed`` make of tasks) task by task: a whole trace's task's from
    ``whole``, a trace worked in windows' from ``windowed`` (its trace id and window tasks, in order) once its window
    tasks are all read, or at the end for one whose windows are not all there."""
    held = _Windows(id_key)
    for task in tasks:
        window = window_of(task.get("data") or {})
        if window is None:
            yield from whole(task)
        elif (done := held.add(task, window)) is not None:
            yield from windowed(*done)
    for rest in held.rest():
        yield from windowed(*rest)


def windowed_records(trace_id: str, tasks: list[dict], items: Callable[[dict], list[dict]],
                      author: Callable[[dict], Any],
                      build: Callable[[list[tuple[dict, dict]]], dict | None], summary: ExportSummary,
                      what: str) -> Iterator[dict]:
    """One trace's records from its window ``tasks`` (in window order): one per author (``author`` of an item) with
    an item (``items``: a task's annotations or predictions, in id order, the latest kept) in every window, built by
    ``build`` from the (task, item) pairs; a located warning for each author whose windows are not all there."""
    windows = [_window(t) for t in tasks]
    problem = incomplete(windows)
    done: dict[Any, dict[int, dict]] = {}
    for task, window in zip(tasks, windows):
        for item in items(task):
            done.setdefault(author(item), {})[window.index] = item
    where = f"trace {trace_id!r}"
    for who, by_window in done.items():
        missing = problem
        if missing is None and len(by_window) < len(tasks):
            missing = f"{len(tasks) - len(by_window)} of its {len(tasks)} windows not done"
        if missing is not None:
            summary.incomplete += 1
            summary.warnings.append(f"{where} (tasks {', '.join(str(t.get('id')) for t in tasks)}): the {what} of "
                                    f"{who} left out: {missing}")
            continue
        record = build([(t, by_window[w.index]) for t, w in zip(tasks, windows)])
        if record is not None:
            yield record


def read_back(record: dict, config: Config) -> AnnotationRecord | TraceError:
    """An export record as the analysis reads it (located by project and task)."""
    return parse_record(record, f"project {record.get('project_id')}", record.get("task_id") or 0,
                        scheme=config.trajectory.name, default_correctness=config.trajectory.correctness_default)


def iter_records(client, project_id: int, config: Config | None = None, page_size: int = studio.PAGE_SIZE,
                 summary: ExportSummary | None = None, on_task: Callable[[dict], None] | None = None) -> Iterator[dict]:
    """Export records of a project, task by task (paged), annotations in id order; ``config`` defaults to the
    project's own. ``on_task`` sees each task (its data) before its records come."""
    project = studio.get_project(client, project_id)
    return _records(client, project, project_config(project, config), page_size,
                    summary if summary is not None else ExportSummary(), on_task)


#: What the export asks Label Studio for: what the record is built from (the task's predictions for provenance), and
#: whether an annotation was skipped
EXPORT_FIELDS = (*TASK_FIELDS, "annotations", *ANNOTATION_FIELDS, *PREDICTION_FIELDS, "was_cancelled")


def submitted(task: dict) -> list[dict]:
    """A task's submitted annotations (not skipped or cancelled), in id order."""
    return [a for a in sorted(task.get("annotations") or [], key=lambda a: a.get("id") or 0)
            if not a.get("was_cancelled")]


def _records(client, project: dict, config: Config, page_size: int, summary: ExportSummary,
             on_task: Callable[[dict], None] | None = None) -> Iterator[dict]:
    layout = layout_of(project.get("label_config") or "")
    users = studio.users_by_id(client)
    version = project.get("model_version")

    def merged(trace_id: str, tasks: list[dict]) -> Iterator[dict]:
        def build(parts: list[tuple[dict, dict]]) -> dict | None:
            return readable_windows(parts, config, layout=layout, users=users, summary=summary, model_version=version)
        return windowed_records(trace_id, tasks, submitted, author, build, summary, "annotations")

    def tasks() -> Iterator[dict]:
        for task in studio.iter_tasks_with(client, project["id"], EXPORT_FIELDS, page_size=page_size):
            if on_task is not None:
                on_task(task)
            summary.tasks += 1
            summary.cancelled += sum(1 for a in task.get("annotations") or [] if a.get("was_cancelled"))
            yield task

    def one(task: dict) -> Iterator[dict]:
        for annotation in submitted(task):
            record = readable_record(task, annotation, config, layout=layout, users=users, summary=summary,
                                     model_version=version)
            if record is not None:
                yield record

    yield from per_trace(tasks(), config.id_key, one, merged)
    summary.drafts += studio.count_own_drafts(client, project["id"], page_size)


class _Spool:
    """Objects put aside in a temporary file under a key, with only each key's (offset, size) list in memory, and
    handed back grouped by key in the order the keys came."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile(prefix="ls-trajeval-export-")
        self.index: dict[Any, list[tuple[int, int]]] = {}
        self.size = 0

    def add(self, key: Any, obj: Any) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        self.file.write(data)
        self.index.setdefault(key, []).append((self.size, len(data)))
        self.size += len(data)

    def _load(self, offset: int, size: int) -> Any:
        self.file.seek(offset)
        return pickle.loads(self.file.read(size))

    def groups(self) -> Iterator[tuple[Any, list]]:
        for key, places in self.index.items():
            yield key, [self._load(*place) for place in places]

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> _Spool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9@._-]+", "_", text).strip("._") or "unknown"


def export_project(client, project_id: int, out: str | Path | None = None, config: Config | None = None, *,
                   per_annotator: bool = False, page_size: int = studio.PAGE_SIZE) -> ExportSummary:
    """Write the project's annotations to ``out`` (a file), or with ``per_annotator`` one file per annotator in
    the directory ``out``. ``config`` defaults to the project's own; ``out`` to the config's ``output.path``
    (plus ``annotations.jsonl`` for one file)."""
    summary = ExportSummary()
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    out = Path(out or (config.output_path if per_annotator else Path(config.output_path) / "annotations.jsonl"))
    paths: dict[str, Path] = {}
    # every file written beside its target and renamed at the end, all of them or (on an error) none
    with ExitStack() as files:
        writers: dict[str, IO[str]] = {}
        for record in _records(client, project, config, page_size, summary):
            key = _safe_name(record["annotator"] or f"user{record['annotator_id']}") if per_annotator else ""
            if key not in writers:
                paths[key] = out / f"{key}.jsonl" if per_annotator else out
                writers[key] = files.enter_context(atomic_output(paths[key], make_folder=True))
            writers[key].write(dumps(record))
            summary.written += 1
        if not per_annotator and "" not in writers:
            paths[""] = out
            files.enter_context(atomic_output(out, make_folder=True))  # an empty project still gives a (empty) file
    summary.files.extend(str(p) for p in paths.values())
    return summary


@dataclass
class GoldSummary:
    written: int = 0
    methods: dict[str, int] = field(default_factory=dict)  # adjudicated | unanimous | single | majority | ...
    review_projects: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _analysis_records(client, project: dict, config: Config, page_size: int, summary: ExportSummary,
                      warnings: list, on_task: Callable[[dict], None] | None = None) -> Iterator[AnnotationRecord]:
    for record in _records(client, project, config, page_size, summary, on_task):
        rec = read_back(record, config)
        if isinstance(rec, TraceError):
            warnings.append(f"left out: {rec}")
        else:
            yield rec


@dataclass
class ProjectGold:
    """A project's gold labels in memory: the config, the analysis settings, each trace's annotator records (latest
    per annotator, adjudications included) and its :class:`~ls_trajeval.analysis.gold.Gold`."""

    config: Config
    settings: AnalysisSettings
    groups: dict
    judged: list
    summary: GoldSummary


def _gold_groups(client, project: dict, config: Config, annotated: _Spool, gold: GoldSummary, *,
                 review: list[int] | None, page_size: int,
                 on_task: Callable[[dict], None] | None = None) -> Iterator[tuple[str, list[AnnotationRecord]]]:
    """Reads the project and its review projects (``gold.review_projects``), and returns each annotated trace's
    records (latest per annotator, then its adjudications) in the order the traces first came: the project's, then
    those only a review project has. The project's records wait in ``annotated``, a temporary file, so only one
    trace's are in memory at a time; the review projects' are held (they are few)."""
    exported = ExportSummary()
    for rec in _analysis_records(client, project, config, page_size, exported, gold.warnings, on_task):
        annotated.add(rec.trace_id, rec)
    reviews = [studio.get_project(client, r) for r in review] if review is not None else \
        studio.projects_described(client, review_mark(project["id"]))
    adjudications: dict[str, list[AnnotationRecord]] = {}
    for rp in reviews:
        gold.review_projects.append(rp["id"])
        adjudicated = _analysis_records(client, rp, project_config(rp, config), page_size, exported, gold.warnings)
        # the latest adjudication of a trace last: the gold takes it
        for tid, recs in group_by_trace(sorted(adjudicated, key=lambda r: r.annotation_id or 0)).items():
            adjudications.setdefault(tid, []).extend(recs)
    gold.warnings.extend(exported.warnings)

    def groups() -> Iterator[tuple[str, list[AnnotationRecord]]]:
        for tid, recs in annotated.groups():
            yield tid, latest_per_annotator(recs) + adjudications.pop(tid, [])
        yield from adjudications.items()
    return groups()


def project_gold(client, project_id: int, config: Config | None = None, *, method: str = "majority",
                 review: list[int] | None = None, page_size: int = studio.PAGE_SIZE,
                 on_task: Callable[[dict], None] | None = None) -> ProjectGold:
    """The gold labels of every annotated trace of the project (see :func:`export_gold`), without writing them and
    all in memory; ``on_task`` sees each task of the project."""
    gold = GoldSummary()
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    settings = from_config(config)
    with _Spool() as annotated:
        groups = dict(_gold_groups(client, project, config, annotated, gold, review=review, page_size=page_size,
                                   on_task=on_task))
    judged = build_gold(groups.items(), settings, method=method,
                        adjudicator=Adjudicator(project_ids=frozenset(gold.review_projects)))
    return ProjectGold(config, settings, groups, judged, gold)


def export_gold(client, project_id: int, out: str | Path | None = None, config: Config | None = None, *,
                method: str = "majority", review: list[int] | None = None,
                page_size: int = studio.PAGE_SIZE) -> GoldSummary:
    """One gold line per annotated trace of the project (see :mod:`ls_trajeval.analysis.gold`): the adjudicator's
    annotation from a review project where there is one, else the unanimous labels, else the ``method``'s
    aggregate. ``review`` lists the review projects; by default those ``ls-trajeval adjudicate`` made for this
    project (marked in their description). Traces are linked by trace id; each line points at its task here.

    The project's records wait in a temporary file, grouped by trace; the majority takes one trace at a time, so
    memory stays flat in the size of the project (Dawid-Skene fits over every trace at once: it holds them all)."""
    gold = GoldSummary()
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    settings = from_config(config)
    out = Path(out or Path(config.output_path) / "gold.jsonl")
    with _Spool() as annotated:
        groups = _gold_groups(client, project, config, annotated, gold, review=review, page_size=page_size)
        adjudicator = Adjudicator(project_ids=frozenset(gold.review_projects))
        if method == "majority":
            # trace by trace: the severity ranks it breaks ties with come from the config, the same for every trace
            judged: Iterable = (g for group in groups
                                for g in build_gold([group], settings, method=method, adjudicator=adjudicator))
        else:
            judged = build_gold(groups, settings, method=method, adjudicator=adjudicator)
        with atomic_output(out, make_folder=True) as writer:
            for g in judged:
                writer.write(dumps(gold_line(g, settings)))
                gold.written += 1
                gold.methods[g.method] = gold.methods.get(g.method, 0) + 1
    gold.files.append(str(out))
    return gold


def export_predictions(client, project_id: int, out: str | Path | None = None, config: Config | None = None, *,
                       model_version: str | None = None, page_size: int = studio.PAGE_SIZE) -> ExportSummary:
    """The project's predictions as trajectory_eval lines, their ``annotator`` the model version: per task the
    latest prediction of each model version (of ``model_version`` only, when given)."""
    summary = ExportSummary()
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    layout = layout_of(project.get("label_config") or "")
    out = Path(out or Path(config.output_path) / "predictions.jsonl")

    def latest(task: dict) -> list[dict]:
        by_version = {}
        for p in sorted(task.get("predictions") or [], key=lambda p: p.get("id") or 0):
            if model_version is None or p.get("model_version") == model_version:
                by_version[p.get("model_version")] = p
        return list(by_version.values())

    def name(p: dict) -> str:
        version = p.get("model_version")
        return str(version) if version else "prediction"

    def merged(trace_id: str, tasks: list[dict]) -> Iterator[dict]:
        def build(parts: list[tuple[dict, dict]]) -> dict | None:
            return readable_windows(parts, config, layout=layout, users={}, summary=summary,
                                    annotator=name(parts[0][1]), what="predictions")
        return windowed_records(trace_id, tasks, latest, name, build, summary, "predictions")

    def tasks() -> Iterator[dict]:
        for task in studio.iter_tasks_with(client, project_id, (*TASK_FIELDS, *ANNOTATION_FIELDS),
                                           page_size=page_size):
            summary.tasks += 1
            yield task

    def one(task: dict) -> Iterator[dict]:
        for p in latest(task):
            record = readable_record(task, p, config, layout=layout, users={}, summary=summary, annotator=name(p),
                                     what="prediction")
            if record is not None:
                yield record

    with atomic_output(out, make_folder=True) as writer:
        for record in per_trace(tasks(), config.id_key, one, merged):
            writer.write(dumps(record))
            summary.written += 1
    summary.files.append(str(out))
    return summary
