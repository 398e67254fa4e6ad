"""One verdict to write back to a tracing tool, independent of the tool (pure): what ``flows/verdicts.py`` makes from
the project's labels and each tool's client turns into its own payload."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

HUMAN = "HUMAN"


@dataclass(frozen=True)
class Verdict:
    """A label on a trace (``span_id`` None) or on one step's span or observation.

    ``key`` names the verdict for good (the same label of the same step by the same annotator keeps its key across
    runs), so a tool can replace it in place; ``who`` is the annotator's email or ``gold``.
    """

    key: str
    trace_id: str
    span_id: str | None
    name: str
    who: str
    label: str | None = None
    score: float | None = None
    explanation: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def identifier(self) -> str:
        """The name the verdict goes by in the tool (Phoenix's annotation ``identifier``): unique per key."""
        return f"ls-trajeval:{self.key}"

    def payload(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "span_id": self.span_id, "name": self.name, "who": self.who,
                "label": self.label, "score": self.score, "explanation": self.explanation, "metadata": self.metadata}

    def digest(self) -> str:
        """Changes when anything sent changes, only then."""
        return hashlib.sha256(json.dumps(self.payload(), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class DeliveryError(RuntimeError):
    """A request the tool refused or that did not get through; ``retry`` when sending it again may succeed
    (a timeout, a 429 or a 5xx), not when the tool said no (another 4xx)."""

    def __init__(self, message: str, retry: bool):
        super().__init__(message)
        self.retry = retry
