"""Labels that already exist with the traces, as Label Studio predictions to review and adjudicate.

Three sources: Who&When records (``mistake_step`` / ``mistake_agent`` / ``mistake_reason`` kept in
trace metadata by the ``multi_agent`` converter), TRAIL-style span errors (``errors`` with
``category``, ``location``, ``impact``, and ``error_steps`` mapping a span to its steps, kept by the
``openinference`` converter), and a previous ``trajectory_eval`` export. Foreign category and
impact names go through the config's ``prelabels`` mapping; what does not map is reported.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..core import records, results
from ..core.config import Config
from ..core.fields import N_STEPS, TRANSCRIPT
from ..core.jsonfiles import read_lines
from ..core.labels import StepLabel, TraceLabels
from ..core.scoring import summarize
from ..core.trace import Trace, TraceError

#: TRAIL's impact levels, used when the config maps none of them
DEFAULT_IMPACT = {"HIGH": "critical", "MEDIUM": "major", "LOW": "minor"}


@dataclass
class Prelabel:
    source: str  # who_and_when | trail | export:<annotator>
    labels: TraceLabels
    problems: list[str] = field(default_factory=list)


class _Mapper:
    def __init__(self, config: Config):
        self.config = config
        self.scheme = config.trajectory
        self.pm = config.prelabels
        self.unmapped: list[str] = []

    def type_for(self, *names: str | None):
        """Our ErrorType for the first foreign name that maps (own names map to themselves)."""
        for name in names:
            if not name:
                continue
            own = self.scheme.type_by_name(name) or self.scheme.type_by_name(self.pm.type_map.get(name, ""))
            if own is not None:
                return own
        if self.pm.default_type:
            return self.scheme.type_by_name(self.pm.default_type)
        return None

    def maps(self, name: str | None) -> bool:
        """Whether a foreign name maps by itself (without falling back to the default type)."""
        return bool(name) and (self.scheme.type_by_name(name) is not None or name in self.pm.type_map)

    def severity_for(self, name: str | None) -> str | None:
        if name and self.scheme.severity_by_name(name):
            return name
        if name:
            mapped = self.pm.severity_map.get(name) or self.pm.severity_map.get(name.upper())
            if mapped is None and name.upper() in DEFAULT_IMPACT and self.scheme.severity_by_name(DEFAULT_IMPACT[name.upper()]):
                mapped = DEFAULT_IMPACT[name.upper()]
            if mapped:
                return mapped
        return self.pm.default_severity


def _steps(n: int, marks: dict[int, StepLabel], default: str) -> list[StepLabel]:
    return [marks.get(i, StepLabel(i, default)) for i in range(n)]


def from_metadata(trace: Trace, config: Config) -> list[Prelabel]:
    """Predictions from labels a converter kept in the trace's metadata."""
    m = _Mapper(config)
    scheme = m.scheme
    wrong = scheme.error_labels[0]
    meta = trace.metadata or {}
    n = len(trace.steps)
    out = []
    if isinstance(meta.get("mistake_step"), int) and not isinstance(meta.get("mistake_step"), bool):
        step, problems = meta["mistake_step"], []
        if 0 <= step < n:
            # a config can map the responsible agent to a type (label_configs/who_and_when.yaml does)
            etype = m.type_for(meta.get("mistake_type"), meta.get("mistake_agent"))
            if etype is None:
                problems.append("Who&When names no error type: set prelabels.default_type to pre-fill one")
            reason = " — ".join(str(x) for x in (meta.get("mistake_agent"), meta.get("mistake_reason")) if x)
            mark = StepLabel(step, wrong, etype.category if etype else None, etype.name if etype else None,
                             m.severity_for(None), f"Who&When: {reason}" if reason else "Who&When mistake step")
            out.append(Prelabel("who_and_when", TraceLabels(_steps(n, {step: mark}, scheme.correctness_default)),
                                problems))
        else:
            out.append(Prelabel("who_and_when", TraceLabels(_steps(n, {}, scheme.correctness_default)),
                                [f"mistake_step {step} is outside the trace's {n} steps"]))
    errors = meta.get("errors")
    if isinstance(errors, list) and errors:
        spans = meta.get("error_steps") if isinstance(meta.get("error_steps"), dict) else {}
        marks: dict[int, StepLabel] = {}
        problems = []
        rank = {s.name: s.deduction for s in scheme.severities}
        for err in errors:
            if not isinstance(err, dict):
                continue
            where = spans.get(str(err.get("location")))
            if not where:
                problems.append(f"error at {err.get('location')!r} matches no step")
                continue
            step = int(where[0])  # a span's first step: the call or the reasoning that went wrong
            category = err.get("category")
            etype = m.type_for(category)
            if not m.maps(category):
                problems.append(f"unmapped category {category!r}: add it to prelabels.type_map")
            severity = m.severity_for(err.get("impact"))
            text = " — ".join(str(err[k]) for k in ("category", "description", "evidence") if err.get(k))
            mark = StepLabel(step, wrong, etype.category if etype else None, etype.name if etype else None,
                             severity, f"TRAIL: {text}" if text else None)
            old = marks.get(step)
            if old is None or rank.get(severity, -1) > rank.get(old.severity, -1):
                marks[step] = mark
        if marks:
            out.append(Prelabel("trail", TraceLabels(_steps(n, marks, scheme.correctness_default)), problems))
        elif problems:
            out.append(Prelabel("trail", TraceLabels(_steps(n, {}, scheme.correctness_default)), problems))
    return out


def read_export(path: str | Path, config: Config) -> Iterator[tuple[str, Prelabel] | TraceError]:
    """(trace_id, Prelabel) for each record of a previous trajectory_eval export."""
    m = _Mapper(config)
    scheme = m.scheme
    source = str(path)
    for item in read_lines(path):
        if isinstance(item, TraceError):
            yield item
            continue
        n, obj = item
        rec = records.parse_record(obj, source, n, default_correctness=scheme.correctness_default)
        if isinstance(rec, TraceError):
            yield TraceError(source, n, "scheme", f"not a trajectory_eval export line ({rec.detail})")
            continue
        problems, marks = [], {}
        for st in rec.steps:
            corr = st.correctness
            if corr == scheme.correctness_default or corr not in scheme.correctness_labels:
                if corr not in scheme.correctness_labels:
                    problems.append(f"step {st.step_index}: unknown correctness {corr!r}")
                continue
            etype = m.type_for(st.error_type, st.error_category)
            if st.error_type and not (m.maps(st.error_type) or m.maps(st.error_category)):
                problems.append(f"unmapped type {st.error_type!r}: add it to prelabels.type_map")
            marks[st.step_index] = StepLabel(st.step_index, corr, etype.category if etype else None,
                                             etype.name if etype else None, m.severity_for(st.severity), st.rationale)
        whole = {r.name: rec.labels[r.name] for r in config.whole_trace if rec.labels.get(r.name) is not None}
        labels = TraceLabels(_steps(rec.n_steps, marks, scheme.correctness_default), whole)
        yield rec.trace_id, Prelabel(f"export:{rec.annotator}", labels, problems)


def prediction(pre: Prelabel, config: Config, layout: str, task_data: dict) -> dict:
    """A Label Studio prediction in the project's layout; its score is the running score it implies."""
    return as_prediction(pre.labels, f"prelabels-{pre.source}", config, layout, task_data)


def as_prediction(labels: TraceLabels, model_version: str, config: Config, layout: str, task_data: dict) -> dict:
    """Labels as a Label Studio prediction of ``model_version`` in the project's layout (the shapes the UI saves,
    the review box left to the annotator); its score is the running score the labels imply."""
    n = task_data[N_STEPS]
    steps = labels.steps[:n]
    labels = TraceLabels(steps + [StepLabel(i, config.trajectory.correctness_default)
                                  for i in range(len(steps), n)], labels.whole_trace)
    return {
        "model_version": model_version,
        "score": summarize(labels.steps, config.trajectory).final,
        "result": results.encode(labels, config, layout, task_data.get(TRANSCRIPT), origin="prediction",
                                 confirm_review=False),
    }


class Prelabeler:
    """Called by the importer for each trace: its predictions, with problems collected for the summary."""

    def __init__(self, config: Config, layout: str, exports: list[str | Path] = ()):
        self.config = config
        self.layout = layout
        self.problems: list[str] = []
        self.errors: list[TraceError] = []
        self.count = 0
        self.by_trace: dict[str, list[Prelabel]] = {}
        for path in exports:
            for item in read_export(path, config):
                if isinstance(item, TraceError):
                    self.errors.append(item)
                else:
                    self.by_trace.setdefault(item[0], []).append(item[1])

    def __call__(self, trace: Trace, task_data: dict) -> list[dict]:
        found = from_metadata(trace, self.config) + self.by_trace.get(trace.trace_id, [])
        out = []
        for pre in found:
            self.problems.extend(f"{trace.trace_id}: {p}" for p in pre.problems)
            out.append(prediction(pre, self.config, self.layout, task_data))
        self.count += len(out)
        return out
