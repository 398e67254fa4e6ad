"""The running score: the one function that turns step labels into a per-trace quality curve."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .labels import StepLabel

if TYPE_CHECKING:  # the config model (and PyYAML) load on first use, not with every CLI command
    from .config import TrajectoryScheme


@dataclass(frozen=True)
class ScoreSummary:
    """A trace's running score after each step and the per-trace figures derived from it."""
    curve: list[float]  # the score after each step
    final: float
    n_errors: int
    first_error_step: int | None
    worst_severity: str | None


def running_scores(
    steps: Sequence[StepLabel],
    weights: Mapping[str, float],
    error_labels: Sequence[str],
    initial: float = 100.0,
    minimum: float = 0.0,
) -> list[float]:
    """Score after each step: ``initial`` minus |weight| of every error step's severity, floored at ``minimum``.

    A step counts when its correctness is one of ``error_labels`` (so a partially-correct step with a
    severity costs points, as in Potato); an error step without a severity, or with one the weights do
    not know, costs nothing. The magnitude of a weight is used, so ``-5`` and ``5`` both cost 5.
    """
    score = float(initial)
    curve = []
    for step in steps:
        if step.correctness in error_labels and step.severity is not None:
            score = max(minimum, score - abs(float(weights.get(step.severity, 0.0))))
        curve.append(score)
    return curve


def summarize(steps: Sequence[StepLabel], scheme: TrajectoryScheme) -> ScoreSummary:
    """The score curve and the per-trace figures shown in Label Studio and written to the export."""
    errors = scheme.error_labels
    rs = scheme.running_score
    curve = running_scores(steps, scheme.weights, errors, rs.initial, rs.min)
    wrong = [s for s in steps if s.correctness in errors]
    rank = {s.name: s.deduction for s in scheme.severities}
    worst = max((s.severity for s in wrong if s.severity in rank), key=lambda n: rank[n], default=None)
    return ScoreSummary(
        curve=curve,
        final=curve[-1] if curve else float(rs.initial),
        n_errors=len(wrong),
        first_error_step=min((s.step_index for s in wrong), default=None),
        worst_severity=worst,
    )


def share_kept(final: float, scheme: TrajectoryScheme) -> float:
    """A final score as the share of the score's range it keeps: 1 with nothing deducted, 0 at the floor. Label
    Studio shows a prediction's score as a percentage of 1 ("0.95" reads "95.00%")."""
    rs = scheme.running_score
    span = rs.initial - rs.min
    return (final - rs.min) / span if span > 0 else 1.0
