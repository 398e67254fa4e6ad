"""Where the annotators of one trace disagree, step by step, and how much: the adjudication list.

Pure: it takes the records of one trace (:mod:`.trace_groups` makes them) and returns a
:class:`TraceDisagreement`. Six things can be in dispute:

- a step's **correctness** (the annotators' labels for it differ);
- its **error type** (category and type), among the annotators who marked it an error;
- its **severity**, among those who marked it an error with a severity, by rank (least to most severe);
- its **role**, among those who marked it an error: an origin for some, propagated from an earlier wrong step
  for others (:func:`.trace_groups.roles`);
- the trace's **first error step** (a trace without errors has none; none differs from any step);
- the trace's **root-cause step** (:func:`.trace_groups.root_cause`), when it says more than the first error: it
  is in dispute only when some annotator's root cause is not their first error (otherwise it is the first-error
  dispute, counted once).

What counts as a dispute is set by :class:`Thresholds`. The **disputedness** score sorts traces, most
disputed first: for each part in dispute, the share of annotators who would have to change their answer
to make it unanimous (``1 - modal count / annotators``), summed over steps and weighted by
:class:`Thresholds` (correctness 1, error type 0.5, severity 0.25, role 0.25, first error 1, root cause 1).
Step numbers for people are the UI's ``#N``.
"""
from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..core.labels import step_number
from ..core.records import AnnotationRecord
from .settings import AnalysisSettings, severity_rank_order
from .trace_groups import first_error, iter_trace_groups, roles, root_cause, step_labels

KINDS = ("correctness", "error_type", "severity", "role")


@dataclass(frozen=True)
class Thresholds:
    """When a difference is a dispute, and how much each kind weighs in the disputedness score."""

    #: correctness is in dispute when the most common label has less than this share of the annotators
    #: (1.0: any dissent; 0.6 with three annotators: only a 1-1-1 split)
    correctness: float = 1.0
    #: the same for error types, among the annotators who marked the step an error (two or more)
    error_type: float = 1.0
    #: severities are in dispute when their ranks lie more than this many levels apart
    severity_ranks: int = 0
    #: first error steps are in dispute when they lie more than this many steps apart
    first_error_steps: int = 0
    #: root-cause steps are in dispute when they lie more than this many steps apart
    root_cause_steps: int = 0
    weight_correctness: float = 1.0
    weight_error_type: float = 0.5
    weight_severity: float = 0.25
    weight_role: float = 0.25
    weight_first_error: float = 1.0
    weight_root_cause: float = 1.0


@dataclass(frozen=True)
class AnnotatorStep:
    """One annotator's label of one step."""

    correctness: str
    error_category: str | None
    error_type: str | None
    severity: str | None
    #: a wrong step's role (``origin`` | ``propagated``), None for a correct one
    role: str | None = None

    def __str__(self) -> str:
        parts = [self.correctness]
        if self.error_category or self.error_type:
            parts.append(f"{self.error_category or '?'}/{self.error_type or '?'}")
        if self.severity:
            parts.append(self.severity)
        if self.role == "propagated":
            parts.append("propagated")
        return " ".join(parts)


@dataclass(frozen=True)
class StepDispute:
    step_index: int
    kinds: tuple  # of KINDS, in that order
    labels: dict  # annotator -> AnnotatorStep
    score: float

    @property
    def number(self) -> str:
        return step_number(self.step_index)


@dataclass
class TraceDisagreement:
    trace_id: str
    annotators: list
    n_steps: int
    steps: list  # StepDispute, in step order, only steps in dispute
    first_errors: dict  # annotator -> 0-based first error step or None
    first_error_disputed: bool
    score: float
    root_causes: dict = field(default_factory=dict)  # annotator -> 0-based root-cause step or None
    root_cause_disputed: bool = False

    @property
    def disputed(self) -> bool:
        return self.score > 0

    def count(self, kind: str) -> int:
        return sum(kind in s.kinds for s in self.steps)

    def summary(self) -> dict:
        """Flat, sortable values, keyed by :data:`ls_trajeval.core.fields.DISPUTE_FIELDS` (a review task's Data
        Manager columns, the adjudication tables); step numbers as the UI shows them."""
        return {
            "disputedness": round(self.score, 4),
            "n_annotators": len(self.annotators),
            "disputed_steps": len(self.steps),
            "correctness_disputes": self.count("correctness"),
            "error_type_disputes": self.count("error_type"),
            "severity_disputes": self.count("severity"),
            "first_error_disputed": self.first_error_disputed,
            "steps_in_dispute": ", ".join(s.number for s in self.steps),
            "first_errors": _per_annotator(self.first_errors),
            "role_disputes": self.count("role"),
            "root_cause_disputed": self.root_cause_disputed,
            "root_causes": _per_annotator(self.root_causes),
        }

    def to_json(self) -> dict:
        return {
            "trace_id": self.trace_id, "annotators": self.annotators, "n_steps": self.n_steps,
            **self.summary(),
            "steps": [{"step": s.number, "step_index": s.step_index, "kinds": list(s.kinds),
                       "score": round(s.score, 4), "labels": {w: str(lab) for w, lab in s.labels.items()}}
                      for s in self.steps],
        }


def _per_annotator(steps: dict) -> str:
    return "; ".join(f"{who}: {step_number(i) if i is not None else 'none'}" for who, i in steps.items())


def _modal_share(values: list) -> float:
    return Counter(values).most_common(1)[0][1] / len(values) if values else 1.0


def _first_error_share(firsts: list, tolerance: int) -> float:
    """Largest share of annotators whose first errors all lie within ``tolerance`` steps of each other."""
    best = 0
    for v in firsts:
        if v is None:
            n = sum(f is None for f in firsts)
        else:
            n = sum(f is not None and 0 <= f - v <= tolerance for f in firsts)
        best = max(best, n)
    return best / len(firsts) if firsts else 1.0


def find_disagreements(records: Sequence[AnnotationRecord], settings: AnalysisSettings,
                       thresholds: Thresholds = Thresholds(), severity_order: list | None = None
                       ) -> TraceDisagreement:
    """The disputes among ``records`` (one trace, one record per annotator: see ``trace_groups``).

    ``severity_order`` lists severities least to most severe; by default it comes from the records' weights.
    """
    if len({r.trace_id for r in records}) > 1:
        raise ValueError("find_disagreements takes the records of one trace")
    th = thresholds
    names = [r.annotator for r in records]
    if severity_order is None:
        weights: dict = {}
        for r in records:
            for k, v in settings.weights_for(r).items():
                weights.setdefault(k, v)
        severity_order = severity_rank_order(settings, weights)
    rank = {s: i for i, s in enumerate(severity_order)}
    per_annotator = [step_labels(r, settings) for r in records]
    role_of = [roles(r, settings) for r in records]
    n_steps = max((len(p) for p in per_annotator), default=0)
    steps = []
    for i in range(n_steps):
        labels = {names[a]: AnnotatorStep(p[i].correctness, p[i].error_category, p[i].error_type, p[i].severity,
                                          role_of[a].get(i))
                  for a, p in enumerate(per_annotator) if i < len(p)}
        if len(labels) < 2:
            continue
        kinds, score = [], 0.0
        share = _modal_share([lab.correctness for lab in labels.values()])
        if share < th.correctness:
            kinds.append("correctness")
            score += th.weight_correctness * (1 - share)
        wrong = [lab for lab in labels.values() if settings.is_error(lab.correctness)]
        if len(wrong) >= 2:
            share = _modal_share([(lab.error_category, lab.error_type) for lab in wrong])
            if share < th.error_type:
                kinds.append("error_type")
                score += th.weight_error_type * (1 - share)
            ranks = [rank[lab.severity] for lab in wrong if lab.severity in rank]
            if len(ranks) >= 2 and max(ranks) - min(ranks) > th.severity_ranks:
                kinds.append("severity")
                score += th.weight_severity * (1 - _modal_share(ranks))
            share = _modal_share([lab.role for lab in wrong])
            if share < 1.0:
                kinds.append("role")
                score += th.weight_role * (1 - share)
        if kinds:
            steps.append(StepDispute(i, tuple(kinds), labels, score))
    firsts = {r.annotator: first_error(r, settings) for r in records}
    share = _first_error_share(list(firsts.values()), th.first_error_steps)
    fe_disputed = len(records) >= 2 and share < 1.0
    total = sum(s.score for s in steps) + (th.weight_first_error * (1 - share) if fe_disputed else 0.0)
    roots = {r.annotator: root_cause(r, settings) for r in records}
    share = _first_error_share(list(roots.values()), th.root_cause_steps)
    rc_disputed = len(records) >= 2 and share < 1.0 and roots != firsts
    total += th.weight_root_cause * (1 - share) if rc_disputed else 0.0
    return TraceDisagreement(
        trace_id=records[0].trace_id if records else "", annotators=names, n_steps=n_steps, steps=steps,
        first_errors=firsts, first_error_disputed=fe_disputed, score=total, root_causes=roots,
        root_cause_disputed=rc_disputed)


def rank_disagreements(groups: Iterable[tuple], settings: AnalysisSettings,
                       thresholds: Thresholds = Thresholds(), top: int | None = None) -> list:
    """TraceDisagreement of every (trace_id, records) group with two or more annotators and any dispute,
    most disputed first (ties: more disputed steps, then trace id); with ``top`` only that many are held."""
    found = (find_disagreements(records, settings, thresholds) for _, records in groups if len(records) >= 2)
    found = (d for d in found if d.disputed)

    def key(d: TraceDisagreement) -> tuple:
        return (-d.score, -len(d.steps), d.trace_id)

    return heapq.nsmallest(top, found, key=key) if top is not None else sorted(found, key=key)


def disagreements_in(inputs: Sequence[str], settings: AnalysisSettings, thresholds: Thresholds = Thresholds(),
                     top: int | None = None, *, lines: dict | None = None, wanted: set | None = None) -> list:
    """:func:`rank_disagreements` over JSONL inputs, streaming (see ``trace_groups.iter_trace_groups`` for
    ``lines`` and ``wanted``, which save a pass when the caller has counted them)."""
    groups = iter_trace_groups(inputs, settings, min_annotators=2, lines=lines, wanted=wanted)
    return rank_disagreements(groups, settings, thresholds, top)
