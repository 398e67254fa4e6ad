"""Cline / Roo Code task folders; expected figures from reading the files (SHAPE: Roo Code's own real-conversation "
"fixtures)."""

import json
import re
import shutil
from collections import Counter

import pytest

from .conftest import FIXTURES, auto_name, meta, run, types

DIR = FIXTURES / "cline"
NATURAL = DIR / "roo_natural-mini-uncondensed"
SYNTHETIC = DIR / "roo_synthetic-4-mixed-ops"
HEADER = re.compile(r"^\[([a-z_]+)(?: for (.*?))?\] Result:", re.S)


def source(folder):
    """Independent reading: the calls' tool names (first known XML tag of each assistant text, as SHAPE
    counts them), the result headers' tool names, the task, and the UI's reasoning and cost."""
    api = json.loads((folder / "api_conversation_history.json").read_text(encoding="utf-8"))
    ui = json.loads((folder / "ui_messages.json").read_text(encoding="utf-8"))
    results = [HEADER.match(b["text"]).group(1) for m in api if m["role"] == "user" for b in m["content"]
               if HEADER.match(b.get("text", ""))]
    task = re.search(r"<task>\n?(.*?)\n?</task>", api[0]["content"][0]["text"], re.S).group(1)
    return {
        "api": api,
        "results": results,
        "task": task,
        "users": sum(1 for m in api if m["role"] == "user"),
        "reasoning": [u["text"] for u in ui if u.get("say") == "reasoning"],
        "cost": sum(json.loads(u["text"]).get("cost", 0) for u in ui if u.get("say") == "api_req_started"),
        "files": json.loads((folder / "task_metadata.json").read_text(encoding="utf-8"))["files_in_context"],
    }


# SHAPE.md: calls by tool (XML in the assistant text), results = calls - the final attempt_completion
CASES = {
    NATURAL: Counter({"execute_command": 1, "read_file": 7, "attempt_completion": 1}),
    SYNTHETIC: Counter(
        {"update_todo_list": 6, "write_to_file": 8, "read_file": 3, "apply_diff": 2, "attempt_completion": 1}
    ),
}


@pytest.mark.parametrize("folder", list(CASES), ids=lambda f: f.name)
def test_a_task_folder_is_one_trace_with_results_paired_to_their_calls(folder):
    src = source(folder)
    traces, errors, warnings = run(folder / "api_conversation_history.json")
    assert not errors and not warnings and len(traces) == 1
    t = traces[0]
    assert t.trace_id == folder.name and t.metadata["source_format"] == "cline"
    assert t.task == src["task"]
    actions = [s for s in t.steps if s.type == "action"]
    assert Counter(s.content for s in actions) == CASES[folder]
    results = [s for s in t.steps if s.type in ("observation", "error")]
    assert [meta(s)["tool_name"] for s in results] == src["results"]
    assert len(results) == len(actions) - 1
    for i, s in enumerate(t.steps):
        if s.type in ("observation", "error"):
            assert t.steps[i - 1].type == "action" and t.steps[i - 1].content == meta(s)["tool_name"]
            assert meta(s)["message_index"] == meta(t.steps[i - 1])["message_index"] + 1
    assert actions[-1].content == "attempt_completion" and t.steps[-1] is actions[-1]
    # the extension's <environment_details> is no step's text; each user message keeps it in metadata
    assert not any("<environment_details>" in s.content for s in t.steps)
    envs = [s for s in t.steps if meta(s).get("environment_details")]
    assert len(envs) == src["users"] and all(
        meta(s)["environment_details"].startswith("<environment_details>") for s in envs
    )
    # the UI's reasoning, each before the reply it led to
    ui_thoughts = [s for s in t.steps if meta(s).get("from") == "ui_messages.json"]
    assert [s.content for s in ui_thoughts] == [r for r in src["reasoning"] if r.strip()]
    for s in ui_thoughts:
        nxt = t.steps[t.steps.index(s) + 1]
        assert meta(nxt)["role"] == "assistant"
    assert t.metadata["usage"]["cost"] == pytest.approx(src["cost"])
    assert t.metadata["files_in_context"] == src["files"] and t.metadata["model"] == "anthropic/claude-sonnet-4.5"


def test_the_natural_task_error_nudge_interrupted_call_and_feedback():
    t = run(NATURAL / "api_conversation_history.json")[0][0]
    # message 1: a call cut off by Roo's "[Response interrupted …]" notice; its result is a tool error
    first = next(s for s in t.steps if s.type == "action")
    assert first.content == "execute_command" and json.loads(first.action_input) == {"command": "git log --oneline -10"}
    assert meta(first)["interrupted"].startswith("[Response interrupted by a tool use result.")
    err = t.steps[t.steps.index(first) + 1]
    assert err.type == "error" and 'Tool "execute_command" is not allowed in ask mode.' in err.content
    assert meta(err)["result_header"] == "[execute_command for 'undefined'] Result:"
    # read_file's arguments are its <args> XML; a header holding a whole sentence still names read_file
    reads = [s for s in t.steps if s.content == "read_file"]
    assert json.loads(reads[0].action_input)["args"].startswith(
        "<file>\n<path>webview-ui/src/hooks/useAutosaveDraft.ts</path>"
    )
    # message 14: the user's feedback rides with the result; message 18: the no-tool nudge is a user message
    fb = next(s for s in t.steps if meta(s).get("message_index") == 14)
    assert fb.type == "observation" and "<feedback>\nLis les fichiers en entier stp\n</feedback>" in fb.content
    nudge = [s for s in t.steps if meta(s).get("message_index") == 18]
    assert [(s.type, meta(s)["role"]) for s in nudge] == [("message", "user")]
    assert nudge[0].content.startswith("[ERROR] You did not use a tool in your previous response!")
    # message 17: a reply without a call
    assert [s.type for s in t.steps if meta(s).get("message_index") == 17] == ["message"]


def test_text_after_a_call_stays_before_its_result():
    t = run(SYNTHETIC / "api_conversation_history.json")[0][0]
    steps = [s for s in t.steps if meta(s).get("message_index") in (1, 2)]
    assert [s.type for s in steps] == ["thought", "thought", "action", "observation"]
    assert (
        steps[1].content == "Now let's start with Phase 1, creating the initial files" and meta(steps[1])["after_call"]
    )


@pytest.mark.parametrize("name", ["ui_messages.json", "task_metadata.json"])
def test_the_folder_s_other_files_go_into_the_history_s_trace(name, tmp_path):
    assert auto_name(NATURAL / name) == "cline"
    assert run(NATURAL / name) == ([], [], [])
    shutil.copy(NATURAL / name, tmp_path / name)
    traces, errors, _ = run(tmp_path / name)
    assert not traces and len(errors) == 1 and "api_conversation_history.json" in errors[0].message


def test_detection_is_cline_not_anthropic_or_openai(tmp_path):
    for folder in CASES:
        assert auto_name(folder / "api_conversation_history.json") == "cline"
    renamed = tmp_path / "task.json"
    shutil.copy(SYNTHETIC / "api_conversation_history.json", renamed)
    assert auto_name(renamed) == "cline"
    assert auto_name(FIXTURES / "anthropic.json") == "anthropic"


def test_native_tool_blocks_thinking_and_a_bad_message(tmp_path):
    """Newer Cline writes tool_use / tool_result blocks and thinking; the task and environment come as in Roo."""
    api = json.loads((NATURAL / "api_conversation_history.json").read_text(encoding="utf-8"))
    env = api[0]["content"][1]
    history = [
        api[0],
        {
            "role": "assistant",
            "ts": 1,
            "content": [
                {"type": "thinking", "thinking": "look first"},
                {"type": "text", "text": "<thinking>\nlist the files\n</thinking>\nListing."},
                {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {"path": "."}},
            ],
        },
        {
            "role": "user",
            "ts": 2,
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.ts\nb.ts"}, env],
        },
        {"role": "user", "content": [{"type": "text", "text": 7}]},
        {
            "role": "assistant",
            "ts": 3,
            "content": [
                {"type": "text", "text": "<attempt_completion>\n<result>\nDone.\n</result>\n</attempt_completion>"}
            ],
        },
    ]
    p = tmp_path / "1759331561817" / "api_conversation_history.json"
    p.parent.mkdir()
    p.write_text(json.dumps(history), encoding="utf-8")
    traces, errors, _ = run(p)
    assert len(errors) == 1 and errors[0].field == "[3].content[0].text"
    t = traces[0]
    assert t.trace_id == "1759331561817"
    assert types(t) == ["message", "thought", "thought", "thought", "action", "observation", "action"]
    assert [s.content for s in t.steps[1:4]] == ["look first", "list the files", "Listing."]
    assert meta(t.steps[5])["tool_call_id"] == meta(t.steps[4])["tool_call_id"] == "toolu_1"
    assert meta(t.steps[5])["environment_details"] == env["text"]
    assert json.loads(t.steps[6].action_input) == {"result": "Done."}


def test_a_history_too_big_to_sample_whole_is_detected_from_its_name_and_opening(monkeypatch):
    from ls_trajeval.converters.support import files

    monkeypatch.setattr(files, "SMALL_FILE", 0)
    assert auto_name(NATURAL / "api_conversation_history.json") == "cline"
