"""OpenHands: trajectory exports, resolver and evaluation output.jsonl; expected figures from reading the
files (SHAPE: OpenHands/OpenHands' own test and example data)."""
import json
from collections import Counter

import pytest

from .conftest import FIXTURES, auto_name, meta, run, types

DIR = FIXTURES / "openhands"
BOOKKEEPING = {"change_agent_state", "agent_state_changed", "null", "recall"}


def model_call(e):
    """(name, arguments) of the tool call an event came from, read from its model response."""
    tcm = e["tool_call_metadata"]
    for tc in tcm["model_response"]["choices"][0]["message"]["tool_calls"]:
        if tc["id"] == tcm["tool_call_id"]:
            return tc["function"]["name"], json.loads(tc["function"]["arguments"])
    raise AssertionError("no tool call")


def check_events(t, events):
    """Every tool action of the source is an action step, its arguments the model's, followed by the
    observation whose cause is that action; bookkeeping events are no steps."""
    tool_actions = [e for e in events if "action" in e and e.get("tool_call_metadata")]
    actions = [s for s in t.steps if s.type == "action"]
    assert [meta(s)["event_id"] for s in actions] == [e["id"] for e in tool_actions]
    answered = {
        o["cause"]: o for o in events if o.get("observation") not in (None, *BOOKKEEPING) and o.get("cause") is not None
    }
    for e, s in zip(tool_actions, actions):
        name, args = model_call(e)
        assert s.content == name and json.loads(s.action_input) == args
        i = t.steps.index(s)
        if e["id"] in answered:
            res = t.steps[i + 1]
            assert res.type in ("observation", "error") and meta(res)["event_id"] == answered[e["id"]]["id"]
            assert meta(res)["tool_call_id"] == meta(s)["tool_call_id"] == e["tool_call_metadata"]["tool_call_id"]
        else:
            assert i + 1 == len(t.steps) or t.steps[i + 1].type != "observation"
    skipped = Counter(e.get("action") or e.get("observation") for e in events
                      if (e.get("action") or e.get("observation")) in BOOKKEEPING)
    assert t.metadata.get("events_not_steps", {}) == dict(skipped)
    return tool_actions, answered


@pytest.mark.parametrize(
    "name,calls,results,task",
    [
        # SHAPE: 4 calls (2 run, 2 edit) + a final agent message; 3 calls (2 read, 1 run) + finish
        (
            "trajs_basic_gui_mode.json",
            4,
            4,
            "I want to create a VueJS app that allows me to:\n* See all the items on my todo list",
        ),
        ("trajs_wrong_initial_state.json", 4, 3, "Please rename game_2048.py to 2048.py"),
    ],
)
def test_a_trajectory_export_is_one_trace(name, calls, results, task):
    events = json.loads((DIR / name).read_text(encoding="utf-8"))
    traces, errors, _ = run(DIR / name)
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.task.startswith(task)
    tool_actions, answered = check_events(t, events)
    assert len(tool_actions) == calls and types(t).count("action") == calls
    assert types(t).count("observation") == results == len(answered)
    assert types(t).count("thought") == sum(1 for e in events if e.get("args", {}).get("thought"))


def test_the_final_message_and_finish():
    t = run(DIR / "trajs_basic_gui_mode.json")[0][0]
    assert t.steps[-1].type == "message" and meta(t.steps[-1])["role"] == "agent"
    assert t.steps[-1].content.startswith("I've created a complete Vue.js todo application")
    t = run(DIR / "trajs_wrong_initial_state.json")[0][0]
    assert [types(t)[-2:], t.steps[-1].content] == [["thought", "action"], "finish"]
    # a command without output shows OpenHands' line for it, not an empty step
    mv = next(i for i, s in enumerate(t.steps) if s.content == "execute_bash" and "mv " in s.action_input)
    assert (
        t.steps[mv + 1].content == "Command `mv /workspace/game_2048.py /workspace/2048.py` executed with exit code 0."
    )
    assert meta(t.steps[mv + 1])["exit_code"] == 0


def test_evaluation_output_one_trace_per_instance():
    lines = [json.loads(ln) for ln in (DIR / "multi_swe_bench_output.jsonl").read_text(encoding="utf-8").splitlines()]
    traces, errors, _ = run(DIR / "multi_swe_bench_output.jsonl")
    assert not errors
    assert (
        [t.trace_id for t in traces]
        == [r["instance_id"] for r in lines]
        == ["ponylang__ponyc-4595", "ponylang__ponyc-4593", "ponylang__ponyc-4588"]
    )
    # SHAPE: calls (finish included where there is one) / paired results / cause-less errors
    expected = {
        "ponylang__ponyc-4595": (23, 22, 0),
        "ponylang__ponyc-4593": (33, 32, 1),
        "ponylang__ponyc-4588": (49, 49, 1),
    }
    for r, t in zip(lines, traces):
        calls, paired, refused = expected[r["instance_id"]]
        tool_actions, answered = check_events(t, r["history"])
        assert len(tool_actions) == types(t).count("action") == calls and len(answered) == paired
        unpaired = [s for s in t.steps if meta(s).get("unpaired")]
        assert len(unpaired) == refused and all(
            s.type == "error" and s.content.startswith("Parameter 'command' is expected") for s in unpaired
        )
        assert t.task == r["instruction"] and t.steps[0].type == "system" and t.steps[1].content == r["instruction"]
        assert (
            t.metadata["git_patch"] == r["test_result"]["git_patch"]
            and t.metadata["model"] == "openai/openrouter-llama-4-maverick"
        )
        assert t.metadata["events_not_steps"] == {"recall": 2}
        thinks = [i for i, s in enumerate(t.steps) if s.type == "action" and s.content == "think"]
        assert all(t.steps[i - 1].type != "thought" for i in thinks)  # the think call carries the thought itself
    assert [t.steps[-1].content for t in traces[:2]] == ["finish", "finish"]
    assert traces[2].metadata["error"].startswith("RuntimeError: Agent reached maximum iteration")


def test_a_command_that_exited_non_zero_is_an_error():
    lines = [json.loads(ln) for ln in (DIR / "multi_swe_bench_output.jsonl").read_text(encoding="utf-8").splitlines()]
    traces, _, _ = run(DIR / "multi_swe_bench_output.jsonl")
    for r, t in zip(lines, traces):
        # the command observations of the source and their exit codes, in order
        codes = [(o["extras"].get("metadata") or {}).get("exit_code") for o in r["history"]
                 if o.get("observation") == "run" and o.get("cause") is not None]
        runs = [s for s in t.steps if meta(s).get("tool_name") == "execute_bash" and meta(s).get("cause") is not None]
        assert [meta(s)["exit_code"] for s in runs] == codes
        assert [s.type for s in runs] == ["observation" if c == 0 else "error" for c in codes]
    assert sum(s.type == "error" and meta(s).get("exit_code") == 127 for t in traces for s in t.steps) == 3  # not found


def test_a_command_left_running_is_no_error():
    (t,), _, _ = run(DIR / "trajs_basic_gui_mode.json")
    (server,) = [s for s in t.steps if meta(s).get("exit_code") == -1]  # OpenHands' "no exit code yet"
    assert server.type == "observation" and server.content.startswith("Serving HTTP on 0.0.0.0 port 8000")


def test_resolver_output_pairs_the_2024_entries_by_position():
    lines = [json.loads(ln) for ln in (DIR / "resolver_output.jsonl").read_text(encoding="utf-8").splitlines()]
    traces, errors, _ = run(DIR / "resolver_output.jsonl")
    assert not errors and [t.trace_id for t in traces] == ["neubig/pr-viewer#5", "neubig/pr-viewer#1"]
    for r, t in zip(lines, traces):
        h = r["history"]
        assert t.task == h[0]["content"] == r["instruction"]
        acts = [e for e in h if "action" in e and e["action"] != "message"]
        assert [s.content for s in t.steps if s.type == "action"] == [e["action"] for e in acts]
        for i, s in enumerate(t.steps):
            if s.type == "action" and s.content != "finish":
                src = h[meta(s)["history_index"]]
                assert json.loads(s.action_input) == {k: src[k] for k in ("command", "code") if k in src}
                res = t.steps[i + 1]
                assert res.type == "observation" and meta(res)["history_index"] == meta(s)["history_index"] + 1
                assert res.content == h[meta(res)["history_index"]]["content"]
        assert t.metadata["issue"]["title"] == r["issue"]["title"] and t.metadata["success"] is True
    # SHAPE: 3 and 21 calls, each answered; finish last
    assert [types(t).count("observation") for t in traces] == [3, 21]
    assert [t.steps[-1].content for t in traces] == ["finish", "finish"]


@pytest.mark.parametrize("name", ["trajs_basic_gui_mode.json", "trajs_wrong_initial_state.json",
                                  "resolver_output.jsonl", "multi_swe_bench_output.jsonl"])
def test_detected(name):
    assert auto_name(DIR / name) == "openhands"


def test_pairs_and_a_bad_event(tmp_path):
    """The older ``[action, observation]`` pairs; a bad event costs its record only."""
    ev = json.loads((DIR / "trajs_wrong_initial_state.json").read_text(encoding="utf-8"))
    by_id = {e["id"]: e for e in ev}
    pairs = [[by_id[3], by_id[4]], [by_id[5], by_id[6]]]
    good = {"instance_id": "a", "instruction": "rename it", "history": pairs}
    bad = {"instance_id": "b", "history": [{"action": "run", "args": "ls"}]}
    p = tmp_path / "output.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in (good, bad, good | {"instance_id": "c"})) + "\n")
    traces, errors, _ = run(p, "openhands")
    assert [t.trace_id for t in traces] == ["a", "c"]
    assert len(errors) == 1 and errors[0].line == 2 and errors[0].field == "history[0].args"
    assert types(traces[0]) == ["thought", "action", "observation", "thought", "action", "observation"]
    assert traces[0].task == "rename it"


def test_an_export_too_big_to_sample_whole_is_detected_from_its_opening(monkeypatch):
    # (evaluation lines longer than the sampled head take the same path: multi_swe_bench_output.jsonl's are 200 KB)
    from ls_trajeval.converters.support import files

    monkeypatch.setattr(files, "SMALL_FILE", 0)
    assert auto_name(DIR / "trajs_basic_gui_mode.json") == "openhands"
