from conftest import FIXTURES, SCARY, run, types


def test_text_file():
    traces, errors, _ = run(FIXTURES / "react_trace.txt")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.task == "What is 2+3? " + SCARY
    assert types(t) == ["thought", "action", "observation", "thought", "action", "observation", "thought", "message"]
    assert t.steps[1].content == "calculator" and t.steps[1].action_input == '{\n  "expr": "2+3"\n}'
    assert t.steps[2].content == "5"
    assert t.steps[4].action_input == "<script>&</script>"
    assert t.steps[5].content == ""
    assert t.steps[7].content == "5 ✓" and t.steps[7].extra["final_answer"]


def test_jsonl_records():
    traces, errors, _ = run(FIXTURES / "react.jsonl")
    assert not errors and [t.trace_id for t in traces] == ["r1", "r2"]
    assert traces[0].task == "Capital of France?"
    assert types(traces[0]) == ["thought", "action", "observation", "message"]
    assert traces[0].steps[1].action_input == "France"
    assert traces[1].task == "1+1?" and types(traces[1]) == ["thought", "message"]
