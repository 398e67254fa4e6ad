"""Bad input, located: the one exception a converter raises for a bad record, the one runner that turns it (or
anything unexpected) into a :class:`TraceError` naming the file, line and field, and the warnings converters give.

A converter never ends in a traceback: whatever a record holds, the worst outcome is one TraceError for that
record, and the next record converts. Inside a record's conversion, raise ``BadRecord(field, message)``
(``expect`` does it for a wrong type); the driver (:func:`ls_trajeval.converters.base.run`) runs each record
through :func:`guarded`, and so may a converter for the parts of a record it can leave out one by one.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ls_trajeval.core.trace import TraceError, describe

from .files import Origin, value_shape

_NAMES = {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object", bool: "a boolean"}

_JSON_VALUES = frozenset({dict, list, str, int, float, bool})
#: what a record holds, in words, for the error of a record a converter found nothing in
Describe = Callable[[Any, Origin], str]


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


class BadRecord(Exception):
    """Rejects the record being converted; ``field`` is the path of the bad value inside the record.

    ``about_record``: the converter found nothing of its own in the record (no steps, no text), so the
    error goes on to say what the record holds (:func:`guarded`).
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
    # every field a converter reads passes here: the plain class test first (benchmarks/bench_converters.py,
    # every case), isinstance only for what it does not settle
    if value.__class__ is kind:
        return value
    if value is None:
        if optional:
            return None
        raise BadRecord(field, "missing")
    if (
        not isinstance(value, kind)
        or isinstance(value, bool)
        and bool not in (kind if isinstance(kind, tuple) else (kind,))
    ):
        raise BadRecord(field, f"expected {_kind_name(kind)}, got {describe(value)}")
    return value


def join_field(prefix: str, field: str | None) -> str | None:
    """``prefix`` and ``field`` as one path: ``[3]`` + ``steps[0]`` is ``[3].steps[0]``."""
    if not field:
        return prefix or None
    if not prefix:
        return field
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def guarded(origin: Origin, fn: Callable[..., Iterable | None], *args: Any, field: str = "",
            describe: Describe | None = None) -> list:
    """Everything ``fn(*args)`` yields (or returns; None for nothing) for one record, or that record's
    one located TraceError (:func:`record_error`; ``args[0]`` is the record).

    The record's output is all or nothing: a record that fails part-way yields only its error.
    ``field`` prefixes the error's field path (after the record's own place in a list).
    """
    try:
        out = fn(*args)
        return [] if out is None else list(out)
    except Exception as exc:  # noqa: BLE001 - one odd record must not stop the file
        return [record_error(origin, exc, field, args[0] if args else None, describe)]


def record_error(origin: Origin, exc: Exception, field: str = "", record: Any = None,
                 describe: Describe | None = None) -> TraceError:
    """The located TraceError of a record whose conversion raised ``exc`` (a BadRecord says where and why;
    anything else is reported with its type). A BadRecord ``about_record`` goes on to say what the record holds
    when it is a JSON value (not what a converter gathered of several records): ``describe(record, origin)``, by
    default its shape in words (:func:`what_is_there`)."""
    if isinstance(exc, BadRecord):
        msg = exc.message
        if exc.about_record and type(record) in _JSON_VALUES:
            try:
                said = (describe or what_is_there)(record, origin)
            except Exception:  # noqa: BLE001 - describing the record is a courtesy: it must not cost the error
                said = ""
            if said:
                msg = f"{msg}; {said}"
        return TraceError(origin.source, origin.line, join_field(join_field(origin.where, field) or "", exc.field),
                          msg, exc.trace_id)
    if isinstance(exc, RecursionError):
        return TraceError(origin.source, origin.line, join_field(origin.where, field), "nested too deeply")
    return TraceError(origin.source, origin.line, join_field(origin.where, field),
                      f"could not convert: {type(exc).__name__}: {exc}")


def what_is_there(record: Any, origin: Origin) -> str:
    """``the record is an object with keys …``: a record in words."""
    return f"the record is {value_shape(record)}"


def warning(source: str, record: Any, message: str) -> ConvertWarning:
    """A loss worth telling about (not an error): ``record`` names the line or trace it concerns, or None."""
    return ConvertWarning(source, None if record is None else str(record), message)
