"""Per-step labels: what an annotator said about each step, independent of Label Studio's layout."""
from __future__ import annotations

from dataclasses import dataclass, field


def step_number(step_index: int) -> str:
    """A step as people see it in Label Studio (the transcript's and the live score's ``#N``): ``#1`` for index 0.
    Everything shown to people numbers steps this way; files keep the 0-based ``step_index``."""
    return f"#{step_index + 1}"


@dataclass(slots=True)
class StepLabel:
    """One step's label. Slotted: the analysis of a large export makes millions, one at a time."""

    step_index: int
    correctness: str
    error_category: str | None = None
    error_type: str | None = None
    severity: str | None = None
    rationale: str | None = None
    #: the step itself, as an export record carries it (None for labels decoded from Label Studio results)
    step_type: str | None = None
    step_text: str | None = None


@dataclass
class TraceLabels:
    """Everything one annotation says: a label for every step, and the whole-trace choices."""

    steps: list[StepLabel]
    whole_trace: dict[str, str | None] = field(default_factory=dict)
    #: things the decoder noticed but could not use (unknown choices, steps out of range, ...)
    warnings: list[str] = field(default_factory=list)

    def errors(self, error_labels: tuple[str, ...]) -> list[StepLabel]:
        """The steps whose correctness is one of ``error_labels``."""
        return [s for s in self.steps if s.correctness in error_labels]
