"""Label Studio annotations → ``trajectory_eval`` JSONL, one line per (trace, submitted annotation)."""
from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..core.config import Config
from ..core.layouts import layout_of
from ..core.records import build_record, dumps
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
                    summary: ExportSummary) -> dict | None:
    """The annotation's record, or None and a located warning when its result cannot be decoded (a result
    written through the API by another tool): it costs that one annotation, not the whole export."""
    try:
        record, warnings = build_record(task, annotation, config, layout=layout, users=users)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        summary.unreadable += 1
        summary.warnings.append(f"task {task.get('id')} annotation {annotation.get('id')}: left out, its result "
                                f"cannot be read ({type(exc).__name__}: {str(exc)[:200]})")
        return None
    summary.warnings.extend(warnings)
    return record


def iter_records(client, project_id: int, config: Config | None = None, page_size: int = 100,
                 summary: ExportSummary | None = None) -> Iterator[dict]:
    """Export records of a project, task by task (paged), annotations in id order; ``config`` defaults to the
    project's own."""
    project = studio.get_project(client, project_id)
    return _records(client, project, project_config(project, config), page_size,
                    summary if summary is not None else ExportSummary())


def _records(client, project: dict, config: Config, page_size: int, summary: ExportSummary) -> Iterator[dict]:
    layout = layout_of(project.get("label_config") or "")
    users = studio.users_by_id(client)
    for task in studio.iter_tasks(client, project["id"], only_annotated=False, page_size=page_size):
        summary.tasks += 1
        summary.drafts += len(task.get("drafts") or [])
        for annotation in sorted(task.get("annotations") or [], key=lambda a: a.get("id") or 0):
            if annotation.get("was_cancelled"):
                summary.cancelled += 1
                continue
            record = readable_record(task, annotation, config, layout=layout, users=users, summary=summary)
            if record is not None:
                yield record


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9@._-]+", "_", text).strip("._") or "unknown"


class _AtomicWriter:
    """Write beside the target and rename at the end, so a rerun after an interruption gives the same file."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        self.tmp = Path(tmp)
        self.fh = os.fdopen(fd, "w", encoding="utf-8", newline="\n")

    def write(self, record: dict) -> None:
        self.fh.write(dumps(record))

    def commit(self) -> None:
        self.fh.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.fh.close()
        self.tmp.unlink(missing_ok=True)


def export_project(client, project_id: int, out: str | Path | None = None, config: Config | None = None, *,
                   per_annotator: bool = False, page_size: int = 100) -> ExportSummary:
    """Write the project's annotations to ``out`` (a file), or with ``per_annotator`` one file per annotator in
    the directory ``out``. ``config`` defaults to the project's own; ``out`` to the config's ``output.path``
    (plus ``annotations.jsonl`` for one file)."""
    summary = ExportSummary()
    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    out = Path(out or (config.output_path if per_annotator else Path(config.output_path) / "annotations.jsonl"))
    writers: dict[str, _AtomicWriter] = {}
    try:
        for record in _records(client, project, config, page_size, summary):
            key = _safe_name(record["annotator"] or f"user{record['annotator_id']}") if per_annotator else ""
            if key not in writers:
                writers[key] = _AtomicWriter(out / f"{key}.jsonl" if per_annotator else out)
            writers[key].write(record)
            summary.written += 1
        if not per_annotator and "" not in writers:
            writers[""] = _AtomicWriter(out)  # an empty project still gives a (empty) file
        for w in writers.values():
            w.commit()
            summary.files.append(str(w.path))
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    return summary
