"""What converters need of their input files beyond the reading layer (:mod:`ls_trajeval.core.jsonfiles`, which opens,
decodes and iterates JSON and JSONL with located errors): each record of a file with its :class:`Origin`, what a
detector sees of a file (:class:`Sample`), zip archives, big JSON documents streamed item by item with ijson, and
what a file or record holds, in words (for refusals).

:func:`records` is how the driver (:func:`ls_trajeval.converters.base.run`) reads a file unless its converter says
otherwise: a JSON document, each element of a JSON list, or each JSONL line, each with its origin.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import TraceError, documents, loads, open_bytes, open_text

HEAD_BYTES = 64 * 1024
#: files up to this size are parsed whole for detection; larger ones are sniffed from their head
SMALL_FILE = 8 * 1024 * 1024
#: a single JSON document up to this size is converted from its whole parse; a larger one, where its
#: format allows, is streamed item by item with ijson. orjson parses a whole document ~2.4x faster than
#: ijson streams it, and the parsed document takes ~6x its size in memory (~120 MiB peak at this size)
STREAM_ABOVE = 16 * 1024 * 1024


@dataclass
class Sample:
    """What a detector sees of one input file: its path, first bytes, and its first decoded JSON value(s)."""

    path: Path
    head: str  # the first ~64 KiB of text
    first_json: Any = None  # the whole file parsed as JSON if small, else None
    first_records: list = field(default_factory=list)  # first JSONL records when the file is JSONL


# ---------------------------------------------------------------- zip archives

#: a zip archive's end record (its signature) sits within this many bytes of the file's end
_ZIP_TAIL = 22 + 0xFFFF


def is_zip(path: Path) -> bool:
    """Whether the file is a zip archive (an Inspect ``.eval`` log)."""
    # zipfile (with shutil, bz2 and lzma: 11 M instructions, a twentieth of an empty convert's, benchmarks/
    # converter_instructions.py, start-up) is imported only for a file whose tail holds an end record's signature,
    # without which zipfile.is_zipfile says no too: most runs convert no archive
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - _ZIP_TAIL))
            if b"PK\x05\x06" not in fh.read():
                return False
        import zipfile

        return zipfile.is_zipfile(path)
    except OSError:
        return False


@lru_cache(maxsize=64)
def zip_names(path: Path) -> tuple[str, ...]:
    """The member names of a zip archive (none when it cannot be read)."""
    import zipfile  # only a zip archive gets here (see is_zip)

    try:
        with zipfile.ZipFile(path) as zf:
            return tuple(zf.namelist())
    except (OSError, zipfile.BadZipFile):
        return ()


def read_head(path: Path) -> str:
    """The first ``HEAD_BYTES`` of a text file ("" for a zip archive)."""
    if is_zip(path):
        return ""
    with open_text(path) as fh:
        return fh.read(HEAD_BYTES)


def maybe_json(value: Any) -> Any:
    """A JSON-looking string decoded, anything else unchanged (for attributes that carry JSON text)."""
    if isinstance(value, str):
        s = value.lstrip()
        if s[:1] in ("{", "["):
            try:
                return loads(value)
            except (ValueError, RecursionError):
                return value
    return value


# ---------------------------------------------------------------- big documents, streamed

def iter_items(path: Path, prefix: str) -> Iterator[tuple[int, Any]]:
    """(index, value) of each element under ``prefix`` of one big JSON document, streamed by ijson.

    A syntax error ends the stream with a TraceError (ijson cannot resynchronise).
    """
    # only a document above STREAM_ABOVE is streamed: ijson is imported for it alone (at the top it cost an empty
    # convert 11 M instructions, a twentieth; benchmarks/converter_instructions.py, start-up)
    import ijson

    with open_bytes(path) as fh:
        i = -1
        try:
            for i, item in enumerate(ijson.items(fh, prefix, use_float=True)):
                yield i, item
        except (ijson.JSONError, ValueError, UnicodeDecodeError) as exc:
            yield (
                i + 1,
                TraceError(str(path), None, f"{prefix.replace('.item', '[]')}[{i + 1}]", f"invalid JSON: {exc}"),
            )


def first_item(path: Path, prefix: str) -> Any:
    """The first value under ``prefix`` of a big document, streamed (None when absent; a TraceError when the
    document breaks before it)."""
    for _, v in iter_items(path, prefix):
        return v
    return None


# ---------------------------------------------------------------- records with their origin

@dataclass(slots=True)
class Origin:
    """Where one record came from: the file (``source``), its JSONL line, its index in a JSON list.

    It locates the record's errors (:func:`~.errors.guarded`) and gives the trace's provenance
    (:func:`~.steps.finish`), so a converter never writes either by hand.
    """

    fmt: str
    source: str
    line: int | None = None
    index: int | None = None
    #: the record's number in its file: its line's among the file's non-blank lines (0 for the first), its index in
    #: a JSON list document, 0 for a lone document (converters whose records have no id number them by it)
    ordinal: int = 0
    #: the record's place in its document where that is not its list index (``simulations[3]``, the name of a
    #: history in an object of histories): its errors' fields start with it, its provenance does not show it
    place: str | None = None
    #: for a record taken out of a document with fields of its own (an eval log's header, a results file's run
    #: info): that document, or the part of it the records share
    document: Any = None

    @property
    def where(self) -> str:
        """The field path of the record inside its document: ``"[3]"`` for a list element, else ``""``."""
        if self.place is not None:
            return self.place
        return "" if self.index is None else f"[{self.index}]"

    @property
    def file_name(self) -> str:
        """The file's name, without its folder: what the ids of records that have none are made of."""
        return _file_name(self.source)

    @property
    def position(self) -> int:
        """The record's position: its line in JSONL, its list index in JSON (0 for a lone document)."""
        return self.line if self.line is not None else (self.index or 0)

    def provenance(self) -> dict:
        """The trace metadata that says where the trace came from (see :mod:`.steps`)."""
        out: dict = {"source_format": self.fmt, "source_file": self.source}
        if self.line is not None:
            out["source_line"] = self.line
        if self.index is not None:
            out["source_record"] = self.index
        return out

    def item(self, k: int) -> Origin:
        """The origin of the ``k``-th record this document or line holds (its index ``k``)."""
        return Origin(self.fmt, self.source, self.line, k, k if self.line is None else self.ordinal)


@lru_cache(maxsize=64)
def _file_name(source: str) -> str:
    # once per trace of the formats that make ids (benchmarks/converter_instructions.py, aider): a Path per trace was
    # a twentieth of aider's conversion
    return Path(source).name


#: the records one JSON document or JSONL line holds, each with its origin; None: it is one record
Split = Callable[[Any, Origin], "Iterable[tuple[Origin, Any]] | None"]


def documents_only(split: Split) -> Split:
    """Marks a split that only ever splits a JSON document (a JSONL line is one record): it is not asked for lines."""
    split.documents_only = True  # type: ignore[attr-defined]
    return split


def elements(values: list, origin: Origin) -> list[tuple[Origin, Any]]:
    """Each of ``values`` (the records a document or line at ``origin`` holds) with its origin, by its index."""
    return [(origin.item(k), v) for k, v in enumerate(values)]


@documents_only
def list_items(value: Any, origin: Origin) -> list[tuple[Origin, Any]] | None:
    """The records of a JSON document that is a list: its elements (the default way a document splits)."""
    return elements(value, origin) if isinstance(value, list) else None


def unwrapping(unwrap: Callable[[Any], list | None]) -> Split:
    """A split: the records ``unwrap(value)`` finds in a document or line (``{"data": [...]}``), else a JSON list's."""
    def split(value: Any, origin: Origin) -> Iterable[tuple[Origin, Any]] | None:
        recs = unwrap(value)
        return list_items(value, origin) if recs is None else elements(recs, origin)

    return split


def records(path: Path, fmt: str, split: Split | None = list_items, *, nan_as_null: bool = False,
            jsonl: bool | None = None, moving: bool = False) -> Iterator[tuple[Origin, Any]]:
    """(origin, record or TraceError) for every record of a JSON or JSONL file.

    ``split(value, origin)`` gives the records a document (``origin.line`` None) or a JSONL line holds, with their
    origins, or None when it is one record (:func:`documents_only`: it is asked for documents only); by default a
    JSON list document is a list of records, a JSONL line one record; with ``split`` None every document and line is
    one record. ``jsonl`` True or False skips telling JSONL from JSON (a format whose files are always one or the
    other); ``nan_as_null``: see :func:`ls_trajeval.core.jsonfiles.loads`. ``moving``: the JSONL lines that are one
    record each share one Origin, moved from line to line, for a consumer that keeps none of them (a
    :class:`~ls_trajeval.converters.base.Gather` that reads a record's line, or copies its origin, and makes no trace
    of a record on its own).
    """
    source = str(path)
    lines_too = split is not None and not getattr(split, "documents_only", False)
    # an Origin per line was a fifth of what the driver adds to reading a session log's lines
    # (benchmarks/converter_instructions.py, claude_code and mcp)
    here = Origin(fmt, source) if moving and not lines_too else None
    for n, (line, val) in enumerate(documents(path, nan_as_null, jsonl)):
        if here is not None and line is not None:
            here.line, here.ordinal = line, n
            yield here, val
            continue
        origin = Origin(fmt, source, line, None, n)
        # once per record of every file (benchmarks/converter_instructions.py, every JSONL case): a JSONL line costs
        # no call of a split made for documents only
        if split is not None and (line is None or lines_too) and val.__class__ is not TraceError:
            recs = split(val, origin)
            if recs is not None:
                yield from recs
                continue
        yield origin, val


# ---------------------------------------------------------------- what a detector sees

def _head_json(text: str, nan: bool = False) -> Any:
    """A line of a file's head, which is text with the file's undecodable bytes as lone surrogates: decoded as
    text, such characters taken as they are, so that a stray bad byte does not hide a file's shape from the
    detectors (``nan``: NaN and Infinity accepted)."""
    return json.loads(text) if nan else json.loads(text, parse_constant=_refuse)


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def looks_like_jsonl(head: str) -> bool:
    """Whether a file's head reads as JSONL (its first line a JSON object)."""
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if not lines:
        return False
    try:
        first = _head_json(lines[0], nan=True)  # NaN or not, a line of JSON makes a file JSONL
    except (ValueError, RecursionError):  # a first line nested thousands deep is no JSONL record either
        return False
    if len(lines) == 1:
        return isinstance(first, dict) and not head.lstrip().startswith("[")
    return isinstance(first, dict)


def _head_records(lines: list[str]) -> Iterator[Any]:
    """The JSON values of the head's lines that are whole records (a line with undecodable bytes is none)."""
    for text in lines:
        if text.strip():
            try:
                text.encode("utf-8")
                yield _head_json(text)
            except (ValueError, RecursionError):
                pass


def make_sample(path: Path, whole_up_to: int = SMALL_FILE) -> Sample:
    """The detectors' view of a file: its head, and its first JSONL records or its whole JSON value when
    small (up to ``whole_up_to`` bytes; ``HEAD_BYTES`` for a look that reads no more than the head)."""
    head = read_head(path)
    sample = Sample(path=path, head=head)
    if not head:
        return sample
    if looks_like_jsonl(head) and "\n" in head.strip():
        lines = head.splitlines()
        if len(head) >= HEAD_BYTES and len(lines) > 1:
            lines = lines[:-1]  # the last line of a cut head is usually truncated
        sample.first_records.extend(rec for _, rec in zip(range(50), _head_records(lines)))
        if sample.first_records:
            return sample
    size = path.stat().st_size
    if size <= whole_up_to or path.suffix == ".gz" and size <= whole_up_to // 8:
        try:
            with open_bytes(path) as fh:
                sample.first_json = loads(fh.read())
        except (ValueError, RecursionError, OSError, EOFError):
            pass
    if sample.first_json is None and looks_like_jsonl(head):
        sample.first_records.extend(_head_records(head.splitlines()[:1]))
    return sample


def sample_objects(sample: Sample, limit: int = 5) -> list:
    """The first few JSON values a detector should look at (whole-file value, its list items, or JSONL records)."""
    out = []
    fj = sample.first_json
    if isinstance(fj, dict):
        out.append(fj)
    elif isinstance(fj, list):
        out.extend(fj[:limit])
    out.extend(sample.first_records[:limit])
    if not out and sample.head:
        # large files are only sniffed: try the first line on its own
        first = sample.head.lstrip().split("\n", 1)[0]
        try:
            v = _head_json(first)
            if isinstance(v, dict):
                out.append(v)
        except (ValueError, RecursionError):
            pass
    return out


# ---------------------------------------------------------------- what a file holds, in words (for refusals)

def _kind(v: Any, depth: int) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "empty string" if not v else "string"
    if isinstance(v, dict):
        return f"object with {_names(v, 6)}" if v and depth < 1 else "object"
    if isinstance(v, list):
        first = v[0] if v else None
        if isinstance(first, dict) and first and depth < 1:
            return f"list of {len(v)}, the first an object with {_names(first, 6)}"
        return f"list of {len(v)}" + (f" {_kind(first, 1)}s" if v and not isinstance(first, (dict, list)) else "")
    return type(v).__name__


def _names(obj: dict, limit: int) -> str:
    keys = [str(k) for k in obj]
    more = f", and {len(keys) - limit} more" if len(keys) > limit else ""
    return "keys " + ", ".join(keys[:limit]) + more


def _keys_text(obj: dict, limit: int = 12) -> str:
    """An object's keys with what each holds: ``keys id (string), steps (list of 5, the first an object with keys
    agent, content)``."""
    parts = [f"{k} ({_kind(v, 0)})" for k, v in list(obj.items())[:limit]]
    more = f", and {len(obj) - limit} more" if len(obj) > limit else ""
    return "keys " + ", ".join(parts) + more if parts else "no keys"


def value_shape(value: Any) -> str:
    """A decoded JSON value in words: its type and, for an object, its keys and what they hold."""
    if isinstance(value, dict):
        return f"an object with {_keys_text(value)}"
    if isinstance(value, list):
        first = value[0] if value else None
        if isinstance(first, dict):
            return f"a list of {len(value)}, the first an object with {_keys_text(first)}"
        return f"a list of {len(value)}" + (f", the first {_kind(first, 0)}" if value else "")
    return f"a {_kind(value, 0)}"


def sample_shape(sample: Sample) -> str:
    """What a file holds as a detector saw it, in words: ``JSON object with keys …``, ``JSONL whose first
    record has keys …``, or the text it begins with."""
    if sample.first_records:
        rec = sample.first_records[0]
        return f"JSONL whose first record is {value_shape(rec)}"
    fj = sample.first_json
    if fj is not None:
        return f"JSON: {value_shape(fj)}"
    if not sample.head:
        return "a zip archive" if is_zip(sample.path) else "an empty file"
    start = sample.head.lstrip()[:60].replace("\n", " ")
    return f"text beginning {start!r}"


def shape_keys(value: Any) -> set[str]:
    """The keys of a value and of the objects right inside it (a list's first objects, an object's values),
    for comparing a file with the shapes each format reads."""
    out: set[str] = set()
    objs = value[:3] if isinstance(value, list) else [value]
    for o in objs:
        if isinstance(o, dict):
            out.update(map(str, o))
            for v in o.values():
                inner = v[0] if isinstance(v, list) and v else v
                if isinstance(inner, dict):
                    out.update(map(str, inner))
    return out
