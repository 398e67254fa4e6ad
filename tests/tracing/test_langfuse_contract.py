"""``ingest langfuse`` and ``writeback --to langfuse`` through the official SDK, checked by contract: no Langfuse server
runs here, so a local stand-in (langfuse_standin.py) checks each request against Langfuse's published OpenAPI
document and answers in its shapes; the tasks go to the session's real Label Studio.

Two traces tagged ``prod`` (L1, L2) and one tagged ``dev`` (L3); each: a GENERATION that asks for a tool, the TOOL
observation, a final GENERATION -> steps #1 thought (o-gen-1), #2 action and #3 observation (o-tool), #4 message
(o-gen-2). One annotator marks L1's #2 wrong (action/wrong_arguments, critical).
"""
from __future__ import annotations

import json
import re

import pytest
from commandline import invoke
from studio.uishapes import ui_marks

from ls_trajeval.core.trace import Trace, parse_trace
from ls_trajeval.flows.projects import load_config
from ls_trajeval.studio import client as studio
from ls_trajeval.tracing.langfuse import score_id

from .langfuse_standin import LangfuseStandIn, observation, trace

pytestmark = pytest.mark.studio
NASTY = "<img src=x onerror=alert(1)> & ]]> — Grüße"
WRONG_ARGS = ("action", "wrong_arguments", "critical", f"passed the city as a number {NASTY}")
PK, SK = "pk-lf-test", "sk-lf-test"


def make_trace(n: int, tag: str) -> dict:
    tid = f"L{n}"
    t0 = f"2026-05-0{n}T10:00:0"
    gen1 = observation(tid, f"{tid}-gen-1", "GENERATION", "llm", t0 + "1Z", model="stand-in-1",
                       input=[{"role": "user", "content": f"weather in city {n}? {NASTY}"}],
                       output={"role": "assistant", "content": "Let me look.", "tool_calls": [
                           {"id": "call_1", "type": "function",
                            "function": {"name": "weather", "arguments": json.dumps({"city": n})}}]})
    tool = observation(tid, f"{tid}-tool", "TOOL", "weather", t0 + "2Z", input={"city": n}, output=f"{n} °C")
    gen2 = observation(tid, f"{tid}-gen-2", "GENERATION", "llm", t0 + "3Z", model="stand-in-1",
                       output={"role": "assistant", "content": f"It is {n} °C. {NASTY}"})
    return trace(tid, t0 + "0Z", "weather-agent", [tag], [gen1, tool, gen2], input=f"weather in city {n}? {NASTY}")


def cli(*args):
    return invoke(*args)


@pytest.fixture(scope="module")
def standin():
    s = LangfuseStandIn([make_trace(1, "prod"), make_trace(2, "prod"), make_trace(3, "dev")], PK, SK)
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def world(standin, ls_env, ls_client, tmp_path_factory):
    project = studio.create_project(ls_client, load_config(None), "transcript", "from langfuse")["id"]
    return {"project": project, "state": tmp_path_factory.mktemp("lf") / "tracing.sqlite"}


def lf(standin, world, *args):
    return cli(*args, "--project", world["project"], "--langfuse-host", standin.url, "--langfuse-public-key", PK,
               "--langfuse-secret-key", SK, "--state", world["state"])


def test_ingest_and_writeback_by_contract(standin, world, ls_client):
    r = lf(standin, world, "ingest", "langfuse", "--tag", "prod", "--settle", "0")
    assert r.exit_code == 0, r.output
    assert "fetched 2 finished traces: imported 2" in r.output
    again = lf(standin, world, "ingest", "langfuse", "--tag", "prod", "--settle", "0")
    assert again.exit_code == 0 and "fetched 0 finished traces" in again.output, again.output
    tasks = {t["data"]["trace_id"]: t for t in studio.iter_tasks(ls_client, world["project"])}
    assert sorted(tasks) == ["L1", "L2"]
    steps = parse_trace(tasks["L1"]["data"], source="task")
    assert isinstance(steps, Trace)
    assert [(s.type, s["metadata"]["observation_id"]) for s in steps.steps] == [
        ("thought", "L1-gen-1"), ("action", "L1-tool"), ("observation", "L1-tool"), ("message", "L1-gen-2")]
    assert NASTY in steps.task

    transcript = tasks["L1"]["data"]["te_transcript"]
    ann = ls_client.annotations.create(id=tasks["L1"]["id"], result=ui_marks("transcript", transcript,
                                                                            {1: WRONG_ARGS}))
    r = lf(standin, world, "writeback", "--to", "langfuse")
    assert r.exit_code == 0, r.output
    # 4 correctness + #2 type and severity + final score + outcome + annotators = 9 (one annotator: no agreement)
    assert "9 verdicts: sent 9 new" in r.output, r.output
    configs = {c["name"]: c for c in standin.configs.values()}
    cfg = load_config(None).trajectory
    assert {"correctness", "error_type", "severity", "overall_success"} <= set(configs)
    assert [c["label"] for c in configs["error_type"]["categories"]] == [t.name for t in cfg.types]
    assert [c["label"] for c in configs["severity"]["categories"]] == [s.name for s in cfg.severities]
    scores = list(standin.scores.values())
    on_tool = sorted((s["name"], s["value"]) for s in scores if s.get("observationId") == "L1-tool")
    assert on_tool == [("correctness", "correct"), ("correctness", "incorrect"), ("error_type", "wrong_arguments"),
                       ("severity", "critical")]
    etype = next(s for s in scores if s["name"] == "error_type")
    assert etype["traceId"] == "L1" and etype["dataType"] == "CATEGORICAL"
    assert etype["configId"] == configs["error_type"]["id"] and etype["comment"] == WRONG_ARGS[3]
    final = next(s for s in scores if s["name"] == "final_score")
    assert final.get("observationId") is None and final["dataType"] == "NUMERIC"
    critical = next(s.weight for s in cfg.severities if s.name == "critical")
    assert final["value"] == 100 - abs(critical)
    # a score's id is made from the verdict's key, so the next run replaces it
    assert etype["id"] == score_id(f"L1/{etype['metadata']['annotator']}/#2/error_type")

    # unchanged: nothing sent; changed: the same score ids again; gone: deleted
    posts = standin.posts("/api/public/scores")
    r = lf(standin, world, "writeback", "--to", "langfuse")
    assert "sent 0 new and 0 updated, 9 unchanged" in r.output and standin.posts("/api/public/scores") == posts
    ids_before = set(standin.scores)
    ls_client.annotations.update(id=ann.id, result=ui_marks("transcript", transcript, {}))
    r = lf(standin, world, "writeback", "--to", "langfuse")
    assert r.exit_code == 0, r.output
    # #2 correct again: its correctness and the final score updated, its type and severity withdrawn
    assert "sent 0 new and 2 updated" in r.output and "2 withdrawn" in r.output, r.output
    assert len(standin.deleted) == 2 and set(standin.deleted) < ids_before
    assert set(standin.scores) == ids_before - set(standin.deleted)
    assert {s["value"] for s in standin.scores.values() if s["name"] == "correctness"} == {"correct"}
    assert re.search(r"\((\d+) requests\)", r.output)

    assert standin.violations == []
    # what was checked: the listing, the traces, the configs, the scores and their deletion
    kinds = {(m, re.sub(r"/L\d.*|/[0-9a-f-]{36}$", "/{id}", p)) for m, p in standin.requests}
    assert kinds >= {("GET", "/api/public/traces"), ("GET", "/api/public/traces/{id}"),
                     ("GET", "/api/public/score-configs"), ("POST", "/api/public/score-configs"),
                     ("POST", "/api/public/scores"), ("DELETE", "/api/public/scores/{id}")}


def test_the_standin_refuses_what_the_document_does_not_allow(standin):
    import httpx

    before = len(standin.violations)
    httpx.post(standin.url + "/api/public/scores", json={"value": 1}, auth=(PK, SK))  # no name
    httpx.get(standin.url + "/api/public/traces", params={"page": "first"}, auth=(PK, SK))
    assert len(standin.violations) >= before + 2
    del standin.violations[before:]
