"""Reading the ``trajectory_eval`` JSONL export for the analysis commands.

One export line is one (trace, annotation). The per-step list lives under the name of the
config's ``trajectory_eval`` scheme (named by the line's ``scheme`` key) and whole-trace labels
sit under their own scheme names, so nothing here hard-codes ``error_localization`` or
``overall_success``.

Reading streams: files are read line by line and each line becomes one
:class:`AnnotationRecord` or one :class:`InputError`; callers aggregate and drop the record.
A bad line never stops the read.
"""
from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union

from .scoring import running_scores

DEFAULT_SEVERITY_WEIGHTS = {"minor": -1.0, "major": -5.0, "critical": -10.0}
DEFAULT_CORRECT_LABELS = ("correct",)
DEFAULT_PARTIAL_LABELS = ("partially_correct",)
DEFAULT_OUTCOME_KEY = "overall_success"
MISSING = "(missing)"

#: Top-level keys the exporter writes that are never whole-trace labels.
_KNOWN_KEYS = frozenset({
    "trace_id", "task", "project_id", "task_id", "annotation_id", "annotator", "annotator_id",
    "created_at", "updated_at", "lead_time", "layout", "running_score", "final_score", "n_steps",
    "n_errors", "first_error_step", "worst_severity", "severity_weights", "score_initial",
    "score_min", "scheme", "metadata",
})


@dataclass(frozen=True)
class InputError:
    """A rejected input line (or path): where, and why."""

    source: str
    line: Optional[int]
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.message}"


class StepLabel:
    """One step's label. A slotted class, not a dataclass: millions are made, one at a time."""

    __slots__ = ("step_index", "step_type", "step_text", "correctness", "error_category", "error_type",
                 "severity", "rationale")

    def __init__(self, step_index, step_type, step_text, correctness, error_category=None, error_type=None,
                 severity=None, rationale=None) -> None:
        self.step_index = step_index
        self.step_type = step_type
        self.step_text = step_text
        self.correctness = correctness
        self.error_category = error_category
        self.error_type = error_type
        self.severity = severity
        self.rationale = rationale

    def __repr__(self) -> str:
        return f"StepLabel({self.step_index}, {self.correctness!r}, {self.error_category!r}, {self.error_type!r}, {self.severity!r})"


@dataclass
class AnnotationRecord:
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
    severity_weights: Optional[dict]
    score_initial: Optional[float]
    score_min: Optional[float]
    final_score: Optional[float]
    #: the line's other top-level scalars as written (project_id, task_id, annotator_id, lead_time, created_at, flags)
    fields: dict = field(default_factory=dict)
    #: the trace's metadata (agent, model, run, ...), when the export carries it
    metadata: dict = field(default_factory=dict)


@dataclass
class AnalysisSettings:
    """What the analysis needs to know about the config; all of it has export-file fallbacks."""

    correct_labels: tuple = DEFAULT_CORRECT_LABELS
    partial_labels: tuple = DEFAULT_PARTIAL_LABELS
    #: None means "use each line's own ``severity_weights``" (then the defaults).
    severity_weights: Optional[dict] = None
    #: severity names in config order, used to order tables when known
    severity_order: tuple = ()
    score_initial: Optional[float] = None
    score_min: Optional[float] = None
    outcome_key: str = DEFAULT_OUTCOME_KEY
    #: outcome labels in config order, when known
    outcome_order: tuple = ()
    scheme: Optional[str] = None
    categories: tuple = ()
    source: Optional[str] = None

    def weights_for(self, rec: AnnotationRecord) -> dict:
        if self.severity_weights is not None:
            return self.severity_weights
        if rec.severity_weights:
            return rec.severity_weights
        return DEFAULT_SEVERITY_WEIGHTS

    def initial_for(self, rec: AnnotationRecord) -> float:
        if self.score_initial is not None:
            return self.score_initial
        return rec.score_initial if rec.score_initial is not None else 100.0

    def min_for(self, rec: AnnotationRecord) -> float:
        if self.score_min is not None:
            return self.score_min
        return rec.score_min if rec.score_min is not None else 0.0

    def is_error(self, correctness: str) -> bool:
        return correctness not in self.correct_labels


class ConfigError(ValueError):
    pass


def _num(x: Any) -> Optional[float]:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def load_settings(config_path: Optional[str], **overrides: Any) -> AnalysisSettings:
    """What the analysis needs from a trajectory_eval config (either dialect), loaded and validated by
    :mod:`ls_trajeval.config`; ``overrides`` (command-line options) win over it."""
    s = AnalysisSettings()
    if config_path:
        try:
            from . import config  # here, not at import: `convert` and the other commands never need it

            c = config.load(config_path)
        except config.ConfigError as exc:
            raise ConfigError(str(exc)) from None
        t = c.trajectory
        s.scheme = t.name
        s.correct_labels = (t.correctness_default,)
        # partially_correct stays a partial label even when the config omits it: data may still carry it
        s.partial_labels = tuple(dict.fromkeys(
            [lab for lab in t.correctness_labels if lab.startswith("partial")] + list(DEFAULT_PARTIAL_LABELS)))
        s.severity_weights = dict(t.weights)
        s.severity_order = tuple(t.weights)
        s.score_initial, s.score_min = t.running_score.initial, t.running_score.min
        s.categories = tuple(cat.category for cat in t.categories)
        outcome = next((r for r in c.whole_trace if r.name == DEFAULT_OUTCOME_KEY),
                       c.whole_trace[0] if c.whole_trace else None)
        if outcome is not None:
            s.outcome_key = outcome.name
            s.outcome_order = tuple(lb.name for lb in outcome.labels)
        s.source = str(config_path)
    for k, v in overrides.items():
        if v is not None and v != ():
            setattr(s, k, v)
    return s


def expand_inputs(paths: Sequence[str]) -> Iterator[Union[Path, InputError]]:
    """Files as given; directories as their ``*.jsonl`` / ``*.jsonl.gz`` files in name order."""
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(
                q for q in path.iterdir()
                if q.is_file() and (q.name.endswith(".jsonl") or q.name.endswith(".jsonl.gz"))
            )
            if not found:
                yield InputError(str(path), None, "directory holds no *.jsonl or *.jsonl.gz files")
            yield from found
        elif path.is_file():
            yield path
        else:
            yield InputError(str(path), None, "no such file or directory")


def _lines(path: Path) -> Iterator[bytes]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        yield from fh


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _find_scheme(obj: dict, wanted: Optional[str]) -> Optional[str]:
    for name in (wanted, obj.get("scheme")):
        if isinstance(name, str) and isinstance(obj.get(name), list):
            return name
    for k, v in obj.items():
        if isinstance(v, list) and v and all(isinstance(e, dict) for e in v) and "step_index" in v[0]:
            return k
    return None


def _opt_str(v: Any) -> Optional[str]:
    if v is None or v == "":
        return None
    return v if isinstance(v, str) else str(v)


def parse_record(obj: Any, source: str, line: int, settings: AnalysisSettings) -> Union[AnnotationRecord, InputError]:
    def bad(msg: str) -> InputError:
        return InputError(source, line, msg)

    if not isinstance(obj, dict):
        return bad("expected a JSON object")
    tid = obj.get("trace_id")
    if tid is None or tid == "" or isinstance(tid, (bool, dict, list, float)):
        return bad("trace_id: missing or not a string")
    scheme = _find_scheme(obj, settings.scheme)
    if scheme is None:
        return bad("no per-step list found (no 'scheme' key naming a list, and no list of objects with step_index)")
    steps: list = []
    seen: set = set()
    default = settings.correct_labels[0]
    for i, e in enumerate(obj[scheme]):
        if not isinstance(e, dict):
            return bad(f"{scheme}[{i}]: expected an object")
        idx = e.get("step_index")
        if idx.__class__ is not int or idx < 0:
            return bad(f"{scheme}[{i}].step_index: expected a non-negative integer")
        if idx in seen:
            return bad(f"{scheme}[{i}].step_index: step {idx} appears twice")
        seen.add(idx)
        corr = e.get("correctness")
        if corr is None:
            # an unmarked step is the default label (the transcript layout only marks wrong steps)
            corr = default
        elif corr.__class__ is not str:
            return bad(f"{scheme}[{i}].correctness: expected a string")
        text = e.get("step_text")
        if text.__class__ is not str:
            text = "" if text is None else json.dumps(text)
        st = e.get("step_type")
        if st is not None and st.__class__ is not str:
            st = str(st)
        cat, typ, sev, why = e.get("error_category"), e.get("error_type"), e.get("severity"), e.get("rationale")
        if cat is None and typ is None and sev is None and why is None:
            steps.append(StepLabel(idx, st, text, corr))
        else:
            steps.append(StepLabel(idx, st, text, corr, _opt_str(cat), _opt_str(typ), _opt_str(sev), _opt_str(why)))
    steps.sort(key=lambda s: s.step_index)
    n_file = obj.get("n_steps")
    n_steps = max(
        n_file if isinstance(n_file, int) and not isinstance(n_file, bool) else 0,
        (steps[-1].step_index + 1) if steps else 0,
    )
    weights = obj.get("severity_weights")
    if weights is not None:
        if not isinstance(weights, dict) or any(_num(v) is None for v in weights.values()):
            return bad("severity_weights: expected an object of numbers")
        weights = {str(k): float(v) for k, v in weights.items()}
    labels = {}
    fields = {}
    for k, v in obj.items():
        if k == scheme:
            continue
        if v is None or isinstance(v, (str, int, float, bool)):
            fields[k] = v
        if k in _KNOWN_KEYS:
            continue
        if v is None or isinstance(v, str):
            labels[k] = v
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            labels[k] = ",".join(v)  # a multi-choice scheme; kept as one joined label
    annotator = obj.get("annotator")
    if not isinstance(annotator, str) or not annotator:
        aid = obj.get("annotator_id")
        annotator = f"annotator_{aid}" if aid is not None else Path(source).name.split(".")[0]
    task = obj.get("task")
    return AnnotationRecord(
        source=source, line=line, trace_id=str(tid), task=task if isinstance(task, str) else "",
        annotator=annotator, annotation_id=obj.get("annotation_id"), scheme=scheme, steps=steps,
        n_steps=n_steps, labels=labels, severity_weights=weights,
        score_initial=_num(obj.get("score_initial")), score_min=_num(obj.get("score_min")),
        final_score=_num(obj.get("final_score")), fields=fields,
        metadata=obj["metadata"] if isinstance(obj.get("metadata"), dict) else {},
    )


def read_records(
    inputs: Sequence[str], settings: Optional[AnalysisSettings] = None
) -> Iterator[Union[AnnotationRecord, InputError]]:
    """Stream every annotation line of every input; bad lines come out as InputError values.

    The same annotation seen twice (a file passed both directly and through its directory,
    or a re-export) is rejected after the first, so it cannot count twice.
    """
    settings = settings or AnalysisSettings()
    seen: dict = {}
    for item in expand_inputs(inputs):
        if isinstance(item, InputError):
            yield item
            continue
        source = str(item)
        try:
            for n, raw in enumerate(_lines(item), 1):
                if not raw.strip():
                    continue
                try:
                    text = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError:
                    yield InputError(source, n, "invalid UTF-8")
                    continue
                try:
                    obj = json.loads(text, parse_constant=_reject_constant)
                except (ValueError, RecursionError) as exc:
                    yield InputError(source, n, f"invalid JSON: {exc}")
                    continue
                rec = parse_record(obj, source, n, settings)
                if isinstance(rec, AnnotationRecord):
                    key = (rec.trace_id, rec.annotator, rec.annotation_id)
                    first = seen.get(key)
                    if first is not None:
                        yield InputError(source, n, f"duplicate annotation of trace {rec.trace_id!r} by {rec.annotator} (first at {first})")
                        continue
                    seen[key] = f"{source}:{n}"
                yield rec
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            yield InputError(source, None, f"cannot read: {exc}")


def running_curve(rec: AnnotationRecord, settings: AnalysisSettings) -> list:
    """Score after each annotated step, by the one score function (:func:`ls_trajeval.scoring.running_scores`)."""
    errors = tuple({st.correctness for st in rec.steps if settings.is_error(st.correctness)})
    return running_scores(rec.steps, settings.weights_for(rec), errors, settings.initial_for(rec), settings.min_for(rec))


def severity_rank_order(settings: AnalysisSettings, seen_weights: dict) -> list:
    """Severity names from least to most severe (by |weight|, then config order)."""
    order = list(settings.severity_order) + [k for k in seen_weights if k not in settings.severity_order]
    pos = {k: i for i, k in enumerate(order)}
    return sorted(order, key=lambda k: (abs(seen_weights.get(k, 0.0)), pos[k]))
