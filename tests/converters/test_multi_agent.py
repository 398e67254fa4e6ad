import json

import pytest

from .conftest import FIXTURES, REAL, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "multi_agent"
WW = sorted((REAL / "who_and_when").glob("*.json")) if (REAL / "who_and_when").is_dir() else []


@pytest.mark.parametrize("path", WW, ids=lambda p: p.name)
def test_who_and_when_real(path):
    rec = json.loads(path.read_text(encoding="utf-8"))
    (t,), errors, _ = run(path, "multi_agent")
    assert errors == []
    hist = rec["history"]
    # one step per history entry, same order, content byte for byte
    assert len(t.steps) == len(hist)
    for i, (s, h) in enumerate(zip(t.steps, hist)):
        assert s.content == h["content"]
        assert meta(s)["history_index"] == i
    ms = t.metadata["mistake_step"]
    assert isinstance(ms, int) and ms == int(rec["mistake_step"])
    assert t.steps[ms].content == hist[int(rec["mistake_step"])]["content"]
    assert meta(t.steps[ms])["agent"] == rec["mistake_agent"]
    assert t.metadata["mistake_agent"] == rec["mistake_agent"]
    assert t.metadata["mistake_reason"] == rec["mistake_reason"]
    assert t.metadata["ground_truth"] == rec["ground_truth"]
    assert t.task == rec["question"]
    for s, h in zip(t.steps, hist):
        role = h["role"]
        if role.endswith("(thought)"):
            assert s.type == "thought" and meta(s)["agent"] == role.split(" (")[0]
        elif "(->" in role:
            assert s.type == "message" and meta(s)["recipient"] == role.split("(-> ")[1].rstrip(")")
    roundtrip(t)


def test_who_and_when_ids_are_stable():
    if not WW:
        pytest.skip("shared fixtures missing")
    a = [t.trace_id for t in run(WW[0], "multi_agent")[0]]
    assert a == [t.trace_id for t in run(WW[0], "multi_agent")[0]]


def test_who_and_when_bad_and_algorithm_generated():
    traces, errors, _ = run(D / "who_when_bad.jsonl", "multi_agent")
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {1, 2}
    assert by_line[1].field == "mistake_step" and "outside" in by_line[1].message
    assert by_line[2].field == "history"
    (t,) = traces
    # algorithm-generated records name the agent in "name"; a terminal's output is an observation
    assert types(t) == ["message", "message", "observation", "message"]
    assert [meta(s).get("agent") for s in t.steps] == [
        None,
        "Python_Expert",
        "Computer_terminal",
        "Verification_Expert",
    ]
    assert t.metadata["mistake_step"] == 1 and meta(t.steps[1])["agent"] == t.metadata["mistake_agent"]


def test_autogen_parallel_calls_and_errors():
    (t,), errors, _ = run(D / "autogen.json", "multi_agent")
    assert errors == []
    assert t.task.endswith(SCARY)
    assert types(t) == ["message", "thought", "action", "observation", "action", "error", "message", "message"]
    s = t.steps
    # JSON arguments are indented, whichever way the source wrote them (step convention: render_args)
    assert (s[2].content, s[2].action_input, meta(s[2])["tool_call_id"]) == (
        "add",
        '{\n  "a": 2,\n  "b": 2\n}',
        "call_a",
    )
    assert meta(s[3])["tool_call_id"] == "call_a" and s[3].content == "4"
    assert meta(s[4])["tool_call_id"] == "call_b" and s[5].content == "translation service down"
    assert (s[6].content, meta(s[6])["empty_response"]) == ("(empty response)", True)  # the writer said nothing
    assert s[7].content == 'Vier. <script>alert("x")</script> & ✓'
    assert [meta(x)["agent"] for x in s] == [
        "user",
        "planner",
        "planner",
        "planner",
        "planner",
        "planner",
        "writer",
        "writer",
    ]
    assert t.metadata["agents"] == ["user", "planner", "writer"]


def test_generic_messages_and_bad_lines():
    traces, errors, _ = run(D / "crew.jsonl", "multi_agent")
    assert [t.trace_id for t in traces] == ["crew-1", "crew-4"]
    t = traces[0]
    assert types(t) == ["message", "thought", "action", "observation", "observation", "message"]
    assert t.task == "Research the weather"
    assert meta(t.steps[2])["tool_call_id"] == "t1" and meta(t.steps[3])["tool_call_id"] == "t1"
    assert meta(t.steps[4])["agent"] == "Computer_terminal"
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {2, 3}
    assert by_line[2].field == "messages[1].content"
    assert "invalid JSON" in by_line[3].message


@pytest.mark.parametrize("name", ["autogen.json", "crew.jsonl", "who_when_bad.jsonl"])
def test_detect_fixture(name):
    assert detect("multi_agent", D / name) > 0.5
    assert auto_name(D / name) == "multi_agent"


@pytest.mark.parametrize("path", WW, ids=lambda p: p.name)
def test_detect_real_who_and_when(path):
    assert detect("multi_agent", path) > 0.5
    assert auto_name(path) == "multi_agent"



def test_tool_use_parts_in_content_become_actions(tmp_path):
    # an agent whose content is an Anthropic-style part list: its tool_use part is a call, not lost text
    rec = {"id": "parts-1", "messages": [
        {"sender": "user_proxy", "content": "add 2 and 2"},
        {"sender": "planner", "role": "assistant", "content": [
            {"type": "text", "text": "I will add."},
            {"type": "tool_use", "id": "tu_1", "name": "add", "input": {"a": 2, "b": 2}}]},
        {"sender": "executor", "role": "tool", "tool_call_id": "tu_1", "content": "4"}]}
    p = tmp_path / "parts.jsonl"
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    (t,), errors, _ = run(p, "multi_agent")
    assert errors == []
    assert types(t) == ["message", "thought", "action", "observation"]
    assert (t.steps[2].content, json.loads(t.steps[2].action_input), meta(t.steps[2])["tool_call_id"]) == (
        "add",
        {"a": 2, "b": 2},
        "tu_1",
    )
    assert t.steps[3].content == "4" and meta(t.steps[3])["tool_call_id"] == "tu_1"


def test_detect_two_agents_addressing_each_other(tmp_path):
    # AutoGen's two-agent chat: user_proxy and assistant write to each other; "assistant" is also a role word, and
    # the transcript is still two agents talking
    msgs = [{"sender": "user_proxy", "receiver": "assistant", "content": "plot <x> & y"},
            {"sender": "assistant", "receiver": "user_proxy", "content": "```python\nplot()\n```"},
            {"sender": "user_proxy", "receiver": "assistant", "content": "exitcode: 0"}]
    p = tmp_path / "chat.jsonl"
    p.write_text(json.dumps({"id": "c1", "task": "plot <x> & y", "messages": msgs}) + "\n", encoding="utf-8")
    assert auto_name(p) == "multi_agent"
    (t,), errors, _ = run(p)
    assert errors == []
    assert [s.content for s in t.steps] == [m["content"] for m in msgs]
    assert [meta(s)["agent"] for s in t.steps] == ["user_proxy", "assistant", "user_proxy"]
