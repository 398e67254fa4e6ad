from .conftest import FIXTURES, SCARY, meta, run, types


def test_blocks_system_thinking_parallel_tools_and_errors():
    traces, errors, _ = run(FIXTURES / "anthropic.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "anth-1" and t.task == "Read two files " + SCARY
    assert types(t) == [
        "system",
        "message",
        "thought",
        "thought",
        "message",
        "action",
        "observation",
        "action",
        "error",
        "message",
        "message",
    ]
    assert t.steps[0].content == "Be terse."
    assert meta(t.steps[3])["redacted_data"] == "opaque=="
    assert [meta(t.steps[i])["tool_call_id"] for i in (5, 6, 7, 8)] == ["toolu_1", "toolu_1", "toolu_2", "toolu_2"]
    assert t.steps[6].content == "<html>&nbsp;</html>"
    assert t.steps[8].content == "No such file"
    # an empty text block of the model is still a step, and says so
    assert (t.steps[9].content, meta(t.steps[9])["empty_response"]) == ("(empty response)", True)
    assert t.steps[5].action_input == '{\n  "path": "a.txt"\n}'


def test_stream_events():
    traces, errors, _ = run(FIXTURES / "anthropic_stream.jsonl")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert types(t) == ["message", "action"]
    assert t.steps[0].content == "Let me check <&>."
    assert t.steps[1].content == "grep" and t.steps[1].action_input == '{\n  "pattern": "ü"\n}'
    assert t.metadata["usage"]["output_tokens"] == 12
