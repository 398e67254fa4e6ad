"""A long trace worked in windows (``import --window``), in a real browser with the real ML backend: the middle
window's task numbers its cards, its header and its live score as in the whole trace, lists the steps before it,
and shows hostile step text as text; a step marked there, with every window submitted, is that step of the whole
trace in the export's one merged record (issue 31)."""
from __future__ import annotations

import sys

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.ml.connect import connect_backend
from ls_trajeval.studio import client as studio

from .test_annotate import export
from .test_click_timer import bench_clicks
from .ui import PWNED

pytestmark = [pytest.mark.studio, pytest.mark.browser]

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
N_STEPS, WINDOW = 250, 100
# 250 steps in windows of at most 100: three windows as even as can be, 84 + 83 + 83 (steps 0-83, 84-166, 167-249)
FIRST, SECOND, THIRD = range(0, 84), range(84, 167), range(167, 250)
K = 10  # the marked step is the middle window's 11th: step index 84 + 10 = 94 of the whole trace, "#95"
MARKED = SECOND.start + K
W = f"window.{PWNED}"
SCRIPT = f'<script>{W}=1</script> & "q" </textarea>'
IMG = f"<img src=x onerror=\"{W}=2\"> <b>bold?</b> 'a' < b"
#: where the hostile texts are: early before the window (one line in its "steps before" list), the last step before
#: it (shown whole there), the marked step, and a step of the last window
HOSTILE = {10: SCRIPT, SECOND.start - 1: IMG, MARKED: SCRIPT + "\n" + IMG, 200: IMG}


def long_trace() -> dict:
    steps = [{"type": "thought", "content": HOSTILE.get(i, f"thought {i}: the agent reads pricing.py")}
             for i in range(N_STEPS)]
    return {"trace_id": "windowed-250", "task": "Fix the discount bug; 250 steps in windows", "trace": steps}


@pytest.fixture(scope="module")
def windowed(ls_client, label_studio, ls_env):
    """The workbench project holding the 250-step trace in windows of 100, with the ML backend (``ml serve`` with
    write-back, started as the click benchmark starts it) connected as ``ml connect`` connects it: the project's id
    and its tasks' ids by window index."""
    bench = bench_clicks()
    project = studio.create_project(ls_client, CONFIG, "transcript", "windows in the browser")
    summary = import_traces(ls_client, project["id"], [trace.parse_trace(long_trace())], CONFIG, progress=False,
                            window=WINDOW)
    assert (summary.imported, summary.windows) == (3, 3), summary.errors  # tasks imported: the trace's 3 windows
    proc, url, log = bench.start_backend(1, 2, sys.executable, "--no-learning", "--url", label_studio.url,
                                         "--api-key", label_studio.credentials.token)
    try:
        connect_backend(ls_client, project["id"], url)
        tasks = {t["data"]["te_window"]["index"]: t["id"] for t in studio.iter_tasks(ls_client, project["id"])}
        assert sorted(tasks) == [0, 1, 2]
        yield project["id"], tasks
    finally:
        bench.stop_backend(proc, log)


def submit_unmarked(a, pid: int, task_id: int):
    """Open a window's task and submit it with nothing marked (the outcome set, as in every window)."""
    a.open(pid, task_id)
    a.choose("I reviewed every step")
    a.choose("failure")
    a.submit()


def test_middle_window_numbers_steps_globally_and_its_mark_is_exported_at_its_place(guard, windowed, tmp_path):
    a = guard
    pid, tasks = windowed
    a.open(pid, tasks[1])

    # the cards are numbered as in the whole trace: the window's first and last steps are #85 and #167
    assert a.phrase(0).inner_text().split("\n")[1].startswith("#85 · ")
    assert a.phrase(len(SECOND) - 1).inner_text().split("\n")[1].startswith("#167 · ")
    assert a.page.locator(f"[data-testid='phrase:{len(SECOND)}']").count() == 0  # the window holds its 83 steps
    assert "Steps #85–#167 of 250" in a.page.locator(".te-window").inner_text()

    # the steps before the window, folded; opened, they are listed one by one, hostile text as written
    before = a.page.locator("details.te-before")
    assert before.get_attribute("open") is None
    before.locator("summary").click()
    entries = before.locator("div.te-before-step")
    assert entries.count() == len(FIRST)
    assert entries.nth(0).inner_text().startswith("#1 · ")
    assert entries.nth(10).inner_text() == f"#11 · agent · {SCRIPT}"  # one line, as the step's text is
    assert entries.nth(83).inner_text() == f"#84 · agent\n{IMG}"  # the last step before, whole
    assert entries.nth(83).is_visible()
    # the marked step's own card shows its two lines as written
    assert a.phrase(K).inner_text().endswith(f"#{MARKED + 1} · agent\n{SCRIPT}\n{IMG}")
    assert a.page.locator(".te-window img, .te-window script, [data-testid^='phrase:'] img").count() == 0

    # one step marked with its type and severity; the live score names it by its number in the whole trace
    a.mark_step(K)
    a.choose_type("Wrong Arguments")  # the type first: Label Studio calls no backend for a choice, it does for a
    a.choose_severity("Major")  # severity, whose answer then names the type too (docs/annotating.md, live score)
    major = CONFIG.trajectory.weights["major"]
    # the backend's answer to the last change: the step's line as the live score writes it (a real minus sign)
    a.live_score_shows(f"#{MARKED + 1} · Thought: {major:+g} (Major) · Wrong Arguments".replace("-", "\u2212"))
    live = a.live_score()
    assert f"#{K + 1} · " not in live
    assert "(the marks of steps #85–#167; the export scores the whole trace)" in live
    a.choose("I reviewed every step")
    a.choose("failure")
    a.submit()

    # not one script ran, anywhere in the window's task
    assert not a.pwned()
    assert a.watch.dialogs == [] and a.watch.errors == []

    # the trace is exported once its annotator has submitted every window: the first and last with no marks
    submit_unmarked(a, pid, tasks[0])
    submit_unmarked(a, pid, tasks[2])
    assert not a.pwned()
    records = export(pid, tmp_path)
    assert list(records) == ["windowed-250"]  # one record of the whole trace, not one per window
    record = records["windowed-250"]
    assert record["n_steps"] == N_STEPS
    steps = record["error_localization"]
    assert [s["step_index"] for s in steps] == list(range(N_STEPS))
    wrong = [s for s in steps if s["correctness"] != "correct"]
    assert [s["step_index"] for s in wrong] == [MARKED]
    marked = steps[MARKED]
    assert {k: marked[k] for k in ("correctness", "error_category", "error_type", "severity")} == {
        "correctness": "incorrect", "error_category": "action", "error_type": "wrong_arguments", "severity": "major"}
    assert marked["step_text"] == HOSTILE[MARKED]  # the hostile text byte for byte
    assert steps[200]["step_text"] == IMG
    assert record["first_error_step"] == MARKED
    assert record["final_score"] == CONFIG.trajectory.running_score.initial + major
    assert [(w["start"], w["end"], w["task_id"]) for w in record["windows"]] == [
        (FIRST.start, FIRST.stop, tasks[0]), (SECOND.start, SECOND.stop, tasks[1]), (THIRD.start, THIRD.stop, tasks[2])]
