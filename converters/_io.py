"""Reading the files converters work on: JSON, JSONL, gzip, zip; with line/record numbers kept.

JSONL is read as bytes, one line at a time, and decoded with orjson when it is installed
(falling back to the standard library for the exact error message), so memory stays bounded
by the longest line whatever the file size.
"""
from __future__ import annotations

import gzip
import json
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from ls_trajeval.core.trace import TraceError, iter_jsonl, loads_strict, open_text

from .base import Sample

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

HEAD_BYTES = 64 * 1024
#: files up to this size are parsed whole for detection; larger ones are sniffed from their head
SMALL_FILE = 8 * 1024 * 1024


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


def is_zip(path: Path) -> bool:
    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


@lru_cache(maxsize=64)
def zip_names(path: Path) -> tuple[str, ...]:
    try:
        with zipfile.ZipFile(path) as zf:
            return tuple(zf.namelist())
    except (OSError, zipfile.BadZipFile):
        return ()


def open_bytes(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def read_head(path: Path) -> str:
    if is_zip(path):
        return ""
    with open_text(path) as fh:
        return fh.read(HEAD_BYTES)


def _loads_line(raw: bytes) -> Any:
    """Decode one JSON text; raise ValueError with a readable message."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except ValueError:
            pass  # redo with the standard library: clearer messages, big integers accepted
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start}") from None
    return loads_strict(s)


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


def make_sample(path: Path) -> Sample:
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
    if size <= SMALL_FILE or path.suffix == ".gz" and size <= SMALL_FILE // 8:
        try:
            sample.first_json = load_json(path)
        except (ValueError, RecursionError, OSError, EOFError):
            pass
    if sample.first_json is None and looks_like_jsonl(head):
        for _, rec in iter_jsonl(head.splitlines()[:1], str(path)):
            if not isinstance(rec, TraceError):
                sample.first_records.append(rec)
    return sample


def load_json(path: Path) -> Any:
    """The whole file as one JSON value (NaN/Infinity refused)."""
    with open_bytes(path) as fh:
        return _loads_line(fh.read())


def loads(raw: bytes | str) -> Any:
    return _loads_line(raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw)


def iter_records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value or TraceError) for each non-blank line of a JSONL file, streamed."""
    source = str(path)
    with open_bytes(path) as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                yield n, _loads_line(raw)
            except (ValueError, RecursionError) as exc:
                msg = str(exc)
                yield n, TraceError(source, n, None, msg if msg.startswith("invalid UTF-8") else f"invalid JSON: {msg}")


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


def zip_members(path: Path) -> Iterator[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if not name.endswith("/"):
                yield name, zf.read(name)


def is_jsonl(path: Path, head: str | None = None) -> bool:
    """JSONL when named so, or when the first non-blank line is a complete JSON object."""
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        return True
    if head is None:
        head = read_head(path)
    for ln in head.splitlines():
        if ln.strip():
            if not ln.lstrip().startswith("{"):
                return False
            try:
                return isinstance(json.loads(ln), dict)
            except ValueError:
                return False
    return False


def load_json_located(path: Path) -> Any:
    """The whole file as one JSON value, or a TraceError that names the line."""
    try:
        with open_bytes(path) as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:
        return TraceError(str(path), None, None, f"cannot read: {exc}")
    try:
        return _loads_line(raw)
    except json.JSONDecodeError as exc:
        return TraceError(str(path), exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
    except (ValueError, RecursionError) as exc:
        return TraceError(str(path), None, None, str(exc) if str(exc).startswith("invalid UTF-8") else f"invalid JSON: {exc}")


def iter_documents(path: Path) -> Iterator[tuple[int | None, Any]]:
    """(line, value or TraceError) for each JSONL line, or (None, value) once for a JSON document."""
    if is_jsonl(path):
        yield from iter_records(path)
    else:
        yield None, load_json_located(path)
