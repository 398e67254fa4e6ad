from conftest import FIXTURES, SCARY, meta, run, types


def test_memory_steps():
    traces, errors, _ = run(FIXTURES / "smolagents_steps.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.task == "How many r in strawberry? " + SCARY
    assert types(t) == ["message", "thought", "thought", "code", "observation", "action", "error", "thought", "action", "observation", "message"]
    assert meta(t.steps[1])["planning"]
    assert t.steps[3].content == "print('strawberry'.count('r'))" and meta(t.steps[4])["tool_call_id"] == "call_1"
    assert t.steps[5].content == "web_search" and t.steps[6].content == "Search failed: <timeout>"
    assert meta(t.steps[6])["error_type"] == "AgentToolExecutionError"
    assert meta(t.steps[-1])["final_answer"]
    assert t.metadata["usage"] == {"input_tokens": 50, "output_tokens": 10}
