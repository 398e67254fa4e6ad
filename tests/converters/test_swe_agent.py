import json
import re

import pytest

from .conftest import FIXTURES, assert_paired, auto_name, meta, need_real, run, types


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
            assert (
                t.steps[i + 1].type == "observation" and meta(t.steps[i + 1])["tool_call_id"] == meta(s)["tool_call_id"]
            )
    assert t.metadata["variant"] == "history"


def test_mini_swe_agent():
    traces, errors, _ = run(FIXTURES / "mini_swe_agent.traj.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert types(t) == ["system", "message", "thought", "action", "observation", "thought", "action", "observation"]
    assert t.steps[3].content == "bash" and t.steps[3].action_input == "ls -la"  # mini-swe-agent's one tool runs it
    assert meta(t.steps[4])["returncode"] == 0
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


# ---------------------------------------------------------------- mini-swe-agent, real runs
MINI = FIXTURES / "mini_swe_agent"
BASH = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)  # mini-swe-agent's own action regex
RC = re.compile(r"<returncode>(-?\d+)</returncode>")


def test_mini_swe_agent_bare_message_list():
    # the 1.x text protocol saved as a bare list: [system, user task, (assistant with one ```bash block, user output)*]
    msgs = json.loads((MINI / "github_issue.traj.json").read_text(encoding="utf-8"))
    replies = [(i, m) for i, m in enumerate(msgs) if m["role"] == "assistant"]
    commands = [BASH.findall(m["content"]) for _, m in replies]
    assert all(len(c) == 1 for c in commands) and len(commands) == 10
    outputs = [msgs[i + 1]["content"] for i, _ in replies]
    assert auto_name(MINI / "github_issue.traj.json") == "swe_agent"  # not openai_chat's plain messages
    traces, errors, _ = run(MINI / "github_issue.traj.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert types(t) == ["system", "message"] + ["thought", "action", "observation"] * 10
    actions = [i for i, s in enumerate(t.steps) if s.type == "action"]
    assert [t.steps[i].content for i in actions] == ["bash"] * 10
    assert [t.steps[i].action_input for i in actions] == [c[0] for c in commands]
    assert [t.steps[i + 1].content for i in actions] == outputs  # each output right after its command
    assert [t.steps[i - 1].content for i in actions] == [
        m["content"][: m["content"].index("```bash")].rstrip() for _, m in replies
    ]
    codes = [RC.match(o) for o in outputs]
    assert [meta(t.steps[i + 1]).get("returncode") for i in actions] == [int(c.group(1)) if c else None for c in codes]
    assert sum(1 for c in codes if c and c.group(1) != "0") == 2 and codes[-1] is None  # the last output is the diff
    first_user = msgs[1]["content"]
    assert t.task == first_user[len("Please solve this issue: "):first_user.index("\n\nYou can execute bash commands")]
    assert t.task.startswith("GitHub Issue: SyntaxError: invalid syntax")


@pytest.mark.parametrize("name", ["sqlfluff__sqlfluff-2419.traj.json", "pvlib__pvlib-python-1606.traj.json"])
def test_mini_swe_agent_tool_calling_runs(name):
    doc = json.loads((MINI / name).read_text(encoding="utf-8"))
    msgs = doc["messages"]
    calls = [(tc["id"], tc["function"]["name"], json.loads(tc["function"]["arguments"])["command"])
             for m in msgs if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
    outputs = {m["tool_call_id"]: m for m in msgs if m["role"] == "tool"}
    exit_msg = msgs[-1]
    assert exit_msg["role"] == "exit"
    traces, errors, _ = run(MINI / name)
    assert not errors and len(traces) == 1
    t = traces[0]
    assert_paired(t)
    actions = [i for i, s in enumerate(t.steps) if s.type == "action"]
    assert [(meta(t.steps[i])["tool_call_id"], t.steps[i].content, json.loads(t.steps[i].action_input)["command"])
            for i in actions] == calls
    for i in actions:
        cid = meta(t.steps[i])["tool_call_id"]
        nxt = t.steps[i + 1] if i + 1 < len(t.steps) else None
        if cid in outputs:
            assert nxt.type == "observation" and nxt.content == outputs[cid]["content"]
            assert meta(nxt)["returncode"] == outputs[cid]["extra"]["returncode"]
        else:  # the call the run submitted on: mini-swe-agent writes no tool message, its exit message answers it
            assert (
                nxt.content == exit_msg["content"]
                and meta(nxt)["exit_status"] == exit_msg["extra"]["exit_status"] == "Submitted"
            )
    thoughts = [m.get("reasoning_content") or m.get("content") for m in msgs if m["role"] == "assistant"]
    assert types(t).count("thought") == sum(1 for th in thoughts if th)
    issue = msgs[1]["content"].split("\n", 2)[2]
    assert t.task == issue[:issue.index("\n</pr_description>")] and "<pr_description>" not in t.task
    assert t.metadata["exit_status"] == doc["info"]["exit_status"] and t.trace_id == doc["instance_id"]
    if doc["info"]["exit_status"] != "Submitted":  # the API error that ended the run is the last step, not lost
        assert len(outputs) == len(calls) and t.steps[-1].type == "error" and t.steps[-1].content == exit_msg["content"]


def test_mini_swe_agent_reply_with_two_blocks_runs_nothing(tmp_path):
    p = tmp_path / "run.traj.json"
    p.write_text(
        json.dumps(
            [
                {"role": "system", "content": "sys"},
                {
                    "role": "user",
                    "content": "Please solve this issue: fix <it> & more\n\n"
                    "You can execute bash commands and edit files.",
                },
                {"role": "assistant", "content": "THOUGHT: two\n\n```bash\nls\n```\n\n```bash\npwd\n```"},
                {
                    "role": "user",
                    "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.",
                },
                {"role": "assistant", "content": "THOUGHT: one\n\n```bash\nls\n```"},
                {"role": "user", "content": "<returncode>2</returncode>\n<output>\nno\n</output>"},
            ]
        )
    )
    traces, errors, _ = run(p)
    assert not errors
    t = traces[0]
    assert types(t) == ["system", "message", "thought", "message", "thought", "action", "observation"]
    assert t.task == "fix <it> & more" and meta(t.steps[-1])["returncode"] == 2
