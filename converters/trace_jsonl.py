"""The project's own trace JSONL: passed through with the same validation as ``import`` (a trace whose
steps are all empty is refused; a trace id given twice is refused by the driver, as by import)."""
from __future__ import annotations

from typing import Any

from ls_trajeval.core.trace import parse_trace

from .base import Converter, Sample
from .support.files import Origin


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


def one(rec: Any, origin: Origin) -> list:
    return [parse_trace(rec, source=origin.source, line=origin.line, require_text=True)]


CONVERTER = Converter(
    name="trace_jsonl",
    description="ls-trajeval trace JSONL (validated pass-through)",
    shapes='JSONL lines {"trace_id", "task", "trace": [{"type", "content", ...}]}',
    detect=detect,
    one=one,
    split=None,
)
