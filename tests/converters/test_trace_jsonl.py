from .conftest import FIXTURES, SCARY, run, types


def test_pass_through():
    traces, errors, _ = run(FIXTURES / "traces.jsonl")
    assert not errors and [t.trace_id for t in traces] == ["t1", "t2"]
    assert traces[0].task == SCARY and traces[0].steps[0].content == "<b>&amp;</b>"
    assert types(traces[0]) == ["thought", "action", "observation"]
    assert traces[1].metadata == {"k": 1}


def test_duplicates_and_invalid_rejected(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(
        '{"trace_id": "a", "trace": [{"type": "x", "content": "y"}]}\n'
        '{"trace_id": "a", "trace": [{"type": "x", "content": "y"}]}\n'
        '{"trace_id": "b", "trace": [{"type": "x"}]}\n'
    )
    traces, errors, _ = run(p, "trace_jsonl")
    assert len(traces) == 1
    assert [(e.line, e.field) for e in errors] == [(2, "trace_id"), (3, "trace[0].content")]
