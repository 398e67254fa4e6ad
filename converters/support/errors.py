"""Bad input, located: the one exception a converter raises for a bad record, and the one runner that
turns it (or anything unexpected) into a :class:`TraceError` naming the file, line and field.

A converter never ends in a traceback: whatever a record holds, the worst outcome is one TraceError
for that record, and the next record converts. Inside a record's conversion, raise
``BadRecord(field, message)`` (``expect`` does it for a wrong type); run each record through
:func:`guarded`, or a whole file of records through :func:`each_record`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ls_trajeval.core.trace import TraceError, describe

from ..base import ConvertWarning
from .files import Origin, records

_NAMES = {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object", bool: "a boolean"}


class BadRecord(Exception):
    """Rejects the record being converted; ``field`` is the path of the bad value inside the record.

    ``about_record``: the converter found nothing of its own in the record (no steps, no text), so the
    error goes on to say what the record holds and which format it looks like (:func:`guarded`).
    """

    def __init__(self, field: str | None, message: str, trace_id: str | None = None, *, about_record: bool = False):
        super().__init__(message)
        self.field = field
        self.message = message
        self.trace_id = trace_id
        self.about_record = about_record


def _kind_name(kind: type | tuple) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(_NAMES.get(k, k.__name__) for k in kinds))


def expect(value: Any, kind: type | tuple, field: str | None, *, optional: bool = False) -> Any:
    """``value`` when it is of ``kind`` (None too when ``optional``); else BadRecord naming ``field``.

    A boolean is not a number here, as in JSON.
    """
    if value.__class__ is kind:  # the common case first: this runs for every field read
        return value
    if value is None:
        if optional:
            return None
        raise BadRecord(field, "missing")
    if not isinstance(value, kind) or isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise BadRecord(field, f"expected {_kind_name(kind)}, got {describe(value)}")
    return value


def join_field(prefix: str, field: str | None) -> str | None:
    """``prefix`` and ``field`` as one path: ``[3]`` + ``steps[0]`` is ``[3].steps[0]``."""
    if not field:
        return prefix or None
    if not prefix:
        return field
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def guarded(origin: Origin, fn: Callable[..., Iterable | None], *args: Any, field: str = "") -> list:
    """Everything ``fn(*args)`` yields (or returns; None for nothing) for one record, or that record's
    one located TraceError (:func:`record_error`; ``args[0]`` is the record).

    The record's output is all or nothing: a record that fails part-way yields only its error.
    ``field`` prefixes the error's field path (after the record's own place in a list).
    """
    try:
        out = fn(*args)
        return [] if out is None else list(out)
    except Exception as exc:  # noqa: BLE001 - one odd record must not stop the file
        return [record_error(origin, exc, field, args[0] if args else None)]


def record_error(origin: Origin, exc: Exception, field: str = "", record: Any = None) -> TraceError:
    """The located TraceError of a record whose conversion raised ``exc`` (a BadRecord says where and why;
    anything else is reported with its type)."""
    if isinstance(exc, BadRecord):
        msg = exc.message
        if exc.about_record and record is not None:
            try:
                msg = f"{msg}; {what_is_there(record, origin)}"
            except Exception:  # noqa: BLE001 - describing the record is a courtesy: it must not cost the error
                pass
        return TraceError(origin.source, origin.line, join_field(join_field(origin.where, field) or "", exc.field),
                          msg, exc.trace_id)
    if isinstance(exc, RecursionError):
        return TraceError(origin.source, origin.line, join_field(origin.where, field), "nested too deeply")
    return TraceError(origin.source, origin.line, join_field(origin.where, field),
                      f"could not convert: {type(exc).__name__}: {exc}")


_LOOKS: dict = {}


def what_is_there(record: Any, origin: Origin) -> str:
    """``the record is an object with keys …`` and, when another format's detector is sure of it, ``; looks like potato``."""
    from ..registry import looks_like
    from .files import value_shape

    # a file of records that all miss the same way asks the detectors once per shape of record
    key = (origin.source, origin.fmt, tuple(record) if isinstance(record, dict) else type(record).__name__)
    near = _LOOKS.get(key)
    if near is None:
        if len(_LOOKS) > 256:
            _LOOKS.clear()
        near = _LOOKS[key] = looks_like(record, origin.source, exclude=(origin.fmt,))
    return f"the record is {value_shape(record)}" + (f"; {near}" if near else "")


def warning(source: str, record: Any, message: str) -> ConvertWarning:
    """A loss worth telling about (not an error): ``record`` names the line or trace it concerns, or None."""
    return ConvertWarning(source, None if record is None else str(record), message)


def each_record(path: Path, fmt: str, one: Callable[[Any, Origin], Iterable],
                unwrap: Callable[[Any], list | None] | None = None) -> Iterator:
    """Every record of a file (see :func:`~.files.records`) through ``one(record, origin)``, each
    guarded; what cannot be read comes as located errors between them."""
    for origin, rec in records(Path(path), fmt, unwrap):
        if rec.__class__ is TraceError:
            yield rec
        else:
            yield from guarded(origin, one, rec, origin)
