"""The project's own trace JSONL: passed through with the same validation as ``import`` (a trace whose
steps are all empty is refused)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ls_trajeval.core.trace import Trace, TraceError, parse_trace

from .base import Converter, Sample
from .support.files import documents


def detect(sample: Sample) -> float:
    recs = sample.first_records or ([sample.first_json] if isinstance(sample.first_json, dict) else [])
    if not recs:
        return 0.0
    r = recs[0]
    if not isinstance(r, dict) or "trace_id" not in r or not isinstance(r.get("trace"), list):
        return 0.0
    steps = r["trace"]
    if steps and all(isinstance(s, dict) and "type" in s and "content" in s for s in steps[:5]):
        return 0.95
    return 0.6


def convert(path: Path) -> Iterator:
    source = str(path)
    seen: dict[str, int] = {}
    for n, value in documents(path):
        if isinstance(value, TraceError):
            yield value
            continue
        result = parse_trace(value, source=source, line=n, require_text=True)
        if isinstance(result, Trace):
            first = seen.get(result.trace_id)
            if first is not None:
                yield TraceError(source, n, "trace_id", f"duplicate trace_id {result.trace_id!r} (first on line {first})", result.trace_id)
                continue
            seen[result.trace_id] = n or 1
        yield result


CONVERTER = Converter(
    name="trace_jsonl",
    description="ls-trajeval trace JSONL (validated pass-through)",
    shapes='JSONL lines {"trace_id", "task", "trace": [{"type", "content", ...}]}',
    detect=detect,
    convert=convert,
)
