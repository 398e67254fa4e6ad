"""The one step convention (converters/support/steps.py), checked on every converter's output for every
fixture it detects, and the checker itself on hand-made traces that break each rule."""
from pathlib import Path

import pytest

from ls_trajeval.converters.registry import all_converters
from ls_trajeval.converters.support.files import make_sample
from ls_trajeval.converters.support.steps import convention_problems
from ls_trajeval.core.trace import Step, Trace

from .conftest import FIXTURES, NOT_LOGS, REAL, run

#: the project's own trace JSONL is passed through as the user wrote it: its steps are theirs, not a converter's
PASS_THROUGH = {"trace_jsonl"}


def fixture_files() -> list[Path]:
    return sorted(p for d in (FIXTURES, REAL) for p in d.rglob("*") if p.is_file() and p.name not in NOT_LOGS)


def cases() -> list[tuple[str, Path]]:
    """(converter, file) for every fixture and every converter whose detector claims it at all."""
    out = []
    for path in fixture_files():
        sample = make_sample(path)
        out += [(c.name, path) for c in all_converters() if c.name not in PASS_THROUGH and c.detect(sample) > 0]
    return out


CASES = cases()


def test_the_cases_cover_every_converter():
    assert {name for name, _ in CASES} == {c.name for c in all_converters()} - PASS_THROUGH


@pytest.mark.parametrize("name,path", CASES, ids=[f"{n}:{p.relative_to(FIXTURES.parent)}" for n, p in CASES])
def test_every_step_follows_the_convention(name, path):
    traces, _, _ = run(path, name)
    for t in traces:
        assert convention_problems(t) == [], t.trace_id
        assert t.metadata["source_format"] == name
        assert t.metadata["source_file"].startswith(str(path))  # an archive member is "file!member"


def test_at_least_one_trace_per_format_was_checked():
    formats = {name for name, path in CASES if run(path, name)[0]}
    assert formats == {c.name for c in all_converters()} - PASS_THROUGH


def _trace(*steps: Step, **meta) -> Trace:
    return Trace("t1", "task", list(steps), {"source_format": "x", "source_file": "f.json", **meta})


def test_a_conforming_trace_has_no_problems():
    t = _trace(
        Step.of("thought", "plan"),
        Step.of(
            "action", "search", '{"q": 1}', {"timestamp": "2025-01-01T00:00:00Z", "metadata": {"tool_call_id": "c1"}}
        ),
        Step.of("observation", "found", None, {"timestamp": 1746000001000000000, "metadata": {"tool_call_id": "c1"}}),
    )
    assert convention_problems(t) == []


@pytest.mark.parametrize("bad,problem", [
    (Step.of("observation", "x", None, {"tool_call_id": "c1"}), "key 'tool_call_id' at the top level"),
    (Step.of("message", "x", None, {"role": "user"}), "key 'role' at the top level"),
    (Step.of("observation", "x", "args"), "action_input on a step that is not an action"),
    (Step.of("action", "search", None), "action_input is not text"),
    (Step.of("action", "search", {"q": 1}), "action_input is not text"),
    (Step.of("thinking", "x"), "unknown type"),
    (Step.of("message", None), "content is not text"),
    (Step.of("message", "x", None, {"timestamp": None}), "timestamp is None"),
    (Step.of("message", "x", None, {"timestamp": {"s": 1}}), "timestamp is {'s': 1}"),
    (Step.of("message", "x", None, {"timestamp": True}), "timestamp is True"),
    (Step.of("message", "x", None, {"metadata": {}}), "metadata is not a non-empty object"),
    (Step.of("message", "x", None, {"metadata": {"agent": None}}), "metadata.agent is null"),
])
def test_each_rule_is_checked(bad, problem):
    assert convention_problems(_trace(Step.of("thought", "ok"), bad)) == [f"step 1 ({bad.type}): {problem}"]


def test_trace_provenance_is_checked():
    t = Trace("t1", "task", [Step.of("thought", "ok")], {"source_file": "f.json", "model": None})
    assert convention_problems(t) == ["trace metadata.source_format: missing", "trace metadata.model: null"]
