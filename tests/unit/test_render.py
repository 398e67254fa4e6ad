"""The one renderer (core/render.py): tool arguments as fields and real lines, edits as diffs, commands and results,
who acted, folded cards, and the rule that maps the workbench's text back to a step's content."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import render, tasks
from ls_trajeval.core.trace import Trace, parse_trace
from ls_trajeval.flows.convert import convert_inputs

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def make(steps: list[dict], task: str = "do it", **meta) -> Trace:
    out = parse_trace({"trace_id": "t", "task": task, "trace": steps, "metadata": meta})
    assert isinstance(out, Trace)
    return out


def cards(steps: list[dict], **kw) -> list[render.Card]:
    return render.render_trace(make(steps, **kw), CONFIG)


def text_of(steps: list[dict], i: int = 0, **kw) -> str:
    t = make(steps, **kw)
    return tasks.task_data(t, CONFIG)["te_transcript"][i]["text"]


def action(tool: str, args, **extra) -> dict:
    return {"type": "action", "content": tool, "action_input": json.dumps(args) if not isinstance(args, str) else args,
            **extra}


OLD = "def total(x):\n    \"\"\"Sum.\"\"\"\n    return x * 2\n"
NEW = "def total(x):\n    \"\"\"Sum.\"\"\"\n    return x * 3\n"


@pytest.mark.parametrize("tool, args", [
    ("Edit", {"file_path": "/src/p.py", "old_string": OLD, "new_string": NEW}),  # Claude Code
    # OpenHands
    ("str_replace_editor", {"command": "str_replace", "path": "/src/p.py", "old_str": OLD, "new_str": NEW}),
    ("replace", {"file_path": "/src/p.py", "old_string": OLD, "new_string": NEW, "instruction": "triple"}),  # Gemini
    ("edit", {"search": OLD, "replace": NEW}),  # SWE-agent's function-calling editor
])
def test_an_edit_is_a_unified_diff_with_real_lines(tool, args):
    text = text_of([action(tool, args)])
    lines = text.split("\n")
    assert "-    return x * 2" in lines and "+    return x * 3" in lines
    assert '     """Sum."""' in lines  # an unchanged line, as diff context
    assert "\\n" not in text and '\\"' not in text
    card = cards([action(tool, args)])[0]
    assert card.mono and card.blocks[0].kind == "diff"


def test_multiedit_shows_each_edit_and_write_shows_the_file_as_code():
    c = cards([action("MultiEdit", {"file_path": "/a.md", "edits": [{"old_string": "a\nb", "new_string": "a\nc"},
                                                                    {"old_string": "x", "new_string": "y"}]}),
               action("Write", {"file_path": "/src/app.py", "content": "import os\nprint(os.sep)\n"})])
    assert [b.title for b in c[0].blocks] == ["edit 1 of 2", "edit 2 of 2"]
    assert c[0].path == "/a.md" and "-b" in c[0].blocks[0].lines and "+c" in c[0].blocks[0].lines
    assert c[1].blocks[0].kind == "code" and c[1].blocks[0].language == "python"
    assert c[1].blocks[0].lines[:2] == ["import os", "print(os.sep)"] and c[1].path == "/src/app.py"


def test_text_edits_aider_search_replace_swe_agent_line_edit_and_a_codex_patch():
    aider = "fib.py\n```python\n<<<<<<< SEARCH\nold()\n=======\nnew()\n>>>>>>> REPLACE\n```"
    swe = "edit 4:4\ndef division(a, b):\nend_of_edit\n"
    patch = "*** Begin Patch\n*** Update File: app.py\n@@\n-print(1)\n+print(2)\n*** End Patch"
    c = cards([action("edit", aider), action("edit", swe), action("apply_patch", {"input": patch}),
               action("shell", {"command": ["apply_patch", patch]})])
    assert c[0].path == "fib.py" and {"-old()", "+new()"} <= set(c[0].blocks[0].lines)
    assert c[1].blocks[0].lines == ["@@ lines 4-4 of the open file replaced by @@", "+def division(a, b):"]
    assert c[2].blocks[0].kind == "diff" and "+print(2)" in c[2].blocks[0].lines
    assert c[3].blocks[0].kind == "diff" and "-print(1)" in c[3].blocks[0].lines


def test_commands_read_as_commands_and_editor_subcommands_as_fields():
    c = cards([action("shell", {"command": ["bash", "-lc", "ls -la\npwd"], "workdir": "/repo"}),
               action("execute_bash", {"command": "pytest -q"}),
               action("str_replace_editor", {"command": "view", "path": "/repo/a.py", "view_range": [1, 20]}),
               action("Glob", {"pattern": "**/*.ts"})])
    assert c[0].blocks[0].kind == "terminal" and c[0].blocks[0].lines == ["$ ls -la", "pwd"]
    assert c[0].blocks[1].lines == ["workdir: /repo"]
    assert c[1].blocks[0].lines == ["$ pytest -q"]
    assert c[2].blocks[0].lines == ["command: view", "view_range: [1, 20]"] and c[2].path == "/repo/a.py"
    assert c[3].blocks[0].lines == ["pattern: **/*.ts"]


def test_a_multi_line_argument_is_a_titled_block_of_real_lines():
    c = cards([action("Task", {"description": "look", "prompt": "line one\nline two"})])
    assert c[0].blocks[0].lines == ["description: look"]
    assert (c[0].blocks[1].title, c[0].blocks[1].lines) == ("prompt:", ["line one", "line two"])


def test_a_json_result_with_one_text_field_shows_that_text():
    out = {"output": "a.py\nb.py\n", "metadata": {"exit_code": 1, "duration_seconds": 0.1}}
    steps = [action("shell", {"command": "ls"}, metadata={"tool_call_id": "c1"}),
             {"type": "observation", "content": json.dumps(out), "metadata": {"tool_call_id": "c1"}}]
    c = cards(steps)[1]
    assert c.blocks[0].lines == ["a.py", "b.py", ""] and c.blocks[0].kind == "terminal"
    assert c.blocks[1].lines == ["exit_code: 1", "duration_seconds: 0.1"]
    assert c.status == ["exit 1"] and c.failed and not c.verbatim and c.tool == "shell"
    entry = tasks.task_data(make(steps), CONFIG)["te_transcript"][1]
    assert entry["text"].startswith("#2 · shell · exit 1\na.py\nb.py\n") and entry["content_at"] is None
    # two text fields: not one text, so the result stays as it was
    assert cards([{"type": "observation", "content": '{"a": "x", "b": "y"}'}])[0].verbatim


def test_who_acted_from_the_actor_key_else_the_type_and_metadata():
    steps = [
        {"type": "system", "content": "rules"},
        {"type": "message", "content": "hi", "metadata": {"role": "user"}},
        {"type": "message", "content": "hello", "metadata": {"role": "assistant", "agent": "Researcher"}},
        action("search", {"q": "x"}, metadata={"tool_call_id": "c1"}),
        {"type": "observation", "content": "found", "metadata": {"tool_call_id": "c1"}},
        {"type": "message", "content": "done", "metadata": {"role": "user", "agent": "Computer_terminal"}},
        {"type": "thought", "content": "hm", "actor": {"kind": "subagent", "name": "Explore"}},
        {"type": "message", "content": "x", "actor": {"kind": "nonsense"}, "metadata": {"role": "user"}},
    ]
    got = [(c.actor.kind, c.actor.name) for c in cards(steps)]
    assert got == [("system", ""), ("user", ""), ("agent", "Researcher"), ("agent", ""), ("tool", "search"),
                   ("agent", "Computer_terminal"), ("subagent", "Explore"), ("user", "")]
    authors = [e["author"] for e in tasks.task_data(make(steps), CONFIG)["te_transcript"]]
    assert authors[1] == "Message · user" and authors[2] == "Message" and authors[0] == "System"


def test_a_simulated_users_turns_and_tool_calls_are_the_simulated_users():
    steps = [{"type": "message", "content": "my phone", "metadata": {"role": "user"}},
             action("check_status_bar", {}, metadata={"role": "user", "requestor": "user", "tool_call_id": "c"}),
             {"type": "observation", "content": "5G", "metadata": {"role": "tool", "tool_call_id": "c"}},
             action("get_customer", {"id": 1}, metadata={"role": "assistant", "tool_call_id": "d"})]
    c = cards(steps, source_format="tau_bench")
    assert [x.actor.kind for x in c] == ["simulated_user", "simulated_user", "tool", "agent"]
    assert [x.author for x in c] == ["Message · simulated user", "Action · simulated user", "Observation", "Action"]
    assert "answers the simulated user" in c[2].status
    assert [x.actor.kind for x in cards(steps)][:2] == ["user", "user"]  # a person where the format has one


def test_system_prompts_injected_context_and_the_repeated_task_start_folded():
    steps = [{"type": "system", "content": "You are..."},
             {"type": "message", "content": "  Fix the\nbug ", "metadata": {"role": "user"}},
             {"type": "message", "content": "<env>", "metadata": {"role": "user", "injected": True}},
             {"type": "thought", "content": "ok"}]
    c = cards(steps, task="Fix the bug")
    assert [x.folded for x in c] == [True, True, True, False]
    assert c[1].status == ["the task, as shown above"]
    assert text_of(steps, 1, task="Fix the bug").startswith("#2 · user · the task, as shown above\n")


def real_traces() -> list[Trace]:
    dirs = ["claude_code", "openai_responses", "gemini_cli", "openhands", "tau_bench", "smolagents", "crewai",
            "multi_agent", "mini_swe_agent"]
    inputs = [FIXTURES / "converters" / d for d in dirs] + [FIXTURES / "real" / "swe_agent",
                                                             FIXTURES / "converters" / "project.aider.chat.history.md"]
    return [t for t in convert_inputs(inputs, "auto", jobs=1) if isinstance(t, Trace)]


@pytest.fixture(scope="module")
def real():
    found = real_traces()
    assert len(found) > 60
    return found


def test_the_workbench_text_maps_back_to_each_steps_content(real):
    """The rule in core/tasks.py's docstring, on every step of the real logs: where ``content_at`` is given, the
    step's content is there verbatim; it is missing only where the card shows a JSON result's text field."""
    derived = 0
    for t in real:
        for s, e in zip(t.steps, tasks.task_data(t, CONFIG)["te_transcript"]):
            at = e["content_at"]
            if at is None:
                derived += 1
                assert s.type in ("observation", "error") and render._json_text_result(s.content) is not None
                continue
            assert e["text"][at:at + len(s.content)] == s.content, (t.trace_id, e["text"][:80])
    assert derived >= 3  # the Codex rollout's three {"output": ..., "metadata": ...} results


def test_every_real_step_renders_and_the_style_holds_indices_and_colours_only(real):
    for t in real:
        data = tasks.task_data(t, CONFIG, "paged")
        style = render.trace_style(render.render_trace(t, CONFIG))
        assert "<" not in style and "\\" not in style
        assert len(data["te_pages"]) == len(t.steps)


def test_hostile_arguments_stay_inert():
    hostile = "</style><script>window.__pwned=1</script>"
    t = make([action(hostile, {"file_path": hostile, "old_string": hostile, "new_string": hostile + "\n"}),
              {"type": "observation", "content": json.dumps({"output": hostile}),
               "actor": {"kind": "tool", "name": hostile}}])
    data = tasks.task_data(t, CONFIG, "paged")
    for html in [data["te_header"], *(p[0]["html"] for p in data["te_pages"])]:
        assert "<script>" not in html and "</style><" not in html
    assert hostile in data["te_transcript"][0]["text"]  # plain text for Paragraphs, shown literally


def test_odd_shapes_never_break_the_renderer():
    rng = random.Random(7)
    values = [None, 1, True, "x\ny", [], {}, [1, "a"], {"command": ["ls", 1]}, {"edits": [1, {}]},
              {"old_string": 3, "new_string": None}, {"command": {"a": 1}}, "{not json", "[1, 2", "edit 1:\nx"]
    for _ in range(300):
        args = rng.choice(values)
        if isinstance(args, dict) and rng.random() < 0.5:
            args = {**args, rng.choice(["path", "content", "cmd", "code", "patch"]): rng.choice(values)}
        steps = [{"type": "action", "content": "tool", "action_input": args if not isinstance(args, (dict, list))
                  else json.dumps(args)},
                 {"type": rng.choice(["observation", "error", "other"]), "content": json.dumps(rng.choice(values)),
                  "metadata": {"exit_code": rng.choice([0, 2, "x", None]), "role": rng.choice(["user", 3, None])},
                  "actor": rng.choice([None, {"kind": "tool"}, {"kind": 3}, "user"])}]
        steps = [{k: v for k, v in s.items() if v is not None} for s in steps]
        tasks.task_data(make(steps), CONFIG, "paged")


def test_relations_link_a_parent_and_its_sub_agents_both_ways(real):
    rels = [render.relations(t) for t in real]
    ids = {t.trace_id: n for n, t in enumerate(real, 100)}
    links = render.link_relations([r for r in rels if r], ids)
    # Claude Code 1.x: the parent names no sub-agent trace; each sidechain's task is one of the parent's Task prompts
    parent = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    children = [t for t in real if t.metadata.get("parent_session") == parent]
    assert len(children) == 2
    got = {(x["trace_id"], x["task_id"], x["step"]) for x in links[parent]}
    steps = {t.trace_id: next(i for i, s in enumerate(next(p for p in real if p.trace_id == parent).steps)
                              if s.type == "action" and s.content == "Task"
                              and json.loads(s.action_input).get("prompt", "").split() == t.task.split())
             for t in children}
    assert got == {(c.trace_id, ids[c.trace_id], steps[c.trace_id]) for c in children}
    for c in children:
        assert links[c.trace_id] == [{"rel": "parent", "trace_id": parent, "task_id": ids[parent], "step": None}]
    # Claude Code 2.x: the Task result names the sub-agent's trace (not among the fixtures: named, not linked)
    main = "491e126e-1e71-469c-ade2-fcc8af567c74"
    call = next(i for i, s in enumerate(next(t for t in real if t.trace_id == main).steps)
                if s.type == "action" and s.content == "Task")
    assert links[main] == [{"rel": "subagent", "trace_id": f"{main}/sidechain/afb92ff", "task_id": None, "step": call}]
