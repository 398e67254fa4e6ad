"""Helpers for the part-B converter tests (kept apart from conftest.py, which part A owns)."""
from __future__ import annotations

import json
from pathlib import Path

from ls_trajeval.converters._io import make_sample
from ls_trajeval.converters.base import ConvertWarning
from ls_trajeval.converters.registry import get_converter
from ls_trajeval.core.trace import Trace, TraceError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "converters"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SCARY = 'Füße <script>alert("x")</script> & ünïcødé ✓'
PART_A_REAL = ("swe_agent", "inspect_ai", "claude_code")


def convert(name: str, path: Path):
    items = list(get_converter(name).convert(Path(path)))
    for i in items:
        assert isinstance(i, (Trace, TraceError, ConvertWarning)), i
    return ([i for i in items if isinstance(i, Trace)], [i for i in items if isinstance(i, TraceError)],
            [i for i in items if isinstance(i, ConvertWarning)])


def detect(name: str, path: Path) -> float:
    return get_converter(name).detect(make_sample(Path(path)))


def types(trace: Trace) -> list[str]:
    return [s.type for s in trace.steps]


def meta(step) -> dict:
    return step.extra.get("metadata", {})


def part_a_real_files():
    out = []
    for d in PART_A_REAL:
        p = REAL / d
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.is_file()))
    return out


def roundtrip(trace: Trace) -> dict:
    """The trace as the JSONL line it becomes, decoded again; must stay valid for the trace reader."""
    from ls_trajeval.core.trace import parse_trace
    obj = json.loads(json.dumps(trace.to_json(), ensure_ascii=False))
    back = parse_trace(obj)
    assert isinstance(back, Trace), back
    return obj


def auto_name(path: Path) -> str:
    """The format `auto` picks for a file (fails on ambiguity, as the CLI would)."""
    from ls_trajeval.flows.convert import detect_format
    return detect_format(Path(path)).name
