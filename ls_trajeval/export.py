"""Label Studio annotations → ``trajectory_eval`` JSONL, one line per (trace, submitted annotation)."""
from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from . import studio
from .config import Config
from .labelconfig import layout_of
from .results import decode
from .scoring import summarize
from .tasks import step_text
from .trace import parse_trace, Trace


@dataclass
class ExportSummary:
    written: int = 0
    tasks: int = 0
    cancelled: int = 0  # skipped or cancelled annotations, left out
    drafts: int = 0  # unsubmitted drafts, left out
    unreadable: int = 0  # annotations whose result could not be decoded, left out with a warning
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _annotator(annotation: dict, users: dict[int, dict]) -> tuple[str | None, int | None]:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return who.get("email"), who.get("id")
    user = users.get(who) if isinstance(who, int) else None
    return (user or {}).get("email"), who if isinstance(who, int) else None


def annotation_record(task: dict, annotation: dict, config: Config, *, layout: str = "",
                      users: dict[int, dict] | None = None) -> tuple[dict, list[str]]:
    """One ``trajectory_eval`` line for one annotation of one task, and the decoder's warnings."""
    data = task.get("data") or {}
    parsed = parse_trace(data, source=f"task {task.get('id')}", id_key=config.id_key, text_key=config.text_key,
                         trace_key=config.trace_key)
    steps = parsed.steps if isinstance(parsed, Trace) else []
    n_steps = len(steps) if steps else int(data.get("n_steps") or len(data.get("te_transcript") or []))
    labels = decode(annotation.get("result") or [], config, n_steps)
    scheme = config.trajectory
    score = summarize(labels.steps, scheme)
    email, user_id = _annotator(annotation, users or {})
    entries = []
    for label, running in zip(labels.steps, score.curve):
        step = steps[label.step_index] if label.step_index < len(steps) else None
        entries.append({
            "step_index": label.step_index,
            "step_type": step.type if step else None,
            "step_text": step_text(step) if step else None,
            "correctness": label.correctness,
            "error_category": label.error_category,
            "error_type": label.error_type,
            "severity": label.severity,
            "rationale": label.rationale,
            "score": _num(running),
        })
    record = {
        "trace_id": str(data.get(config.id_key)) if data.get(config.id_key) is not None else None,
        "task": data.get(config.text_key),
        "project_id": task.get("project"),
        "task_id": task.get("id"),
        "annotation_id": annotation.get("id"),
        "annotator": email,
        "annotator_id": user_id,
        "created_at": annotation.get("created_at"),
        "updated_at": annotation.get("updated_at"),
        "lead_time": annotation.get("lead_time"),
        "layout": layout or None,
        # the trace's own metadata (agent, model, run, ...), so reports can compare groups by it
        "metadata": parsed.metadata if isinstance(parsed, Trace) else {},
        "scheme": scheme.name,
        scheme.name: entries,
        **labels.whole_trace,
        "running_score": [_num(x) for x in score.curve],
        "final_score": _num(score.final),
        "n_steps": n_steps,
        "n_errors": score.n_errors,
        "first_error_step": score.first_error_step,
        "worst_severity": score.worst_severity,
        "severity_weights": {k: _num(v) for k, v in scheme.weights.items()},
        "score_initial": _num(scheme.running_score.initial),
        "score_min": _num(scheme.running_score.min),
    }
    where = f"task {task.get('id')} annotation {annotation.get('id')}"
    return record, [f"{where}: {w}" for w in labels.warnings]


def readable_record(task: dict, annotation: dict, config: Config, *, layout: str, users: dict,
                    summary: ExportSummary) -> dict | None:
    """``annotation_record``, or None and a located warning when the result cannot be decoded (a result written
    through the API by another tool): it costs that one annotation, not the whole export."""
    try:
        record, warnings = annotation_record(task, annotation, config, layout=layout, users=users)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        summary.unreadable += 1
        summary.warnings.append(f"task {task.get('id')} annotation {annotation.get('id')}: left out, its result "
                                f"cannot be read ({type(exc).__name__}: {str(exc)[:200]})")
        return None
    summary.warnings.extend(warnings)
    return record


def iter_records(client, project_id: int, config: Config | None = None, page_size: int = 100,
                 summary: ExportSummary | None = None) -> Iterator[dict]:
    """Export records of a project, task by task (paged), annotations in id order."""
    summary = summary if summary is not None else ExportSummary()
    project = studio.get_project(client, project_id)
    config = studio.project_config(project, config)
    layout = layout_of(project.get("label_config") or "")
    users = studio.users_by_id(client)
    for task in studio.iter_tasks(client, project_id, only_annotated=False, page_size=page_size):
        summary.tasks += 1
        summary.drafts += len(task.get("drafts") or [])
        for annotation in sorted(task.get("annotations") or [], key=lambda a: a.get("id") or 0):
            if annotation.get("was_cancelled"):
                summary.cancelled += 1
                continue
            record = readable_record(task, annotation, config, layout=layout, users=users, summary=summary)
            if record is not None:
                yield record


def _num(x: float) -> float | int:
    """Whole scores as integers (``95``, not ``95.0``), as the guide's own analysis computes them."""
    return int(x) if float(x).is_integer() else x


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
        self.fh.write(json.dumps(record, ensure_ascii=False))
        self.fh.write("\n")

    def commit(self) -> None:
        self.fh.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.fh.close()
        self.tmp.unlink(missing_ok=True)


def export_project(client, project_id: int, out: str | Path, config: Config | None = None, *,
                   per_annotator: bool = False, page_size: int = 100) -> ExportSummary:
    """Write the project's annotations to ``out`` (a file), or with ``per_annotator`` one file per
    annotator in the directory ``out``."""
    summary = ExportSummary()
    out = Path(out)
    writers: dict[str, _AtomicWriter] = {}
    try:
        for record in iter_records(client, project_id, config, page_size, summary):
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
