"""Annotations grouped per trace: the unit that disagreement, gold labels and judge alignment work on.

One annotator's later line of a trace replaces their earlier one (the newer decision), as in
:mod:`.agreement`. Step numbers shown to people are the UI's ``#N`` (``step_index + 1``,
:func:`ls_trajeval.core.labels.step_number`).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from ..core.labels import StepLabel
from ..core.records import AnnotationRecord
from ..core.trace import TraceError
from .settings import AnalysisSettings, read


def latest_per_annotator(records: Iterable[AnnotationRecord]) -> list[AnnotationRecord]:
    """One record per annotator, the later one winning, in the order annotators first appear."""
    out: dict = {}
    for rec in records:
        out[rec.annotator] = rec
    return list(out.values())


def group_by_trace(records: Iterable[AnnotationRecord]) -> dict:
    """trace_id -> that trace's records (latest per annotator), in first-appearance order."""
    groups: dict = {}
    for rec in records:
        groups.setdefault(rec.trace_id, []).append(rec)
    return {t: latest_per_annotator(rs) for t, rs in groups.items()}


def iter_trace_groups(inputs: Sequence[str], settings: AnalysisSettings, *, min_annotators: int = 1,
                      on_error: Callable[[TraceError], None] | None = None,
                      lines: Mapping[str, int] | None = None, wanted: set | None = None) -> Iterator[tuple]:
    """(trace_id, records) for every trace with at least ``min_annotators`` annotators, streaming.

    Reads the inputs twice: first to count each trace's lines and annotators, then to hand out each
    trace as soon as its last line is read, so only unfinished traces are held in memory. Rejected lines
    go to ``on_error`` once (the first pass). A caller that has read the inputs already passes ``lines``
    (trace_id -> valid lines) and ``wanted`` (the trace ids to hand out) and saves the first pass.
    """
    if lines is None:
        lines = Counter()
        annotators: dict = {}
        for item in read(inputs, settings):
            if isinstance(item, TraceError):
                if on_error:
                    on_error(item)
                continue
            lines[item.trace_id] += 1
            annotators.setdefault(item.trace_id, set()).add(item.annotator)
        wanted = {t for t, a in annotators.items() if len(a) >= min_annotators}
        del annotators
    elif wanted is None:
        wanted = set(lines)
    pending: dict = {}
    for item in read(inputs, settings):
        if isinstance(item, TraceError) or item.trace_id not in wanted:
            continue
        held = pending.setdefault(item.trace_id, [])
        held.append(item)
        if len(held) == lines[item.trace_id]:
            del pending[item.trace_id]
            yield item.trace_id, latest_per_annotator(held)


def step_labels(rec: AnnotationRecord, settings: AnalysisSettings) -> list:
    """The record's label for every step 0..n_steps-1; a step the record does not list is the default label
    (the transcript layout and a judge that lists only its findings both leave correct steps out)."""
    default = settings.correct_labels[0]
    out: list = [None] * rec.n_steps
    for st in rec.steps:
        out[st.step_index] = st
    return [st if st is not None else StepLabel(i, default) for i, st in enumerate(out)]


def first_error(rec: AnnotationRecord, settings: AnalysisSettings) -> int | None:
    """0-based index of the record's first error step, or None when it marks none."""
    return next((st.step_index for st in rec.steps if settings.is_error(st.correctness)), None)


def roles(rec: AnnotationRecord, settings: AnalysisSettings) -> dict:
    """Each wrong step's role, step_index -> ``origin`` | ``propagated``: as the record writes it, else from its cause
    links (propagated when it was caused by a wrong step), so a record without the added keys has only origins."""
    wrong = {st.step_index for st in rec.steps if settings.is_error(st.correctness)}
    return {st.step_index: st.role or ("propagated" if any(c in wrong for c in st.caused_by) else "origin")
            for st in rec.steps if st.step_index in wrong}


def root_cause(rec: AnnotationRecord, settings: AnalysisSettings) -> int | None:
    """The record's root-cause step: its ``root_cause_step`` as written, else (a record without the key) its
    earliest origin; None when it marks no error."""
    if rec.root_cause_step is not None:
        return rec.root_cause_step
    return min((i for i, role in roles(rec, settings).items() if role == "origin"), default=None)
