"""The converter tests' helpers: converting a file, reading steps by the step convention, round trips."""
from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from ls_trajeval.converters.base import ConvertWarning
from ls_trajeval.converters.registry import get_converter
from ls_trajeval.converters.support.files import make_sample
from ls_trajeval.core.trace import Trace, TraceError, parse_trace
from ls_trajeval.flows.convert import convert_file, detect_format

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "converters"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
#: files in the fixture folders that describe the logs beside them (where they come from) and are no logs
NOT_LOGS = frozenset({"README.md", "PROVENANCE.md"})
SCARY = 'Füße <script>alert("x")</script> & ünïcødé ✓'
#: real agent logs of the formats with real fixtures; other converters must not claim them
REAL_LOG_DIRS = ("swe_agent", "inspect_ai", "claude_code")


def run(path, fmt="auto"):
    """(traces, errors, warnings) of one file. A format name runs that converter's own ``convert``
    with no catch-all around it (it must not raise); ``"auto"`` goes through detection as ``convert`` does."""
    items = list(convert_file(path, fmt) if fmt == "auto" else get_converter(fmt).convert(Path(path)))
    assert all(isinstance(i, (Trace, TraceError, ConvertWarning)) for i in items), items
    traces = [i for i in items if isinstance(i, Trace)]
    errors = [i for i in items if isinstance(i, TraceError)]
    warnings = [i for i in items if isinstance(i, ConvertWarning)]
    return traces, errors, warnings


def detect(name: str, path: Path) -> float:
    return get_converter(name).detect(make_sample(Path(path)))


def auto_name(path: Path) -> str:
    """The format `auto` picks for a file (fails on ambiguity, as the CLI would)."""
    return detect_format(Path(path)).name


def types(trace):
    return [s.type for s in trace.steps]


def meta(step) -> dict:
    """A step's metadata (where the step convention puts everything but type, content, action_input, timestamp)."""
    return step.get("metadata", {})


def roundtrip(trace: Trace) -> dict:
    """The trace as the JSONL line it becomes, decoded again; it must stay valid for the trace reader."""
    obj = json.loads(json.dumps(trace.to_json(), ensure_ascii=False))
    back = parse_trace(obj)
    assert isinstance(back, Trace), back
    return obj


def assert_paired(trace):
    """Every action that has a tool_call_id is immediately followed by its result."""
    steps = trace.steps
    for i, s in enumerate(steps):
        if s.type in ("action", "code") and meta(s).get("tool_call_id") is not None:
            nxt = steps[i + 1] if i + 1 < len(steps) else None
            if nxt is not None and meta(nxt).get("tool_call_id") == meta(s)["tool_call_id"]:
                assert nxt.type in ("observation", "error")


def need_real(*parts):
    p = REAL.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real fixtures not found at {REAL}")
    return p


def real_logs() -> list[Path]:
    """The real agent logs of REAL_LOG_DIRS."""
    out = []
    for d in REAL_LOG_DIRS:
        p = REAL / d
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.is_file()))
    return out


@pytest.fixture
def cli():
    from click.testing import CliRunner

    from ls_trajeval.cli.convert import convert_command, formats_command

    group = click.Group("ls-trajeval", commands={"convert": convert_command, "formats": formats_command})
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(group, list(map(str, args)), catch_exceptions=False)

    return invoke
