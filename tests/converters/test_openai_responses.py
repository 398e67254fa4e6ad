import json

import pytest

from .conftest import FIXTURES, SCARY, meta, run, types


def test_response_object():
    traces, errors, warnings = run(FIXTURES / "openai_responses.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "resp_1" and t.task == "Sum files " + SCARY
    assert types(t) == ["message", "thought", "action", "observation", "action", "observation", "action", "message"]
    assert [meta(t.steps[i])["tool_call_id"] for i in (2, 3, 4, 5)] == ["c1", "c1", "c2", "c2"]
    assert (t.steps[3].content, t.steps[5].content) == ("1", "2")
    # {"type": "web_search_call", "id": "ws_1", "status": "completed"}: an action with no query logged
    assert (t.steps[6].content, t.steps[6].action_input) == ("web_search", "")
    assert meta(t.steps[6]) == {"item_id": "ws_1", "item_type": "web_search_call", "status": "completed"}
    assert t.steps[7].content == "3 <b>&</b>"
    assert t.metadata["usage"]["input_tokens"] == 30


def test_codex_rollout():
    traces, errors, _ = run(FIXTURES / "rollout-2025-10-29T00-59-38-019a2d7a.jsonl")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "019a2d7a-41c4"
    assert t.task == "list files " + SCARY  # the environment context is not the request
    assert types(t) == ["system", "message", "thought", "action", "observation", "message"]
    assert meta(t.steps[0])["injected"] is True and meta(t.steps[0])["role"] == "user"
    assert t.steps[3].content == "shell" and '"ls"' in t.steps[3].action_input
    assert meta(t.steps[4])["tool_call_id"] == "call_1"
    assert t.metadata["models"] == ["gpt-5-codex"]
    assert t.metadata["usage"] == {"input_tokens": 100, "output_tokens": 9}
    assert t.metadata["event_msg_counts"] == {"user_message": 1, "token_count": 1, "agent_message": 1}
    assert meta(t.steps[0])["source_line"] == 2


# ---------------------------------------------------------------- real Codex rollouts
# (tests/fixtures/converters/openai_responses)

CODEX = FIXTURES / "openai_responses"
EXEC = CODEX / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
DESKTOP = CODEX / "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
SAMPLE = CODEX / "simonw_sample_codex_session.jsonl"
INJECTED = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>")


def rollout(path):
    """Independent reading of a rollout: its lines, user prompts (items not injected, and user_message events),
    {call_id: name} and the call_ids of the outputs."""
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    items = [r["payload"] for r in lines if r["type"] == "response_item"]
    said = ["".join(c["text"] for c in p["content"]) for p in items if p["type"] == "message" and p["role"] == "user"]
    events = [
        r["payload"]["message"] for r in lines if r["type"] == "event_msg" and r["payload"]["type"] == "user_message"
    ]
    calls = {p["call_id"]: p["name"] for p in items if p["type"] == "function_call"}
    outputs = [p["call_id"] for p in items if p["type"] == "function_call_output"]
    return (
        lines,
        [s for s in said if not s.startswith(INJECTED)],
        [s for s in said if s.startswith(INJECTED)],
        events,
        calls,
        outputs,
    )


@pytest.mark.parametrize("path", [EXEC, DESKTOP, SAMPLE], ids=lambda p: p.name[:30])
def test_codex_rollout_calls_results_and_the_users_prompt(path):
    lines, prompts, injected, events, calls, outputs = rollout(path)
    (t,), errors, _ = run(path)
    assert not errors and t.trace_id == lines[0]["payload"]["id"]
    actions = [s for s in t.steps if s.type == "action"]
    assert sorted(meta(s)["tool_call_id"] for s in actions) == sorted(calls)
    assert sorted(meta(s)["tool_call_id"] for s in t.steps if s.type in ("observation", "error")) == sorted(outputs)
    for i, s in enumerate(t.steps):
        if s.type == "action":
            assert meta(t.steps[i + 1])["tool_call_id"] == meta(s)["tool_call_id"]
    # the prompt as the user wrote it: once per turn, whether the rollout holds it as an item, an event or both
    users = [s.content for s in t.steps if s.type == "message" and meta(s).get("role") == "user"]
    assert users == (prompts or events)
    first = (prompts or events)[0]
    assert t.task == (
        first.split("## My request for Codex:")[1].strip() if "## My request for Codex:" in first else first
    )
    assert [s.content for s in t.steps if s.type == "system" and meta(s).get("injected")] == injected
    assert "other" not in types(t)  # ghost_snapshot is bookkeeping (counted), no step
    assert t.metadata.get("ghost_snapshots", 0) == sum(
        1 for r in lines if r["type"] == "response_item" and r["payload"]["type"] == "ghost_snapshot"
    )
    assert not t.task.startswith(INJECTED) and "<environment_context>" not in t.task


def test_codex_tasks_read_from_the_files():
    # SHAPE.md's hand reading: the AGENTS.md block and the environment context come first in both CLI files
    assert run(EXEC)[0][0].task == "what is current repository about? summarize purpuse and explain goals"
    assert run(SAMPLE)[0][0].task.startswith("can you analyse the MD files in this directory")
    desktop = run(DESKTOP)[0][0]
    assert desktop.task.startswith("analyze trascript and summarzie action items")
    assert sum(1 for s in desktop.steps if meta(s).get("event") == "user_message") == 3  # prompts only as events


def test_a_prompt_event_written_before_its_item_is_one_step(tmp_path):
    lines = EXEC.read_text(encoding="utf-8").splitlines(keepends=True)
    assert (
        json.loads(lines[3])["payload"]["role"] == "user" and json.loads(lines[4])["payload"]["type"] == "user_message"
    )
    lines[3], lines[4] = lines[4], lines[3]
    p = tmp_path / "swapped.jsonl"
    p.write_text("".join(lines), encoding="utf-8")
    (t,), errors, _ = run(p)
    assert not errors and [s.content for s in t.steps if meta(s).get("role") == "user" and s.type == "message"] == [
        "what is current repository about? summarize purpuse and explain goals"]


def test_a_web_search_call_is_an_action_with_its_query(tmp_path):
    # no public rollout holds one: the item (as the Responses API documents it) is added to a real rollout
    lines = EXEC.read_text(encoding="utf-8").splitlines(keepends=True)
    search = {
        "timestamp": "2026-01-02T16:40:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": "codemie <b>&</b>"},
        },
    }
    page = {
        **search,
        "payload": {
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "open_page", "url": "https://x.test/a?b=1&c"},
        },
    }
    p = tmp_path / "search.jsonl"
    p.write_text(
        "".join(lines[:6]) + json.dumps(search) + "\n" + json.dumps(page) + "\n" + "".join(lines[6:]), encoding="utf-8"
    )
    (t,), errors, _ = run(p)
    found = [s for s in t.steps if s.content == "web_search"]
    assert not errors and [s.type for s in found] == ["action", "action"] and "other" not in types(t)
    assert found[0].action_input == "codemie <b>&</b>" and meta(found[0])["search_action"] == "search"
    assert json.loads(found[1].action_input) == {"type": "open_page", "url": "https://x.test/a?b=1&c"}
