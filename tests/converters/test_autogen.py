"""AutoGen saved state: expected figures from reading the file (SHAPE: microsoft/autogen handoffs sample history)."""
import json

import pytest

from .conftest import FIXTURES, auto_name, detect, meta, run, types

CORE = FIXTURES / "autogen" / "history-wile_e_coyote_1.json"


def test_detected():
    assert auto_name(CORE) == "autogen"


def test_a_model_context_is_one_trace_with_the_handoff_call_and_its_result():
    msgs = json.loads(CORE.read_text(encoding="utf-8"))["messages"]
    calls = [
        c for m in msgs if m["type"] == "AssistantMessage" and isinstance(m["content"], list) for c in m["content"]
    ]
    results = [r for m in msgs if m["type"] == "FunctionExecutionResultMessage" for r in m["content"]]
    users = [m["content"] for m in msgs if m["type"] == "UserMessage"]
    texts = [
        (m["source"], m["content"]) for m in msgs if m["type"] == "AssistantMessage" and isinstance(m["content"], str)
    ]
    assert (len(calls), len(results), len(users)) == (1, 1, 2)  # SHAPE
    traces, errors, _ = run(CORE)
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.task == users[0] == "Hi, I bought a rocket-powered unicycle and it exploded."
    # the user's turn repeated by the sample before the handoff is kept, as the context held it
    assert [s.content for s in t.steps if meta(s).get("role") == "user"] == users
    i = types(t).index("action")
    assert (t.steps[i].content, t.steps[i].action_input, meta(t.steps[i])["tool_call_id"]) == \
        (calls[0]["name"], calls[0]["arguments"], calls[0]["id"])
    assert t.steps[i + 1].type == "observation" and t.steps[i + 1].content == results[0]["content"]
    assert meta(t.steps[i + 1])["tool_call_id"] == results[0]["call_id"]
    assert [(meta(s)["agent"], s.content) for s in t.steps if meta(s).get("role") == "assistant"] == texts
    assert t.metadata["agents"] == ["User", "TriageAgent", "IssuesAndRepairsAgent"]  # the handoff: a new agent speaks


def _thread_msg(source, type_, content, usage=None):
    return {"source": source, "models_usage": usage, "metadata": {}, "content": content, "type": type_}


def _team_state(thread):
    """A TeamState as AgentChat 0.4 saves it (structure from SHAPE.md; the values are made up here)."""
    context = [{"content": "weather in Oslo and Rome?", "source": "user", "type": "UserMessage"},
               {"content": "It is sunny.", "thought": None, "source": "assistant", "type": "AssistantMessage"}]
    return {"type": "TeamState", "version": "1.0.0", "team_id": "team-1", "agent_states": {
        "group_chat_manager/team-1": {"type": "RoundRobinManagerState", "version": "1.0.0", "message_thread": thread,
                                      "current_turn": 0, "next_speaker_index": 0},
        "collect_output_messages/team-1": {},
        "assistant/team-1": {"type": "ChatAgentContainerState", "version": "1.0.0", "message_buffer": [],
                             "agent_state": {"type": "AssistantAgentState", "version": "1.0.0",
                                             "llm_context": {"messages": context}}}}}


def test_a_team_state_is_its_thread_parallel_calls_each_followed_by_its_result(tmp_path):
    thread = [
        _thread_msg("user", "TextMessage", "weather in Oslo and Rome?"),
        _thread_msg(
            "assistant",
            "ToolCallRequestEvent",
            [
                {"id": "c1", "arguments": '{"city": "Oslo"}', "name": "weather"},
                {"id": "c2", "arguments": '{"city": "Rome"}', "name": "weather"},
            ],
            {"prompt_tokens": 10, "completion_tokens": 5},
        ),
        _thread_msg(
            "assistant",
            "ToolCallExecutionEvent",
            [
                {"content": "rain", "name": "weather", "call_id": "c2", "is_error": False},
                {"content": "timeout", "name": "weather", "call_id": "c1", "is_error": True},
            ],
        ),
        _thread_msg("assistant", "TextMessage", "Rome: rain; Oslo: unknown."),
    ]
    p = tmp_path / "team_state.json"
    p.write_text(json.dumps(_team_state(thread)), encoding="utf-8")
    assert auto_name(p) == "autogen"
    traces, errors, _ = run(p)
    assert not errors and len(traces) == 1  # the agent's llm_context repeats the run: not a second trace
    t = traces[0]
    assert t.task == "weather in Oslo and Rome?" and t.metadata["team_id"] == "team-1"
    assert [(s.type, meta(s).get("tool_call_id")) for s in t.steps if s.type != "message"] == [
        ("action", "c1"), ("error", "c1"), ("action", "c2"), ("observation", "c2")]


def test_a_team_state_without_a_thread_falls_back_to_the_agents_context(tmp_path):
    p = tmp_path / "team_state.json"
    p.write_text(json.dumps(_team_state([])), encoding="utf-8")
    traces, errors, _ = run(p)
    assert not errors and [t.metadata["agent_state"] for t in traces] == ["assistant/team-1"]
    assert [s.content for s in traces[0].steps] == ["weather in Oslo and Rome?", "It is sunny."]


def test_an_unknown_message_type_is_a_located_error(tmp_path):
    p = tmp_path / "ctx.json"
    p.write_text(json.dumps({"messages": [{"type": "UserMessage", "content": "hi", "source": "u"},
                                          {"type": "ToolMessage", "content": "x"}]}), encoding="utf-8")
    traces, errors, _ = run(p, "autogen")
    assert not traces and [(e.field, e.message) for e in errors] == [
        ("messages[1].type", "expected one of AssistantMessage, FunctionExecutionResultMessage, SystemMessage, "
                             "UserMessage, got 'ToolMessage'")]


@pytest.mark.parametrize("path", [FIXTURES / "multi_agent" / "autogen.json"])
def test_agentchat_transcripts_stay_multi_agent(path):
    assert detect("autogen", path) == 0
