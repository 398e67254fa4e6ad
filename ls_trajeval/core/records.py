"""The ``trajectory_eval`` export record: the one module that writes it and reads it back.

One record is one (trace, submitted annotation). Its per-step list sits under the name of the config's
trajectory scheme (named by the record's ``scheme`` key), one entry per step, correct ones included;
whole-trace labels sit under their own scheme names; the rest are the keys in :data:`RECORD_KEYS`.
Nothing here hard-codes ``error_localization`` or ``overall_success``.

Writing: :func:`build_record` turns a Label Studio task and one of its annotations into a record,
:func:`dumps` into one JSONL line. Reading streams: :func:`read_records` yields one :class:`AnnotationRecord`
or one located :class:`~ls_trajeval.core.trace.TraceError` per line; a bad line never stops the read.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import Config
from .fields import n_steps as task_n_steps
from .jsonfiles import dumps_line, expand_inputs, read_lines
from .labels import ROLES, SOURCES, Span, StepLabel, TraceLabels, resolve_causes
from .results import decode, parent_prediction, step_texts
from .scoring import ScoreSummary, summarize
from .tasks import step_text
from .trace import Trace, TraceError, parse_trace
from .windows import placed, window_of

#: The keys every record starts with, in this order: the trace, where the labels came from, the trace's metadata
HEAD_KEYS = ("trace_id", "task", "project_id", "task_id", "annotation_id", "annotator", "annotator_id", "created_at",
             "updated_at", "lead_time", "layout", "metadata")
#: Top-level keys of a record besides the per-step list and the whole-trace labels: the head, the score, and the
#: keys only some records have (``model_version`` of an exported prediction, ``gold``: how a gold label was made)
RECORD_KEYS = frozenset({
    *HEAD_KEYS, "scheme", "running_score", "final_score", "n_steps", "n_errors", "first_error_step",
    "worst_severity", "severity_weights", "score_initial", "score_min", "model_version", "gold",
    "root_cause_step", "rejected_suggestions", "windows",
})
#: What :func:`build_record` reads of a Label Studio task, of one of its annotations and of one of its predictions:
#: the export asks Label Studio for these fields only, so a key read there must be named here (a unit test checks
#: it). The task's predictions are provenance's (:func:`~.results.parent_prediction`), as is an annotation's
#: ``parent_prediction``.
TASK_FIELDS = ("id", "project", "data", "predictions")
ANNOTATION_FIELDS = ("id", "completed_by", "created_at", "updated_at", "lead_time", "result", "model_version",
                     "parent_prediction")
PREDICTION_FIELDS = ("id", "result", "model_version")
#: The keys of one per-step entry: the guide's, then provenance (``source``, ``suggested_by``, ``confidence``),
#: evidence spans, cause links (``caused_by``, ``role``) and the correction, added after them
STEP_KEYS = ("step_index", "step_type", "step_text", "correctness", "error_category", "error_type", "severity",
             "rationale", "score", "source", "suggested_by", "confidence", "evidence", "caused_by", "role",
             "correction")


# ---------------------------------------------------------------- writing
def _num(x: float) -> float | int:
    """Whole scores as integers (``95``, not ``95.0``), as the guide's own analysis computes them."""
    return int(x) if float(x).is_integer() else x


def _annotator(annotation: Mapping, users: Mapping[int, dict]) -> tuple[str | None, int | None]:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return who.get("email"), who.get("id")
    user = users.get(who) if isinstance(who, int) else None
    return (user or {}).get("email"), who if isinstance(who, int) else None


#: (data, config, task id, its trace, each step's (type, text)) of the last task read: an export builds the records
#: of one task's annotations one after the other, and parsing the trace and writing out its steps' text (JSON of
#: every action input) is most of a record's cost. One tuple, so a reader in another thread sees all or nothing.
_last_trace: tuple = (None, None, None, None, ())


def _trace_of(data: Mapping, config: Config, task_id: Any) -> tuple[Trace | TraceError, list[tuple[str, str]]]:
    global _last_trace
    last = _last_trace
    if last[0] is data and last[1] is config and last[2] == task_id:
        return last[3], last[4]
    parsed = parse_trace(data, source=f"task {task_id}", id_key=config.id_key, text_key=config.text_key,
                         trace_key=config.trace_key)
    texts = [(step.type, step_text(step)) for step in parsed.steps] if isinstance(parsed, Trace) else []
    _last_trace = (data, config, task_id, parsed, texts)
    return parsed, texts


def _decoded(task: Mapping, annotation: Mapping, config: Config, *, prediction: bool, model_version: str | None,
             first_step: int = 0) -> tuple[Trace | TraceError, TraceLabels, int]:
    """A task's trace, one annotation's labels (each step's type and text filled in) and the task's step count."""
    data = task.get("data") or {}
    parsed, texts = _trace_of(data, config, task.get("id"))
    steps = parsed.steps if isinstance(parsed, Trace) else []
    n_steps = len(steps) if steps else task_n_steps(data)
    parent = None if prediction else parent_prediction(annotation, task.get("predictions") or [], model_version)
    labels = decode(annotation.get("result") or [], config, n_steps, prediction=prediction, parent=parent,
                    texts=step_texts(data, config), first_step=first_step)
    for label in labels.steps:
        if label.step_index < len(steps):
            label.step_type, label.step_text = texts[label.step_index]
    return parsed, labels, n_steps


def _head(task: Mapping, annotation: Mapping, config: Config, parsed: Trace | TraceError, *, layout: str,
          users: Mapping[int, dict] | None, annotator: str | None) -> dict:
    data = task.get("data") or {}
    email, user_id = _annotator(annotation, users or {})
    head = {
        "trace_id": str(data.get(config.id_key)) if data.get(config.id_key) is not None else None,
        "task": data.get(config.text_key),
        "project_id": task.get("project"),
        "task_id": task.get("id"),
        "annotation_id": annotation.get("id"),
        "annotator": annotator if annotator is not None else email,
        "annotator_id": user_id,
        "created_at": annotation.get("created_at"),
        "updated_at": annotation.get("updated_at"),
        "lead_time": annotation.get("lead_time"),
        "layout": layout or None,
        # the trace's own metadata (agent, model, run, ...), so reports can compare groups by it
        "metadata": parsed.metadata if isinstance(parsed, Trace) else {},
    }
    if annotation.get("model_version") is not None:
        head["model_version"] = annotation["model_version"]
    return head


def _record(head: Mapping, labels: TraceLabels, n_steps: int, config: Config, where: str) -> tuple[dict, list[str]]:
    scheme = config.trajectory
    warnings = list(labels.warnings)
    record = assemble(head, scheme.name, labels.steps, labels.whole_trace, summarize(labels.steps, scheme), n_steps,
                      scheme.weights, scheme.running_score.initial, scheme.running_score.min,
                      is_error=scheme.error_labels.__contains__, rejected_suggestions=labels.rejected_suggestions,
                      warnings=warnings)
    return record, [f"{where}: {w}" for w in warnings]


def build_record(task: Mapping, annotation: Mapping, config: Config, *, layout: str = "",
                 users: Mapping[int, dict] | None = None, annotator: str | None = None, prediction: bool = False,
                 model_version: str | None = None) -> tuple[dict, list[str]]:
    """The record of one annotation of one task (Label Studio's JSON), and the decoder's located warnings.

    Provenance: each step's ``source`` (and ``rejected_suggestions``) comes from comparing the annotation with the
    prediction of the task's ``predictions`` it started from (:func:`~.results.parent_prediction`; ``model_version``
    is the project's, which the label stream prefills from).

    A prediction is read the same way with ``prediction``: ``annotator`` then names its author (no user completed
    it), its ``model_version`` is kept and its marks are the suggestions they carry."""
    parsed, labels, n_steps = _decoded(task, annotation, config, prediction=prediction, model_version=model_version)
    head = _head(task, annotation, config, parsed, layout=layout, users=users, annotator=annotator)
    return _record(head, labels, n_steps, config, f"task {task.get('id')} annotation {annotation.get('id')}")


def build_windowed_record(parts: Sequence[tuple[Mapping, Mapping]], config: Config, *, layout: str = "",
                          users: Mapping[int, dict] | None = None, annotator: str | None = None,
                          prediction: bool = False, model_version: str | None = None) -> tuple[dict, list[str]]:
    """The record of a trace worked in windows (:mod:`~.windows`): ``parts`` are each window's task and one
    annotator's annotation of it (or one model version's prediction), all windows of the trace in order
    (:func:`~.windows.incomplete` tells whether they are). Its steps are the windows' steps put back in order and
    numbered as in the whole trace, so the score, the first error and the cause links are the whole trace's, as if
    it had been one task. The head is the first window's (its task and annotation ids), with ``created_at`` the
    earliest, ``updated_at`` the latest and ``lead_time`` the sum of the windows', and ``windows`` listing each
    window's steps, task and annotation. A whole-trace choice is the latest window's that has one (a warning says
    when windows differ)."""
    steps: list[StepLabel] = []
    whole: dict[str, str | None] = {}
    rejected: list[dict] = []
    warnings: list[str] = []
    windows: list[dict] = []
    head: dict = {}
    n_steps = 0
    for task, annotation in parts:
        window = window_of(task.get("data") or {})
        if window is None:
            raise ValueError(f"task {task.get('id')} is not a window of a trace")
        where = f"task {task.get('id')} annotation {annotation.get('id')}"
        parsed, labels, _ = _decoded(task, annotation, config, prediction=prediction, model_version=model_version,
                                     first_step=window.start)
        if not head:
            head = _head(task, annotation, config, parsed, layout=layout, users=users, annotator=annotator)
        else:
            later = _head(task, annotation, config, parsed, layout=layout, users=users, annotator=annotator)
            head["created_at"] = min(filter(None, (head["created_at"], later["created_at"])), default=None)
            head["updated_at"] = max(filter(None, (head["updated_at"], later["updated_at"])), default=None)
            if later["lead_time"] is not None:
                head["lead_time"] = (head["lead_time"] or 0) + later["lead_time"]
        steps.extend(placed(label, window) for label in labels.steps)
        for name, value in labels.whole_trace.items():
            if value is not None:
                if whole.get(name) not in (None, value):
                    warnings.append(f"{where}: {name} is {value!r} here and {whole[name]!r} in an earlier window; "
                                    "kept this one")
                whole[name] = value
            else:
                whole.setdefault(name, None)
        rejected.extend({**r, "step_index": r["step_index"] + window.start}
                        if isinstance(r.get("step_index"), int) else r for r in labels.rejected_suggestions)
        warnings.extend(f"{where}: {w}" for w in labels.warnings)
        windows.append({"start": window.start, "end": window.end, "task_id": task.get("id"),
                        "annotation_id": annotation.get("id")})
        n_steps = window.total
    head["windows"] = windows
    labels = TraceLabels(steps, whole, [], rejected)
    record, more = _record(head, labels, n_steps, config, f"trace {head.get('trace_id')!r}")
    return record, warnings + more


def assemble(head: Mapping, scheme_name: str, steps: Sequence[StepLabel], whole_trace: Mapping,
             score: ScoreSummary, n_steps: int, weights: Mapping[str, float], initial: float, minimum: float, *,
             is_error: Callable[[str], bool], rejected_suggestions: Sequence[Mapping] = (),
             warnings: list[str] | None = None) -> dict:
    """A record from its parts: ``head`` (the keys from ``trace_id`` to ``metadata``, and any other key of
    :data:`RECORD_KEYS` the writer sets, such as ``model_version``), one label per step (with its ``step_type`` and
    ``step_text``), the whole-trace labels and the score. :func:`build_record` and the gold labels of the analysis
    write through it, so every record has one shape.

    The steps' cause links are checked here and their roles set (:func:`~.labels.resolve_causes`; ``is_error``
    tells a wrong step's correctness label); links it drops are described in ``warnings`` when a list is given."""
    unknown = set(head) - RECORD_KEYS
    if unknown:
        raise ValueError(f"not record keys: {sorted(unknown)}")
    root_cause, dropped = resolve_causes(steps, is_error)
    if warnings is not None:
        warnings.extend(dropped)
    entries = [{
        "step_index": label.step_index,
        "step_type": label.step_type,
        "step_text": label.step_text,
        "correctness": label.correctness,
        "error_category": label.error_category,
        "error_type": label.error_type,
        "severity": label.severity,
        "rationale": label.rationale,
        "score": _num(running),
        "source": label.source,
        "suggested_by": label.suggested_by,
        "confidence": label.confidence,
        "evidence": [span.to_json() for span in label.evidence],
        "caused_by": list(label.caused_by),
        "role": label.role,
        "correction": label.correction,
    } for label, running in zip(steps, score.curve)]
    return {
        **{k: head.get(k) for k in HEAD_KEYS},
        **{k: v for k, v in head.items() if k not in HEAD_KEYS},
        "scheme": scheme_name,
        scheme_name: entries,
        **whole_trace,
        "running_score": [_num(x) for x in score.curve],
        "final_score": _num(score.final),
        "n_steps": n_steps,
        "n_errors": score.n_errors,
        "first_error_step": score.first_error_step,
        "worst_severity": score.worst_severity,
        "severity_weights": {k: _num(v) for k, v in weights.items()},
        "score_initial": _num(initial),
        "score_min": _num(minimum),
        "root_cause_step": root_cause,
        "rejected_suggestions": [dict(r) for r in rejected_suggestions],
    }


def dumps(record: Mapping) -> str:
    """One record as one JSONL line (with its newline); text kept as written, not \\u-escaped."""
    return dumps_line(record).decode("utf-8")


# ---------------------------------------------------------------- reading
@dataclass
class AnnotationRecord:
    """One line of a trajectory_eval export as the analyses read it: its steps, labels, scores and fields."""
    source: str
    line: int
    trace_id: str
    task: str
    annotator: str
    annotation_id: Any
    scheme: str
    steps: list  # list[StepLabel], sorted by step_index
    n_steps: int
    labels: dict  # whole-trace scheme name -> label (str) or None
    severity_weights: dict | None
    score_initial: float | None
    score_min: float | None
    final_score: float | None
    #: the line's other top-level scalars as written (project_id, task_id, annotator_id, lead_time, created_at,
    #: flags such as ``adjudicated``)
    fields: dict = field(default_factory=dict)
    #: the trace's metadata (agent, model, run, ...), when the export carries it
    metadata: dict = field(default_factory=dict)
    #: the earliest origin of the trace's errors, as written (None without errors or in older exports)
    root_cause_step: int | None = None
    #: the suggestions the annotator removed, as written
    rejected_suggestions: list = field(default_factory=list)

    def value(self, key: str) -> Any:
        """What the record says for ``key``: a key of the trace's metadata (``metadata.KEY`` to say so), else a
        top-level field (``annotator``, ``layout``, a whole-trace label, ...); None when it has neither."""
        if key.startswith("metadata."):
            return self.metadata.get(key[len("metadata."):])
        if key in self.metadata:
            return self.metadata[key]
        return self.fields.get(key)


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _find_scheme(obj: dict, wanted: str | None) -> str | None:
    for name in (wanted, obj.get("scheme")):
        if isinstance(name, str) and isinstance(obj.get(name), list):
            return name
    for k, v in obj.items():
        if isinstance(v, list) and v and all(isinstance(e, dict) for e in v) and "step_index" in v[0]:
            return k
    return None


def _opt_str(v: Any) -> str | None:
    if v is None or v == "":
        return None
    return v if isinstance(v, str) else str(v)


#: the keys of a per-step entry in the guide's own shape (the added keys come after them in STEP_KEYS)
_GUIDE_STEP_KEYS = frozenset(STEP_KEYS[:STEP_KEYS.index("source")])


def _nonneg_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _read_added_step_keys(e: Mapping, label: StepLabel) -> tuple[str, str] | None:
    """Set ``label``'s provenance, evidence, cause links and correction from entry ``e``; (key, problem) when one is
    malformed. Absent or null keys keep their defaults."""
    source = e.get("source")
    if source is not None:
        if source not in SOURCES:
            return "source", f"expected one of {', '.join(SOURCES)}, got {source!r}"
        label.source = source
    label.suggested_by = _opt_str(e.get("suggested_by"))
    conf = e.get("confidence")
    if conf is not None:
        if _number(conf) is None or not 0 <= conf <= 1:
            return "confidence", "expected a number from 0 to 1"
        label.confidence = float(conf)
    evidence = e.get("evidence")
    if evidence:
        if not isinstance(evidence, list):
            return "evidence", "expected a list"
        spans = []
        for j, sp in enumerate(evidence):
            if not (isinstance(sp, dict) and _nonneg_int(sp.get("start")) and _nonneg_int(sp.get("end"))
                    and sp["start"] <= sp["end"] and isinstance(sp.get("text"), str)):
                return f"evidence[{j}]", "expected {\"start\", \"end\", \"text\"} with 0 <= start <= end"
            spans.append(Span(sp["start"], sp["end"], sp["text"]))
        label.evidence = tuple(spans)
    caused = e.get("caused_by")
    if caused:
        if not isinstance(caused, list) or not all(_nonneg_int(c) for c in caused):
            return "caused_by", "expected a list of step indices"
        label.caused_by = tuple(caused)
    role = e.get("role")
    if role is not None:
        if role not in ROLES:
            return "role", f"expected one of {', '.join(ROLES)} or null, got {role!r}"
        label.role = role
    correction = e.get("correction")
    if correction is not None and not isinstance(correction, str):
        return "correction", "expected a string or null"
    label.correction = correction or None
    return None


def _rejected(v: Any) -> list[dict] | None:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(r, dict) and _nonneg_int(r.get("step_index")) for r in v):
        return None
    return v


def parse_record(obj: Any, source: str, line: int, *, scheme: str | None = None,
                 default_correctness: str = "correct") -> AnnotationRecord | TraceError:
    """One decoded line as a record, or the located reason it is not one.

    ``scheme`` names the per-step list when the line's own ``scheme`` key does not; a step without a
    correctness is ``default_correctness`` (the transcript layout marks only wrong steps).
    """
    def bad(msg: str, field: str | None = None) -> TraceError:
        return TraceError(source, line, field, msg)

    if not isinstance(obj, dict):
        return bad("expected a JSON object")
    tid = obj.get("trace_id")
    if tid is None or tid == "" or isinstance(tid, (bool, dict, list, float)):
        return bad("missing or not a string", "trace_id")
    found = _find_scheme(obj, scheme)
    if found is None:
        return bad("no per-step list found (no 'scheme' key naming a list, and no list of objects with step_index)")
    steps: list = []
    seen: set = set()
    for i, e in enumerate(obj[found]):
        if not isinstance(e, dict):
            return bad("expected an object", f"{found}[{i}]")
        idx = e.get("step_index")
        if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
            return bad("expected a non-negative integer", f"{found}[{i}].step_index")
        if idx in seen:
            return bad(f"step {idx} appears twice", f"{found}[{i}].step_index")
        seen.add(idx)
        corr = e.get("correctness")
        if corr is None:
            corr = default_correctness
        elif not isinstance(corr, str):
            return bad("expected a string", f"{found}[{i}].correctness")
        text = e.get("step_text")
        if not isinstance(text, str):
            text = "" if text is None else json.dumps(text)
        st = e.get("step_type")
        if st is not None and not isinstance(st, str):
            st = str(st)
        cat, typ, sev, why = e.get("error_category"), e.get("error_type"), e.get("severity"), e.get("rationale")
        if cat is None and typ is None and sev is None and why is None:
            label = StepLabel(idx, corr, None, None, None, None, st, text)
        else:
            label = StepLabel(idx, corr, _opt_str(cat), _opt_str(typ), _opt_str(sev), _opt_str(why), st, text)
        if not _GUIDE_STEP_KEYS.issuperset(e):  # the added keys, when the line has some
            problem = _read_added_step_keys(e, label)
            if problem is not None:
                return bad(problem[1], f"{found}[{i}].{problem[0]}")
        steps.append(label)
    steps.sort(key=lambda s: s.step_index)
    n_file = obj.get("n_steps")
    n_steps = max(
        n_file if isinstance(n_file, int) and not isinstance(n_file, bool) else 0,
        (steps[-1].step_index + 1) if steps else 0,
    )
    weights = obj.get("severity_weights")
    if weights is not None:
        if not isinstance(weights, dict) or any(_number(v) is None for v in weights.values()):
            return bad("expected an object of numbers", "severity_weights")
        weights = {str(k): float(v) for k, v in weights.items()}
    labels = {}
    fields = {}
    for k, v in obj.items():
        if k == found:
            continue
        if v is None or isinstance(v, (str, int, float, bool)):
            fields[k] = v
        if k in RECORD_KEYS:
            continue
        if v is None or isinstance(v, str):
            labels[k] = v
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            labels[k] = ",".join(v)  # a multi-choice scheme; kept as one joined label
    annotator = obj.get("annotator")
    if not isinstance(annotator, str) or not annotator:
        aid = obj.get("annotator_id")
        annotator = f"annotator_{aid}" if aid is not None else Path(source).name.split(".")[0]
    rejected = _rejected(obj.get("rejected_suggestions"))
    if rejected is None:
        return bad("expected a list of objects with a step_index", "rejected_suggestions")
    root = obj.get("root_cause_step")
    if root is not None and not _nonneg_int(root):
        return bad("expected a step index or null", "root_cause_step")
    task = obj.get("task")
    return AnnotationRecord(
        source=source, line=line, trace_id=str(tid), task=task if isinstance(task, str) else "",
        annotator=annotator, annotation_id=obj.get("annotation_id"), scheme=found, steps=steps,
        n_steps=n_steps, labels=labels, severity_weights=weights,
        score_initial=_number(obj.get("score_initial")), score_min=_number(obj.get("score_min")),
        final_score=_number(obj.get("final_score")), fields=fields,
        metadata=obj["metadata"] if isinstance(obj.get("metadata"), dict) else {},
        root_cause_step=root, rejected_suggestions=rejected,
    )


def read_records(inputs: Sequence[str | Path], *, scheme: str | None = None,
                 default_correctness: str = "correct") -> Iterator[AnnotationRecord | TraceError]:
    """Every record of every input (files, or directories of ``*.jsonl[.gz]``); bad lines as located errors.

    The same annotation seen twice (a file passed both directly and through its directory, or a re-export) is
    rejected after the first, so it cannot count twice.
    """
    seen: dict = {}
    for item in expand_inputs(inputs, records_only=True):
        if isinstance(item, TraceError):
            yield item
            continue
        source = str(item)
        for value in read_lines(item):
            if isinstance(value, TraceError):
                yield value
                continue
            n, obj = value
            rec = parse_record(obj, source, n, scheme=scheme, default_correctness=default_correctness)
            if isinstance(rec, AnnotationRecord):
                key = (rec.trace_id, rec.annotator, rec.annotation_id)
                first = seen.get(key)
                if first is not None:
                    yield TraceError(source, n, None, f"duplicate annotation of trace {rec.trace_id!r} by "
                                                      f"{rec.annotator} (first at {first})")
                    continue
                seen[key] = f"{source}:{n}"
            yield rec
