import json

import pytest

from .conftest import FIXTURES, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "langchain"


def test_run_tree():
    (t,), errors, _ = run(D / "run_tree.json", "langchain")
    assert errors == []
    assert t.trace_id == "t-001" and t.task.endswith(SCARY)
    # child runs listed out of order are put in start_time order; each call followed by its result
    assert types(t) == ["thought", "action", "observation", "action", "error", "action", "observation", "message"]
    s = t.steps
    assert s[0].content == "Let me check both."
    assert meta(s[0])["tool_calls"] == [{"name": "weather", "id": "call_w"}, {"name": "calculator", "id": "call_c"}]
    assert meta(s[0])["usage"]["total_tokens"] == 131 and meta(s[0])["model"] == "gpt-4o-mini"
    assert (s[1].content, meta(s[1])["tool_call_id"], meta(s[2])["tool_call_id"]) == ("weather", "call_w", "call_w")
    assert s[2].content == "Sunny <b>&amp;</b> 21°C"
    assert (s[3].content, s[4].content) == ("calculator", "ZeroDivisionError('boom')")
    assert (s[5].content, s[5].action_input) == ("VectorStoreRetriever", "zürich climate")
    assert "Zürich is temperate." in s[6].content
    assert s[7].content == "Sunny; 4."
    assert t.metadata["skipped_runs"] == {"prompt": 1, "parser": 1}
    assert t.metadata["final_output"] == "Sunny; 4."
    roundtrip(t)


def test_flat_runs_and_bad_lines():
    traces, errors, _ = run(D / "flat_runs.jsonl", "langchain")
    by_id = {t.trace_id: t for t in traces}
    assert set(by_id) == {"t-flat", "t-other"}
    t = by_id["t-flat"]
    # flat runs linked by parent_run_id, root listed second: dotted_order decides the order
    assert types(t) == ["thought", "action", "observation", "error"]
    assert t.task == "List files"
    assert t.steps[1].content == "shell" and t.steps[2].content == ""
    assert t.steps[3].content == "Timeout after tool" and meta(t.steps[3])["run_id"] == "b-root"
    assert types(by_id["t-other"]) == ["message"]
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {4, 5}
    assert by_line[4].field == "run.run_type" and "string" in by_line[4].message
    assert "invalid JSON" in by_line[5].message


@pytest.mark.parametrize("name", ["run_tree.json", "flat_runs.jsonl"])
def test_detect_fixture(name):
    assert detect("langchain", D / name) > 0.5
    assert auto_name(D / name) == "langchain"



def test_langgraph_nodes_name_their_agents_steps(tmp_path):
    # a LangGraph node is a chain run whose extra.metadata.langgraph_node names it: the runs under it are that
    # agent's; a graph without nodes names no agent (its steps stay without an actor)
    graph = {"id": "g", "trace_id": "t-graph", "run_type": "chain", "name": "LangGraph", "inputs": {"input": "go"},
             "outputs": {"output": "done"}, "child_runs": [
                 {"id": "n1", "run_type": "chain", "name": "researcher", "inputs": {}, "outputs": {},
                  "extra": {"metadata": {"langgraph_node": "researcher"}},
                  "child_runs": [{"id": "l1", "run_type": "llm", "name": "m", "inputs": {},
                                  "start_time": "2025-05-01T10:00:01Z",
                                  "outputs": {"generations": [[{"text": "found it"}]]}}]},
                 {"id": "l2", "run_type": "llm", "name": "m", "inputs": {}, "start_time": "2025-05-01T10:00:02Z",
                  "outputs": {"generations": [[{"text": "no node"}]]}}]}
    plain = {"id": "p", "trace_id": "t-plain", "run_type": "chain", "name": "Solo", "inputs": {"input": "hello"},
             "outputs": {"output": "hi"}, "child_runs": [
                 {"id": "p-llm", "run_type": "llm", "name": "m", "inputs": {},
                  "outputs": {"generations": [[{"text": "hi"}]]}}]}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(graph) + "\n" + json.dumps(plain) + "\n")
    traces, errors, _ = run(path, "langchain")
    assert errors == []
    by_id = {t.trace_id: t for t in traces}
    g = {s.content: s for s in by_id["t-graph"].steps}
    assert g["found it"]["actor"] == {"kind": "agent", "name": "researcher"}
    assert meta(g["found it"])["agent"] == "researcher"
    assert "actor" not in g["no node"] and "agent" not in meta(g["no node"])
    assert [s.get("actor") for s in by_id["t-plain"].steps] == [None]
