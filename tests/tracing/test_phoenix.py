"""The loop with a real Phoenix: an agent instrumented with the real OpenTelemetry SDK exports to ``phoenix serve``;
``ingest phoenix`` makes tasks in the session's real Label Studio; two annotators label them in the shapes the UI
saves; ``writeback --to phoenix`` puts the verdicts on the right spans, read back through Phoenix's own client.

The agent's runs (tests/tracing/agent.py): step #1 thought (first LLM span), #2 action and #3 observation (the TOOL
span), #4 message (second LLM span). Labels, by hand:

  trace  ann-a                                  ann-b
  T0     #2 wrong (action/wrong_tool, major)    #2 wrong (action/wrong_tool, critical), #4 wrong (perception/
                                                hallucination, minor)
  T1     nothing wrong                          nothing wrong
  T2     (not annotated)

Agreement on correctness: T0 3 of 4 steps alike (#4 disputed): 0.75; T1 4 of 4: 1.0.
"""
from __future__ import annotations

import json
import re

import pytest
from commandline import invoke
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from studio.uishapes import ui_marks
from waiting import wait_for

from ls_trajeval.core.trace import Trace, parse_trace
from ls_trajeval.flows.projects import load_config
from ls_trajeval.studio import client as studio
from ls_trajeval.tracing.phoenix import Phoenix

from . import agent

pytestmark = pytest.mark.studio

WRONG_TOOL = ("action", "wrong_tool", "major", "called <the> wrong tool & more")
WRONG_TOOL_CRIT = ("action", "wrong_tool", "critical", "wrong tool")
HALLUCINATION = ("perception", "hallucinated_element", "minor", "invents the temperature")
EMAIL = {"a": "ann-a@phoenix.test", "b": "ann-b@phoenix.test"}


def cli(*args):
    return invoke(*args)


@pytest.fixture(scope="module")
def world(phoenix, ls_env, ls_client, tmp_path_factory):
    tp = agent.provider(OTLPSpanExporter(endpoint=phoenix.url + "/v1/traces"))
    ids = agent.runs(tp, range(3))
    tp.shutdown()
    ph = Phoenix(phoenix.url)
    assert wait_for(lambda: len(ph.spans(ids)) == 12, 60), "Phoenix did not store the agent's spans"
    config = load_config(None)
    project = studio.create_project(ls_client, config, "transcript", "from phoenix")["id"]
    state = tmp_path_factory.mktemp("state") / "tracing.sqlite"
    known = {u.get("email"): uid for uid, u in studio.users_by_id(ls_client).items()}  # a reused data dir has them
    users = {k: known.get(e) or studio._dump(ls_client.users.create(email=e, username=f"phx-{k}"))["id"]
             for k, e in EMAIL.items()}
    return {"ids": ids, "project": project, "state": state, "phoenix": ph, "url": phoenix.url, "users": users}


def ingest(world, *extra):
    return cli("ingest", "phoenix", "--project", world["project"], "--phoenix-url", world["url"], "--settle", "0",
               "--state", world["state"], *extra)


def writeback(world, *extra):
    return cli("writeback", "--project", world["project"], "--to", "phoenix", "--phoenix-url", world["url"],
               "--state", world["state"], *extra)


def tasks(ls_client, world) -> dict:
    return {t["data"]["trace_id"]: t for t in studio.iter_tasks(ls_client, world["project"])}


def spans_of(world, trace_id) -> dict:
    """span name and order -> span id: llm#0, weather, llm#1 (by start time)"""
    spans = sorted(world["phoenix"].spans([trace_id]), key=lambda s: s["start_time"])
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    for s in spans:
        n = seen.get(s["name"], 0)
        seen[s["name"]] = n + 1
        out[f"{s['name']}#{n}"] = s["context"]["span_id"]
    return out


@pytest.fixture(scope="module")
def ingested(world, ls_client):
    r = ingest(world)
    assert r.exit_code == 0, r.output
    assert "fetched 3 finished traces: imported 3" in r.output
    # the checkpoint: a rerun fetches nothing it had
    again = ingest(world)
    assert again.exit_code == 0 and "fetched 0 finished traces" in again.output, again.output
    return tasks(ls_client, world)


def test_ingest_keeps_each_steps_span(world, ingested):
    assert sorted(ingested) == sorted(world["ids"])
    for tid, task in ingested.items():
        trace = parse_trace(task["data"], source="task")
        assert isinstance(trace, Trace), trace
        assert [s.type for s in trace.steps] == ["thought", "action", "observation", "message"]
        spans = spans_of(world, tid)
        assert [s["metadata"]["span_id"] for s in trace.steps] == [spans["llm#0"], spans["weather#0"],
                                                                     spans["weather#0"], spans["llm#1"]]
        assert agent.NASTY in trace.steps[3].content


def annotate(ls_client, world, task, who, marks):
    transcript = task["data"]["te_transcript"]
    return ls_client.annotations.create(id=task["id"], result=ui_marks("transcript", transcript, marks),
                                        completed_by=world["users"][who], lead_time=12)


@pytest.fixture(scope="module")
def annotated(world, ingested, ls_client):
    t0, t1, _ = world["ids"]
    made = {
        ("a", t0): annotate(ls_client, world, ingested[t0], "a", {1: WRONG_TOOL}),
        ("b", t0): annotate(ls_client, world, ingested[t0], "b", {1: WRONG_TOOL_CRIT, 3: HALLUCINATION}),
        ("a", t1): annotate(ls_client, world, ingested[t1], "a", {}),
        ("b", t1): annotate(ls_client, world, ingested[t1], "b", {}),
    }
    return made


def by(annotations, **want):
    return [a for a in annotations if all(a.get(k) == v or a["result"].get(k) == v or a["metadata"].get(k) == v
                                          for k, v in want.items())]


def test_writeback_puts_verdicts_on_the_right_spans(world, annotated):
    t0, t1, t2 = world["ids"]
    dry = writeback(world, "--dry-run")
    assert dry.exit_code == 0, dry.output
    planned = [json.loads(line) for line in dry.stdout.splitlines()]
    assert planned and {p["action"] for p in planned} == {"new"}
    assert world["phoenix"].span_annotations(list(spans_of(world, t0).values())) == []  # a dry run sends nothing

    r = writeback(world)
    assert r.exit_code == 0, r.output
    # per annotator: T0 a: 4 correctness + #2 type/severity + score + outcome = 8; b: 4 + 2x2 + 2 = 10;
    # T1 a and b: 4 + 2 each = 12; annotators x2 and agreement x2 = 4 -> 34
    assert "34 verdicts: sent 34 new and 0 updated" in r.output, r.output
    assert re.search(r"\(2 requests\)", r.output)  # one request of span annotations, one of trace annotations

    spans = spans_of(world, t0)
    got = world["phoenix"].span_annotations(list(spans.values()))
    assert all(a["annotator_kind"] == "HUMAN" for a in got)
    tool = [a for a in got if a["span_id"] == spans["weather#0"]]
    # #2 and #3 share the tool span: each annotator's correctness of both, #2's type and severity by both
    assert sorted((a["name"], a["metadata"]["annotator"], a["metadata"]["step"]) for a in tool) == sorted([
        ("correctness", EMAIL["a"], "#2"), ("correctness", EMAIL["a"], "#3"), ("error_type", EMAIL["a"], "#2"),
        ("severity", EMAIL["a"], "#2"), ("correctness", EMAIL["b"], "#2"), ("correctness", EMAIL["b"], "#3"),
        ("error_type", EMAIL["b"], "#2"), ("severity", EMAIL["b"], "#2")])
    a_type = by(tool, name="error_type", annotator=EMAIL["a"])[0]
    assert a_type["result"]["label"] == "wrong_tool" and a_type["result"]["explanation"] == WRONG_TOOL[3]
    assert by(tool, name="severity", annotator=EMAIL["b"])[0]["result"]["label"] == "critical"
    wrong2 = by(tool, name="correctness", annotator=EMAIL["a"], step="#2")[0]["result"]
    assert wrong2["label"] == "incorrect" and wrong2["score"] == 0.0
    last = [a for a in got if a["span_id"] == spans["llm#1"]]
    assert by(last, name="correctness", annotator=EMAIL["b"])[0]["result"]["label"] == "incorrect"
    assert by(last, name="correctness", annotator=EMAIL["a"])[0]["result"] == {"label": "correct", "score": 1.0,
                                                                             "explanation": None}
    traces = world["phoenix"].trace_annotations([t0, t1, t2])
    assert not [a for a in traces if a["trace_id"] == t2]  # not annotated: nothing
    assert by(traces, name="annotators", trace_id=t0)[0]["result"]["score"] == 2
    assert by(traces, name="agreement", trace_id=t0)[0]["result"]["score"] == 0.75
    assert by(traces, name="agreement", trace_id=t1)[0]["result"]["score"] == 1.0
    assert {a["result"]["label"] for a in by(traces, name="overall_success", trace_id=t0)} == {"failure"}
    # a's final score: 100 - major (the default taxonomy's weight 5): read from the config, not from our code
    major = dict((s.name, s.weight) for s in load_config(None).trajectory.severities)["major"]
    assert by(traces, name="final_score", trace_id=t0, annotator=EMAIL["a"])[0]["result"]["score"] == 100 - abs(major)


def test_rerun_sends_nothing_and_a_change_updates(world, annotated, ls_client):
    r = writeback(world)
    assert r.exit_code == 0 and "sent 0 new and 0 updated, 34 unchanged, 0 withdrawn, 0 failed (0 requests)" \
        in r.output, r.output
    t0 = world["ids"][0]
    # b changes their mind: #4 is right after all, #2 only major
    task = tasks(ls_client, world)[t0]
    ls_client.annotations.update(id=annotated[("b", t0)].id,
                                 result=ui_marks("transcript", task["data"]["te_transcript"], {1: WRONG_TOOL}))
    r = writeback(world)
    assert r.exit_code == 0, r.output
    # updated: b's #2 correctness, type (their rationale) and severity, #4 correctness, final score; the agreement;
    # withdrawn: b's #4 type and severity
    assert "sent 0 new and 6 updated" in r.output and "2 withdrawn" in r.output, r.output
    spans = spans_of(world, t0)
    got = world["phoenix"].span_annotations(list(spans.values()))
    last = [a for a in got if a["span_id"] == spans["llm#1"] and a["metadata"]["annotator"] == EMAIL["b"]]
    assert [(a["name"], a["result"]["label"]) for a in last] == [("correctness", "correct")]
    assert by(got, name="severity", annotator=EMAIL["b"])[0]["result"]["label"] == "major"
    traces = world["phoenix"].trace_annotations([t0])
    assert by(traces, name="agreement")[0]["result"]["score"] == 1.0
    # one annotation per name, span and identifier: the updates replaced, nothing piled up
    assert len(by(got, name="correctness", annotator=EMAIL["b"])) == 4


def test_gold(world, annotated):
    r = writeback(world, "--gold")
    assert r.exit_code == 0, r.output
    t0, t1, _ = world["ids"]
    spans = spans_of(world, t0)
    got = world["phoenix"].span_annotations(list(spans.values()))
    gold = [a for a in got if a["metadata"]["annotator"] == "gold"]
    # after the update both annotators say #2 wrong_tool major and nothing else: unanimous
    assert sorted((a["name"], a["metadata"]["step"], a["result"]["label"]) for a in gold) == sorted([
        ("correctness", "#1", "correct"), ("correctness", "#2", "incorrect"), ("error_type", "#2", "wrong_tool"),
        ("severity", "#2", "major"), ("correctness", "#3", "correct"), ("correctness", "#4", "correct")])
    # the per-annotator verdicts stay as they were
    assert len([a for a in got if a["metadata"]["annotator"] == EMAIL["a"]]) == 6
