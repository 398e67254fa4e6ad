"""Converting agent logs to trace JSONL: the Python API behind ``ls-trajeval convert``.

>>> for item in convert_inputs(["logs/"], "auto"):
...     if isinstance(item, Trace): ...

``convert_inputs`` is a plain generator of :class:`Trace`, :class:`TraceError` and
:class:`ConvertWarning` values, file by file and record by record, so memory stays bounded by
one record (one session for formats that must reorder a file, such as Claude Code) and the run's trace ids.
A trace whose id an earlier one of the run has is refused (a located error), as import would refuse it.

With ``jobs`` above 1 and several files, files are converted in worker processes
(:mod:`ls_trajeval.converters.parallel`) with the same output. What converts one file, and tells its format, is
:func:`ls_trajeval.converters.detection.convert_file`; the converters themselves are in ``ls_trajeval.converters``.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ls_trajeval.converters.base import ConvertItem, ConvertWarning, TraceIds
from ls_trajeval.converters.detection import FormatError, convert_file, detect_format
from ls_trajeval.converters.parallel import SpooledTrace, in_workers
from ls_trajeval.converters.registry import get_converter
from ls_trajeval.core.jsonfiles import dumps_line, expand_inputs
from ls_trajeval.core.trace import Trace, TraceError

__all__ = ["ConvertItem", "ConvertStats", "ConvertWarning", "FormatError", "PARALLEL_MIN_BYTES", "convert_file",
           "convert_inputs", "detect_format", "trace_line", "write_traces"]

#: below this much input in all, starting worker processes costs more than it saves
PARALLEL_MIN_BYTES = 1 << 20


@dataclass
class ConvertStats:
    """What a conversion did: files read, traces converted and rejected, warnings, traces per format."""

    files: int = 0
    converted: int = 0
    rejected: int = 0
    warnings: int = 0
    by_format: Counter = field(default_factory=Counter)

    def count(self, item: ConvertItem) -> None:
        if isinstance(item, Trace):
            self.converted += 1
        elif isinstance(item, TraceError):
            self.rejected += 1
        else:
            self.warnings += 1


def convert_inputs(
    inputs: Iterable[str | Path],
    fmt: str = "auto",
    stats: ConvertStats | None = None,
    jobs: int | None = None,
) -> Iterator[ConvertItem]:
    """Every file of the inputs (directories recursively, ``.gz`` and ``.eval`` zips included).

    ``fmt`` is a format name or ``"auto"`` (detected per file). Unknown names raise KeyError
    up front, before any file is read. ``jobs`` is the number of processes (default: one per
    CPU); the output is the same whatever it is.
    """
    if fmt not in (None, "", "auto"):
        get_converter(fmt)
    paths: list[Path] = []
    for item in expand_inputs(inputs):
        if isinstance(item, TraceError):  # a path that is not there: its error first, in its place
            if stats is not None:
                stats.count(item)
            yield item
        else:
            paths.append(item)
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    ids = TraceIds()
    if jobs > 1 and len(paths) > 1 and _total_size(paths) >= PARALLEL_MIN_BYTES:
        per_file = (_checked(items, ids) for items in in_workers(paths, fmt or "auto", min(jobs, len(paths))))
    else:
        per_file = (convert_file(p, fmt, ids) for p in paths)
    for items in per_file:
        if stats is not None:
            stats.files += 1
        for item in items:
            if stats is not None:
                stats.count(item)
                if isinstance(item, Trace):
                    stats.by_format[item.source_format if isinstance(item, SpooledTrace) else
                                    item.metadata.get("source_format", fmt)] += 1
            yield item


def _checked(items: Iterator[ConvertItem], ids: TraceIds) -> Iterator[ConvertItem]:
    """A worker's items, each trace's id checked against the other files' (the worker checked its own file's)."""
    for item in items:
        if isinstance(item, SpooledTrace):
            dup = ids.claim(item.trace_id, item.origin)
            if dup is not None:
                item = dup
        yield item


def _total_size(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def trace_line(trace: Trace) -> bytes:
    """A trace as its line of trace JSONL (UTF-8, newline-terminated)."""
    if isinstance(trace, SpooledTrace):
        return trace.json_line
    return dumps_line(trace.to_json())


def write_traces(items: Iterable[ConvertItem], fh: IO[str],
                 on_problem: Callable[[TraceError | ConvertWarning], None] | None = None) -> ConvertStats:
    """Write the traces as trace JSONL; pass errors and warnings to ``on_problem``; return counts."""
    stats = ConvertStats()
    # the bytes go straight to the binary buffer when there is one (no decode and re-encode)
    raw = getattr(fh, "buffer", None)
    if raw is not None:
        fh.flush()
    for item in items:
        stats.count(item)
        if isinstance(item, Trace):
            if raw is not None:
                raw.write(trace_line(item))
            else:
                fh.write(trace_line(item).decode("utf-8"))
        elif on_problem is not None:
            on_problem(item)
    return stats
