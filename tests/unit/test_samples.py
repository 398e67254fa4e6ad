"""The bundled demo traces (ls_trajeval/samples/traces.jsonl) load cleanly and cover what the demo promises."""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from ls_trajeval.core.trace import Trace, TraceError, read_traces

REQUIRED_TYPES = {"thought", "action", "observation", "code", "message", "error"}
DIFF_RE = re.compile(r"^--- a/\S+\n\+\+\+ b/\S+\n@@ -\d+(,\d+)? \+\d+(,\d+)? @@", re.M)
PYTEST_RE = re.compile(r"^=+ (FAILURES|short test summary info) =+$|^\d+ (passed|failed)\b.* in \d+(\.\d+)?s$", re.M)


def _samples_path() -> Path:
    return Path(str(resources.files("ls_trajeval") / "samples" / "traces.jsonl"))


@pytest.fixture(scope="module")
def results():
    path = _samples_path()
    assert path.is_file(), f"missing {path}"
    return list(read_traces(path))


@pytest.fixture(scope="module")
def traces(results) -> list[Trace]:
    return [r for r in results if isinstance(r, Trace)]


def _texts(trace: Trace):
    for s in trace.steps:
        yield s.content
        if s.action_input is not None:
            yield s.action_input_text


def test_no_errors(results):
    errors = [str(r) for r in results if isinstance(r, TraceError)]
    assert errors == []


def test_count_and_unique_ids(traces):
    assert len(traces) >= 12
    ids = [t.trace_id for t in traces]
    assert len(ids) == len(set(ids))
    assert all(i.startswith("sample-") for i in ids)


def test_length_spread(traces):
    lengths = [len(t.steps) for t in traces]
    assert min(lengths) == 3
    assert 55 <= max(lengths) <= 65
    assert sum(8 <= n <= 30 for n in lengths) >= 3


def test_all_step_types_occur(traces):
    seen = {s.type for t in traces for s in t.steps}
    assert REQUIRED_TYPES <= seen, REQUIRED_TYPES - seen


def test_actions_followed_by_observation_or_error(traces):
    for t in traces:
        for i, s in enumerate(t.steps):
            if s.type != "action":
                continue
            assert s.content.strip(), f"{t.trace_id} step {i}: action without a tool name"
            assert i + 1 < len(t.steps), f"{t.trace_id}: ends with an action"
            nxt = t.steps[i + 1].type
            assert nxt in ("observation", "error"), f"{t.trace_id} step {i + 1}: {nxt} after an action"


def test_has_unified_diff(traces):
    assert any(DIFF_RE.search(text) for t in traces for text in _texts(t))


def test_has_pytest_output(traces):
    assert any(PYTEST_RE.search(text) for t in traces for text in _texts(t))


def test_metadata(traces):
    for t in traces:
        assert t.task.strip(), t.trace_id
        assert t.metadata.get("source") == "ls-trajeval sample", t.trace_id
        assert t.metadata.get("agent") and t.metadata.get("scenario"), t.trace_id


def test_special_characters_kept_literally(traces):
    text = "\n".join(x for t in traces for x in _texts(t))
    for needle in ("<", ">", "&", '"', "&amp;", "naïve", "東京", "—"):
        assert needle in text, needle


def test_file_is_utf8_without_ascii_escapes():
    raw = _samples_path().read_bytes()
    text = raw.decode("utf-8")
    assert "\\u00ef" not in text and "東京" in text
    assert text.endswith("\n")
