"""Potato's trace files: its converter's output on real MIT logs (tests/fixtures/converters/potato/), and the
shapes of Potato's example projects, which are GPL-3.0 and so not in this repository: the `structured_turns`
and `steps` records and the speaker vocabulary below are hand-made here, after those shapes."""
import json
import re

import pytest

from ls_trajeval.converters import registry
from ls_trajeval.converters.support.files import make_sample

from .conftest import FIXTURES, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "potato"
SPEAKER = re.compile(r"^(.*?) \((.*)\)$")


def _record(name):
    return json.loads((D / name).read_text(encoding="utf-8").splitlines()[0])


@pytest.mark.parametrize("name", sorted(p.name for p in D.glob("*.jsonl")))
def test_potato_files_are_detected_as_potato_and_not_multi_agent(name):
    assert auto_name(D / name) == "potato"
    # multi_agent read these turns' "content" (they have "text") and made every step empty
    assert detect("multi_agent", D / name) == 0
    assert [c.name for s, c in registry.detect(make_sample(D / name)) if s > 0] == ["potato"]


def test_claude_code_session_keeps_every_turn_with_its_text():
    rec = _record("spotter_tool_heavy.claude_code.potato.jsonl")
    conv = rec["conversation"]
    (t,), errors, _ = run(D / "spotter_tool_heavy.claude_code.potato.jsonl", "potato")
    assert errors == []
    assert t.trace_id == rec["id"] and t.task == rec["task_description"] == "start phoenix in background"
    assert len(t.steps) == len(conv) == 19
    # the step type follows the speaker: User/Agent say, Agent (<Tool>) calls, Environment answers
    expected = []
    for turn in conv:
        m = SPEAKER.match(turn["speaker"])
        expected.append("observation" if turn["speaker"] == "Environment" else "action" if m else "message")
    assert types(t) == expected
    assert expected.count("action") == 5 and expected.count("observation") == 5
    for turn, s in zip(conv, t.steps):
        m = SPEAKER.match(turn["speaker"])
        if m:  # "Agent (Bash)" with text Bash({...}): the tool and its arguments, not the call string
            assert s.content == m.group(2)
            args = json.loads(turn["text"][len(m.group(2)) + 1:-1])
            assert json.loads(s.action_input) == args
        elif turn["speaker"] == "Agent" and not turn["text"].strip():  # the model said nothing: a turn that says so
            assert (s.content, meta(s)["empty_response"]) == ("(empty response)", True)
        else:
            assert s.content == turn["text"]
        assert meta(s)["speaker"] == turn["speaker"]
    # each result right after its call, naming the call's tool
    for i, s in enumerate(t.steps):
        if s.type == "observation":
            assert t.steps[i - 1].type == "action" and meta(s)["tool_name"] == t.steps[i - 1].content
    assert [s.content for s in t.steps if s.type == "action"] == ["Bash", "Bash", "WebSearch", "Read", "WebFetch"]
    assert json.loads(t.steps[1].action_input)["command"] == "mix phx.server"
    assert [s for s in t.steps if meta(s).get("role") == "user"][0].content == "start phoenix in background"
    # the record's own facts travel with the trace
    assert t.metadata["potato_field"] == "conversation" and t.metadata["agent_name"] == rec["agent_name"]
    assert t.metadata["metadata_table"] == rec["metadata_table"]
    assert "structured_turns" not in t.metadata
    roundtrip(t)


def test_swe_agent_output_keeps_the_user_turn_and_the_agent_turns():
    rec = _record("function_calling_simple.swe_agent_trajectory.potato.jsonl")
    (t,), errors, _ = run(D / "function_calling_simple.swe_agent_trajectory.potato.jsonl", "potato")
    assert errors == []
    assert [s.content for s in t.steps] == [turn["text"] for turn in rec["conversation"]]
    assert len(t.steps) == 12 and types(t) == ["message"] * 12
    assert [meta(s)["role"] for s in t.steps].count("user") == 1
    assert t.task == rec["task_description"]


@pytest.mark.parametrize(
    "name", ["representative_messages.claude_code.potato.jsonl", "session_b.claude_code.potato.jsonl"]
)
def test_one_turn_files_give_their_one_user_message(name):
    rec = _record(name)
    (t,), errors, _ = run(D / name, "potato")
    assert errors == []
    assert [(s.type, s.content) for s in t.steps] == [("message", rec["conversation"][0]["text"])]
    assert t.task == rec["task_description"] and t.trace_id == rec["id"]


@pytest.mark.parametrize("name", ["hand_crafted_1.multi_agent.potato.jsonl",
                                  "swe-agent__test-repo-i1.swe_agent_trajectory.potato.jsonl"])
def test_an_empty_conversation_is_a_located_error(name):
    assert _record(name)["conversation"] == []
    traces, errors, _ = run(D / name, "potato")
    assert traces == []
    (e,) = errors
    assert (e.source, e.line, e.field) == (str(D / name), 1, "conversation")
    assert "empty" in e.message


def _write(tmp_path, records, name="t.json"):
    p = tmp_path / name
    p.write_text(json.dumps(records), encoding="utf-8")
    return p


def test_speaker_vocabulary(tmp_path):
    conv = [
        {"speaker": "User", "text": "Book <b>a</b> flight & pay"},
        {"speaker": "Agent (Thought)", "text": "I should search."},
        {"speaker": "Agent (Action)", "text": "search_flights(origin='JFK', destination='LHR')"},
        {"speaker": "Environment", "text": "Found 5 flights"},
        {"speaker": "Agent (Action)", "text": "```python\nprint(1)\n```"},
        {"speaker": "Environment (Error)", "text": "Traceback ..."},
        {"speaker": "Researcher (Thought)", "text": "Look at studies", "agent_id": "researcher", "turn_id": "t7"},
        {"speaker": "Agent (Patch)", "text": "diff --git a/x b/x"},
        {"speaker": "System", "text": "Available tools: a, b"},
        {"speaker": "User (user_proxy)", "text": "Thanks"},
        {"speaker": "moderator", "text": "Next speaker.", "addressee": "pro"},
        {"speaker": "Agent (Plan)", "text": "Step 1", "step_type": "thought"},
        {"speaker": "Agent (Action)", "text": "shell(command=\"ls\")", "step_type": "action", "tool": "shell"},
        {"speaker": "Observation", "text": "a.py"},
        {"speaker": "Assistant", "text": "Done."},
    ]
    p = _write(tmp_path, [{"id": "x1", "task_description": "Book a flight", "conversation": conv}])
    assert auto_name(p) == "potato"
    (t,), errors, _ = run(p, "potato")
    assert errors == []
    assert types(t) == ["message", "thought", "action", "observation", "action", "error", "thought", "code",
                        "system", "message", "message", "thought", "action", "observation", "message"]
    s = t.steps
    assert (s[2].content, s[2].action_input) == ("search_flights", "origin='JFK', destination='LHR'")
    assert meta(s[3])["tool_name"] == "search_flights"
    assert (s[4].content, s[4].action_input) == ("```python\nprint(1)\n```", "")  # no call: the action as written
    assert s[0].content == "Book <b>a</b> flight & pay" and meta(s[0])["role"] == "user"
    assert meta(s[6])["agent"] == "researcher" and meta(s[6])["turn_id"] == "t7"
    assert meta(s[9]) == {"speaker": "User (user_proxy)", "role": "user", "agent": "user_proxy", "message_index": 9}
    assert meta(s[10])["agent"] == "moderator" and meta(s[10])["addressee"] == "pro"
    assert (s[12].content, s[12].action_input) == ("shell", 'command="ls"')
    assert meta(s[13])["tool_name"] == "shell"
    assert t.task == "Book a flight"


def test_structured_turns_pair_each_call_with_its_output(tmp_path):
    # hand-made after Potato's coding-agent example shape (its own files are GPL-3.0)
    rec = {
        "id": "s1",
        "task_description": "Fix login",
        "model": "m",
        "structured_turns": [
            {"role": "user", "content": "Fix login", "tool_calls": []},
            {
                "role": "assistant",
                "content": "Reading the file.",
                "tool_calls": [
                    {
                        "tool": "Read",
                        "input": {"file_path": "a.py"},
                        "output": "x = 1",
                        "output_type": "code",
                        "language": "python",
                    },
                    {"tool": "Bash", "input": {"command": "pytest"}, "output": "1 failed", "output_type": "error"},
                ],
            },
            {"role": "assistant", "content": "", "tool_calls": [{"tool": "Edit", "input": {"old": "1", "new": "2"}}]},
            {"role": "assistant", "content": "Fixed.", "tool_calls": []},
        ],
    }
    p = _write(tmp_path, rec, "s.jsonl")
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    assert auto_name(p) == "potato"
    (t,), errors, _ = run(p, "potato")
    assert errors == []
    assert [(s.type, s.content) for s in t.steps] == [
        ("message", "Fix login"), ("thought", "Reading the file."), ("action", "Read"), ("observation", "x = 1"),
        ("action", "Bash"), ("error", "1 failed"), ("action", "Edit"), ("message", "Fixed.")]
    assert json.loads(t.steps[2].action_input) == {"file_path": "a.py"}
    assert meta(t.steps[3])["tool_name"] == "Read" and meta(t.steps[3])["language"] == "python"
    assert t.metadata["potato_field"] == "structured_turns" and t.metadata["model"] == "m"
    assert t.task == "Fix login"


def test_steps_of_agents(tmp_path):
    # hand-made after Potato's multi-agent example shape (its own files are GPL-3.0)
    recs = [
        {
            "id": "m1",
            "task": "Book a refundable flight",
            "steps": [
                {"agent": "Planner", "content": "Plan: search, then book."},
                {
                    "agent": "Agent",
                    "content": "I'll check the weather.",
                    "tool_calls": [{"name": "get_weather", "args": {"city": "NYC"}}],
                },
                {"agent": "Tool", "content": "22C, sunny"},
                {"agent": "Verifier", "content": "Done."},
            ],
        },
        {
            "id": "m2",
            "task": "Research",
            "steps": [
                {
                    "agent": "Researcher",
                    "thought": "Find studies.",
                    "action": "search_academic('remote work')",
                    "result": "12 studies",
                },
                {"agent": "Writer", "content": "Summary."},
                {"agent": "Writer", "odd": 1},
            ],
        },
    ]
    p = _write(tmp_path, recs)
    assert auto_name(p) == "potato"
    (a, b), errors, _ = run(p, "potato")
    assert errors == []
    assert [(s.type, s.content) for s in a.steps] == [
        ("message", "Plan: search, then book."), ("thought", "I'll check the weather."), ("action", "get_weather"),
        ("observation", "22C, sunny"), ("message", "Done.")]
    assert [meta(s).get("agent") for s in a.steps] == ["Planner", "Agent", "Agent", "Tool", "Verifier"]
    assert json.loads(a.steps[2].action_input) == {"city": "NYC"} and meta(a.steps[3])["tool_name"] == "get_weather"
    assert a.task == "Book a refundable flight"
    assert [(s.type, s.content) for s in b.steps[:3]] == [
        ("thought", "Find studies."), ("action", "search_academic"), ("observation", "12 studies")]
    assert b.steps[1].action_input == "'remote work'" and meta(b.steps[0])["agent"] == "Researcher"
    assert b.steps[4].type == "other" and json.loads(b.steps[4].content) == {"agent": "Writer", "odd": 1}


def test_bad_records_are_located_and_cost_only_themselves(tmp_path):
    recs = [
        {"id": "ok", "task_description": "t", "conversation": [{"speaker": "User", "text": "hi"}]},
        {"id": "bad1", "conversation": "not a list"},
        {"id": "bad2", "conversation": [{"speaker": "User", "text": "hi"}, 7]},
        {"id": "bad3", "structured_turns": [{"role": "assistant", "content": "x", "tool_calls": [{"input": {}}]}]},
        {"id": "bad4"},
    ]
    p = _write(tmp_path, recs)
    traces, errors, _ = run(p, "potato")
    assert [t.trace_id for t in traces] == ["ok"]
    assert [(e.field, e.message.split(":")[0]) for e in errors] == [
        ("[1].conversation", "expected a list, got str"),
        ("[2].conversation[1]", "expected a turn object with speaker and text"),
        ("[3].structured_turns[0].tool_calls[0].tool", "missing"),
        ("[4]", "no conversation, structured_turns or steps list"),
    ]
