from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from ls_trajeval.flows.convert import convert_file
from ls_trajeval.core.trace import Trace, TraceError
from ls_trajeval.converters.base import ConvertWarning

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "converters"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SCARY = 'Füße <script>alert("x")</script> & ünïcødé ✓'


def run(path, fmt="auto"):
    items = list(convert_file(path, fmt))
    traces = [i for i in items if isinstance(i, Trace)]
    errors = [i for i in items if isinstance(i, TraceError)]
    warnings = [i for i in items if isinstance(i, ConvertWarning)]
    return traces, errors, warnings


def types(trace):
    return [s.type for s in trace.steps]


def roundtrip(trace):
    """The trace as the JSONL line it becomes, decoded again (what import will read)."""
    return json.loads(json.dumps(trace.to_json(), ensure_ascii=False))


def assert_paired(trace):
    """Every action that has a tool_call_id is immediately followed by its result."""
    steps = trace.steps
    for i, s in enumerate(steps):
        if s.type in ("action", "code") and s.extra.get("tool_call_id") is not None:
            nxt = steps[i + 1] if i + 1 < len(steps) else None
            if nxt is not None and nxt.extra.get("tool_call_id") == s.extra["tool_call_id"]:
                assert nxt.type in ("observation", "error")


def need_real(*parts):
    p = REAL.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared fixtures not found at {REAL}")
    return p


@pytest.fixture
def cli():
    from click.testing import CliRunner

    from ls_trajeval.cli.convert import convert_command, formats_command

    group = click.Group("ls-trajeval", commands={"convert": convert_command, "formats": formats_command})
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(group, list(map(str, args)), catch_exceptions=False)

    return invoke
