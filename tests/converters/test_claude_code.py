import json
from collections import Counter

import pytest

from .conftest import FIXTURES, meta, need_real, run, types


def test_representative_session():
    # Read from the source: 11 message records (u a u a[tool_use Edit tool_001] u[tool_result] a u
    # a[tool_use Bash tool_002] u[tool_result] a u) and one summary record; parentUuid is null everywhere.
    traces, errors, warnings = run(need_real("claude_code", "representative_messages.jsonl"))
    assert not errors and not warnings and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "test_session"
    assert types(t) == [
        "message",
        "message",
        "message",
        "action",
        "observation",
        "message",
        "message",
        "action",
        "observation",
        "message",
        "message",
    ]
    assert [s.content for s in t.steps if s.type == "action"] == ["Edit", "Bash"]
    assert [meta(s)["tool_call_id"] for s in t.steps[3:5]] == ["tool_001", "tool_001"]
    assert [meta(s)["tool_call_id"] for s in t.steps[7:9]] == ["tool_002", "tool_002"]
    assert t.steps[8].content.startswith("Hello, Alice!")
    assert t.task.startswith("Hello Claude! Can you help me understand how Python decorators")
    assert t.metadata["summaries"][0].startswith("User learned about Python decorators")
    assert t.metadata["records"] == 11 and t.metadata["abandoned_records"] == 0
    assert t.metadata["models"] == ["claude-3-sonnet-20240229"]
    assert all(s.content for s in t.steps)  # no empty steps (Potato's failure)
    assert meta(t.steps[0])["source_line"] == 1 and meta(t.steps[0])["uuid"] == "msg_001"


def test_session_b():
    traces, errors, _ = run(need_real("claude_code", "session_b.jsonl"))
    assert not errors and len(traces) == 1
    assert traces[0].trace_id == "session_b" and types(traces[0]) == ["message"] * 3
    assert traces[0].metadata["usage"]["output_tokens"] == 35


def test_branches_and_sidechains():
    traces, errors, warnings = run(FIXTURES / "claude_code_branches.jsonl")
    assert not errors
    main, side = traces
    assert main.trace_id == "sess-branch"
    assert types(main) == ["message", "message", "action", "error", "action", "observation", "message"]
    assert "ABANDONED reply" not in [s.content for s in main.steps]
    assert meta(main.steps[3])["tool_use_result"] == "Error: missing ;"
    assert main.metadata["abandoned_records"] == 1 and main.metadata["abandoned_branches"] == 1
    assert main.metadata["sidechain_traces"] == 1
    assert main.metadata["other_records"] == {"file-history-snapshot": 1}
    assert main.metadata["summaries"] == ["Fix the build"]
    assert len(warnings) == 1 and "abandoned" in warnings[0].message
    # a 1.x sidechain without agentId is named after its first record (s1)
    assert side.trace_id == "sess-branch/sidechain/s1" and side.metadata["parent_session"] == "sess-branch"
    assert [s.content for s in side.steps] == ["Sub-agent: find the file", "Found main.c"]


def test_long_session_is_one_trace_with_all_steps(tmp_path):
    # Potato once turned a 1,369-line session into 50 empty traces: a long linear chain must stay one trace.
    import json

    lines = []
    prev = None
    for i in range(1400):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(
            json.dumps(
                {
                    "type": role,
                    "uuid": f"u{i}",
                    "parentUuid": prev,
                    "sessionId": "long",
                    "message": {"role": role, "content": [{"type": "text", "text": f"m{i}"}]},
                }
            )
        )
        prev = f"u{i}"
    p = tmp_path / "long.jsonl"
    p.write_text("\n".join(lines[::-1]) + "\n")  # file order reversed: the chain still decides
    traces, errors, _ = run(p, "claude_code")
    assert not errors and len(traces) == 1
    assert [s.content for s in traces[0].steps] == [f"m{i}" for i in range(1400)]


# ---------------------------------------------------------------- real Claude Code 1.0 and 2.1 sessions
# (tests/fixtures/converters/claude_code)

CC = FIXTURES / "claude_code"
AAC = CC / "spotter_ae4a77f8" / "subagents" / "agent-aac57f5.jsonl"
A7B = CC / "spotter_8463c716" / "subagents" / "agent-a7be2f0.jsonl"
COMPACT = CC / "spotter_8463c716" / "subagents" / "agent-acompact-f46190.jsonl"
HEAVY = CC / "spotter_tool_heavy.jsonl"


def source(path):
    """Independent reading of a transcript: its records, {tool_use id: name}, the tool_use_ids of its results."""
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    calls = {b["id"]: b["name"] for r in recs if r.get("type") == "assistant"
             for b in r["message"]["content"] if b["type"] == "tool_use"}
    results = [b["tool_use_id"] for r in recs if r.get("type") == "user" and isinstance(r["message"]["content"], list)
               for b in r["message"]["content"] if b.get("type") == "tool_result"]
    return recs, calls, results


def assert_every_result_follows_its_call(trace):
    for i, s in enumerate(trace.steps):
        if s.type == "action":
            res = trace.steps[i + 1]
            assert res.type in ("observation", "error") and meta(res)["tool_call_id"] == meta(s)["tool_call_id"], i
        elif s.type in ("observation", "error") and "tool_call_id" in meta(s):
            assert trace.steps[i - 1].type == "action", i


# (file, traces, task of the first trace): tasks read from the files (SHAPE.md); a slash command with arguments is
# the command line as typed, one without arguments the prompt it expands to (the isMeta record after it)
REAL_SESSIONS = [
    ("spotter_short.jsonl", 1, "mix phx.server doesnt seem to start"),
    ("spotter_tool_heavy.jsonl", 1, "start phoenix in background"),
    (
        "spotter_subagent_main.jsonl",
        1,
        "/handgemacht:create-beads websearch to learn how to fastest setup credo, dialyzer, mix_audit",
    ),
    (
        "spotter_ae4a77f8/subagents/agent-aac57f5.jsonl",
        1,
        "Search hex.pm for the latest versions of these Elixir packages",
    ),
    (
        "spotter_8463c716/subagents/agent-a7be2f0.jsonl",
        1,
        "I need to understand:\n1. How Spotter.Services.Tmux.list_panes/0 works",
    ),
    (
        "spotter_8463c716/subagents/agent-acompact-f46190.jsonl",
        1,
        "Your task is to create a detailed summary of the conversation so far",
    ),
    (
        "ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        1,
        "Please analyze this codebase and create a CLAUDE.md file",
    ),
    (
        "ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        3,
        "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください",
    ),
]


@pytest.mark.parametrize("name,n,task", REAL_SESSIONS)
def test_every_parallel_call_and_result_is_kept_each_result_after_its_call(name, n, task):
    path = CC / name
    recs, calls, results = source(path)
    traces, errors, warnings = run(path)
    assert not errors and not warnings and len(traces) == n
    assert traces[0].task.startswith(task)
    actions = [s for t in traces for s in t.steps if s.type == "action"]
    assert Counter(s.content for s in actions) == Counter(calls.values())
    assert sorted(meta(s)["tool_call_id"] for s in actions) == sorted(calls)
    answered = [meta(s)["tool_call_id"] for t in traces for s in t.steps if s.type in ("observation", "error")]
    assert sorted(answered) == sorted(results)
    for t in traces:
        assert_every_result_follows_its_call(t)
        assert t.metadata["abandoned_branches"] == 0 and t.metadata["abandoned_records"] == 0  # none in these files
    said = sum(1 for r in recs if r.get("type") in ("user", "assistant", "system"))
    assert sum(t.metadata["records"] for t in traces) == said


def test_parallel_calls_of_a_sub_agent_are_no_longer_lost():
    # SHAPE.md: following root -> latest leaf kept 6 of 12 calls and 3 of 12 results of this sub-agent
    _, calls, results = source(AAC)
    assert (len(calls), len(results)) == (12, 12)
    t = run(AAC)[0][0]
    assert types(t).count("action") == 12 and types(t).count("observation") == 12
    # 6 WebSearch in the first response, then 6 WebFetch: each followed by its own result
    assert [s.content for s in t.steps if s.type == "action"] == ["WebSearch"] * 6 + ["WebFetch"] * 6


def test_inline_sidechains_of_claude_code_1_are_one_trace_per_sub_agent():
    path = CC / "ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    recs, _, _ = source(path)
    roots = [r["uuid"] for r in recs if r.get("isSidechain") and r["parentUuid"] is None]
    main, *side = run(path)[0]
    sid = recs[0]["sessionId"]
    assert [t.trace_id for t in side] == [f"{sid}/sidechain/{u}" for u in roots]
    assert main.metadata["sidechain_traces"] == 2
    # SHAPE.md hand counts per tree: main 13 calls, sidechains 2 and 6
    assert [types(t).count("action") for t in (main, *side)] == [13, 2, 6]
    assert [t.task.split("\n")[0][:30] for t in side] == [
        "Examine the package.json file(",
        "Analyze the current project st",
    ]
    assert all(t.metadata["parent_session"] == sid and t.metadata["sidechain"] for t in side)


@pytest.mark.parametrize("path", [AAC, A7B, COMPACT], ids=lambda p: p.name)
def test_a_sub_agent_file_is_its_own_trace_linked_to_its_parent_session(path):
    recs, _, _ = source(path)
    (sid,), (agent,) = {r["sessionId"] for r in recs}, {r["agentId"] for r in recs}
    assert path.name == f"agent-{agent}.jsonl" and path.parent.parent.name == f"spotter_{sid[:8]}"
    (t,), errors, _ = run(path)
    assert not errors and t.trace_id == f"{sid}/sidechain/{agent}"
    assert t.metadata["parent_session"] == sid and t.metadata["agent_id"] == agent and t.metadata["sidechain"] is True


def test_a_task_result_names_its_sub_agents_trace():
    path = CC / "spotter_subagent_main.jsonl"
    recs = source(path)[0]
    (ran,) = [(r["sessionId"], r["toolUseResult"]["agentId"]) for r in recs if isinstance(r.get("toolUseResult"), dict)
              and "agentId" in r["toolUseResult"]]
    t = run(path)[0][0]
    (task_result,) = [s for s in t.steps if "subagent_trace" in meta(s)]
    assert meta(task_result)["subagent_trace"] == f"{ran[0]}/sidechain/{ran[1]}"
    i = t.steps.index(task_result)
    assert (
        t.steps[i - 1].content == "Task" and meta(t.steps[i - 1])["tool_call_id"] == meta(task_result)["tool_call_id"]
    )


def test_a_folder_finds_the_sub_agent_files():
    from ls_trajeval.core.trace import Trace
    from ls_trajeval.flows.convert import convert_inputs

    items = list(convert_inputs([CC / "spotter_8463c716", CC / "spotter_ae4a77f8"], jobs=1))
    ids = sorted(i.trace_id for i in items if isinstance(i, Trace))
    assert ids == ["8463c716-a2ea-4c14-9efa-87158ebd9f20/sidechain/a7be2f0",
                   "8463c716-a2ea-4c14-9efa-87158ebd9f20/sidechain/acompact-f46190",
                   "ae4a77f8-aedd-4bc1-888f-c94edc91af04/sidechain/aac57f5"]
    assert all(isinstance(i, Trace) for i in items)


def _write(path, recs):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    return path


def test_only_real_abandoned_branches_are_left_out_and_counted(tmp_path):
    recs, calls, results = source(HEAVY)
    prompt = next(
        r for r in recs if r.get("type") == "user" and str(r["message"]["content"]).startswith("scrolling back")
    )
    reply = next(r for r in recs if r.get("parentUuid") == prompt["uuid"])
    read = next(r for r in recs if r.get("type") == "assistant" and r["message"]["content"][0].get("name") == "Read")
    # an edited prompt (the first attempt and the reply it got) and a retried response: siblings written before
    # the kept ones, as Claude Code writes them
    edited = {**prompt, "uuid": "edited-prompt", "message": {**prompt["message"], "content": "EDITED PROMPT"}}
    edited_reply = {
        **reply,
        "uuid": "edited-reply",
        "parentUuid": "edited-prompt",
        "message": {**reply["message"], "id": "msg_edited", "content": [{"type": "text", "text": "EDITED REPLY"}]},
    }
    retried = {
        **read,
        "uuid": "retried",
        "message": {**read["message"], "id": "msg_retried", "content": [{"type": "text", "text": "RETRIED"}]},
    }
    out = []
    for r in recs:
        if r is prompt:
            out += [edited, edited_reply]
        if r is read:
            out.append(retried)
        out.append(r)
    traces, errors, warnings = run(_write(tmp_path / "edited.jsonl", out))
    (t,) = traces
    assert not errors and t.metadata["abandoned_branches"] == 2 and t.metadata["abandoned_records"] == 3
    assert (
        len(warnings) == 1 and "2 abandoned branch(es)" in warnings[0].message and "3 record(s)" in warnings[0].message
    )
    assert not {"EDITED PROMPT", "EDITED REPLY", "RETRIED"} & {s.content for s in t.steps}
    assert sorted(meta(s)["tool_call_id"] for s in t.steps if s.type == "action") == sorted(calls)
    assert len([s for s in t.steps if s.type in ("observation", "error")]) == len(results)
    assert_every_result_follows_its_call(t)


def test_a_bad_record_costs_only_itself_not_its_session(tmp_path):
    # the case: a file holding two sessions, a record of the first with "message": "error"
    first, second = (
        need_real("claude_code", "representative_messages.jsonl"),
        need_real("claude_code", "session_b.jsonl"),
    )
    recs = source(first)[0]
    good = sum(1 for r in recs if r["type"] in ("user", "assistant"))
    bad = {**recs[4], "uuid": "bad-record", "message": "error"}
    lines = recs[:5] + [bad] + recs[5:] + source(second)[0]
    traces, errors, _ = run(_write(tmp_path / "two.jsonl", lines))
    assert [t.trace_id for t in traces] == ["test_session", "session_b"]
    assert [(e.line, e.field, e.trace_id) for e in errors] == [(6, "message", "test_session")]
    assert "expected an object, got" in errors[0].message and errors[0].source == str(tmp_path / "two.jsonl")
    assert len(traces[0].steps) == good == 11  # every good record of the session is there
    assert traces[0].metadata["records"] == good + 1


def test_a_bad_record_inside_the_parent_chain_keeps_the_records_below_it(tmp_path):
    recs, calls, results = source(HEAVY)
    i = next(
        i
        for i, r in enumerate(recs)
        if r.get("type") == "assistant"
        and r["message"]["content"][0]["type"] == "text"
        and any(c.get("parentUuid") == r["uuid"] for c in recs)
    )
    recs[i] = {**recs[i], "message": "error"}
    traces, errors, _ = run(_write(tmp_path / "heavy.jsonl", recs))
    assert [(e.line, e.field) for e in errors] == [(i + 1, "message")]
    (t,) = traces
    assert sorted(meta(s)["tool_call_id"] for s in t.steps if s.type == "action") == sorted(calls)
    assert len([s for s in t.steps if s.type in ("observation", "error")]) == len(results)
    assert_every_result_follows_its_call(t)
