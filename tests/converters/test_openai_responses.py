from conftest import FIXTURES, SCARY, meta, run, types


def test_response_object():
    traces, errors, warnings = run(FIXTURES / "openai_responses.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "resp_1" and t.task == "Sum files " + SCARY
    assert types(t) == ["message", "thought", "action", "observation", "action", "observation", "other", "message"]
    assert [meta(t.steps[i])["tool_call_id"] for i in (2, 3, 4, 5)] == ["c1", "c1", "c2", "c2"]
    assert (t.steps[3].content, t.steps[5].content) == ("1", "2")
    assert '"web_search_call"' in t.steps[6].content
    assert t.steps[7].content == "3 <b>&</b>"
    assert t.metadata["usage"]["input_tokens"] == 30


def test_codex_rollout():
    traces, errors, _ = run(FIXTURES / "rollout-2025-10-29T00-59-38-019a2d7a.jsonl")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "019a2d7a-41c4"
    assert t.task == "list files " + SCARY  # the environment context is not the request
    assert types(t) == ["message", "message", "thought", "action", "observation", "message"]
    assert t.steps[3].content == "shell" and '"ls"' in t.steps[3].action_input
    assert meta(t.steps[4])["tool_call_id"] == "call_1"
    assert t.metadata["models"] == ["gpt-5-codex"]
    assert t.metadata["usage"] == {"input_tokens": 100, "output_tokens": 9}
    assert t.metadata["event_msg_counts"] == {"user_message": 1, "token_count": 1, "agent_message": 1}
    assert meta(t.steps[0])["source_line"] == 2
