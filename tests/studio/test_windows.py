"""Long traces worked in windows, on a real Label Studio: `import --window` makes the window tasks, annotators annotate
them through the API in the shapes the UI saves (tests/studio/uishapes.py), and the export gives one record of the
whole trace per annotator: the same record, scores and agreement as the same marks on the whole trace's task.

  project        tasks                                  annotator a            annotator b
  windowed       long (250 steps: 84 + 83 + 83), short   every window, short    every window (other marks), short
  whole          long (one task), short                  the same marks         the same marks
  a third annotator, c, does windows 1 and 2 of 3 in the windowed project only: left out of the export, with a warning.

Marks (whole-trace step index: severity), weights of label_configs/trajectory_eval.yaml (minor 1, major 5, critical
10): a: 10 minor, 90 major, 95 critical, 200 major: 100 - 21 = 79. b: 10 minor, 170 critical: 100 - 11 = 89.
"""
from __future__ import annotations

import json
import re
import uuid

import pytest
from commandline import invoke

from ls_trajeval.core.fields import META_TRACE_ID, META_WINDOW
from ls_trajeval.core.windows import window_of
from ls_trajeval.studio import client as studio

from .uishapes import ui_marks

pytestmark = pytest.mark.studio

RUN = uuid.uuid4().hex[:8]
N = 250
BOUNDS = [(0, 84), (84, 167), (167, 250)]
MARKS = {
    "a": {10: ("reasoning", "logical_error", "minor", "a10 <b>&</b>"), 90: ("action", "wrong_tool", "major", "a90"),
          95: ("action", "wrong_arguments", "critical", "a95"), 200: ("action", "wrong_tool", "major", "a200")},
    "b": {10: ("reasoning", "logical_error", "minor", "b10"), 170: ("action", "wrong_tool", "critical", "b170")},
    "c": {90: ("action", "wrong_tool", "major", "c90")},
}
SHORT = {"a": {1: ("action", "wrong_tool", "major", "s1")}, "b": {1: ("action", "wrong_tool", "minor", "s1")}}
EMAIL = {k: f"win-{k}-{RUN}@windows.test" for k in "abc"}


def _traces(path):
    long = {"trace_id": f"long-{RUN}", "task": "a long <task> & more", "trace": [
        {"type": "action", "content": "run", "action_input": {"command": f"ls {i}"}} if i % 2 else
        {"type": "thought", "content": f"step {i} <i>&</i>"} for i in range(N)]}
    short = {"trace_id": f"short-{RUN}", "task": "short", "trace": [
        {"type": "thought", "content": "think"}, {"type": "action", "content": "run", "action_input": "ls"},
        {"type": "observation", "content": "ok"}]}
    path.write_text(json.dumps(long) + "\n" + json.dumps(short) + "\n")
    return path


def _project(output: str) -> int:
    return int(re.search(r"project (\d+):", output).group(1))


@pytest.fixture(scope="module")
def users(ls_client):
    return {k: studio.ensure_user(ls_client, e, f"win-{k}")["id"] for k, e in EMAIL.items()}


@pytest.fixture(scope="module")
def projects(ls_env, ls_client, users, tmp_path_factory):
    src = _traces(tmp_path_factory.mktemp("win") / "traces.jsonl")
    r = invoke("import", src, "--create", f"windows {RUN}", "--window", "100", "--quiet")
    assert r.exit_code == 0, r.output
    assert "imported 4 tasks (3 of them windows of long traces), skipped 0 (already there), rejected 0" in r.stdout
    windowed = _project(r.stdout)
    r = invoke("import", src, "--create", f"whole {RUN}", "--quiet")
    assert r.exit_code == 0 and "imported 2," in r.stdout, r.output
    whole = _project(r.stdout)
    for pid in (windowed, whole):
        for task in studio.iter_tasks(ls_client, pid):
            data = task["data"]
            window = window_of(data)
            first = window.start if window else 0
            end = window.end if window else len(data["trace"])
            for who, marks in MARKS.items():
                if data["trace_id"].startswith("short"):
                    marks = SHORT.get(who)
                if marks is None or (who == "c" and (pid == whole or window.index == 2)):
                    continue  # c: windows 1 and 2 of the windowed trace only
                local = {g - first: m for g, m in marks.items() if first <= g < end}
                ls_client.annotations.create(id=task["id"], result=ui_marks("transcript", data["te_transcript"],
                                                                            local), completed_by=users[who],
                                             lead_time=10)
    out = tmp_path_factory.mktemp("out")
    records = {}
    for name, pid in (("windowed", windowed), ("whole", whole)):
        r = invoke("export", "--project", pid, "-o", out / f"{name}.jsonl")
        assert r.exit_code == 0, r.output
        records[name] = {(rec["trace_id"], rec["annotator"]): rec
                         for rec in map(json.loads, (out / f"{name}.jsonl").read_text().splitlines())}
        records[f"{name} output"] = r.output
    return {"windowed": windowed, "whole": whole, "records": records, "out": out, "src": src}


def test_a_long_trace_is_imported_as_its_windows(projects, ls_client):
    tasks = list(studio.iter_tasks(ls_client, projects["windowed"], with_annotations=False))
    long = sorted((t for t in tasks if t["data"]["trace_id"] == f"long-{RUN}"), key=lambda t: t["id"])
    assert [(t["data"]["te_window"]["start"], t["data"]["te_window"]["end"]) for t in long] == BOUNDS
    assert [t["data"]["n_steps"] for t in long] == [84, 83, 83]
    assert [t["meta"] for t in long] == [{META_TRACE_ID: f"long-{RUN}", META_WINDOW: i} for i in range(3)]
    assert long[2]["data"]["te_transcript"][0]["text"].startswith("#168 ")
    short, = (t for t in tasks if t["data"]["trace_id"] == f"short-{RUN}")
    assert "te_window" not in short["data"] and short["meta"] == {META_TRACE_ID: f"short-{RUN}"}


def test_each_annotator_gets_one_record_of_the_whole_trace_as_on_the_whole_task(projects):
    windowed, whole = projects["records"]["windowed"], projects["records"]["whole"]
    for who in "ab":
        key = (f"long-{RUN}", EMAIL[who])
        w, o = windowed[key], whole[key]
        assert w["error_localization"] == o["error_localization"]
        for k in ("n_steps", "running_score", "final_score", "n_errors", "first_error_step", "worst_severity",
                  "root_cause_step", "overall_success"):
            assert w[k] == o[k], k
        wrong = {s["step_index"]: s["severity"] for s in w["error_localization"] if s["correctness"] == "incorrect"}
        assert wrong == {g: m[2] for g, m in MARKS[who].items()}
        assert [(x["start"], x["end"]) for x in w["windows"]] == BOUNDS and "windows" not in o
    assert windowed[(f"long-{RUN}", EMAIL["a"])]["final_score"] == 79  # by hand, module docstring
    assert windowed[(f"long-{RUN}", EMAIL["b"])]["final_score"] == 89
    assert windowed[(f"short-{RUN}", EMAIL["a"])] == {**whole[(f"short-{RUN}", EMAIL["a"])],
                                                     **{k: windowed[(f"short-{RUN}", EMAIL["a"])][k]
                                                        for k in ("project_id", "task_id", "annotation_id",
                                                                  "created_at", "updated_at")}}


def test_an_annotator_who_left_a_window_undone_is_left_out_with_a_warning(projects):
    assert (f"long-{RUN}", EMAIL["c"]) not in projects["records"]["windowed"]
    out = projects["records"]["windowed output"]
    assert re.search(rf"warning: trace 'long-{RUN}' \(tasks \d+, \d+, \d+\): the annotations of \d+ left out: 1 of "
                     r"its 3 windows not done", out), out
    assert "wrote 4 annotations" in out  # a and b, each on the long trace and the short one


def test_agreement_is_the_same_as_on_the_whole_traces(projects):
    results = [invoke("agreement", projects["out"] / f"{name}.jsonl", "--json") for name in ("windowed", "whole")]
    assert all(r.exit_code == 0 for r in results), [r.output for r in results]
    assert json.loads(results[0].stdout) == json.loads(results[1].stdout)


def test_an_interrupted_import_gets_the_missing_window_and_nothing_twice(projects, ls_client, tmp_path):
    r = invoke("import", projects["src"], "--create", f"windows resumed {RUN}", "--window", "100", "--quiet")
    pid = _project(r.stdout)
    middle, = (t for t in studio.iter_tasks(ls_client, pid, with_annotations=False)
               if (t["data"].get("te_window") or {}).get("index") == 1)
    ls_client.tasks.delete(id=middle["id"])  # as if the run had stopped before that window was stored
    r = invoke("import", projects["src"], "--project", pid, "--window", "100", "--quiet")
    assert r.exit_code == 0, r.output
    assert "imported 1 tasks (1 of them windows of long traces), skipped 1 (already there)" in r.stdout
    windows = sorted(t["data"]["te_window"]["index"] for t in studio.iter_tasks(ls_client, pid,
                                                                                 with_annotations=False)
                      if "te_window" in t["data"])
    assert windows == [0, 1, 2]
    r = invoke("import", projects["src"], "--project", pid, "--window", "100", "--quiet")
    assert "imported 0, skipped 2 (already there)" in r.stdout, r.output


def test_labels_brought_with_a_long_trace_become_each_windows_predictions(projects, ls_env, ls_client, tmp_path):
    """An earlier export's labels (annotator a's, on the whole task) brought as predictions into a windowed project:
    each window gets its steps' marks, and `export --predictions` merges them back into a's marks."""
    whole = projects["out"] / "a-only.jsonl"
    whole.write_text("".join(json.dumps(rec) + "\n" for (tid, who), rec in projects["records"]["whole"].items()
                             if who == EMAIL["a"] and tid.startswith("long")))
    r = invoke("import", projects["src"], "--create", f"windows prelabelled {RUN}", "--window", "100",
               "--prelabels-from", whole, "--quiet")
    assert r.exit_code == 0, r.output
    pid = _project(r.stdout)
    r = invoke("export", "--project", pid, "--predictions", "-o", tmp_path / "pred.jsonl")
    assert r.exit_code == 0, r.output
    recs = [json.loads(line) for line in (tmp_path / "pred.jsonl").read_text().splitlines()]
    rec, = (x for x in recs if x["trace_id"] == f"long-{RUN}")
    wrong = {s["step_index"]: (s["error_type"], s["severity"]) for s in rec["error_localization"]
             if s["correctness"] == "incorrect"}
    assert wrong == {g: (m[1], m[2]) for g, m in MARKS["a"].items()} and rec["final_score"] == 79


def test_a_disputed_long_trace_is_reviewed_in_its_windows_and_the_adjudication_is_the_gold(projects, ls_client,
                                                                                         tmp_path):
    """a and b disagree on the long trace (a: 10, 90, 95, 200; b: 10, 170) and on the short one (its step 1 major
    against minor): the review project holds the long trace's three windows, each with a's and b's marks of its
    steps as predictions, and the short trace's task. The adjudicator submits every window (10 and 90 wrong); the
    gold of the long trace is that adjudication, numbered as in the whole trace."""
    r = invoke("adjudicate", "--project", projects["windowed"], "--create", f"windows review {RUN}")
    assert r.exit_code == 0, r.output
    review = int(re.search(r"review project (\d+)", r.output).group(1))
    tasks = sorted(studio.iter_tasks(ls_client, review), key=lambda t: t["id"])
    long = [t for t in tasks if t["meta"][META_TRACE_ID] == f"long-{RUN}"]
    assert [t["meta"].get(META_WINDOW) for t in long] == [0, 1, 2]
    assert len(tasks) == 4 and all(t["data"]["disputedness"] > 0 for t in long)
    for task in long:
        start, end = BOUNDS[task["meta"][META_WINDOW]]
        by = {p["model_version"]: p for p in task["predictions"]}
        for who in "ab":
            marked = {int(x["value"]["start"]) for x in by[EMAIL[who]]["result"]
                      if x["from_name"] == "error_localization"}
            assert marked == {g - start for g in MARKS[who] if start <= g < end}, (who, start)
    verdict = {10: ("reasoning", "logical_error", "minor", "adjudicated"), 90: ("action", "wrong_tool", "major", "x")}
    for task in long:
        start, end = BOUNDS[task["meta"][META_WINDOW]]
        ls_client.annotations.create(id=task["id"], result=ui_marks("transcript", task["data"]["te_transcript"], {
            g - start: m for g, m in verdict.items() if start <= g < end}))
    r = invoke("export", "--project", projects["windowed"], "--gold", "-o", tmp_path / "gold.jsonl")
    assert r.exit_code == 0, r.output
    gold = {x["trace_id"]: x for x in map(json.loads, (tmp_path / "gold.jsonl").read_text().splitlines())}
    line = gold[f"long-{RUN}"]
    assert line["gold"]["method"] == "adjudicated" and line["n_steps"] == N
    wrong = {s["step_index"]: s["severity"] for s in line["error_localization"] if s["correctness"] == "incorrect"}
    assert wrong == {10: "minor", 90: "major"} and line["final_score"] == 94


def test_a_projects_config_sets_the_window_for_every_import_into_it(projects, ls_env, tmp_path):
    import yaml

    from ls_trajeval import label_configs

    raw = yaml.safe_load(label_configs.path("trajectory_eval").read_text())
    raw["annotator_config"]["window_steps"] = 100
    config = tmp_path / "windowed.yaml"
    config.write_text(yaml.safe_dump(raw))
    r = invoke("import", projects["src"], "--create", f"windows by config {RUN}", "--config", config, "--quiet")
    assert r.exit_code == 0 and "imported 4 tasks (3 of them windows of long traces)," in r.stdout, r.output
    # the project keeps it: an import without --config (the project's own) cuts alike; --window 0 does not cut
    pid = _project(r.stdout)
    other = tmp_path / "other.jsonl"
    other.write_text(projects["src"].read_text().replace(RUN, f"{RUN}-2"))
    r = invoke("import", other, "--project", pid, "--quiet")
    assert "imported 4 tasks (3 of them windows of long traces)," in r.stdout, r.output
    third = tmp_path / "third.jsonl"
    third.write_text(projects["src"].read_text().replace(RUN, f"{RUN}-3"))
    r = invoke("import", third, "--project", pid, "--window", "0", "--quiet")
    assert "imported 2," in r.stdout and "--window 100" in r.output, r.output


def test_switching_a_windowed_project_to_the_paged_layout_numbers_its_cards_as_the_whole_trace(projects, ls_env,
                                                                                              ls_client):
    r = invoke("import", projects["src"], "--create", f"windows relayout {RUN}", "--window", "100", "--quiet")
    pid = _project(r.stdout)
    r = invoke("layout", "paged", "--project", pid, "--quiet")
    assert r.exit_code == 0, r.output
    last, = (t for t in studio.iter_tasks(ls_client, pid, with_annotations=False)
             if (t["data"].get("te_window") or {}).get("index") == 2)
    cards = last["data"]["te_pages"]
    assert len(cards) == 83 and "step 168 of 250" in cards[0][0]["html"] and "step 250 of 250" in cards[-1][0]["html"]
