from conftest import FIXTURES, meta, need_real, run, types


def test_trajectory_file():
    # Source: 5 trajectory entries find_file / open / edit / python / submit, 12 history messages (1 demo).
    traces, errors, _ = run(need_real("swe_agent", "swe-agent__test-repo-i1.traj"))
    assert not errors and len(traces) == 1
    t = traces[0]
    assert types(t) == ["system"] + ["thought", "action", "observation"] * 5
    assert [s.content for s in t.steps if s.type == "action"] == ["find_file", "open", "edit", "python", "submit"]
    assert t.steps[2].action_input == 'find_file "missing_colon.py"\n'
    assert t.steps[3].content.startswith('Found 1 matches for "missing_colon.py"')
    assert t.steps[-1].content.startswith("\ndiff --git a/tests/missing_colon.py")
    assert t.task.startswith("SyntaxError: invalid syntax") and "INSTRUCTIONS" not in t.task
    assert t.metadata["exit_status"] == "submitted" and t.metadata["demo_messages_skipped"] == 1


def test_function_calling_history():
    # Source: no trajectory; history = system, instance, then 5 x (assistant with tool_calls, tool result).
    traces, errors, _ = run(need_real("swe_agent", "function_calling_simple.traj"))
    assert not errors and len(traces) == 1
    t = traces[0]
    assert types(t) == ["system", "message"] + ["thought", "action", "observation"] * 5
    actions = [s for s in t.steps if s.type == "action"]
    assert [a.content for a in actions] == ["find_file", "open", "edit", "bash", "submit"]
    assert meta(actions[0])["tool_call_id"] == "call_PbWErNIge3YTrli3fiVvmIid"
    assert actions[0].action_input == '{\n  "file_name": "missing_colon.py"\n}'
    for i, s in enumerate(t.steps):
        if s.type == "action":
            assert t.steps[i + 1].type == "observation" and meta(t.steps[i + 1])["tool_call_id"] == meta(s)["tool_call_id"]
    assert t.metadata["variant"] == "history"


def test_mini_swe_agent():
    traces, errors, _ = run(FIXTURES / "mini_swe_agent.traj.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert types(t) == ["system", "message", "thought", "action", "observation", "thought", "action", "observation"]
    assert t.steps[3].content == "ls" and t.steps[3].action_input == "ls -la"
    assert t.task == "Please solve this issue: ls fails on ünï <dir> & co"
    assert t.metadata["variant"] == "mini-swe-agent" and t.metadata["exit_status"] == "Submitted"


def test_history_fallback_when_trajectory_empty(tmp_path):
    import json

    p = tmp_path / "x.traj"
    p.write_text(json.dumps({"trajectory": [], "history": [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "ls", "thought": "look", "action": "ls -la"},
        {"role": "user", "content": "a.py"}]}))
    traces, errors, _ = run(p)
    assert not errors and types(traces[0]) == ["message", "thought", "action", "observation"]


def test_simplified_steps_form():
    traces, errors, _ = run(FIXTURES / "swe_agent_steps.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "repo__parser-7" and t.task == "Fix the <parser> & its tests ✓"
    assert types(t) == ["thought", "action", "observation", "thought", "action", "observation", "thought", "action"]
    assert (t.steps[1].content, t.steps[1].action_input) == ("open", "open src/parser.py")
    assert t.steps[4].action_input == "edit 3:3\nreturn x\nend_of_edit"
    assert t.metadata["variant"] == "steps" and t.metadata["exit_status"] == "submitted"
