from conftest import FIXTURES, meta, need_real, run, types


def test_representative_session():
    # Read from the source: 11 message records (u a u a[tool_use Edit tool_001] u[tool_result] a u
    # a[tool_use Bash tool_002] u[tool_result] a u) and one summary record; parentUuid is null everywhere.
    traces, errors, warnings = run(need_real("claude_code", "representative_messages.jsonl"))
    assert not errors and not warnings and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "test_session"
    assert types(t) == ["message", "message", "message", "action", "observation", "message", "message", "action", "observation", "message", "message"]
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
    assert main.metadata["abandoned_records"] == 1 and main.metadata["sidechain_traces"] == 1
    assert main.metadata["other_records"] == {"file-history-snapshot": 1}
    assert main.metadata["summaries"] == ["Fix the build"]
    assert len(warnings) == 1 and "abandoned" in warnings[0].message
    assert side.trace_id == "sess-branch/sidechain/sidechain" and side.metadata["parent_session"] == "sess-branch"
    assert [s.content for s in side.steps] == ["Sub-agent: find the file", "Found main.c"]


def test_long_session_is_one_trace_with_all_steps(tmp_path):
    # Potato once turned a 1,369-line session into 50 empty traces: a long linear chain must stay one trace.
    import json

    lines = []
    prev = None
    for i in range(1400):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(json.dumps({"type": role, "uuid": f"u{i}", "parentUuid": prev, "sessionId": "long", "message": {"role": role, "content": [{"type": "text", "text": f"m{i}"}]}}))
        prev = f"u{i}"
    p = tmp_path / "long.jsonl"
    p.write_text("\n".join(lines[::-1]) + "\n")  # file order reversed: the chain still decides
    traces, errors, _ = run(p, "claude_code")
    assert not errors and len(traces) == 1
    assert [s.content for s in traces[0].steps] == [f"m{i}" for i in range(1400)]
