"""tau-bench and tau2-bench results; expected figures from reading the files (SHAPE.md's tables, re-counted here)."""
import json

import pytest

from ls_trajeval.converters import tau_bench

from .conftest import FIXTURES, auto_name, meta, run, types

DIR = FIXTURES / "tau_bench"
V1 = DIR / "gpt-4o-airline.first10.json"
FAILED = DIR / "tool-calling-deepseek-v3-0.0_range_0-1_user-gpt-4o-human_0612073827.json"
IRON = DIR / "ironshell_ironforge_v3_deepseek.json"
TELECOM = DIR / "e2e_telecom_baseline.json"

# SHAPE.md, gpt-4o-airline.first10.json: task_id -> (reward, calls, assistant texts, user messages, "Error" results)
V1_TABLE = {
    0: (0.0, 8, 7, 8, 1),
    1: (0.0, 0, 5, 6, 0),
    2: (0.0, 7, 4, 5, 0),
    3: (0.0, 20, 11, 11, 5),
    4: (0.0, 6, 6, 7, 0),
    5: (0.0, 6, 7, 7, 0),
    6: (1.0, 6, 5, 6, 0),
    7: (0.0, 5, 8, 8, 0),
    8: (0.0, 0, 8, 9, 0),
    9: (0.0, 0, 25, 26, 0),
}


def call_result_pairs(messages, result_id):
    """(call name, the result's content) in source order: the result of a call is the first later
    tool message with its id that no earlier call took."""
    out, taken = [], set()
    for i, m in enumerate(messages):
        for tc in m.get("tool_calls") or []:
            cid = tc["id"]
            j = next(j for j in range(i + 1, len(messages))
                     if messages[j]["role"] == "tool" and result_id(messages[j]) == cid and j not in taken)
            taken.add(j)
            out.append(((tc.get("function") or tc)["name"], messages[j]["content"]))
    return out


def converted_pairs(t):
    return [(s.content, t.steps[i + 1].content) for i, s in enumerate(t.steps) if s.type == "action"]


def test_tau_bench_records_one_trace_each_with_reused_ids_paired_by_position():
    records = json.loads(V1.read_text(encoding="utf-8"))
    traces, errors, _ = run(V1)
    assert not errors and len(traces) == len(records) == 10
    for r, t in zip(records, traces):
        reward, calls, texts, users, failed = V1_TABLE[r["task_id"]]
        traj = r["traj"]
        assert t.metadata["reward"] == r["reward"] == reward and t.metadata["task_id"] == r["task_id"]
        assert (
            t.metadata["info"]["task"]["instruction"] == r["info"]["task"]["instruction"]
        )  # the simulator's, kept aside
        assert t.task == next(m["content"] for m in traj if m["role"] == "user") != r["info"]["task"]["instruction"]
        assert types(t)[0] == "system" and types(t).count("system") == 1
        assert types(t).count("action") == calls and types(t).count("observation") + types(t).count("error") == calls
        assert types(t).count("error") == failed
        assert sum(1 for s in t.steps if s.type == "message" and meta(s)["role"] == "assistant") == texts
        assert sum(1 for s in t.steps if s.type == "message" and meta(s)["role"] == "user") == users
        assert converted_pairs(t) == call_result_pairs(traj, lambda m: m["tool_call_id"])
    # task 0 reuses two call ids: a pairing by id alone would put calculate's result after get_user_details
    t0 = traces[0]
    ids = [meta(s)["tool_call_id"] for s in t0.steps if s.type == "action"]
    assert len(ids) - len(set(ids)) == 2
    traj = records[0]["traj"]
    k = next(
        k for k, m in enumerate(traj) if any(tc["function"]["name"] == "calculate" for tc in m.get("tool_calls") or [])
    )
    assert traj[k + 1]["role"] == "tool" and traj[k + 1]["tool_call_id"] == traj[k]["tool_calls"][0]["id"] in ids
    assert ("calculate", traj[k + 1]["content"]) in converted_pairs(t0)
    err = next(s for s in t0.steps if s.type == "error")
    assert err.content == "Error: payment amount does not add up, total price is 305, but paid 255"


def test_a_run_that_failed_before_its_first_turn_is_one_located_error():
    traces, errors, _ = run(FAILED)
    assert not traces and len(errors) == 1
    assert errors[0].field == "[0].traj" and "EOF when reading a line" in errors[0].message


# SHAPE.md, ironshell: simulation id -> (task_id, reward, calls, assistant texts, user messages, task start)
IRON_TABLE = {
    "1f41a7af-b5db-461b-a316-79dbdc00f638": (
        "14",
        0.0,
        11,
        11,
        6,
        "Hi! I’d like to check the balances on my gift cards",
    ),
    "2904b9d6-e4be-41b8-94a1-cb1a4ce2ea21": ("23", 0.0, 13, 13, 6, "Hi! I have a couple of things I’d like help with."),
    "e6e76f8e-2146-49be-ac96-18ba1c80d2b9": (
        "33",
        1.0,
        9,
        17,
        9,
        "Hi! I’d like to make some changes to my upcoming reservation",
    ),
    "6e5db61f-2adc-4997-9191-9394b8fe7daf": (
        "35",
        0.0,
        15,
        15,
        10,
        "Hi, I need to cancel my upcoming flight from JFK to MCO",
    ),
}


def test_tau2_simulations_one_trace_each():
    doc = json.loads(IRON.read_text(encoding="utf-8"))
    traces, errors, _ = run(IRON)
    assert not errors and [t.trace_id for t in traces] == list(IRON_TABLE)
    for sim, t in zip(doc["simulations"], traces):
        task_id, reward, calls, texts, users, task = IRON_TABLE[t.trace_id]
        assert t.metadata["task_id"] == task_id and t.metadata["reward"] == reward and t.task.startswith(task)
        assert types(t).count("action") == types(t).count("observation") == calls
        assert sum(1 for s in t.steps if s.type == "message" and meta(s)["role"] == "assistant") == texts
        assert sum(1 for s in t.steps if s.type == "message" and meta(s)["role"] == "user") == users
        assert converted_pairs(t) == call_result_pairs(sim["messages"], lambda m: m["id"])
        assert (
            t.metadata["task_definition"]["user_scenario"]
            == next(x for x in doc["tasks"] if x["id"] == task_id)["user_scenario"]
        )
        assert t.metadata["info"]["agent_info"]["llm"] == doc["info"]["agent_info"]["llm"]
        assert "policy" not in t.metadata["info"]["environment_info"]  # the same long text for every simulation


def test_tau2_telecom_the_user_calls_tools_too():
    sim = json.loads(TELECOM.read_text(encoding="utf-8"))["simulations"][0]
    traces, errors, _ = run(TELECOM)
    assert not errors and len(traces) == 1
    t = traces[0]
    assert (
        t.trace_id == "85e11d5b-441e-455e-b6d9-02597a3a875e"
        and t.metadata["reward"] == 1.0
        and "trial" not in t.metadata
    )  # null: left out
    assert t.task.startswith("Hello! My mobile data is not working properly. It either stops working or is ver")
    actions = [s for s in t.steps if s.type == "action"]
    # SHAPE: 17 calls, 8 by the agent and 9 by the simulated user, 17 results all paired by id
    assert len(actions) == 17 and [meta(s)["requestor"] for s in actions].count("user") == 9
    assert sum(1 for s in actions if meta(s)["role"] == "user") == 9
    assert converted_pairs(t) == call_result_pairs(sim["messages"], lambda m: m["id"])
    for i, s in enumerate(t.steps):
        if s.type == "action":
            assert (
                t.steps[i + 1].type == "observation" and meta(t.steps[i + 1])["tool_call_id"] == meta(s)["tool_call_id"]
            )
    # parallel calls: the agent's at turn 20, the user's at turn 42, each call before its own result
    at42 = [(s.type, s.content) for s in t.steps if meta(s).get("turn_idx") in (42, 43, 44)]
    assert [k for k, _ in at42] == ["message", "action", "observation", "action", "observation"]
    assert [c for k, c in at42 if k == "action"] == ["check_network_status", "check_sim_status"]
    # turn 26: a user message with text and a call
    assert [s.type for s in t.steps if meta(s).get("turn_idx") == 26] == ["message", "action"]


@pytest.mark.parametrize("path", [V1, FAILED, IRON, TELECOM], ids=lambda p: p.name)
def test_detected(path):
    assert auto_name(path) == "tau_bench"


def test_big_files_are_streamed_to_the_same_traces(monkeypatch):
    whole = {p: [t.to_json() for t in run(p)[0]] for p in (V1, IRON)}
    monkeypatch.setattr(tau_bench, "STREAM_ABOVE", 0)
    for p, expected in whole.items():
        assert [t.to_json() for t in run(p)[0]] == expected


def test_a_bad_simulation_costs_only_itself(tmp_path):
    doc = json.loads(IRON.read_text(encoding="utf-8"))
    doc["simulations"][1]["messages"][3]["tool_calls"] = [{"id": "x", "arguments": {}}]  # a call without a name
    p = tmp_path / "results.json"
    p.write_text(json.dumps(doc))
    traces, errors, _ = run(p)
    assert len(traces) == 3 and len(errors) == 1
    assert errors[0].field == "simulations[1].messages[3].tool_calls[0].function.name"


@pytest.mark.parametrize("path", [V1, TELECOM], ids=lambda p: p.name)
def test_files_too_big_to_sample_whole_are_detected_from_their_opening(path, monkeypatch):
    from ls_trajeval.converters.support import files

    monkeypatch.setattr(files, "SMALL_FILE", 0)
    assert auto_name(path) == "tau_bench"
