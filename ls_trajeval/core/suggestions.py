"""Suggestions (a judge's per-step labels, stored as Label Studio predictions) as the review works with them: what a
task's suggestions are least sure of, and several judges' suggestions merged into one per step.

A *suggestion* is a step label a judge gave: a mark (any correctness but the default), or a step it called correct
with a confidence (an LLM judge's verdict on every step; the paged layout keeps those in a prediction, the transcript
layout only its marks). Its confidence is :attr:`StepLabel.confidence`; one without (a rule detector's mark) is
unknown, which counts as the least sure: reviewed first, never accepted unreviewed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .config import TrajectoryScheme
from .fields import LEAST_CONFIDENCE, LEAST_CONFIDENT_STEP, SUGGESTIONS_BY
from .labels import StepLabel, TraceLabels, step_number


def is_suggestion(step: StepLabel, scheme: TrajectoryScheme) -> bool:
    """A mark, or a verdict that carries a confidence."""
    return step.correctness != scheme.correctness_default or step.confidence is not None


def least_confident(steps: Sequence[StepLabel], scheme: TrajectoryScheme) -> tuple[float, int] | None:
    """(confidence, step_index) of the least confident suggestion, the earlier step on a tie; a suggestion without
    a confidence counts as 0. None when there is no suggestion at all."""
    found = [(s.confidence if s.confidence is not None else 0.0, s.step_index) for s in steps
             if is_suggestion(s, scheme)]
    return min(found) if found else None


def suggestion_fields(labels: TraceLabels, scheme: TrajectoryScheme, model_version: str) -> dict:
    """The task-data fields that describe a task's suggestions (:data:`~.fields.SUGGESTION_FIELDS`); None where it
    has none."""
    least = least_confident(labels.steps, scheme)
    return {LEAST_CONFIDENCE: least[0] if least else None,
            LEAST_CONFIDENT_STEP: step_number(least[1]) if least else None,
            SUGGESTIONS_BY: model_version}


def merge(judges: Sequence[tuple[str, TraceLabels]], n_steps: int, scheme: TrajectoryScheme,
          default_confidence: Mapping[str, float] | None = None) -> TraceLabels:
    """One suggestion per step from several judges' (``(model_version, labels)``, in order of preference).

    Per step the most confident of the judges' suggestions wins; it names the judge that made it
    (``suggested_by``: its own, when it comes from an earlier merge, else the model version). A suggestion without a
    confidence takes the judge's ``default_confidence`` when given (e.g. a rule detector's precision measured by
    ``align``), else ranks below every suggestion with one. Ties go to the judge listed first. A step no judge
    suggests anything for keeps the default label. A whole-trace label comes from the first judge that gives one.
    """
    defaults = default_confidence or {}
    best: dict[int, tuple[float, int, StepLabel]] = {}
    whole: dict[str, str | None] = {}
    for order, (version, labels) in enumerate(judges):
        for step in labels.steps:
            if not (0 <= step.step_index < n_steps) or not is_suggestion(step, scheme):
                continue
            confidence = step.confidence if step.confidence is not None else defaults.get(version)
            rank = confidence if confidence is not None else -1.0
            held = best.get(step.step_index)
            if held is None or (rank, -order) > (held[0], -held[1]):
                best[step.step_index] = (rank, order, replace(step, confidence=confidence,
                                                              suggested_by=step.suggested_by or version))
        for name, value in labels.whole_trace.items():
            if value is not None:
                whole.setdefault(name, value)
    steps = [best[i][2] if i in best else StepLabel(i, scheme.correctness_default) for i in range(n_steps)]
    return TraceLabels(steps, whole)
