"""Reading the files converters work on: JSON, JSONL, gzip, zip; with line/record numbers kept."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, Iterator

from ls_trajeval.trace import TraceError, iter_jsonl, loads_strict, open_text

from .base import Sample

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


def read_head(path: Path) -> str:
    if zipfile.is_zipfile(path):
        return ""
    with open_text(path) as fh:
        return fh.read(HEAD_BYTES)


def looks_like_jsonl(head: str) -> bool:
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(lines) < 1:
        return False
    try:
        first = json.loads(lines[0])
    except ValueError:
        return False
    if len(lines) == 1:
        return isinstance(first, dict) and not head.lstrip().startswith("[")
    return isinstance(first, dict)


def make_sample(path: Path) -> Sample:
    head = read_head(path)
    sample = Sample(path=path, head=head)
    if zipfile.is_zipfile(path):
        return sample
    if looks_like_jsonl(head) and "\n" in head.strip():
        for _, rec in zip(range(20), iter_jsonl(head.splitlines()[:-1] or head.splitlines(), str(path))):
            if not isinstance(rec[1], TraceError):
                sample.first_records.append(rec[1])
        return sample
    if path.stat().st_size <= SMALL_FILE:
        try:
            sample.first_json = load_json(path)
        except (ValueError, RecursionError):
            pass
    if sample.first_json is None and looks_like_jsonl(head):
        for _, rec in iter_jsonl(head.splitlines()[:1], str(path)):
            if not isinstance(rec, TraceError):
                sample.first_records.append(rec)
    return sample


def load_json(path: Path) -> Any:
    """The whole file as one JSON value (NaN/Infinity refused)."""
    with open_text(path) as fh:
        text = fh.read()
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("invalid UTF-8") from exc
    return loads_strict(text)


def iter_records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value or TraceError) for each line of a JSONL file, streamed."""
    with open_text(path) as fh:
        yield from iter_jsonl(fh, str(path))


def zip_members(path: Path) -> Iterator[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if not name.endswith("/"):
                yield name, zf.read(name)
