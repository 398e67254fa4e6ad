import pytest

from .conftest import FIXTURES, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "openinference"


def test_trail_tree_with_sidecar_labels():
    (t,), errors, _ = run(D / "trail_trace.json", "openinference")
    assert errors == []
    assert t.trace_id == "trail-0042" and t.task.endswith(SCARY)
    # steps are what runs under the outermost AGENT span; child_spans listed out of order are sorted
    assert types(t) == ["thought", "action", "observation", "thought", "action", "error"]
    s = t.steps
    assert [meta(x)["span_id"] for x in s] == ["s-llm1", "s-tool1", "s-tool1", "s-llm2", "s-tool2", "s-tool2"]
    assert meta(s[0])["usage"] == {"prompt": 1200, "completion": 35} and meta(s[0])["model"] == "o3-mini"
    assert (s[1].content, meta(s[1])["tool_call_id"], meta(s[2])["tool_call_id"]) == ("web_search", "tc-1", "tc-1")
    assert s[2].content == "## Results\n1. Zürich has 421,878 <people> & counting"
    assert s[3].content == "Code:\n```py\nfinal_answer(421878/0)\n```"
    assert s[5].content.startswith("ZeroDivisionError: division by zero")
    assert t.metadata["outside_agent_spans"] == 2
    assert [e["location"] for e in t.metadata["errors"]] == ["s-tool2", "s-llm1"]
    assert t.metadata["errors"][0]["impact"] == "HIGH"
    assert t.metadata["error_steps"] == {"s-tool2": [4, 5], "s-llm1": [0]}
    roundtrip(t)


def test_phoenix_spans_and_bad_lines():
    traces, errors, _ = run(D / "phoenix_spans.jsonl", "openinference")
    by_id = {t.trace_id: t for t in traces}
    assert set(by_id) == {"ph-1", "ph-2"}  # interleaved lines grouped by trace id
    t = by_id["ph-1"]
    assert t.task == "Capital of France?"
    # the model turn without text keeps a thought that says so, its tokens and span visible
    assert types(t) == ["thought", "action", "observation", "action", "observation", "message"]
    assert (t.steps[0].content, meta(t.steps[0])["empty_response"], meta(t.steps[0])["usage"]["total"]) == (
        "(empty response)", True, 15)
    # JSON arguments are indented, whichever way the source wrote them (step convention: render_args)
    assert (t.steps[1].content, t.steps[1].action_input, t.steps[2].content) == (
        "lookup",
        '{\n  "country": "France"\n}',
        "Paris",
    )
    assert "France is in Europe." in t.steps[4].content
    assert by_id["ph-2"].steps[0].content == "hi & <welcome>"
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {7, 8}
    assert "invalid JSON" in by_line[7].message
    assert by_line[8].field == "attributes"


@pytest.mark.parametrize("name", ["trail_trace.json", "phoenix_spans.jsonl"])
def test_detect_fixture(name):
    assert detect("openinference", D / name) > 0.5
    assert auto_name(D / name) == "openinference"


def test_labels_sidecar_alone_is_a_warning_not_a_trace():
    # claimed (so converting a directory does not fail on it) but it yields no trace of its own
    assert auto_name(D / "trail_trace.labels.json") == "openinference"
    traces, errors, warnings = run(D / "trail_trace.labels.json", "openinference")
    assert traces == [] and errors == [] and len(warnings) == 1 and "labels" in warnings[0].message

