"""What every converter is: a name, a detector and a streaming converter to the trace model."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Union

from ls_trajeval.core.trace import Trace, TraceError

ConvertResult = Union[Trace, TraceError]


@dataclass
class Sample:
    """What a detector sees of one input file: its path, first bytes, and its first decoded JSON value(s)."""

    path: Path
    head: str  # the first ~64 KiB of text
    first_json: Any = None  # the whole file parsed as JSON if small, else None
    first_records: list = field(default_factory=list)  # first JSONL records when the file is JSONL


@dataclass
class Converter:
    name: str
    description: str
    #: the file shapes it recognises, for ``ls-trajeval formats``
    shapes: str
    #: returns a confidence in [0, 1]; 0 means "not mine"
    detect: Callable[[Sample], float]
    #: streams traces (or located errors) out of one file
    convert: Callable[[Path], Iterator[ConvertResult]]


@dataclass(frozen=True)
class ConvertWarning:
    """Something converted with a loss worth telling (an unknown record kind kept as a fallback step, ...).

    Converters yield these beside traces; the caller counts them and prints a summary at the end.
    """

    source: str
    record: str | None
    message: str

    def __str__(self) -> str:
        where = self.source + (f":{self.record}" if self.record else "")
        return f"{where}: {self.message}"
