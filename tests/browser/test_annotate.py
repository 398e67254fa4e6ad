"""An annotator's whole job in a real browser, both layouts: mark a wrong step with its type,
severity and rationale, set the outcome, submit; then ``ls-trajeval export`` gives exactly the
expected line. Also: a wrong step switched back to correct, and a saved draft resumed."""
from __future__ import annotations

import json
import re
import time

import pytest
from commandline import invoke

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.studio import client as studio

from .ui import dumps

pytestmark = pytest.mark.browser

SHOTS = label_configs.path("trajectory_eval").parent.parent / "docs" / "screenshots"
CONFIG = cfg.load(label_configs.path("trajectory_eval"))
DIFF = ("--- a/pricing.py\n+++ b/pricing.py\n@@ -45 +45 @@\n-    return price * pct / 100\n"
        "+    return price - price * pct / 100")
RATIONALE = "assumes the edit works <b>without</b> running tests & \"never\" checks\n  indented second line"


def trace(tid: str) -> dict:
    return {"trace_id": tid, "task": "Fix the discount bug in pricing.py", "trace": [
        {"type": "thought", "content": "Look at calculate_discount first.\nThen:\n  1. read it\n  2. fix it"},
        {"type": "action", "content": "read_file", "action_input": {"path": "pricing.py"}},
        {"type": "observation", "content": "def calculate_discount(price, pct):\n    return price * pct / 100",
         "path": "pricing.py"},
        {"type": "thought", "content": "It must subtract the discount; no need to run the tests."},
        {"type": "code", "content": DIFF},
        {"type": "action", "content": "finish", "action_input": "Fixed."},
    ], "metadata": {"agent": "demo"}}


def step_entry(i: int, t: dict, **wrong) -> dict:
    s = t["trace"][i]
    text = s["content"]
    if "action_input" in s:
        given = s["action_input"]
        text += "\n" + (given if isinstance(given, str) else json.dumps(given, indent=2, ensure_ascii=False))
    entry = {"step_index": i, "step_type": s["type"], "step_text": text, "correctness": "correct",
             "error_category": None, "error_type": None, "severity": None, "rationale": None, "score": 100,
             # made by hand, no span, no links, no correction: a wrong step is then an origin
             "source": "human", "suggested_by": None, "confidence": None, "evidence": [], "caused_by": [],
             "role": None, "correction": None}
    entry.update(wrong)
    return entry


def expected_record(t: dict, layout: str, wrong: bool = True) -> dict:
    steps = [step_entry(i, t) for i in range(6)]
    if wrong:
        steps[3] = step_entry(3, t, correctness="incorrect", error_category="reasoning",
                              error_type="incorrect_assumption", severity="major", rationale=RATIONALE, score=95,
                              role="origin")
        steps[4]["score"] = steps[5]["score"] = 95
    return {"trace_id": t["trace_id"], "task": t["task"], "layout": layout, "metadata": t.get("metadata", {}),
            "scheme": "error_localization",
            "annotator": "admin@example.com", "error_localization": steps, "overall_success": "failure",
            "running_score": [s["score"] for s in steps], "final_score": steps[-1]["score"], "n_steps": 6,
            "n_errors": 1 if wrong else 0, "first_error_step": 3 if wrong else None,
            "worst_severity": "major" if wrong else None,
            "severity_weights": {"minor": -1, "major": -5, "critical": -10}, "score_initial": 100, "score_min": 0,
            "root_cause_step": 3 if wrong else None, "rejected_suggestions": []}


VOLATILE = ("project_id", "task_id", "annotation_id", "annotator_id", "created_at", "updated_at", "lead_time")


def same(got: dict, want: dict) -> None:
    """Field by field, then byte for byte as JSON (a readable failure first)."""
    assert set(got) == set(want)
    for key in want:
        if key == "error_localization":
            for g, w in zip(got[key], want[key]):
                assert g == w, f"step {w['step_index']}"
        assert got[key] == want[key], key
    assert dumps(got) == dumps(want)


def export(project_id: int, tmp_path) -> dict[str, dict]:
    out = tmp_path / f"export-{project_id}-{time.monotonic_ns()}.jsonl"
    r = invoke("export", "--project", project_id, "-o", out)
    assert r.exit_code == 0, r.output
    lines = out.read_text(encoding="utf-8").splitlines()
    records = [json.loads(x) for x in lines]
    for rec in records:
        assert rec["annotation_id"] and rec["created_at"] and rec["lead_time"] > 0
    return {rec["trace_id"]: {k: v for k, v in rec.items() if k not in VOLATILE} for rec in records}


@pytest.fixture(scope="module")
def project(projects, ls_env):
    """One project per layout, one task per test."""
    made = {}
    for layout in ("transcript", "paged"):
        traces = [trace(f"{layout}-{name}") for name in ("submit", "draft")]
        made[layout] = projects.make(CONFIG, layout, traces, f"browser annotate {layout}")
    return made


def label_step_three(a, layout: str):
    if layout == "transcript":
        a.mark_step(3)
    else:
        a.page_to(3)
        a.set_correctness("incorrect")
    a.choose_type("Incorrect Assumption")
    a.choose_severity("Major")
    a.write_rationale(RATIONALE)


def finish(a, layout: str):
    a.choose("I reviewed every step")  # require_all_steps, both layouts
    a.choose("failure")


@pytest.mark.parametrize("layout", ["transcript", "paged"])
def test_label_submit_export_then_switch_back(guard, project, layout, tmp_path):
    a = guard
    pid, tasks = project[layout]
    tid = tasks[f"{layout}-submit"]
    a.open(pid, tid)
    assert a.main.get_by_text("Running score: 100").is_visible()
    a.screenshot(SHOTS / f"{layout}-layout.png")
    label_step_three(a, layout)
    finish(a, layout)
    a.screenshot(SHOTS / f"{layout}-wrong-step.png")
    a.submit()
    t = trace(f"{layout}-submit")
    got = export(pid, tmp_path)[t["trace_id"]]
    same(got, expected_record(t, layout))

    # switch the wrong step back to correct: its details leave the export
    if layout == "transcript":
        a.select_region(3)
        a.unmark_selected()
        assert a.phrase(3).locator(".htx-highlight").count() == 0
    else:
        a.page_to(3)
        a.set_correctness("correct")
        assert a.page.locator(".te-step-details:visible").count() == 0
    a.submit("Update")
    got = export(pid, tmp_path)[t["trace_id"]]
    same(got, expected_record(t, layout, wrong=False))
    assert not a.watch.dialogs and not a.watch.errors


@pytest.mark.parametrize("layout", ["transcript", "paged"])
def test_draft_is_resumed(guard, project, projects, layout, tmp_path):
    a = guard
    pid, tasks = project[layout]
    tid = tasks[f"{layout}-draft"]
    a.open(pid, tid)
    with a.page.expect_response(lambda r: "/drafts" in r.url or "/draft" in r.url, timeout=30_000):
        label_step_three(a, layout)  # the UI autosaves a draft a few seconds after an edit
    assert projects.drafts(tid), "no draft saved"
    a.page.reload()
    a.open(pid, tid)
    if layout == "transcript":
        a.select_region(3)
    else:
        a.page_to(3)
    assert a.details.get_by_text("Incorrect Assumption").is_visible()
    assert a.details.locator("input[type=radio]:checked").count() == 1
    finish(a, layout)
    a.submit()
    t = trace(f"{layout}-draft")
    same(export(pid, tmp_path)[t["trace_id"]], expected_record(t, layout))


@pytest.mark.parametrize("layout", ["transcript", "paged"])
def test_label_stream_printed_by_import(guard, ls_env, projects, ls_client, tmp_path, layout):
    """`import` prints the label stream's address; an annotator labels there, task after task (in the paged
    layout the second task's steps must still offer the error types their shared store holds)."""
    a = guard
    traces = [trace(f"stream-{layout}-{k}") for k in range(2)]
    src = tmp_path / "traces.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    r = invoke("import", "--create", f"browser stream {layout}", "--layout", layout, "--quiet", src)
    assert r.exit_code == 0, r.output
    pid = int(re.search(r"project (\d+): imported 2", r.output).group(1))
    assert f"annotate: {ls_env.url}/projects/{pid}/data?labeling=1" in r.output
    tasks = {t["data"]["trace_id"]: t["id"] for t in studio.iter_tasks(ls_client, pid)}

    a.open(pid, None)  # the stream serves the first unlabeled task
    label_step_three(a, layout)
    finish(a, layout)
    assert a.submit()["task"] == tasks[traces[0]["trace_id"]]
    # and then the next one, without going back to the list
    if layout == "transcript":
        a.page.wait_for_function("document.querySelectorAll('.lsf-main-view .htx-highlight').length === 0")
        finish(a, layout)
        want = expected_record(traces[1], layout, wrong=False)
    else:
        a.page.wait_for_function("!document.querySelector('.lsf-main-view .te-step-details')")
        label_step_three(a, layout)
        finish(a, layout)
        want = expected_record(traces[1], layout)
    assert a.submit()["task"] == tasks[traces[1]["trace_id"]]
    got = export(pid, tmp_path)
    same(got[traces[0]["trace_id"]], expected_record(traces[0], layout))
    same(got[traces[1]["trace_id"]], want)
    assert not a.watch.dialogs and not a.watch.errors
