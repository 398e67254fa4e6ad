"""`ls-trajeval judge`, `judge merge`, `judge accept` and `judge audit` on the session's real Label Studio, the judge
answered by the local stand-in. Expected verdicts are read from the stand-in's recorded answers
(tests/fixtures/judge/responses.json); expected figures are worked out in the tests."""
from __future__ import annotations

import json
import math
import re

import pytest
from commandline import invoke

from ls_trajeval.core import results
from ls_trajeval.core.labels import StepLabel, TraceLabels
from ls_trajeval.core.records import build_record
from ls_trajeval.flows.projects import project_config
from ls_trajeval.studio import client as studio

from .conftest import TRACES
from .standin import FIXTURE, MODEL

pytestmark = pytest.mark.studio
Z = 1.959963984540054


def recorded() -> dict:
    """trace id -> the verdicts of the last (valid) answer its script gives: [{step, correctness, ...}]."""
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    out = {}
    for trace in map(json.loads, TRACES.read_text(encoding="utf-8").splitlines()):
        marker = next(k for k in doc["scripts"] if trace["task"].startswith(k + "."))
        last = doc["scripts"][marker][-1]
        content = doc["completions"][last]["choices"][0]["message"]["content"]
        out[trace["trace_id"]] = json.loads(re.sub(r"^```json\n|\n```$", "", content))["steps"]
    return out


RECORDED = recorded()
#: the schema case never gets a valid answer: it is reported, not stored
JUDGED = sorted(t for t in RECORDED if t != "judge-schema")


def new_project(title: str) -> int:
    r = invoke(*["import", str(TRACES), "--create", title, "--quiet"])
    assert r.exit_code == 0, r.output
    return int(re.search(r"project (\d+):", r.stdout).group(1))


def run_judge(standin, project: int, cache, *extra: str):
    return invoke(*["judge", "--project", str(project), "--base-url", standin.url, "--model",
                                           MODEL, "--api-key-env", "JUDGE_KEY", "--timeout", "5", "--cache",
                                           str(cache), "--quiet", *extra], env={"JUDGE_KEY": "sk-e2e"})


def tasks_by_trace(client, project: int) -> dict:
    return {t["data"]["trace_id"]: t for t in studio.iter_tasks(client, project)}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("judge-cache") / "judge.sqlite3"


def test_judge_stores_predictions_in_the_ui_shapes_and_a_rerun_costs_nothing(ls_env, ls_client, standin, cache):
    project = new_project("judge e2e")
    r = run_judge(standin, project, cache)
    assert r.exit_code == 1, r.output  # the schema case was rejected
    assert "judged 7 of 8 traces (0 from the cache)" in r.stdout and "7 predictions created" in r.stdout
    assert re.search(r"error: judge-schema \(task \d+\): invalid answer: does not match the schema: .*"
                     r'"teleportation" is not one of the 19 allowed values', r.stderr)
    assert "added the Data Manager tab 'Least confident first'" in r.stdout
    assert {q["authorization"] for q in standin.requests} == {"Bearer sk-e2e"}
    config = project_config(studio.get_project(ls_client, project))
    tasks = tasks_by_trace(ls_client, project)
    versions = set()
    for trace_id in JUDGED:
        task = tasks[trace_id]
        (prediction,) = task["predictions"]
        versions.add(prediction["model_version"])
        decoded = results.decode(prediction["result"], config, task["data"]["n_steps"], prediction=True)
        assert decoded.warnings == []
        verdicts = RECORDED[trace_id]
        marks = [StepLabel(v["step"] - 1, "incorrect", config.trajectory.type_by_name(v["error_type"]).category,
                           v["error_type"], v["severity"], v["rationale"], confidence=v["confidence"])
                 for v in verdicts if v["correctness"] == "incorrect"]
        assert [s for s in decoded.steps if s.correctness == "incorrect"] == marks, trace_id
        # the region's confidence is Label Studio's per-region score, on each of its results
        assert all(item["score"] == next(m.confidence for m in marks if str(m.step_index) == item["value"]["start"])
                   for item in prediction["result"])
        # the Data Manager column: the least confident verdict, correct steps' included
        least = min(verdicts, key=lambda v: (v["confidence"], v["step"]))
        assert (task["data"]["least_confidence"], task["data"]["least_confident_step"]) == \
            (least["confidence"], f"#{least['step']}")
        assert task["data"]["suggestions_by"] == prediction["model_version"]
    (version,) = versions
    assert re.fullmatch(rf"llm-judge-{MODEL}-[0-9a-f]{{8}}", version)
    assert tasks["judge-schema"]["predictions"] == [] and "least_confidence" not in tasks["judge-schema"]["data"]
    # the review tab lists the least confident first
    (tab,) = [v for v in map(studio._dump, ls_client.views.list(project=project))
              if v["data"]["title"] == "Least confident first"]
    ordered = [t.data.get("least_confidence") for t in ls_client.tasks.list(project=project, view=tab["id"],
                                                                             fields="task_only").items]
    assert ordered[:7] == sorted(min(v["confidence"] for v in RECORDED[t]) for t in JUDGED)
    # a rerun: every judged trace from the cache, nothing added or changed; the rejected one asked again
    standin.reset()
    r = run_judge(standin, project, cache)
    assert r.exit_code == 1 and "judged 7 of 8 traces (7 from the cache)" in r.stdout
    assert "0 predictions created, 0 updated, 7 unchanged" in r.stdout
    assert {q["marker"] for q in standin.requests} == {"judge-case:schema"}
    assert all(len(t["predictions"]) <= 1 for t in tasks_by_trace(ls_client, project).values())


def test_the_token_budget_stops_a_run_and_the_next_one_goes_on(ls_env, ls_client, standin, tmp_path):
    project = new_project("judge budget")
    r = run_judge(standin, project, tmp_path / "c.sqlite3", "--token-budget", "1500", "--concurrency", "1",
                  "--limit", "3")
    # 1,306 then 1,041 tokens: 2,347 passes 1,500, so the third trace (the malformed case) never starts
    assert r.exit_code == 1, r.output
    assert "judged 2 of 3 traces" in r.stdout and "stopped at the budget: 1 traces not judged" in r.stdout
    assert "2,347 tokens (2,190 prompt, 157 completion)" in r.stdout
    assert [q["marker"] for q in standin.requests] == ["judge-case:ok-wrong", "judge-case:ok-clean"]
    standin.reset()
    r = run_judge(standin, project, tmp_path / "c.sqlite3", "--concurrency", "1", "--limit", "3")
    assert r.exit_code == 0, r.output
    assert "judged 3 of 3 traces (2 from the cache)" in r.stdout  # only the third is asked (twice: malformed)
    assert "1 predictions created, 0 updated, 2 unchanged" in r.stdout
    assert [q["marker"] for q in standin.requests] == ["judge-case:malformed"] * 2


def test_merge_takes_the_more_confident_suggestion_and_names_its_judge(ls_env, ls_client, standin, cache):
    project = new_project("judge merge")
    assert run_judge(standin, project, cache).exit_code == 1
    config = project_config(studio.get_project(ls_client, project))
    tasks = tasks_by_trace(ls_client, project)
    llm = tasks["judge-ok-wrong"]["predictions"][0]["model_version"]
    # a second judge: a rule detector's marks without confidences, and one confident mark
    rules = {"judge-ok-wrong": [StepLabel(1, "incorrect", "reasoning", "logical_error", "minor", "rule says so",
                                          confidence=0.9)],
             "judge-ok-clean": [StepLabel(1, "incorrect", "action", "wrong_tool", "major", "rule: a tool")]}
    for trace_id, marks in rules.items():
        task = tasks[trace_id]
        n = task["data"]["n_steps"]
        labels = TraceLabels([next((m for m in marks if m.step_index == i), StepLabel(i, "correct")) for i in range(n)])
        studio.create_prediction(ls_client, task["id"], {
            "model_version": "rules", "score": 0,
            "result": results.encode(labels, config, "transcript", task["data"]["te_transcript"], "prediction",
                                     False)})
    r = invoke(*["judge", "merge", "--project", str(project), "--confidence", "rules=0.5"])
    assert r.exit_code == 0, r.output
    assert "merged 7 of 8 tasks into 'merged'" in r.stdout and "7 predictions created" in r.stdout
    tasks = tasks_by_trace(ls_client, project)

    def merged(trace_id):
        (p,) = [p for p in tasks[trace_id]["predictions"] if p["model_version"] == "merged"]
        return p, results.decode(p["result"], config, tasks[trace_id]["data"]["n_steps"], prediction=True).steps

    p, steps = merged("judge-ok-wrong")
    # step #2: the rules' 0.9 over the LLM's 0.62; step #4 only the LLM marked
    assert (steps[1].error_type, steps[1].confidence, steps[1].suggested_by) == ("logical_error", 0.9, "rules")
    assert (steps[3].error_type, steps[3].confidence, steps[3].suggested_by) == ("incorrect_summary", 0.81, llm)
    judges = {item["value"]["start"]: item["judge"] for item in p["result"] if "judge" in item}
    assert judges == {"1": "rules", "3": llm}  # on each region's mark result only
    assert all(item["from_name"] == "error_localization" for item in p["result"] if "judge" in item)
    _, steps = merged("judge-ok-clean")
    assert (steps[1].error_type, steps[1].confidence, steps[1].suggested_by) == ("wrong_tool", 0.5, "rules")
    assert tasks["judge-ok-clean"]["data"]["least_confidence"] == 0.5  # the merged suggestions' column
    assert tasks["judge-ok-clean"]["data"]["suggestions_by"] == "merged"
    again = invoke(*["judge", "merge", "--project", str(project), "--confidence", "rules=0.5"])
    assert "0 predictions created, 0 updated, 7 unchanged" in again.stdout
    bad = invoke(*["judge", "merge", "--project", str(project), "--confidence", "rules=2"])
    assert bad.exit_code == 2 and "expected MODEL_VERSION=CONFIDENCE" in bad.output


def workbench_result(transcript: list[dict], marks: list[StepLabel]) -> list[dict]:
    """What the workbench saves for these marks, written out (test_results.py's shapes, browser-checked)."""
    out = []
    for m in marks:
        span = {"start": str(m.step_index), "end": str(m.step_index), "startOffset": 0,
                "endOffset": len(transcript[m.step_index]["text"])}
        rid = f"h{m.step_index}x"
        out.append({"id": rid, "from_name": "error_localization", "to_name": "te_trace", "type": "paragraphlabels",
                    "origin": "manual", "value": {**span, "paragraphlabels": ["incorrect"]}})
        out.append({"id": rid, "from_name": "error_localization_severity", "to_name": "te_trace",
                    "type": "paragraphlabels", "origin": "manual", "value": {**span, "paragraphlabels": [m.severity]}})
        out.append({"id": rid, "from_name": "error_localization_type", "to_name": "te_trace", "type": "choices",
                    "origin": "manual", "value": {**span, "choices": [m.error_type]}})
    return out


def wilson(successes: float, n: float) -> tuple[float, float]:
    p = successes / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def test_accept_confident_suggestions_keep_an_audit_sample_and_measure_what_accepting_costs(ls_env, ls_client, standin,
                                                                                         cache):
    project = new_project("judge accept")
    assert run_judge(standin, project, cache).exit_code == 1
    # least confidences from the recorded answers: ok-wrong 0.62, ok-clean 0.93, malformed 0.7, 429 0.89, 500 0.77,
    # slow 0.55, fenced 0.6. At 0.6: all but slow (below) and schema (never judged) -> 6 eligible; audit half: 3
    eligible = sorted(t for t in JUDGED if min(v["confidence"] for v in RECORDED[t]) >= 0.6)
    assert len(eligible) == 6
    r = invoke(*["judge", "accept", "--project", str(project), "--threshold", "0.6",
                                        "--audit", "0.5", "--seed", "7"])
    assert r.exit_code == 0, r.output
    assert "accepted 3 tasks' suggestions" in r.stdout and "3 left for people to audit (50%, seed 7)" in r.stdout
    assert "1 below the threshold" in r.stdout and "1 with no confidence recorded" in r.stdout
    me = studio.whoami(ls_client)["id"]
    config = project_config(studio.get_project(ls_client, project))
    tasks = tasks_by_trace(ls_client, project)
    decided = {t: tasks[t]["data"].get("acceptance") for t in JUDGED + ["judge-schema"]}
    assert sorted(t for t, d in decided.items() if d) == eligible
    accepted = [t for t in eligible if decided[t] == "accepted"]
    audit = sorted((t for t in eligible if decided[t] == "audit"), key=lambda t: tasks[t]["id"])
    assert len(accepted) == 3 and len(audit) == 3
    for t in accepted:
        (annotation,) = tasks[t]["annotations"]
        (prediction,) = tasks[t]["predictions"]
        # the prediction's results (ids, score), each suggestion relabelled as a person accepts it, and the prediction
        # as its parent: the export reads every mark as "accepted"
        assert annotation["parent_prediction"] == prediction["id"] and annotation["completed_by"] == me
        assert [(x["id"], x.get("score"), x["value"]) for x in annotation["result"]] == \
            [(x["id"], x.get("score"), x["value"]) for x in results.accepted(prediction["result"], config)]
        marks = [x for x in prediction["result"] if x["from_name"] == "error_localization"]
        assert marks and all(x["value"]["paragraphlabels"] == ["suggested"] for x in marks)
        record, _ = build_record(tasks[t], annotation, config)
        assert {e["source"] for e in record["error_localization"] if e["correctness"] == "incorrect"} == {"accepted"}
        assert record["rejected_suggestions"] == []
        detail = tasks[t]["data"]["te_acceptance"]
        assert (detail["prediction"], detail["threshold"], detail["annotation"]) == (prediction["id"], 0.6,
                                                                                    annotation["id"])
    assert all(tasks[t]["annotations"] == [] for t in audit)
    again = invoke(*["judge", "accept", "--project", str(project), "--threshold", "0.6",
                                            "--audit", "0.5", "--seed", "7"])
    assert "accepted 0 tasks' suggestions" in again.stdout and "6 decided before" in again.stdout
    # nothing audited yet
    pending = invoke(*["judge", "audit", "--project", str(project)])
    assert pending.exit_code == 0 and "0 of 3 audit tasks annotated by people (3 pending)" in pending.stdout
    # people annotate the audit sample in the workbench's shapes: the first agrees with every suggestion, the
    # second also marks step #1 (the judge called it correct in every recorded answer), the third changes a
    # severity where it has a mark (a severity is not counted as an error)
    for k, t in enumerate(audit):
        task = tasks[t]
        marks = [StepLabel(v["step"] - 1, "incorrect", None, v["error_type"], v["severity"])
                 for v in RECORDED[t] if v["correctness"] == "incorrect"]
        if k == 1:
            marks = [StepLabel(0, "incorrect", None, "logical_error", "minor"), *marks]
        if k == 2 and marks:
            marks[0].severity = "minor" if marks[0].severity != "minor" else "major"
        studio.create_annotation(ls_client, task["id"], workbench_result(task["data"]["te_transcript"], marks))
    res = invoke(*["judge", "audit", "--project", str(project), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["accepted"], doc["audit_tasks"], doc["audited"], doc["pending"]) == (3, 3, 3, 0)
    # traces: 1 of 3 with a wrong suggestion, one trial each: Wilson on 3
    rate = doc["trace_error_rate"]
    assert (rate["value"], rate["ci_low"], rate["ci_high"]) == pytest.approx((1 / 3, *wilson(1, 3)), abs=1e-6)
    assert doc["expected_wrong_accepted_traces"]["value"] == pytest.approx(1.0)
    assert doc["expected_wrong_accepted_traces"]["ci_high"] == pytest.approx(3 * wilson(1, 3)[1], abs=1e-5)
    # steps: 1 wrong of N; e = -p·n1, 1 - p·n2, -p·n3; design effect Σe² / (N p (1 - p)), at least 1
    n = [tasks[t]["data"]["n_steps"] for t in audit]
    total, p = sum(n), 1 / sum(n)
    e = [-p * n[0], 1 - p * n[1], -p * n[2]]
    deff = max(1.0, sum(x * x for x in e) / (total * p * (1 - p)))
    steps = doc["step_error_rate"]
    assert (steps["successes"], steps["trials"]) == (1, total)
    assert steps["effective_trials"] == pytest.approx(total / deff, abs=1e-5)
    assert (steps["ci_low"], steps["ci_high"]) == pytest.approx(wilson(total / deff * p, total / deff), abs=1e-6)
    second = next(x for x in doc["traces"] if x["trace_id"] == audit[1])
    assert second["wrong_steps"] == 1 and second["differences"][0] == \
        "#1: suggested correct, annotated incorrect/logical_error"
    text = invoke(*["judge", "audit", "--project", str(project)]).stdout
    assert "traces with a wrong suggestion  0.333 [0.061, 0.792]" in text
    assert "about 1.0 [0.2, 2.4] of the 3 accepted traces hold a wrong suggestion" in text
