import pytest

from .conftest import FIXTURES, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "atif"


def test_trajectory_steps_and_pairing():
    traces, errors, _ = run(D / "trajectory.json", "atif")
    assert errors == []
    (t,) = traces
    assert t.trace_id == "sess-7f3a"
    assert t.task.endswith(SCARY)
    assert types(t) == [
        "system", "message",
        "thought", "thought", "action", "observation", "action", "observation", "observation",
        "action", "error",
        "message",
    ]
    s = t.steps
    # parallel calls: each call followed by its own result even though results came reversed
    assert (s[4].content, meta(s[4])["tool_call_id"]) == ("financial_search", "call_price")
    assert s[5].content == "GOOGL is at $185.35 <b>&amp;</b>" and meta(s[5])["tool_call_id"] == "call_price"
    assert meta(s[6])["tool_call_id"] == "call_volume" and s[7].content == "GOOGL volume: 1.5M shares"
    assert s[8].content == "market closes in 5 minutes" and "tool_call_id" not in meta(s[8])
    assert s[4].action_input == '{\n  "ticker": "GOOGL",\n  "metric": "price"\n}'
    assert s[9].action_input == "{}" and s[10].content == "rate limited"
    assert meta(s[2])["metrics"] == {
        "prompt_tokens": 520,
        "completion_tokens": 80,
        "cached_tokens": 200,
        "cost_usd": 0.00045,
    }
    assert meta(s[2])["model"] == "gemini-2.5-pro" and meta(s[11])["model"] == "gemini-2.5-flash"
    assert t.metadata["final_metrics"]["total_steps"] == 5
    assert t.metadata["source_format"] == "atif"
    assert SCARY in roundtrip(t)["task"]


def test_bad_lines_are_located_and_others_convert():
    traces, errors, _ = run(D / "many.jsonl", "atif")
    assert [t.trace_id for t in traces][0] == "s-one"
    assert len(traces) == 2  # s-one and the record without session_id (stable fallback id)
    assert traces[1].trace_id == run(D / "many.jsonl", "atif")[0][1].trace_id
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {2, 3, 4}
    assert "invalid JSON" in by_line[2].message
    assert by_line[3].field == "steps" and "list" in by_line[3].message
    assert by_line[4].field == "steps[0].tool_calls[0].function_name"


@pytest.mark.parametrize("name", ["trajectory.json", "many.jsonl"])
def test_detect_fixture(name):
    assert detect("atif", D / name) > 0.5
    assert auto_name(D / name) == "atif"

