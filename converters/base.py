"""What every converter is, and the one driver that runs it.

A converter is one module per format, named after it, defining ``CONVERTER = Converter(...)``:

- ``detect(sample) -> float``: how sure it is that a file (what :class:`Sample` shows of it) is its format;
- ``one(record, origin)``: one record, with its :class:`Origin`, to the record's traces (and warnings, and the
  located errors of parts of the record it left out); a bad record raises (``BadRecord``, or anything: the
  driver makes it one located error and goes on with the next record);
- and the hooks its format needs, all optional:

  - ``split(value, line)``: the records one JSON document (``line`` None) or JSONL line holds, or None when it is
    one record. By default a JSON list document is a list of records; ``split=None``: never split.
  - ``read(path, fmt)``: how a file becomes ``(origin, record)`` pairs when it is not JSON or JSONL of records
    (a markdown log, a zip archive, a big document streamed item by item, stream events joined into messages); it
    may put located errors (``(origin, TraceError)``) between them. By default :func:`~.support.files.records`.
  - ``gather(path) -> Gather``: for formats where several records make one trace (a session, a trace's spans in
    any order): each record goes to ``Gather.add``, guarded like a record; what it makes of them (a :class:`Unit`)
    goes to ``one``, now or at the end of the file (``Gather.end``).

:func:`run` is the driver: records from ``read``, each through ``gather`` and ``one`` under
:func:`~.support.errors.guarded`, every trace id checked against those given before (:class:`TraceIds`). No
converter loops over a file's records itself.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import Trace, TraceError

from .support.errors import ConvertWarning, Describe, guarded, join_field, record_error
from .support.files import Origin, Sample, Split, list_items, records

ConvertItem = Trace | TraceError | ConvertWarning

__all__ = ["ConvertItem", "ConvertWarning", "Converter", "Gather", "Origin", "Sample", "TraceIds",
           "Unit", "run"]


class Unit:
    """What a :class:`Gather` makes of records, for ``one``: the record (a session, a trace's spans, ...), its
    origin, the field its errors are prefixed with, and the origin they are located at when not ``origin``."""

    # a plain class: a dataclass costs every convert's start-up 5 M instructions to make
    # (benchmarks/converter_instructions.py, start-up)
    __slots__ = ("origin", "record", "field", "at")

    def __init__(self, origin: Origin, record: Any, field: str = "", at: Origin | None = None) -> None:
        self.origin, self.record, self.field, self.at = origin, record, field, at


class Gather:
    """One file's records gathered into what ``one`` converts, for a format where several records make one trace.

    A subclass is made per file (``gather(path)``); :meth:`add` takes each record, guarded by the driver (what it
    raises is that record's located error, the rest of the file goes on), and returns what is ready: Units to
    convert now, the traces of a record converted whole at once, warnings, located errors. :meth:`end` returns
    what is left at the end of the file.
    """

    def add(self, record: Any, origin: Origin) -> Iterable | None:
        raise NotImplementedError

    def end(self) -> Iterable:
        return ()


@dataclass(frozen=True)
class Converter:
    """A source format (see the module docstring): its name, what ``ls-trajeval formats`` says of it, its detector,
    its record converter and its hooks."""

    name: str
    description: str
    #: the file shapes it recognises, for ``ls-trajeval formats``
    shapes: str
    #: returns a confidence in [0, 1]; 0 means "not mine"
    detect: Callable[[Sample], float]
    #: one record and its origin -> the record's traces, warnings and errors
    one: Callable[[Any, Origin], Iterable | None]
    split: Split | None = list_items
    read: Callable[[Path, str], Iterator[tuple[Origin, Any]]] | None = None
    gather: Callable[[Path], Gather] | None = None

    def convert(self, path: str | Path, *, describe: Describe | None = None,
                ids: TraceIds | None = None) -> Iterator[ConvertItem]:
        """Traces, located errors and warnings of one file (:func:`run`)."""
        return run(self, Path(path), describe=describe, ids=ids)


class TraceIds:
    """The trace ids given so far (in a file, or across a run's files), each with where it was first given: a
    second trace with an id is refused, as import would refuse it."""

    __slots__ = ("_first",)

    def __init__(self) -> None:
        self._first: dict[str, Origin] = {}

    def claim(self, trace_id: str, origin: Origin) -> TraceError | None:
        """None when ``trace_id`` is new (it is now taken by the record at ``origin``), else the located error of
        this second trace."""
        first = self._first.get(trace_id)
        if first is None:
            self._first[trace_id] = origin
            return None
        if first.source != origin.source:
            at = f"in {first.source}" + (f":{first.line}" if first.line is not None else
                                         f" at {first.where}" if first.where else "")
        else:
            at = (
                f"on line {first.line}"
                if first.line is not None
                else f"at {first.where}"
                if first.where
                else "in this file"
            )
        return TraceError(origin.source, origin.line, join_field(origin.where, "trace_id"),
                          f"duplicate trace_id {trace_id!r} (first {at})", trace_id)

    def given_at(self, trace_id: str) -> Origin | None:
        """The origin of the record that gave ``trace_id`` first, or None."""
        return self._first.get(trace_id)


def run(conv: Converter, path: Path, *, describe: Describe | None = None,
        ids: TraceIds | None = None) -> Iterator[ConvertItem]:
    """Every trace, located error and warning of one file, in file order (see the module docstring).

    ``describe`` words what a record holds in the error of a record a converter found nothing in (default: its
    shape); ``ids``: the trace ids given before, across files (default: this file's only).
    """
    ids = TraceIds() if ids is None else ids
    pairs = conv.read(path, conv.name) if conv.read is not None else records(path, conv.name, conv.split)
    gather = conv.gather(path) if conv.gather is not None else None
    one = conv.one
    take = one if gather is None else gather.add
    for origin, rec in pairs:
        # once per record of every file: plain class tests (isinstance costs the benchmark's swebench case 1.3% more
        # instructions, benchmarks/converter_instructions.py), and guarded() written out, with no call and no list
        # made for a record a gather takes and returns nothing of
        if rec.__class__ is TraceError or rec.__class__ is ConvertWarning:
            yield rec
            continue
        try:
            out = take(rec, origin)
            if not out:
                continue
            items = out if out.__class__ is list else list(out)
        except Exception as exc:  # noqa: BLE001 - one odd record must not stop the file
            yield record_error(origin, exc, "", rec, describe)
            continue
        for item in items:
            if item.__class__ is Unit:
                # what a gather made of records is no record of the file: its error does not describe it
                yield from _converted(one, item, ids, describe if item.record is rec else _unsaid)
            else:
                yield _claimed(item, origin, ids)
    if gather is not None:
        for item in gather.end():
            if item.__class__ is Unit:
                yield from _converted(one, item, ids, _unsaid)
            else:
                yield item


def _converted(one: Callable, unit: Unit, ids: TraceIds, describe: Describe | None) -> Iterator[ConvertItem]:
    origin = unit.origin
    for item in guarded(unit.at or origin, one, unit.record, origin, field=unit.field, describe=describe):
        yield _claimed(item, origin, ids)


def _unsaid(record: Any, origin: Origin) -> str:
    return ""


def _claimed(item: ConvertItem, origin: Origin, ids: TraceIds) -> ConvertItem:
    """``item``, or, for a trace whose id was given before, its located error."""
    if isinstance(item, Trace):
        return ids.claim(item.trace_id, origin) or item
    return item
