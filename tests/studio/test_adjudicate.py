"""adjudicate, export --gold and export --predictions on a real Label Studio, three annotators annotating through
the API in the result shapes the UI saves (tests/studio/uishapes.py), in both layouts.

  trace  steps  ann-a                     ann-b            ann-c
  D1     5      #2 wrong_tool major       #2 same          -            (later: #2 like the others)
  D2     4      #3 logical_error minor    #3 same          #3 wrong_tool major
  D3     3      #1 wrong_arguments crit.  #1 same          -
                #3 logical_error minor
  U      3      #1 wrong_tool major       #1 same          #1 same
  S      2      #2 logical_error minor    (only ann-a)

The disagreement finder's disputedness (tests/analysis/test_disagreement.py has the rules), by hand:
  D3: #1 correctness 2 of 3 (1 - 2/3), #3 correctness 2 of 3 (1/3), first errors #1 #1 none (1/3)   = 1
  D1: #2 correctness (1/3), first errors #2 #2 none (1/3)                                          = 2/3
  D2: #3 error type 2 of 3 (0.5 x 1/3), severity ranks minor minor major (0.25 x 1/3)              = 1/4
  U unanimous, S one annotator: not disputed. The review project: D3, D1, D2 in that order.
"""
from __future__ import annotations

import json
import re
import uuid

import pytest
from commandline import invoke

from ls_trajeval.core import results
from ls_trajeval.core.fields import DISPUTE_FIELDS, META_SOURCE, META_TRACE_ID
from ls_trajeval.core.layouts import layout_of
from ls_trajeval.flows.projects import project_config
from ls_trajeval.studio import client as studio

from .uishapes import ui_marks

pytestmark = pytest.mark.studio

WT = ("action", "wrong_tool", "major", "calls the wrong tool")
LE = ("reasoning", "logical_error", "minor", "does not follow")
AR = ("action", "wrong_arguments", "critical", "bad <arguments> & all")
STEPS = {"D1": 5, "D2": 4, "D3": 3, "U": 3, "S": 2}
MARKS = {  # trace -> annotator -> {step: mark}
    "D1": {"a": {1: WT}, "b": {1: WT}, "c": {}},
    "D2": {"a": {2: LE}, "b": {2: LE}, "c": {2: WT}},
    "D3": {"a": {0: AR, 2: LE}, "b": {0: AR}, "c": {}},
    "U": {"a": {0: WT}, "b": {0: WT}, "c": {0: WT}},
    "S": {"a": {1: LE}},
}
EMAIL = {k: f"ann-{k}@adjudicate.test" for k in "abc"}
#: a kept test data dir ($LS_TRAJEVAL_TEST_DATA_DIR) has the projects of earlier runs: this run's titles are its own
RUN = uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def users(ls_client):
    return {k: studio.ensure_user(ls_client, e, f"ann-{k}")["id"] for k, e in EMAIL.items()}


@pytest.fixture(scope="module", params=["transcript", "paged"])
def source(request, ls_env, ls_client, users, tmp_path_factory):
    layout = request.param
    path = tmp_path_factory.mktemp("adj") / "traces.jsonl"
    path.write_text("".join(json.dumps({"trace_id": t, "task": f"task {t}", "trace": [
        {"type": "action" if i % 2 else "thought", "content": f"{t} step {i} <b>&</b>"} for i in range(n)]}) + "\n"
        for t, n in STEPS.items()))
    r = invoke("import", path, "--create", f"adjudicate source {layout} {RUN}", "--layout", layout, "--quiet")
    assert r.exit_code == 0, r.output
    pid = int(re.search(r"project (\d+):", r.stdout).group(1))
    tasks = {t["data"]["trace_id"]: t for t in studio.iter_tasks(ls_client, pid)}
    for tid, by in MARKS.items():
        transcript = tasks[tid]["data"]["te_transcript"]
        for who, marks in by.items():
            ls_client.annotations.create(id=tasks[tid]["id"], result=ui_marks(layout, transcript, marks),
                                         completed_by=users[who], lead_time=30)
    return {"layout": layout, "project": pid, "tasks": tasks, "out": tmp_path_factory.mktemp("out")}


def review_tasks(client, pid):
    return {t["meta"][META_TRACE_ID]: t for t in studio.iter_tasks(client, pid)}


def labels_of(pred_or_annotation, config, n):
    decoded = results.decode(pred_or_annotation["result"], config, n)
    return {s.step_index: (s.error_category, s.error_type, s.severity, s.rationale)
            for s in decoded.steps if s.correctness == "incorrect"}


@pytest.fixture(scope="module")
def review(source, ls_client):
    layout = source["layout"]
    r = invoke("adjudicate", "--project", source["project"], "--create", f"review {layout} {RUN}")
    assert r.exit_code == 0, r.output
    assert "4 traces with 2+ annotators, 3 disputed" in r.stdout
    assert "added 3 tasks and 9 predictions" in r.stdout
    assert "D3: disputedness 1, steps #1, #3, first errors" in r.stdout
    source["adjudicate_output"] = r.output
    return int(re.search(r"review project (\d+) \(created\)", r.stdout).group(1))


@pytest.fixture(scope="module")
def reruns(source, review, ls_client, users):
    """Two reruns that change nothing (by id, and by the same title), then ann-c agrees on D1 and a third."""
    layout, out = source["layout"], {}
    out["into"] = invoke("adjudicate", "--project", source["project"], "--into", review)
    out["title"] = invoke("adjudicate", "--project", source["project"], "--create", f"review {layout} {RUN}")
    out["predictions"] = sum(len(t["predictions"]) for t in review_tasks(ls_client, review).values())
    d1 = source["tasks"]["D1"]
    ls_client.annotations.create(id=d1["id"], result=ui_marks(layout, d1["data"]["te_transcript"], {1: WT}),
                                 completed_by=users["c"], lead_time=5)
    out["changed"] = invoke("adjudicate", "--project", source["project"], "--into", review)
    return out


@pytest.fixture(scope="module")
def gold(source, review, reruns, ls_client, ls_env):
    """The adjudicator (the API's user) annotates D2 in the review project; then the gold, by majority and by
    Dawid-Skene."""
    layout, out = source["layout"], source["out"]
    d2 = review_tasks(ls_client, review)["D2"]
    verdict = (LE[0], LE[1], "critical", "the adjudicator's reading")
    ls_client.annotations.create(id=d2["id"], result=ui_marks(layout, d2["data"]["te_transcript"], {2: verdict}))
    runs = {"majority": invoke("export", "--project", source["project"], "--gold", "-o", out / "gold.jsonl"),
            "dawid-skene": invoke("export", "--project", source["project"], "--gold", "--aggregate", "dawid-skene",
                               "--review", review, "-o", out / "gold-ds.jsonl")}
    return runs, out / "gold.jsonl", out / "gold-ds.jsonl"


def test_the_review_project_holds_exactly_the_disputed_traces(source, review, ls_client):
    project = studio.get_project(ls_client, review)
    assert layout_of(project["label_config"]) == source["layout"]
    src = studio.get_project(ls_client, source["project"])
    assert project["label_config"] == src["label_config"]  # the same layout and config
    tasks = list(studio.iter_tasks(ls_client, review))
    assert [t["meta"][META_TRACE_ID] for t in tasks] == ["D3", "D1", "D2"]  # most disputed first
    config = project_config(project)
    for t in tasks:
        tid = t["meta"][META_TRACE_ID]
        assert t["meta"][META_SOURCE] == {"project": source["project"], "task": source["tasks"][tid]["id"]}
        assert t["data"]["task"] == f"task {tid}" and t["data"]["trace"] == source["tasks"][tid]["data"]["trace"]
        preds = t["predictions"]
        assert sorted(p["model_version"] for p in preds) == sorted(EMAIL[w] for w in MARKS[tid])
        for p in preds:  # each annotator's own labels, read back from what Label Studio stored
            who = next(w for w, e in EMAIL.items() if e == p["model_version"])
            assert labels_of(p, config, STEPS[tid]) == MARKS[tid][who]
    summary = {t["meta"][META_TRACE_ID]: {k: t["data"][k] for k in DISPUTE_FIELDS} for t in tasks}
    assert summary["D3"]["disputedness"] == 1 and summary["D3"]["steps_in_dispute"] == "#1, #3"
    assert summary["D1"]["disputedness"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["D2"] == {"disputedness": 0.25, "n_annotators": 3, "disputed_steps": 1, "correctness_disputes": 0,
                             "error_type_disputes": 1, "severity_disputes": 1, "first_error_disputed": False,
                             "steps_in_dispute": "#3",
                             "first_errors": f"{EMAIL['a']}: #3; {EMAIL['b']}: #3; {EMAIL['c']}: #3",
                             # no cause links: the root causes are the first errors, and no role is disputed
                             "role_disputes": 0, "root_cause_disputed": False,
                             "root_causes": f"{EMAIL['a']}: #3; {EMAIL['b']}: #3; {EMAIL['c']}: #3"}
    # the Data Manager tab sorts most disputed first, and Label Studio sorts by that field
    views = studio.views(ls_client, review)
    assert [v["data"]["ordering"] for v in views if v["data"].get("title") == "Most disputed"] == \
        [["-tasks:data.disputedness"]]
    assert project["description"].splitlines()[-1] == f"ls-trajeval: adjudication of project {source['project']}"


def sorted_by_disputedness(client, pid):
    return [t["meta"][META_TRACE_ID] for t in studio.first_tasks(client, pid, ["-tasks:data.disputedness"], 100)]


def test_each_annotators_tab_shows_the_share_of_the_score_they_keep(source, review, ls_client):
    """A prediction's score is what Label Studio shows on its tab as a percentage: the running score kept, as a share
    of 100 (trajectory_eval: minor -1, major -5, critical -10)."""
    kept = {"D3": {"a": 0.89, "b": 0.90, "c": 1.0},  # a: #1 critical, #3 minor; b: #1 critical
            "D2": {"a": 0.99, "b": 0.99, "c": 0.95}}  # minor, minor, major
    tasks = review_tasks(ls_client, review)
    for tid, by in kept.items():
        got = {p["model_version"]: p["score"] for p in tasks[tid]["predictions"]}
        assert got == {EMAIL[w]: share for w, share in by.items()}


def test_it_prints_the_task_list_on_the_most_disputed_tab_with_numbers_typed(source, review, ls_client,
                                                                              label_studio):
    """The label stream shows a review task with one pre-filled annotation and no tabs; the task list does not."""
    (tab,) = [v for v in studio.views(ls_client, review) if v["data"]["title"] == "Most disputed"]
    assert f"adjudicate: {label_studio.url}/projects/{review}/data?tab={tab['id']} (open a task" in \
        source["adjudicate_output"]
    assert "labeling=1" not in source["adjudicate_output"]
    types = tab["data"]["columnsDisplayType"]
    assert {k: types[f"tasks:data.{k}"] for k in ("disputedness", "n_annotators", "severity_disputes")} == \
        {"disputedness": "Number", "n_annotators": "Number", "severity_disputes": "Number"}
    assert "tasks:data.steps_in_dispute" not in types
    # the source project, made by `import --create` and never opened, got the tab Label Studio would make
    (default,) = studio.views(ls_client, source["project"])
    assert default["data"]["title"] == "Default"
    assert default["data"]["columnsDisplayType"]["tasks:data.running_score"] == "Number"
    assert "tasks:inner_id" in default["data"]["hiddenColumns"]["explore"]
    assert "tasks:data.running_score" in default["data"]["hiddenColumns"]["labeling"]


def test_rerun_is_idempotent_and_follows_changes(source, review, reruns, ls_client):
    assert reruns["into"].exit_code == 0, reruns["into"].output
    assert "added 0 tasks and 0 predictions, updated 0 summaries and 0 predictions" in reruns["into"].stdout
    # --create with the title of an existing project updates that one
    assert f"review project {review}: added 0 tasks and 0 predictions, updated 0" in reruns["title"].stdout
    assert reruns["predictions"] == 9
    # ann-c now agrees on D1: D1 is settled; its task stays (it may hold an adjudication), its summary follows
    r = reruns["changed"]
    assert "4 traces with 2+ annotators, 2 disputed" in r.stdout
    assert "added 0 tasks and 0 predictions, updated 1 summaries and 1 predictions; 1 held traces no longer " \
           "disputed" in r.stdout
    tasks = review_tasks(ls_client, review)
    assert len(tasks) == 3 and tasks["D1"]["data"]["disputedness"] == 0 and len(tasks["D1"]["predictions"]) == 3
    config = project_config(studio.get_project(ls_client, review))
    (c_pred,) = [p for p in tasks["D1"]["predictions"] if p["model_version"] == EMAIL["c"]]
    assert labels_of(c_pred, config, 5) == {1: WT}
    assert sorted_by_disputedness(ls_client, review) == ["D3", "D2", "D1"]


def test_into_a_project_of_another_layout_is_refused(source, review, ls_client):
    other = "paged" if source["layout"] == "transcript" else "transcript"
    config = project_config(studio.get_project(ls_client, source["project"]))
    p = studio.create_project(ls_client, config, other, f"other {other}")
    r = invoke("adjudicate", "--project", source["project"], "--into", p["id"])
    assert r.exit_code == 2 and f"does not have project {source['project']}'s {source['layout']} layout" in r.output
    r = invoke("adjudicate", "--project", source["project"], "--into", source["project"])
    assert r.exit_code == 2 and "the review needs a project of its own" in r.output


def test_gold_takes_the_adjudication_then_unanimous_then_the_aggregate(source, review, gold):
    runs, majority, dawid_skene = gold
    r = runs["majority"]
    assert r.exit_code == 0, r.output
    assert "wrote 5 gold traces (1 adjudicated, 1 majority, 1 single, 2 unanimous)" in r.stdout
    assert f"review projects: {review}" in r.stdout  # found by its description
    lines = {x["trace_id"]: x for x in map(json.loads, majority.read_text().splitlines())}
    assert lines["D2"]["gold"] == {"method": "adjudicated", "annotators": ["admin@example.com"], "ties": []}
    d2 = lines["D2"]["error_localization"][2]
    assert (d2["error_type"], d2["severity"], d2["rationale"]) == ("logical_error", "critical",
                                                                  "the adjudicator's reading")
    # the line points at the trace's task in the annotated project, not at the review copy
    assert (lines["D2"]["project_id"], lines["D2"]["task_id"]) == (source["project"], source["tasks"]["D2"]["id"])
    assert lines["D1"]["gold"]["method"] == "unanimous" and lines["U"]["gold"]["method"] == "unanimous"
    assert lines["D1"]["gold"]["annotators"] == [EMAIL["a"], EMAIL["b"], EMAIL["c"]]
    assert lines["S"]["gold"] == {"method": "single", "annotators": [EMAIL["a"]], "ties": []}
    # D3 by majority: #1 is wrong for two of three, #3 for one of three
    assert lines["D3"]["gold"]["method"] == "majority"
    assert [s["correctness"] for s in lines["D3"]["error_localization"]] == ["incorrect", "correct", "correct"]
    assert lines["D3"]["error_localization"][0]["error_type"] == "wrong_arguments"
    assert runs["dawid-skene"].exit_code == 0, runs["dawid-skene"].output
    methods = {x["trace_id"]: x["gold"]["method"] for x in map(json.loads, dawid_skene.read_text().splitlines())}
    assert methods == {"D1": "unanimous", "D2": "adjudicated", "D3": "dawid-skene", "U": "unanimous", "S": "single"}


def test_predictions_export_measured_against_the_gold(source, review, gold, ls_env):
    """ann-a's predictions in the review project against the gold, by hand: D1 5 steps TP 1 TN 4; D2 4 steps TP 1
    TN 3; D3 3 steps TP 1, FP 1 (#3), TN 1. 12 steps, TP 3 FP 1 FN 0 TN 8: accuracy 11/12, precision 3/4, recall
    1; kappa: po 11/12, pe (3/12)(4/12) + (9/12)(8/12) = 84/144, so (132 - 84) / (144 - 84) = 0.8; first errors
    all equal; categories and types 3 of 3."""
    out = source["out"]
    r = invoke("export", "--project", review, "--predictions", "--model-version", EMAIL["a"], "-o", out / "a.jsonl")
    assert r.exit_code == 0, r.output
    assert "wrote 3 predictions of 3 tasks" in r.stdout
    lines = [json.loads(x) for x in (out / "a.jsonl").read_text().splitlines()]
    assert {x["annotator"] for x in lines} == {EMAIL["a"]} and {x["model_version"] for x in lines} == {EMAIL["a"]}
    r = invoke("align", out / "a.jsonl", gold[1], "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["traces"], doc["steps"]) == (3, 12)
    want = {"step_accuracy": 11 / 12, "error_precision": 3 / 4, "error_recall": 1.0, "cohen_kappa": 0.8,
            "first_error_exact": 1.0, "category_accuracy": 1.0, "type_accuracy": 1.0}
    assert {k: doc[k]["value"] for k in want} == pytest.approx(want, abs=1e-6)
    assert "trace 'U' is only in GOLD" in r.stderr and "trace 'S' is only in GOLD" in r.stderr
