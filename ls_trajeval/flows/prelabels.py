"""Labels that already exist with the traces, as Label Studio predictions to review and adjudicate.

Three sources: Who&When records (``mistake_step`` / ``mistake_agent`` / ``mistake_reason`` kept in
trace metadata by the ``multi_agent`` converter), TRAIL-style span errors (``errors`` with
``category``, ``location``, ``evidence``, ``impact``, and ``error_steps`` mapping a span to its steps, kept by
the ``openinference`` converter), and a previous ``trajectory_eval`` export. Foreign category and
impact names go through the config's ``prelabels`` mapping; what does not map is reported.

Who&When's mistake step is the decisive one: it is marked as an origin (caused by no marked step), so it is the
root cause. A TRAIL error's evidence is looked for in the ``content`` of its span's steps, in order: as written,
else with any run of white space matching any other and letters in either case. The step that holds it gets
the mark, with the evidence as a span (code-point offsets into its content); when no step holds it, the span's
first step gets a whole-step mark and the problem is reported. A previous export's evidence, cause links and
corrections come along with its labels.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import records, results
from ..core.config import Config, TrajectoryScheme
from ..core.fields import N_STEPS, SUGGESTED, TRANSCRIPT
from ..core.jsonfiles import read_lines
from ..core.labels import Span, StepLabel, TraceLabels, resolve_causes, step_number
from ..core.scoring import summarize
from ..core.suggestions import beside, merge
from ..core.trace import Trace, TraceError
from ..core.windows import Window, labels_in, window_of

#: TRAIL's impact levels, used when the config maps none of them
DEFAULT_IMPACT = {"HIGH": "critical", "MEDIUM": "major", "LOW": "minor"}


@dataclass
class Prelabel:
    source: str  # who_and_when | trail | export:<annotator>
    labels: TraceLabels
    problems: list[str] = field(default_factory=list)
    #: the earliest origin among the marks, None without any
    root_cause_step: int | None = None


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
        return name is not None and name != "" and (self.scheme.type_by_name(name) is not None
                                                     or name in self.pm.type_map)

    def severity_for(self, name: str | None) -> str | None:
        if name and self.scheme.severity_by_name(name):
            return name
        if name:
            mapped = self.pm.severity_map.get(name) or self.pm.severity_map.get(name.upper())
            default = DEFAULT_IMPACT.get(name.upper())
            if mapped is None and default is not None and self.scheme.severity_by_name(default):
                mapped = default
            if mapped:
                return mapped
        return self.pm.default_severity


def _prelabel(source: str, n: int, marks: dict[int, StepLabel], scheme: TrajectoryScheme, problems: list[str],
              whole: dict | None = None) -> Prelabel:
    """A prelabel of ``n`` steps, ``marks`` where given and the default label elsewhere, with each mark's role and
    the root cause set (:func:`~ls_trajeval.core.labels.resolve_causes`; a link it drops is a problem)."""
    steps = [marks.get(i, StepLabel(i, scheme.correctness_default)) for i in range(n)]
    root, dropped = resolve_causes(steps, scheme.error_labels.__contains__)
    return Prelabel(source, TraceLabels(steps, whole or {}), problems + dropped, root)


def find_evidence(content: str, evidence: str) -> Span | None:
    """Where ``evidence`` is in ``content``: as written, else with white space and letter case free; None when it
    is not there."""
    start = content.find(evidence)
    if start >= 0 and evidence:
        return Span(start, start + len(evidence), evidence)
    words = evidence.split()
    if not words:
        return None
    m = re.search(r"\s+".join(map(re.escape, words)), content, re.IGNORECASE)
    return Span(m.start(), m.end(), m.group()) if m else None


def _locate(trace: Trace, where: list, evidence, location) -> tuple[int, Span | None, str | None]:
    """(the step a TRAIL error goes on, its evidence span or None, a problem or None): the first of the span's
    steps whose content holds the evidence, else the span's first step."""
    steps = [int(i) for i in where]
    if evidence is None or evidence == "":
        return steps[0], None, None
    if not isinstance(evidence, str):
        return steps[0], None, (f"error at {location!r}: evidence is not text; whole-step mark on "
                                f"{step_number(steps[0])}")
    for i in steps:
        if 0 <= i < len(trace.steps):
            span = find_evidence(trace.steps[i].content, evidence)
            if span is not None:
                return i, span, None
    shown = evidence if len(evidence) <= 60 else evidence[:57] + "..."
    return steps[0], None, (f"error at {location!r}: evidence {shown!r} not found in "
                            f"{', '.join(step_number(i) for i in steps)}; whole-step mark on {step_number(steps[0])}")


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
            # the decisive step: caused by no marked step, so an origin and the root cause
            mark = StepLabel(step, wrong, etype.category if etype else None, etype.name if etype else None,
                             m.severity_for(None), f"Who&When: {reason}" if reason else "Who&When mistake step")
            out.append(_prelabel("who_and_when", n, {step: mark}, scheme, problems))
        else:
            outside = f"mistake_step {step} is outside the trace's {n} steps"
            out.append(_prelabel("who_and_when", n, {}, scheme, [outside]))
    errors = meta.get("errors")
    if isinstance(errors, list) and errors:
        found = meta.get("error_steps")
        spans: dict = found if isinstance(found, dict) else {}
        marks: dict[int, StepLabel] = {}
        problems = []
        rank: dict[str | None, float] = {s.name: s.deduction for s in scheme.severities}
        for err in errors:
            if not isinstance(err, dict):
                continue
            where = spans.get(str(err.get("location")))
            if not where:
                problems.append(f"error at {err.get('location')!r} matches no step")
                continue
            step, evidence, problem = _locate(trace, where, err.get("evidence"), err.get("location"))
            if problem:
                problems.append(problem)
            category = err.get("category")
            etype = m.type_for(category)
            if not m.maps(category):
                problems.append(f"unmapped category {category!r}: add it to prelabels.type_map")
            severity = m.severity_for(err.get("impact"))
            text = " — ".join(str(err[k]) for k in ("category", "description", "evidence") if err.get(k))
            mark = StepLabel(step, wrong, etype.category if etype else None, etype.name if etype else None,
                             severity, f"TRAIL: {text}" if text else None,
                             evidence=(evidence,) if evidence is not None else ())
            old = marks.get(step)
            if old is None or rank.get(severity, -1) > rank.get(old.severity, -1):
                marks[step] = mark
        if marks or problems:
            out.append(_prelabel("trail", n, marks, scheme, problems))
    return out


def read_export(path: str | Path, config: Config) -> Iterator[tuple[str, Prelabel] | TraceError]:
    """(trace_id, Prelabel) for each record of a previous trajectory_eval export, with its evidence, cause links
    and corrections."""
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
                                             etype.name if etype else None, m.severity_for(st.severity), st.rationale,
                                             evidence=st.evidence, caused_by=st.caused_by, correction=st.correction)
        whole = {r.name: rec.labels[r.name] for r in config.whole_trace if rec.labels.get(r.name) is not None}
        yield rec.trace_id, _prelabel(f"export:{rec.annotator}", rec.n_steps, marks, scheme, problems, whole)


def prediction(pre: Prelabel, config: Config, layout: str, task_data: dict, suggested: bool = False) -> dict:
    """A Label Studio prediction in the project's layout; its score is the running score it implies."""
    return as_prediction(pre.labels, f"prelabels-{pre.source}", config, layout, task_data, suggested)


def as_prediction(labels: TraceLabels, model_version: str, config: Config, layout: str, task_data: dict,
                  suggested: bool = False) -> dict:
    """Labels as a Label Studio prediction of ``model_version`` in the project's layout (the shapes the UI saves,
    the review box left to the annotator); its score is the running score the labels imply. ``suggested``: its
    marks are undecided suggestions for the annotator to accept or reject (a workbench with the suggestion label,
    :func:`~ls_trajeval.core.labelconfig.shows_suggestions`)."""
    n = task_data[N_STEPS]
    steps = labels.steps[:n]
    labels = TraceLabels(steps + [StepLabel(i, config.trajectory.correctness_default)
                                  for i in range(len(steps), n)], labels.whole_trace)
    return {
        "model_version": model_version,
        "score": summarize(labels.steps, config.trajectory).final,
        "result": results.encode(labels, config, layout, task_data.get(TRANSCRIPT), origin="prediction",
                                 confirm_review=False, suggested=suggested,
                                 texts=results.step_texts(task_data, config),
                                 first_step=window.start if (window := window_of(task_data)) else 0),
    }


class Prelabeler:
    """Called by the importer for each trace: its predictions, with problems collected for the summary."""

    def __init__(self, config: Config, layout: str, exports: Sequence[str | Path] = (), suggested: bool = False):
        self.config = config
        self.layout = layout
        self.suggested = suggested
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

    def __call__(self, trace: Trace, task_data: dict, window: Window | None = None) -> list[dict]:
        """The trace's predictions; where annotators start from a blank trace, its task data gets them to show beside
        the steps. For a window task (``window``), its steps' labels."""
        found = from_metadata(trace, self.config) + self.by_trace.get(trace.trace_id, [])
        if window is not None:
            found = [Prelabel(pre.source, labels_in(pre.labels, window), pre.problems if window.index == 0 else [],
                              pre.root_cause_step) for pre in found]
        out = []
        for pre in found:
            self.problems.extend(f"{trace.trace_id}: {p}" for p in pre.problems)
            out.append(prediction(pre, self.config, self.layout, task_data, self.suggested))
        self.count += len(out)
        if found and not self.config.suggestions.prelabel:  # shown beside the steps of a blank trace
            judges = [(f"prelabels-{pre.source}", pre.labels) for pre in found]
            task_data[SUGGESTED] = beside(merge(judges, task_data[N_STEPS], self.config.trajectory), self.config,
                                          ", ".join(version for version, _ in judges))
        return out
