"""Who produced each step (``actor``), failed tool results typed ``error``, and the render hints, on the real public
logs in tests/fixtures. Every expected figure is read from the fixture itself (the jq line that counts it is in the
comment beside it), never from the converter."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from ls_trajeval.converters.support.steps import ACTOR_KINDS
from ls_trajeval.core.trace import Trace

from .conftest import FIXTURES, REAL, run

TAU = FIXTURES / "tau_bench"
CC = FIXTURES / "claude_code"
OPENHANDS = FIXTURES / "openhands"


def kinds(traces: list[Trace], type_: str | None = None) -> Counter:
    """Actor kinds of the steps (of ``type_``); None for a step without one (the agent's or a tool's by its type)."""
    return Counter(s["actor"]["kind"] if "actor" in s else None for t in traces for s in t.steps
                   if type_ is None or s.type == type_)


def names(traces: list[Trace], kind: str) -> set:
    return {s["actor"].get("name") for t in traces for s in t.steps if s.get("actor", {}).get("kind") == kind}


def converted(path) -> list[Trace]:
    traces, errors, _ = run(path)
    assert traces and not errors
    return traces


def test_tau2_the_simulated_users_turns_and_tool_calls_are_its_own():
    doc = json.loads((TAU / "e2e_telecom_baseline.json").read_text(encoding="utf-8"))
    users = [m for s in doc["simulations"] for m in s["messages"] if m["role"] == "user"]
    # jq '[.simulations[].messages[] | select(.role=="user")] | {texts: map(select((.content // "") != "")) |
    #     length, calls: map(.tool_calls // [] | length) | add}'  ->  14 turns with text, 9 tool calls
    said = sum(1 for m in users if m.get("content"))
    calls = sum(len(m.get("tool_calls") or []) for m in users)
    assert (said, calls) == (14, 9)
    agent_calls = sum(len(m.get("tool_calls") or []) for s in doc["simulations"] for m in s["messages"]
                      if m["role"] == "assistant")  # 6 messages with one call, 1 with two
    assert agent_calls == 8
    traces = converted(TAU / "e2e_telecom_baseline.json")
    assert kinds(traces, "message")["simulated_user"] == said
    assert kinds(traces, "action") == Counter({"simulated_user": calls, None: agent_calls})  # the agent's by type
    assert "user" not in kinds(traces)  # no person spoke: every user turn is the simulator's
    for t in traces:
        for s in t.steps:
            if s.type == "action" and s["metadata"].get("requestor") == "user":
                assert s["actor"]["kind"] == "simulated_user"


def test_tau_bench_user_turns_are_the_simulators_and_error_results_are_errors():
    records = json.loads((TAU / "gpt-4o-airline.first10.json").read_text(encoding="utf-8"))
    # jq '[.[].traj[] | select(.role=="user")] | length'  ->  93
    users = sum(1 for r in records for m in r["traj"] if m["role"] == "user")
    # jq '[.[].traj[] | select(.role=="tool" and (.content|startswith("Error:")))] | length'  ->  6
    failed = sum(1 for r in records for m in r["traj"] if m["role"] == "tool" and m["content"].startswith("Error:"))
    assert (users, failed) == (93, 6)
    traces = converted(TAU / "gpt-4o-airline.first10.json")
    assert kinds(traces)["simulated_user"] == users and "user" not in kinds(traces)
    assert kinds(traces, "error") == Counter({"tool": failed})
    # one system prompt (the airline policy) per record, folded
    systems = [s for t in traces for s in t.steps if s.type == "system"]
    assert len(systems) == len(records) == 10
    assert all(s["actor"] == {"kind": "system"} and s["render"] == {"folded": True} for s in systems)


def test_claude_code_sub_agent_steps_are_the_sub_agents_and_name_their_parent():
    path = CC / "spotter_8463c716" / "subagents" / "agent-a7be2f0.jsonl"
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    sid = recs[0]["sessionId"]
    # the first record is the Task prompt the main agent wrote: jq -c 'select(.type=="user") | .message.content |
    # type' shows one string (the prompt), every other user record is a list of tool_result blocks
    prompts = [r for r in recs if r["type"] == "user" and isinstance(r["message"]["content"], str)]
    assert len(prompts) == 1
    (t,) = converted(path)
    assert t.metadata["parent_trace"] == sid
    by = Counter((s.type, s["actor"]["kind"]) for s in t.steps)
    assert by[("message", "agent")] == 1  # the prompt, from the agent that started it
    assert {k for (_, k) in by} == {"agent", "subagent", "tool"}
    assert all(s["actor"]["kind"] == "subagent" for s in t.steps if s.type in ("action", "thought"))
    # jq -c 'select(.type=="user") | .message.content[]? | select(.is_error==true)' | wc -l  ->  2
    failed = sum(1 for r in recs if r["type"] == "user" and isinstance(r["message"]["content"], list)
                 for b in r["message"]["content"] if b.get("is_error") is True)
    assert failed == 2 and sum(1 for s in t.steps if s.type == "error") == failed


def test_claude_code_injected_context_is_the_systems_and_folded():
    path = CC / "spotter_tool_heavy.jsonl"
    # jq -c 'select(.isMeta==true) | .uuid' spotter_tool_heavy.jsonl  ->  one injected record
    injected = [json.loads(line)["uuid"] for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("isMeta") is True]
    assert len(injected) == 1
    (t,) = converted(path)
    (step,) = [s for s in t.steps if s["metadata"].get("uuid") in injected]
    assert step["actor"] == {"kind": "system"} and step["render"] == {"folded": True}


def test_claude_code_tool_results_name_their_tool_and_shell_output_reads_as_a_terminal():
    (t,) = converted(CC / "spotter_subagent_main.jsonl")
    for call, result in zip(t.steps, t.steps[1:]):
        if result.type in ("observation", "error") and call.type == "action":
            assert result["actor"] == {"kind": "tool", "name": call.content}
            if call.content == "Bash":
                assert call["render"] == result["render"] == {"as": "terminal"}
            path = json.loads(call.action_input).get("file_path") if call.action_input.startswith("{") else None
            if path:
                assert call["render"] == {"path": path}


def test_openhands_failures_are_errors():
    # per line of multi_swe_bench_output.jsonl, with jq over .history[] observations: "error" observations 0, 1, 1;
    # results starting "ERROR:" (the file editor's refusals) 1, 11, 12; other results with an exit code neither 0
    # nor -1 (OpenHands' "no exit code yet") 5, 2, 12: 2 + 24 + 19 = 45
    lines = [json.loads(line) for line in (OPENHANDS / "multi_swe_bench_output.jsonl").read_text().splitlines()]
    expected = 0
    for rec in lines:
        for e in rec["history"]:
            if e.get("observation") is None:
                continue
            extras = e.get("extras") or {}
            code = (extras.get("metadata") or {}).get("exit_code", extras.get("exit_code"))
            expected += (e["observation"] == "error" or (e.get("content") or "").startswith("ERROR:")
                         or isinstance(code, int) and code not in (0, -1))
    assert expected == 45
    traces = converted(OPENHANDS / "multi_swe_bench_output.jsonl")
    errors = [s for t in traces for s in t.steps if s.type == "error"]
    assert len(errors) == expected and set(kinds(traces, "error")) <= {"tool", None}  # None: a tool's by its type
    refused = [s for s in errors if s.content.startswith("ERROR:")]
    assert len(refused) == 24 and {s["actor"]["name"] for s in refused} == {"str_replace_editor"}


def test_codex_a_command_that_exited_non_zero_is_an_error():
    path = FIXTURES / "openai_responses" / "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
    outputs = [json.loads(line)["payload"]["output"] for line in path.read_text(encoding="utf-8").splitlines()
               if '"function_call_output"' in line]
    # jq -r 'select(.payload.type=="function_call_output") | .payload.output' | grep -c 'exited with code [1-9]'
    failed = [o for o in outputs if isinstance(o, str) and "Process exited with code 1\n" in o]
    assert len(failed) == 1
    traces = converted(path)
    errors = [s for t in traces for s in t.steps if s.type == "error"]
    assert [s.content for s in errors] == failed
    shell = [s for t in traces for s in t.steps if s.type == "action" and s.content == "exec_command"]
    assert len(shell) == 35 and all(s["render"] == {"as": "terminal"} for s in shell)


@pytest.mark.parametrize("path, agents", [
    # jq -r '.messages[] | .source' history-wile_e_coyote_1.json | sort -u  ->  the two agents and the user
    (FIXTURES / "autogen" / "history-wile_e_coyote_1.json", {"TriageAgent", "IssuesAndRepairsAgent"}),
    # the Who&When log: jq -c '[.history[].role] | unique' hand_crafted_1.json  ->  "Orchestrator (-> WebSurfer)",
    # "Orchestrator (thought)", "WebSurfer", "human": two agents and the person
    (REAL / "who_and_when" / "hand_crafted_1.json", None),
])
def test_multi_agent_steps_name_their_agent(path, agents):
    traces = converted(path)
    named = names(traces, "agent")
    if agents is None:
        doc = json.loads(path.read_text(encoding="utf-8"))
        agents = {m["role"].split(" (")[0] for m in doc["history"] if m["role"] != "human"}
        assert agents == {"Orchestrator", "WebSurfer"}
    assert named == agents
    assert kinds(traces)["user"] >= 1


def test_crewai_task_text_is_the_crews_and_the_output_the_agents():
    path = FIXTURES / "crewai" / "deadlift_good_form_side.mp4_A1_json.md"
    traces = converted(path)
    steps = [s for t in traces for s in t.steps]
    tasks = [s for s in steps if s["metadata"]["role"] == "task"]
    outputs = [s for s in steps if s["metadata"]["role"] == "agent"]
    assert len(tasks) == len(outputs) == 4  # grep -c 'status="completed"' (one task and its output each)
    assert all(s["actor"] == {"kind": "system"} for s in tasks)
    assert all(s["actor"] == {"kind": "agent", "name": s["metadata"]["agent"]} for s in outputs)


def test_openai_agents_the_agent_handed_over_to_is_a_sub_agent():
    path = FIXTURES / "openai_agents" / "test_generate_metrics.ingest1.json"
    traces, _, _ = run(path)
    (t,) = [t for t in traces if any(s.content == "handoff" for s in t.steps)]
    (handoff,) = [s for s in t.steps if s.content == "handoff"]
    moved = json.loads(handoff.action_input)
    assert handoff["actor"] == {"kind": "agent", "name": moved["from_agent"]}
    after = [s for s in t.steps[t.steps.index(handoff) + 1:] if s["actor"]["kind"] != "system"]
    assert after and all(s["actor"] == {"kind": "subagent", "name": moved["to_agent"]} for s in after)


def test_every_actor_and_render_follows_the_convention():
    """Across every real log: known kinds, a result is a tool's, a system step is the system's and starts folded; a
    step without an actor is the agent's or a tool's by its type (the labeling UI reads it so)."""
    paths = [p for p in (*FIXTURES.rglob("*.json*"), *REAL.rglob("*.json*")) if p.is_file()]
    seen = Counter()
    for p in paths:
        traces, _, _ = run(p)
        for t in traces:
            if t.metadata.get("source_format", "trace_jsonl") == "trace_jsonl":  # the user's own steps
                continue
            for s in t.steps:
                actor = s.get("actor")
                if actor is None:
                    assert s.type in ("thought", "action", "code", "message", "observation", "error", "other"), (p, s)
                    if s.type not in ("observation", "error"):  # (results say user in some logs: AG2, Cline)
                        assert s.get("metadata", {}).get("role") not in ("user", "human", "system"), (p, s)
                    continue
                assert actor["kind"] in ACTOR_KINDS
                seen[actor["kind"]] += 1
                if s.type in ("observation", "error"):
                    assert actor["kind"] == "tool", (p, s)
                if s.type == "system":
                    assert actor == {"kind": "system"} and s["render"].get("folded") is True
    assert set(seen) == ACTOR_KINDS  # each kind occurs in the real logs


def test_patches_read_as_diffs_and_shell_output_as_a_terminal():
    """No real log here calls apply_patch: Codex's two ways of writing one (its own tool, and its shell running
    ``["apply_patch", patch]``) as Codex writes them, and a shell printing a unified diff (``git diff``)."""
    from ls_trajeval.converters.support.steps import call_render, result_render

    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-old\n+new\n*** End Patch\n"
    assert call_render("apply_patch", patch) == {"as": "diff", "path": "src/app.py"}
    shell = json.dumps({"command": ["apply_patch", patch], "workdir": "/repo"}, indent=2)
    assert call_render("shell", shell) == {"as": "diff", "path": "src/app.py"}
    assert call_render("shell", json.dumps({"command": ["bash", "-lc", "ls"]})) == {"as": "terminal"}
    assert call_render("Edit", json.dumps({"file_path": "a/b.py", "old_string": "x", "new_string": "y"})) == {
        "path": "a/b.py"}
    assert call_render("Edit", "not JSON") is None
    diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert result_render("Bash", diff) == {"as": "diff"} and result_render("Bash", "total 0\n") == {"as": "terminal"}
