"""The live running score in a real browser, the workbench with a backend from `ml serve` + `ml connect`: marking
two steps and changing one's severity each move the score shown, at once and without a reload, and nothing has
to be switched on (the editor's Auto-Annotation toggle stays off: the marking labels are ``smartOnly``)."""
from __future__ import annotations

import time

import pytest
from waiting import wait_for

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.fields import SCORE_KEPT, SCORE_NOT_KEPT
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.ml.connect import connect_backend
from ls_trajeval.studio import client as studio

pytestmark = [pytest.mark.studio, pytest.mark.browser]

SHOTS = label_configs.path("trajectory_eval").parent.parent / "docs" / "screenshots"

def annotate_with_backend(label_studio, ls_client, backend_factory, browser, layout: str, trace: dict):
    """A project of ``layout`` with one task, the backend (`ml serve`, write-back on) connected by `ml connect`'s
    function, and a logged-in page of its own."""
    from browser.ui import Annotator  # the browser tests' page helpers

    c = cfg.load(label_configs.path("trajectory_eval"))
    project = studio.create_project(ls_client, c, layout, f"live score browser {layout}")
    import_traces(ls_client, project["id"], [parse_trace(trace)], c, progress=False)
    backend = backend_factory(str(label_configs.path("trajectory_eval")), ls=label_studio, workers=1,
                              auth=False).start()
    connect_backend(ls_client, project["id"], backend.url)
    task = next(studio.iter_tasks(ls_client, project["id"]))
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.set_default_timeout(30_000)
    a = Annotator(ctx.new_page(), label_studio.url)
    a.login(label_studio.credentials.email, label_studio.credentials.password)
    a.open(project["id"], task["id"])
    return c, a, project, task, ctx



def test_marks_and_a_severity_change_move_the_live_score_without_a_toggle(label_studio, ls_client, backend_factory,
                                                                          browser):
    trace = {"trace_id": "live-1", "task": "count <b>&amp;</b>", "trace": [
        {"type": "thought", "content": f"step {i} text"} for i in range(5)]}
    c, a, _, _, ctx = annotate_with_backend(label_studio, ls_client, backend_factory, browser, "transcript", trace)
    weights = {s.name: s.weight for s in c.trajectory.severities}
    start = c.trajectory.running_score.initial
    assert a.page.evaluate("() => Htx.autoAnnotation") is False  # the toggle is off, and stays off
    a.page.evaluate("window.__te_same_page = true")  # gone if the page reloads

    def shown(expect: str) -> str:
        def text() -> str:
            return a.live_score() if a.page.locator(".te-live [data-testid='htx-textbox-content']").count() else ""

        wait_for(lambda: expect in text(), 10)
        return text()

    def score(value: float) -> str:
        return f"Running score now: {value:g} of {start:g}"

    a.mark_step(1)
    assert "#2 · Thought: +0 (no severity yet)" in shown("#2 · Thought")
    a.choose_severity("Major")  # a relabel of the selected mark
    assert score(start + weights["major"]) in shown(score(start + weights["major"]))
    a.mark_step(3)  # step 2's mark is selected: the new one takes on its label and severity
    both_major = start + 2 * weights["major"]
    text = shown(score(both_major))
    assert score(both_major) in text and "#4 · Thought: \u22125 (Major)" in text
    a.choose_severity("Critical")  # change one severity: the score follows at once
    final = start + weights["major"] + weights["critical"]
    text = shown(score(final))
    assert score(final) in text
    assert "#2 · Thought: \u22125 (Major)" in text and "#4 · Thought: \u221210 (Critical)" in text
    a.screenshot(SHOTS / "workbench-live-score.png", full_page=False)
    assert a.page.evaluate("window.__te_same_page === true")  # no reload happened
    assert a.page.evaluate("() => Htx.autoAnnotation") is False
    ctx.close()


def test_paged_header_and_step_scores_follow_each_save_without_reopening(label_studio, ls_client, backend_factory,
                                                                        browser):
    """The paged layout has no live box (Label Studio calls no backend while paging a Repeater): each save is
    written back, and the header and every step show that score. The backend answers Label Studio's webhook
    once the task is recomputed, and Label Studio sends it inside the save request and reloads the task after
    that request: so the open task shows the new score after Submit, and again after Update, with no reopening."""
    trace = {"trace_id": "paged-1", "task": "t",
             "trace": [{"type": "thought", "content": f"step {i}"} for i in range(4)]}
    c, a, project, task, ctx = annotate_with_backend(label_studio, ls_client, backend_factory, browser, "paged", trace)
    weight = {s.name: s.weight for s in c.trajectory.severities}
    start = c.trajectory.running_score.initial
    a.page.evaluate("window.__te_same_page = true")  # gone if the page reloads

    def headers() -> list[str]:
        return a.main.locator("h1, h2, h3, h4, h5, h6").all_inner_texts()

    def shows(expect: str, timeout: float = 5) -> float | None:
        """Seconds until a header says ``expect`` (None if it never does within ``timeout``)."""
        t0 = time.monotonic()
        return time.monotonic() - t0 if wait_for(lambda: expect in headers(), timeout) else None

    def step_scores() -> list[str]:
        """Each step's "Score after this step" line, paging through the steps."""
        out = []
        for step in range(len(trace["trace"])):
            a.page_to(step)
            out += [h for h in headers() if h.startswith("Score after this step")]
        return out

    # the header says whether a backend keeps the score current: not until it has written one
    assert f"Running score: {start:g} ({SCORE_NOT_KEPT})" in headers()
    assert f"Score after this step: {start:g} (as saved)" in headers()
    a.page_to(1)
    a.set_correctness("incorrect")
    a.choose_type("Missed Element")
    a.choose_severity("Major")
    a.choose("I reviewed every step")
    a.choose("failure")
    a.submit()
    major = start + weight["major"]
    assert shows(f"Running score: {major:g} ({SCORE_KEPT})") is not None, headers()
    assert step_scores() == [f"Score after this step: {v:g} (as saved)" for v in (start, major, major, major)]
    a.page_to(1)
    a.screenshot(SHOTS / "paged-step-score.png", full_page=False)
    a.choose_severity("Critical")  # another severity for the same step, saved with Update
    a.submit("Update")
    critical = start + weight["critical"]
    assert shows(f"Running score: {critical:g} ({SCORE_KEPT})") is not None, headers()
    assert step_scores() == [f"Score after this step: {v:g} (as saved)" for v in (start, critical, critical, critical)]
    assert a.page.evaluate("window.__te_same_page === true")  # the same page all along: nothing was reopened
    ctx.close()
