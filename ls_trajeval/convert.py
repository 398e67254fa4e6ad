"""Converting agent logs to trace JSONL: the Python API behind ``ls-trajeval convert``.

>>> for item in convert_inputs(["logs/"], "auto"):
...     if isinstance(item, Trace): ...

``convert_inputs`` is a plain generator of :class:`Trace`, :class:`TraceError` and
:class:`ConvertWarning` values, file by file and record by record, so memory stays bounded by
one record (one session for formats that must reorder a file, such as Claude Code).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Iterator, Union

import orjson

from ls_trajeval.converters.base import Converter, ConvertWarning
from ls_trajeval.converters.registry import detect, get_converter, names
from ls_trajeval.converters.support import files
from ls_trajeval.converters.support.steps import compact
from ls_trajeval.trace import Trace, TraceError

ConvertItem = Union[Trace, TraceError, ConvertWarning]

#: below this a detector's guess is not trusted
MIN_CONFIDENCE = 0.5
#: two candidates closer than this are ambiguous
AMBIGUITY_MARGIN = 0.05


class FormatError(ValueError):
    """The format of a file cannot be told (unknown or ambiguous); the message names the candidates."""


@dataclass
class ConvertStats:
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


def format_names() -> list[str]:
    return list(names())


def detect_format(path: str | Path) -> Converter:
    """The one converter for a file, or FormatError naming the candidates."""
    p = Path(path)
    try:
        sample = files.make_sample(p)
    except OSError as exc:
        raise FormatError(f"cannot read: {exc}") from None
    scored = detect(sample)
    known = ", ".join(format_names())
    good = [(s, c) for s, c in scored if s >= MIN_CONFIDENCE]
    if not good:
        if scored:
            cands = ", ".join(f"{c.name} ({s:.2f})" for s, c in scored[:4])
            raise FormatError(f"unknown format: no converter is confident (weak candidates: {cands}); use --format NAME (one of {known})")
        raise FormatError(f"unknown format: no converter recognises this file; use --format NAME (one of {known})")
    if len(good) > 1 and good[0][0] - good[1][0] < AMBIGUITY_MARGIN:
        cands = ", ".join(f"{c.name} ({s:.2f})" for s, c in good if good[0][0] - s < AMBIGUITY_MARGIN)
        raise FormatError(f"ambiguous format: candidates {cands}; use --format NAME")
    return good[0][1]


def _broken_json(p: Path) -> TraceError | None:
    """For a file no detector claims: the located JSON error when it is JSON that does not parse
    (a truncated log), which says more than "unknown format"."""
    try:
        if p.stat().st_size > files.SMALL_FILE or files.is_zip(p) or files.is_jsonl(p):
            return None
        if files.read_head(p).lstrip()[:1] not in ("{", "["):
            return None
    except OSError:
        return None
    err = files.load_json_located(p)
    if not isinstance(err, TraceError):
        return None
    return TraceError(err.source, err.line, err.field, f"{err.message}; the format cannot be told from a broken file")


def convert_file(path: str | Path, fmt: str | Converter = "auto") -> Iterator[ConvertItem]:
    """Traces, located errors and warnings of one file; never raises for bad input."""
    p = Path(path)
    if not p.exists():
        yield TraceError(str(p), None, None, "no such file")
        return
    if isinstance(fmt, Converter):
        conv = fmt
    elif fmt in (None, "", "auto"):
        try:
            conv = detect_format(p)
        except FormatError as exc:
            yield _broken_json(p) or TraceError(str(p), None, None, str(exc))
            return
    else:
        conv = get_converter(fmt)
    try:
        yield from conv.convert(p)
    except (OSError, EOFError) as exc:
        yield TraceError(str(p), None, None, f"cannot read: {exc}")
    except Exception as exc:  # a converter bug must cost one file, not the run
        yield TraceError(str(p), None, None, f"{conv.name} converter failed: {type(exc).__name__}: {exc}")


def convert_inputs(
    inputs: Iterable[str | Path],
    fmt: str = "auto",
    stats: ConvertStats | None = None,
) -> Iterator[ConvertItem]:
    """Every file of the inputs (directories recursively, ``.gz`` and ``.eval`` zips included).

    ``fmt`` is a format name or ``"auto"`` (detected per file). Unknown names raise KeyError
    up front, before any file is read.
    """
    if fmt not in (None, "", "auto"):
        get_converter(fmt)
    for p in files.expand_inputs(list(inputs)):
        if stats is not None:
            stats.files += 1
        for item in convert_file(p, fmt):
            if stats is not None:
                stats.count(item)
                if isinstance(item, Trace):
                    stats.by_format[item.metadata.get("source_format", fmt)] += 1
            yield item


def write_traces(items: Iterable[ConvertItem], fh: IO[str], on_problem=None) -> ConvertStats:
    """Write the traces as trace JSONL; pass errors and warnings to ``on_problem``; return counts."""
    stats = ConvertStats()
    # orjson's bytes go straight to the binary buffer when there is one (no decode and re-encode)
    raw = getattr(fh, "buffer", None)
    if raw is not None:
        fh.flush()
    for item in items:
        stats.count(item)
        if isinstance(item, Trace):
            obj = item.to_json()
            if raw is not None:
                try:
                    raw.write(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))
                    continue
                except TypeError:  # ints beyond 64 bits, lone surrogates: the json path below decides
                    pass
            line = compact(obj) + "\n"
            if raw is not None:
                raw.write(line.encode(getattr(fh, "encoding", None) or "utf-8"))
            else:
                fh.write(line)
        elif on_problem is not None:
            on_problem(item)
    return stats
