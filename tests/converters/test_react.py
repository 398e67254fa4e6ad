from .conftest import FIXTURES, SCARY, meta, run, types


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
    assert t.steps[7].content == "5 ✓" and meta(t.steps[7])["final_answer"]


def test_jsonl_records():
    traces, errors, _ = run(FIXTURES / "react.jsonl")
    assert not errors and [t.trace_id for t in traces] == ["r1", "r2"]
    assert traces[0].task == "Capital of France?"
    assert types(traces[0]) == ["thought", "action", "observation", "message"]
    assert traces[0].steps[1].action_input == "France"
    assert traces[1].task == "1+1?" and types(traces[1]) == ["thought", "message"]


def test_structured_steps():
    traces, errors, _ = run(FIXTURES / "react_structured.jsonl")
    assert [t.trace_id for t in traces] == ["s1", "s2"]
    t = traces[0]
    assert t.task == "Book a flight JFK → LHR <b>&</b>"
    assert types(t) == ["thought", "action", "observation", "thought", "action", "observation", "thought", "action"]
    assert (t.steps[1].content, t.steps[1].action_input) == ("search_flights", "JFK to LHR")
    assert (t.steps[4].content, t.steps[4].action_input) == ("book", '{\n  "flight": "BA117"\n}')
    assert (t.steps[7].content, t.steps[7].action_input) == ("finish", '{\n  "answer": "BA117"\n}')
    assert t.metadata["variant"] == "structured" and t.metadata["agent"] == "ReAct-GPT4"
    assert t.metadata["record_metadata"] == {"tokens": 2340}
    assert traces[1].task == "Empty observation"
    assert types(traces[1]) == ["action", "observation"] and traces[1].steps[1].content == ""
    assert len(errors) == 1 and errors[0].line == 3 and errors[0].field == "steps[0].action"
