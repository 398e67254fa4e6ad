"""Reading the files converters work on: JSON, JSONL, gzip, zip archives, big documents streamed by ijson.

Every reader keeps where a value came from (the JSONL line, the list index) and turns what it cannot
read into a located :class:`TraceError` instead of raising. JSONL is read as bytes one line at a time
and decoded with orjson (the standard library redoes a failing line for its clearer message), so
memory stays bounded by the longest line whatever the file size.

A converter usually needs one call: :func:`records` yields each record of a file (a JSON document, each
element of a JSON list, or each JSONL line) with its :class:`Origin`; :func:`documents` is the lower
level (whole documents and lines, no list splitting) for formats that read a file as one stream.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from ls_trajeval.core.trace import READ_BUFFER, TraceError, iter_jsonl, loads_strict, open_text

from ..base import Sample

HEAD_BYTES = 64 * 1024
#: files up to this size are parsed whole for detection; larger ones are sniffed from their head
SMALL_FILE = 8 * 1024 * 1024
#: a single JSON document up to this size is converted from its whole parse; a larger one, where its
#: format allows, is streamed item by item with ijson. orjson parses a whole document ~2.4x faster than
#: ijson streams it, and the parsed document takes ~6x its size in memory (~120 MiB peak at this size)
STREAM_ABOVE = 16 * 1024 * 1024
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")


# ---------------------------------------------------------------- inputs

def expand_inputs(inputs: list[str | Path]) -> Iterator[Path]:
    """Files as given, directories recursively (sorted, hidden files skipped)."""
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts):
                    yield f
        else:
            yield p


#: a zip archive's end record (its signature) sits within this many bytes of the file's end
_ZIP_TAIL = 22 + 0xFFFF


def is_zip(path: Path) -> bool:
    # zipfile (with shutil, bz2 and lzma) is imported only for a file whose tail holds an end record's signature,
    # without which zipfile.is_zipfile says no too: most runs convert no archive and skip its start-up cost
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
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            return tuple(zf.namelist())
    except (OSError, zipfile.BadZipFile):
        return ()


def open_bytes(path: Path):
    if path.suffix == ".gz":
        import gzip  # here: most inputs are not compressed

        return gzip.open(path, "rb")
    return open(path, "rb", buffering=READ_BUFFER)


def read_head(path: Path) -> str:
    """The first ``HEAD_BYTES`` of a text file ("" for a zip archive)."""
    if is_zip(path):
        return ""
    with open_text(path) as fh:
        return fh.read(HEAD_BYTES)


# ---------------------------------------------------------------- JSON text

def loads(raw: bytes | str, nan_as_null: bool = False) -> Any:
    """One JSON text decoded; ValueError with a readable message. NaN and Infinity (not JSON) are
    refused, or read as null with ``nan_as_null``: Python's ``json.dumps`` writes them for a float
    nan, and some tools' logs hold them (a pandas cell of a benchmark's output)."""
    if raw.__class__ is str:
        raw = raw.encode("utf-8", "surrogateescape")
    try:
        return orjson.loads(raw)
    except ValueError:
        pass  # redo with the standard library: clearer messages, big integers accepted
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start}") from None
    return json.loads(s, parse_constant=_null) if nan_as_null else loads_strict(s)


def _null(_constant: str) -> None:
    return None


def maybe_json(value: Any) -> Any:
    """A JSON-looking string decoded, anything else unchanged (for attributes that carry JSON text)."""
    if value.__class__ is str:
        s = value.lstrip()
        if s[:1] in ("{", "["):
            try:
                return loads(value)
            except (ValueError, RecursionError):
                return value
    return value


def load_json(path: Path) -> Any:
    """The whole file as one JSON value; ValueError when it is not JSON."""
    with open_bytes(path) as fh:
        return loads(fh.read())


def load_json_located(path: Path, nan_as_null: bool = False) -> Any:
    """The whole file as one JSON value, or a TraceError that names the line."""
    try:
        with open_bytes(path) as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:
        return TraceError(str(path), None, None, f"cannot read: {exc}")
    try:
        return loads(raw, nan_as_null)
    except json.JSONDecodeError as exc:
        return TraceError(str(path), exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
    except (ValueError, RecursionError) as exc:
        msg = str(exc)
        return TraceError(str(path), None, None, msg if msg.startswith("invalid UTF-8") else f"invalid JSON: {msg}")


# ---------------------------------------------------------------- JSONL, JSON, streamed items

def is_jsonl(path: Path) -> bool:
    """JSONL when named so, or when the first non-blank line is a whole JSON value and more lines follow.

    So a pretty-printed or one-line JSON document is read whole, while a log is streamed line by line;
    a broken first line that looks like an object does not hide the good lines after it. A first line
    too long to try (a one-line export of gigabytes) is skipped over, not held: then more lines mean JSONL.
    """
    if path.name.lower().endswith(JSONL_SUFFIXES):
        return True
    with open_bytes(path) as fh:
        first = _next_line(fh)
        if first is None:
            return False
        if len(first) >= _LONG_LINE and not first.endswith(b"\n"):
            while True:  # skip the rest of the line, a chunk at a time
                chunk = fh.readline(_LONG_LINE)
                if not chunk:
                    return False
                if chunk.endswith(b"\n"):
                    break
            return _next_line(fh) is not None
        second = _next_line(fh)
    if second is None:
        return False
    try:
        loads(first)
        return True
    except (ValueError, RecursionError):
        pass
    s = first.strip()
    if not (s.startswith(b"{") and s.endswith(b"}")):
        return False
    try:  # a broken first record: JSONL when the next line is a good one
        loads(second)
        return True
    except (ValueError, RecursionError):
        return False


_LONG_LINE = 16 * HEAD_BYTES


def _next_line(fh) -> bytes | None:
    """The next non-blank line (its first ``_LONG_LINE`` bytes), None at the end."""
    while True:
        ln = fh.readline(_LONG_LINE)
        if not ln:
            return None
        if ln.strip():
            return ln


def iter_records(path: Path, nan_as_null: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, value or TraceError) for each non-blank line of a JSONL file, streamed
    (``nan_as_null``: see :func:`loads`)."""
    source = str(path)
    with open_bytes(path) as fh:
        for n, raw in enumerate(fh, 1):
            try:
                yield n, orjson.loads(raw)  # the usual line, without a call to loads() around it
                continue
            except ValueError:
                if not raw.strip():
                    continue
            try:
                yield n, loads(raw, nan_as_null)  # for the standard library's reading and message
            except (ValueError, RecursionError) as exc:
                msg = str(exc)
                yield n, TraceError(source, n, None, msg if msg.startswith("invalid UTF-8") else f"invalid JSON: {msg}")


def documents(path: Path, nan_as_null: bool = False) -> Iterator[tuple[int | None, Any]]:
    """(line, value or TraceError) for each JSONL line, or (None, value or TraceError) once for a JSON
    document (``nan_as_null``: see :func:`loads`)."""
    try:
        jsonl = is_jsonl(path)
    except (OSError, EOFError) as exc:
        yield None, TraceError(str(path), None, None, f"cannot read: {exc}")
        return
    if not jsonl:
        yield None, load_json_located(path, nan_as_null)
        return
    try:
        yield from iter_records(path, nan_as_null)
    except (OSError, EOFError) as exc:
        yield None, TraceError(str(path), None, None, f"cannot read: {exc}")


def iter_items(path: Path, prefix: str) -> Iterator[tuple[int, Any]]:
    """(index, value) of each element under ``prefix`` of one big JSON document, streamed by ijson.

    A syntax error ends the stream with a TraceError (ijson cannot resynchronise).
    """
    import ijson

    with open_bytes(path) as fh:
        i = -1
        try:
            for i, item in enumerate(ijson.items(fh, prefix, use_float=True)):
                yield i, item
        except (ijson.JSONError, ValueError, UnicodeDecodeError) as exc:
            yield i + 1, TraceError(str(path), None, f"{prefix.replace('.item', '[]')}[{i + 1}]", f"invalid JSON: {exc}")


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

    @property
    def where(self) -> str:
        """The field path of the record inside its document: ``"[3]"`` for a list element, else ``""``."""
        return "" if self.index is None else f"[{self.index}]"

    @property
    def position(self) -> int:
        """The record's position: its line in JSONL, its list index in JSON (0 for a lone document)."""
        return self.line if self.line is not None else (self.index or 0)

    def provenance(self) -> dict:
        out: dict = {"source_format": self.fmt, "source_file": self.source}
        if self.line is not None:
            out["source_line"] = self.line
        if self.index is not None:
            out["source_record"] = self.index
        return out


def records(path: Path, fmt: str, unwrap: Callable[[Any], list | None] | None = None) -> Iterator[tuple[Origin, Any]]:
    """(origin, record or TraceError) for every record of a file.

    A JSON list is a list of records, each JSONL line a record (a line holding a list, a list of
    records); ``unwrap`` may turn a document or line into its records (e.g. ``{"data": [...]}``), or
    return None to leave it as one record.
    """
    source = str(path)
    for line, val in documents(path):
        if val.__class__ is TraceError:
            yield Origin(fmt, source, line), val
            continue
        recs = unwrap(val) if unwrap is not None else None
        if recs is None and val.__class__ is list and line is None:
            recs = val
        if recs is None:
            yield Origin(fmt, source, line), val
        else:
            for k, rec in enumerate(recs):
                yield Origin(fmt, source, line, k), rec


# ---------------------------------------------------------------- what a detector sees

def looks_like_jsonl(head: str) -> bool:
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if not lines:
        return False
    try:
        first = json.loads(lines[0])
    except (ValueError, RecursionError):  # a first line nested thousands deep is no JSONL record either
        return False
    if len(lines) == 1:
        return isinstance(first, dict) and not head.lstrip().startswith("[")
    return isinstance(first, dict)


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
        for _, rec in zip(range(50), iter_jsonl(lines, str(path))):
            if not isinstance(rec[1], TraceError):
                sample.first_records.append(rec[1])
        if sample.first_records:
            return sample
    size = path.stat().st_size
    if size <= whole_up_to or path.suffix == ".gz" and size <= whole_up_to // 8:
        try:
            sample.first_json = load_json(path)
        except (ValueError, RecursionError, OSError, EOFError):
            pass
    if sample.first_json is None and looks_like_jsonl(head):
        for _, rec in iter_jsonl(head.splitlines()[:1], str(path)):
            if not isinstance(rec, TraceError):
                sample.first_records.append(rec)
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
            v = loads_strict(first)
            if isinstance(v, dict):
                out.append(v)
        except (ValueError, RecursionError):
            pass
    return out


# ---------------------------------------------------------------- what a file holds, in words (for refusals)

def _kind(v: Any, depth: int) -> str:
    if v is None:
        return "null"
    if v.__class__ is bool:
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
    """An object's keys with what each holds: ``keys id (string), steps (list of 5, the first an object with keys agent, content)``."""
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
