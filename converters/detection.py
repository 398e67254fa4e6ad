"""Format detection over the registry: which converter a file is for, how near the other formats come to a file none
claims, whether a converter forced with ``--format`` fits the file, and :func:`convert_file`, which converts one
file with the converter named or detected.

``--format auto`` takes the one converter whose detector is sure (at least :data:`MIN_CONFIDENCE`) and ahead of
the next by :data:`AMBIGUITY_MARGIN`; otherwise the file is refused with what it holds and the formats nearest
to it. A converter forced on a file its detector does not know and that gives only errors or hollow traces is
reported as not fitting (:func:`forced`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import is_jsonl, load_located
from ls_trajeval.core.trace import Step, Trace, TraceError, is_blank

from .base import Converter, ConvertItem, TraceIds
from .registry import all_converters, confidence, detect, get_converter, names
from .support.errors import ConvertWarning
from .support.files import (
    HEAD_BYTES,
    SMALL_FILE,
    Origin,
    Sample,
    is_zip,
    make_sample,
    read_head,
    sample_objects,
    sample_shape,
    shape_keys,
    value_shape,
)

#: below this a detector's guess is not trusted
MIN_CONFIDENCE = 0.5
#: two candidates closer than this are ambiguous
AMBIGUITY_MARGIN = 0.05


class FormatError(ValueError):
    """The format of a file cannot be told (unknown or ambiguous); the message names the candidates."""


def detect_format(path: str | Path) -> Converter:
    """The one converter for a file, or FormatError naming the candidates."""
    p = Path(path)
    try:
        sample = make_sample(p)
    except OSError as exc:
        raise FormatError(f"cannot read: {exc}") from None
    scored = detect(sample)
    good = [(s, c) for s, c in scored if s >= MIN_CONFIDENCE]
    if not good:
        raise FormatError(f"unknown format: the file holds {sample_shape(sample)}; "
                          f"{closest_text(closest(sample))}; use --format NAME (one of {', '.join(names())})")
    if len(good) > 1 and good[0][0] - good[1][0] < AMBIGUITY_MARGIN:
        cands = ", ".join(f"{c.name} ({s:.2f})" for s, c in good if good[0][0] - s < AMBIGUITY_MARGIN)
        raise FormatError(f"ambiguous format: candidates {cands}; use --format NAME")
    return good[0][1]


def convert_file(path: str | Path, fmt: str | Converter = "auto", ids: TraceIds | None = None) -> Iterator[ConvertItem]:
    """Traces, located errors and warnings of one file, converted by the converter ``fmt`` names (or is), or by
    the one detection finds (``"auto"``); never raises for bad input. ``ids``: the trace ids given before in the
    run (default: this file's only)."""
    p = Path(path)
    if not p.exists():
        yield TraceError(str(p), None, None, "no such file")
        return
    auto = fmt in (None, "", "auto")
    if isinstance(fmt, Converter):
        conv = fmt
    elif auto:
        try:
            conv = detect_format(p)
        except FormatError as exc:
            yield broken_json(p) or TraceError(str(p), None, None, str(exc))
            return
    else:
        conv = get_converter(fmt)
    items = conv.convert(p, describe=what_is_there, ids=ids)
    try:
        yield from (items if auto or fmt is conv else forced(conv, p, items))
    except (OSError, EOFError) as exc:
        yield TraceError(str(p), None, None, f"cannot read: {exc}")
    except Exception as exc:  # noqa: BLE001 - a converter bug must cost one file, not the run
        yield TraceError(str(p), None, None, f"{conv.name} converter failed: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------- a file no format claims

def broken_json(p: Path) -> TraceError | None:
    """For a file no detector claims: the located JSON error when it is JSON that does not parse
    (a truncated log), which says more than "unknown format"."""
    try:
        if p.stat().st_size > SMALL_FILE or is_zip(p) or is_jsonl(p):
            return None
        if read_head(p).lstrip()[:1] not in ("{", "["):
            return None
    except OSError:
        return None
    err = load_located(p)
    if not isinstance(err, TraceError):
        return None
    return TraceError(err.source, err.line, err.field, f"{err.message}; the format cannot be told from a broken file")


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@cache
def _shape_words(name: str) -> frozenset[str]:
    """The key names a format's ``shapes`` text mentions."""
    return frozenset(_WORD.findall(get_converter(name).shapes))


def closest(sample: Sample, exclude: Iterable[str] = (), limit: int = 3) -> list[tuple[str, float, list[str]]]:
    """(format, detector confidence, keys shared with the shapes it reads) of the formats nearest to a file:
    those whose detector gives it any confidence first, then those whose shapes share the most keys with it."""
    objs = sample_objects(sample)
    keys = shape_keys(objs[0] if len(objs) == 1 else objs)
    skip = set(exclude)
    scored = []
    for c in all_converters():
        if c.name in skip:
            continue
        conf = confidence(c, sample)
        shared = sorted(keys & _shape_words(c.name))
        if conf > 0 or len(shared) >= 2:  # one shared key (an id, a type) says nothing
            scored.append((conf, len(shared), c.name, shared))
    scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
    return [(name, conf, shared) for conf, _, name, shared in scored[:limit]]


def closest_text(near: list[tuple[str, float, list[str]]]) -> str:
    """``closest formats: a (shares keys x, y), b (detector 0.30)``, or that none shares a key."""
    if not near:
        return "no format reads more than one of its keys"
    parts = []
    for name, conf, shared in near:
        why = [f"detector {conf:.2f}"] if conf > 0 else []
        if shared:
            why.append("shares keys " + ", ".join(shared[:6]) + (", …" if len(shared) > 6 else ""))
        parts.append(f"{name} ({'; '.join(why)})")
    return "closest formats: " + ", ".join(parts)


def looks_like(value: Any, source: str, exclude: Iterable[str] = ()) -> str:
    """``looks like potato`` when another format's detector is confident about one record, else ""."""
    sample = Sample(path=Path(source), head="", first_json=value)
    sure = [name for name, conf, _ in closest(sample, exclude) if conf >= MIN_CONFIDENCE]
    return "looks like " + " or ".join(sure[:2]) if sure else ""


_LOOKS: dict = {}


def what_is_there(record: Any, origin: Origin) -> str:
    """``the record is an object with keys …`` and, when another format's detector is sure of it, ``; looks like
    potato`` (how :func:`convert_file` words a record its converter found nothing in)."""
    # a file of records that all miss the same way asks the detectors once per shape of record
    key = (origin.source, origin.fmt, tuple(record) if isinstance(record, dict) else type(record).__name__)
    near = _LOOKS.get(key)
    if near is None:
        if len(_LOOKS) > 256:
            _LOOKS.clear()
        near = _LOOKS[key] = looks_like(record, origin.source, exclude=(origin.fmt,))
    return f"the record is {value_shape(record)}" + (f"; {near}" if near else "")


# ---------------------------------------------------------------- a forced format that does not fit

def not_recognised(conv: Converter, p: Path) -> str | None:
    """None when ``conv``'s detector knows the file, else what the file holds and what it looks like."""
    try:
        sample = make_sample(p)
    except OSError:
        return None
    scored = detect(sample)
    if any(c.name == conv.name for _, c in scored):
        return None
    sure = [c.name for s, c in scored if s >= MIN_CONFIDENCE]
    near = f"it looks like {' or '.join(sure[:2])}" if sure else closest_text(closest(sample, (conv.name,)))
    return f"{near}; it holds {sample_shape(sample)}"


def _hollow(s: Step) -> bool:
    """A step with no text of the source's: blank, or an agent's turn the converter found empty (which a converter
    forced on a file it does not read finds everywhere)."""
    return is_blank(s) or bool(s.get("metadata", {}).get("empty_response"))


def _mostly_hollow(steps: list[Step]) -> bool:
    """At least half the steps hollow (stops as soon as more than half are not)."""
    need = len(steps) // 2 + 1
    for s in steps:
        if not _hollow(s):
            need -= 1
            if not need:
                return False
    return True


def _known_by_its_head(conv: Converter, p: Path) -> bool:
    """Whether ``conv``'s detector claims the file from its first bytes alone (no second parse of the file)."""
    try:
        return confidence(conv, make_sample(p, whole_up_to=HEAD_BYTES)) > 0
    except (OSError, EOFError):
        return False


def forced(conv: Converter, p: Path, items: Iterable[ConvertItem]) -> Iterator[ConvertItem]:
    """``items``, a converter's output for a file it was forced on (``--format``): when its detector does not know
    the file and the output is errors or traces of mostly empty steps, nothing meaningful came out: such traces
    are rejected, and a warning says what the file looks like. (Wholly empty traces are rejected anyway, by
    ``finish``.) A file the detector knows from its head (the usual forced run, a big log) passes with no check."""
    if _known_by_its_head(conv, p):
        yield from items
        return
    source = str(p)
    unknown: str | None | bool = False  # False: not asked yet; asked at the first sign of trouble only
    hollow = errors = 0
    for item in items:
        if isinstance(item, TraceError):
            errors += 1
        elif isinstance(item, Trace) and _mostly_hollow(item.steps):
            if unknown is False:
                unknown = not_recognised(conv, p)
            if unknown is not None:
                hollow += 1
                rec = item.metadata.get("source_record")
                yield TraceError(source, item.metadata.get("source_line"), None if rec is None else f"[{rec}]",
                                 f"{sum(map(_hollow, item.steps))} of {len(item.steps)} steps are empty: nothing "
                                 f"meaningful came out of this record with --format {conv.name}", item.trace_id)
                continue
        yield item
    if errors and unknown is False:
        unknown = not_recognised(conv, p)
    if unknown and (hollow or errors):
        lost = ([f"{hollow} trace(s) of mostly empty steps rejected"] if hollow else []) + (
            [f"{errors} record(s) refused"] if errors else [])
        yield ConvertWarning(source, None, f"--format {conv.name} does not recognise this file: {', '.join(lost)} "
                                           f"({unknown})")
