"""Per-step labels: what an annotator said about each step, independent of Label Studio's layout."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

#: where a step's label came from: made by the annotator, a suggestion kept as it was, a suggestion changed
SOURCES = ("human", "accepted", "edited")
#: a wrong step's place in a chain of errors: caused by no marked step, or caused by an earlier wrong step
ROLES = ("origin", "propagated")


def step_number(step_index: int) -> str:
    """A step as people see it in Label Studio (the transcript's and the live score's ``#N``): ``#1`` for index 0.
    Everything shown to people numbers steps this way; files keep the 0-based ``step_index``."""
    return f"#{step_index + 1}"


class Span(NamedTuple):
    """Evidence inside a step: code-point offsets into the step's own ``content`` and the text between them."""

    start: int
    end: int
    text: str

    def to_json(self) -> dict:
        """The span as the export record writes it."""
        return {"start": self.start, "end": self.end, "text": self.text}


@dataclass(slots=True)
class StepLabel:
    """One step's label. Slotted: the analysis of a large export makes millions, one at a time. The sequence
    fields default to empty tuples (shared, never mutated) so a label costs no list of its own."""

    step_index: int
    correctness: str
    error_category: str | None = None
    error_type: str | None = None
    severity: str | None = None
    rationale: str | None = None
    #: the step itself, as an export record carries it (None for labels decoded from Label Studio results)
    step_type: str | None = None
    step_text: str | None = None
    #: provenance: one of :data:`SOURCES`; for ``accepted``/``edited`` the suggesting prediction's model version
    #: and the suggestion's confidence in [0, 1]
    source: str = "human"
    suggested_by: str | None = None
    confidence: float | None = None
    #: where in the step the error is (empty: the whole step)
    evidence: Sequence[Span] = ()
    #: earlier steps (``step_index``) this wrong step was caused by, and its role (:data:`ROLES`, None when correct)
    caused_by: Sequence[int] = ()
    role: str | None = None
    #: what the agent should have done at this step, when the annotator wrote it
    correction: str | None = None


@dataclass
class TraceLabels:
    """Everything one annotation says: a label for every step, and the whole-trace choices."""

    steps: list[StepLabel]
    whole_trace: dict[str, str | None] = field(default_factory=dict)
    #: things the decoder noticed but could not use (unknown choices, steps out of range, ...)
    warnings: list[str] = field(default_factory=list)
    #: suggestions the annotator removed: ``{"step_index", "error_type", "severity", "suggested_by"}`` each
    rejected_suggestions: list[dict] = field(default_factory=list)

    def errors(self, error_labels: tuple[str, ...]) -> list[StepLabel]:
        """The steps whose correctness is one of ``error_labels``."""
        return [s for s in self.steps if s.correctness in error_labels]


def resolve_causes(steps: Sequence[StepLabel], is_error: Callable[[str], bool]) -> tuple[int | None, list[str]]:
    """Check every wrong step's cause links, set its ``role``, and return the trace's root-cause step (the earliest
    origin; None without errors) with a warning for each link dropped.

    A link must point at an earlier step of the trace: one to itself, to a later step or outside the trace is
    dropped with a warning (so no cycle can remain). A wrong step is ``propagated`` when some step it is caused by
    is itself wrong, else it is an ``origin``; a correct step has no role and no links. ``is_error`` tells a wrong
    step's correctness label; ``steps`` are in ``step_index`` order."""
    warnings: list[str] = []
    wrong = {s.step_index for s in steps if is_error(s.correctness)}
    root = None
    for s in steps:
        if s.step_index not in wrong:
            if s.caused_by:
                warnings.append(f"step {step_number(s.step_index)}: is not marked wrong; its cause links are dropped")
            s.caused_by, s.role = (), None
            continue
        kept = []
        for c in s.caused_by:
            if c >= s.step_index:
                what = "itself" if c == s.step_index else f"the later step {step_number(c)}"
                warnings.append(f"step {step_number(s.step_index)}: a cause must be an earlier step, not {what}; "
                                "link dropped")
            elif c < 0:
                warnings.append(f"step {step_number(s.step_index)}: cause {c} is not a step; link dropped")
            elif c not in kept:
                kept.append(c)
        s.caused_by = tuple(sorted(kept))
        s.role = "propagated" if any(c in wrong for c in s.caused_by) else "origin"
        if s.role == "origin" and root is None:
            root = s.step_index
    return root, warnings
