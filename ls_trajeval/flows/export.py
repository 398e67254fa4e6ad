"""Label Studio annotations → ``trajectory_eval`` JSONL, one line per (trace, submitted annotation); or one line per
trace of gold labels (``--gold``: the adjudication, else the unanimous labels, else an aggregate), or a project's
predictions (``--predictions``: what a detector or judge said, for ``align``)."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..analysis.gold import Adjudicator, build_gold, gold_line
from ..analysis.settings import AnalysisSettings, from_config
from ..analysis.trace_groups import group_by_trace
from ..core.config import Config
from ..core.fields import review_mark
from ..core.jsonfiles import atomic_output
from ..core.layouts import layout_of
from ..core.records import AnnotationRecord, build_record, dumps, parse_record
from ..core.trace import TraceError
from ..studio import client as studio
from .projects import project_config


@dataclass
class ExportSummary:
    written: int = 0
    tasks: int = 0
    cancelled: int = 0  # skipped or cancelled annotations, left out
    drafts: int = 0  # unsubmitted drafts, left out
    unreadable: int = 0  # annotations whose result could not be decoded, left out with a warning
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def readable_record(task: dict, annotation: dict, config: Config, *, layout: str, users: dict,
                    summary: ExportSummary, annotator: str | None = None, what: str = "annotation",
                    model_version: str | None = None) -> dict | None:
    """The annotation's record, or None and a located warning when its result cannot be decoded (a result
    written through the API by another tool): it costs that one annotation, not the whole export. A prediction
    is read the same way (``what``), its ``annotator`` given. ``model_version`` is the project's (provenance)."""
    try:
        record, warnings = build_record(task, annotation, config, layout=layout, users=users, annotator=annotator,
                                        prediction=what == "prediction", model_version=model_version)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        summary.unreadable += 1
        summary.warnings.append(f"task {task.get('id')} {what} {annotation.get('id')}: left out, its result "
                                f"cannot be read ({type(exc).__name__}: {str(exc)[:200]})")
        return None
    summary.warnings.extend(warnings)
    return record


def read_back(record: dict, config: Config) -> AnnotationRecord | TraceError:
    """An export record as the analysis reads it (located by project and task)."""
    return parse_record(record, f"project {record.get('project_id')}", record.get("task_id") or 0,
                        scheme=config.trajectory.name, default_correctness=config.trajectory.correctness_default)


def iter_records(client, project_id: int, config: Config | None = None, page_size: int = 100,
                 summary: ExportSummary | None = None, on_task: Callable[[dict], None] | None = None) -> Iterator[dict]:
    """Export records of a project, task by task (paged), annotations in id order; ``config`` defaults to the
    project's own. ``on_task`` sees each task (its data) before its records come."""
    project = studio.get_project(client, project_id)
    return _records(client, project, project_config(project, config), page_size,
                    summary if summary is not None else ExportSummary(), on_task)


def _records(client, project: dict, config: Config, page_size: int, summary: ExportSummary,
             on_task: Callable[[dict], None] | None = None) -> Iterator[dict]:
    layout = layout_of(project.get("label_config") or "")
    users = studio.users_by_id(client)
    for task in studio.iter_tasks(client, project["id"], only_annotated=False, page_size=page_size):
        if on_task is not None:
            on_task(task)
        summary.tasks += 1
        summary.drafts += len(task.get("drafts") or [])
        for annotation in sorted(task.get("annotations") or [], key=lambda a: a.get("id") or 0):
            if annotation.get("was_cancelled"):
                summary.cancelled += 1
                continue
            record = readable_record(task, annotation, config, layout=layout, users=users, summary=summary,
                                     model_version=project.get("model_version"))
            if record is not None:
                yield record


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9@._-]+", "_", text).strip("._") or "unknown"


def export_project(client, project_id: int, out: str | Path | None = None, config: Config | None = None, *,
                   per_annotator: bool = False, page_size: int = 100) -> ExportSummary:
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
                      warnings: list, on_task: Callable[[dict], None] | None = None) -> list[AnnotationRecord]:
    out = []
    for record in _records(client, project, config, page_size, summary, on_task):
        rec = read_back(record, config)
        if isinstance(rec, TraceError):
            warnings.append(f"left out: {rec}")
        else:
            out.append(rec)
    return out


@dataclass
class ProjectGold:
    """A project's gold labels in memory: the config, the analysis settings, each trace's annotator records (latest
    per annotator, adjudications included) and its :class:`~ls_trajeval.analysis.gold.Gold`."""

    config: Config
    settings: AnalysisSettings
    groups: dict
    judged: list
    summary: GoldSummary


def project_gold(client, project_id: int, config: Config | None = None, *, method: str = "majority",
                 review: list[int] | None = None, page_size: int = 100,
                 on_task: Callable[[dict], None] | None = None) -> ProjectGold:
    """The gold labels of every annotated trace of the project (see :func:`export_gold`), without writing them;
    ``on_task`` sees each task of the project."""
    gold = GoldSummary()
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    settings = from_config(config)
    exported = ExportSummary()
    groups = group_by_trace(_analysis_records(client, project, config, page_size, exported, gold.warnings, on_task))
    reviews = [studio.get_project(client, r) for r in review] if review is not None else \
        studio.projects_described(client, review_mark(project_id))
    for rp in reviews:
        gold.review_projects.append(rp["id"])
        adjudicated = _analysis_records(client, rp, project_config(rp, config), page_size, exported, gold.warnings)
        # the latest adjudication of a trace last: the gold takes it
        for tid, recs in group_by_trace(sorted(adjudicated, key=lambda r: r.annotation_id or 0)).items():
            groups.setdefault(tid, []).extend(recs)
    gold.warnings.extend(exported.warnings)
    judged = build_gold(groups.items(), settings, method=method,
                        adjudicator=Adjudicator(project_ids=frozenset(gold.review_projects)))
    return ProjectGold(config, settings, groups, judged, gold)


def export_gold(client, project_id: int, out: str | Path | None = None, config: Config | None = None, *,
                method: str = "majority", review: list[int] | None = None, page_size: int = 100) -> GoldSummary:
    """One gold line per annotated trace of the project (see :mod:`ls_trajeval.analysis.gold`): the adjudicator's
    annotation from a review project where there is one, else the unanimous labels, else the ``method``'s
    aggregate. ``review`` lists the review projects; by default those ``ls-trajeval adjudicate`` made for this
    project (marked in their description). Traces are linked by trace id; each line points at its task here."""
    found = project_gold(client, project_id, config, method=method, review=review, page_size=page_size)
    gold = found.summary
    out = Path(out or Path(found.config.output_path) / "gold.jsonl")
    with atomic_output(out, make_folder=True) as writer:
        for g in found.judged:
            writer.write(dumps(gold_line(g, found.settings)))
            gold.written += 1
            gold.methods[g.method] = gold.methods.get(g.method, 0) + 1
    gold.files.append(str(out))
    return gold


def export_predictions(client, project_id: int, out: str | Path | None = None, config: Config | None = None, *,
                       model_version: str | None = None, page_size: int = 100) -> ExportSummary:
    """The project's predictions as trajectory_eval lines, their ``annotator`` the model version: per task the
    latest prediction of each model version (of ``model_version`` only, when given)."""
    summary = ExportSummary()
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    layout = layout_of(project.get("label_config") or "")
    out = Path(out or Path(config.output_path) / "predictions.jsonl")
    with atomic_output(out, make_folder=True) as writer:
        for task in studio.iter_tasks(client, project_id, page_size=page_size):
            summary.tasks += 1
            latest = {}
            for p in sorted(task.get("predictions") or [], key=lambda p: p.get("id") or 0):
                if model_version is None or p.get("model_version") == model_version:
                    latest[p.get("model_version")] = p
            for version, p in latest.items():
                record = readable_record(task, p, config, layout=layout, users={}, summary=summary,
                                         annotator=str(version) if version else "prediction", what="prediction")
                if record is not None:
                    writer.write(dumps(record))
                    summary.written += 1
    summary.files.append(str(out))
    return summary
