import json

import pytest

from .conftest import FIXTURES, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "langfuse"


def test_trace_export():
    (t,), errors, _ = run(D / "trace.json", "langfuse")
    assert errors == []
    assert t.trace_id == "lf-trace-1" and t.task.endswith(SCARY)
    # observations listed out of order are put in startTime order under their parent
    assert types(t) == [
        "thought",
        "action",
        "observation",
        "action",
        "error",
        "action",
        "observation",
        "other",
        "message",
        "error",
    ]
    s = t.steps
    assert meta(s[0])["usage"] == {"input": 120, "output": 30, "total": 150} and meta(s[0])["model"] == "gpt-4o"
    assert (s[1].content, meta(s[1])["tool_call_id"], meta(s[2])["tool_call_id"]) == ("lookup_order", "tc1", "tc1")
    assert '"note": "<b>VIP</b> & co"' in s[2].content
    assert (s[3].content, s[4].content, meta(s[4])["tool_call_id"]) == ("issue_refund", "payment gateway 502", "tc2")
    assert (s[5].content, s[5].action_input, s[6].content) == ("cache-write", "k", "ok")  # a leaf SPAN with output
    assert '"thumbs": "down"' in s[7].content
    assert (s[8].content, meta(s[8])["empty_response"]) == ("(empty response)", True)  # an empty generation is kept
    assert s[9].content == "agent failed" and meta(s[9])["observation_type"] == "AGENT"
    assert t.metadata["sessionId"] == "sess-9" and t.metadata["final_output"] == "Refund issued."
    roundtrip(t)


def test_bad_records_located():
    traces, errors, _ = run(D / "traces.jsonl", "langfuse")
    assert [x.trace_id for x in traces] == ["lf-2"]
    assert traces[0].steps[0].content == "hello & bye"
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {2, 3, 4, 5}
    assert by_line[2].field == "observations" and "list" in by_line[2].message
    assert "invalid JSON" in by_line[3].message
    assert "ids only" in by_line[4].message
    assert by_line[5].field == "observations[0].type"


@pytest.mark.parametrize("name", ["trace.json", "traces.jsonl"])
def test_detect_fixture(name):
    assert detect("langfuse", D / name) > 0.5
    assert auto_name(D / name) == "langfuse"



def test_generation_output_without_role_is_the_models_message(tmp_path):
    # {"content": ...} (a custom integration's generation.end(output=...)) is the model's message, not a record to
    # show as JSON; an object with other keys still is one
    obs = [
        {
            "id": "g1",
            "type": "GENERATION",
            "startTime": "2024-01-01T00:00:00Z",
            "output": {"content": 'use <b> & "quotes"'},
        },
        {"id": "g2", "type": "GENERATION", "startTime": "2024-01-01T00:00:01Z", "output": {"content": "x", "score": 3}},
    ]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"id": "t1", "observations": obs}), encoding="utf-8")
    (t,), errors, _ = run(p, "langfuse")
    assert errors == []
    assert [s.content for s in t.steps][0] == 'use <b> & "quotes"'
    assert json.loads(t.steps[1].content) == {"content": "x", "score": 3}
