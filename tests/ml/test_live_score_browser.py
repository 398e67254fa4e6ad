"""The live running score in a real browser: mark two steps in the transcript layout with Auto-Annotation on,
and the live-score box drops by their weights without a reload (the backend answers the editor's
interactive /predict calls, whose context holds the current regions)."""
from __future__ import annotations

import time

import pytest

from ls_trajeval.core import config as cfg
from ls_trajeval import label_configs
from ls_trajeval.studio import client as studio
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.ml.connect import connect_backend
from ls_trajeval.core.trace import parse_trace

pytestmark = [pytest.mark.studio, pytest.mark.browser]


def test_marking_two_steps_drops_the_live_score_by_their_weights(label_studio, ls_client, backend_factory, browser):
    from browser.ui import Annotator  # the browser tests' page helpers

    c = cfg.load(label_configs.path("trajectory_eval"))
    project = studio.create_project(ls_client, c, "transcript", "live score browser")
    trace = {"trace_id": "live-1", "task": "count <b>&amp;</b>", "trace": [
        {"type": "thought", "content": f"step {i} text"} for i in range(5)]}
    import_traces(ls_client, project["id"], [parse_trace(trace)], c, progress=False)
    backend = backend_factory(str(label_configs.path("trajectory_eval")), ls=label_studio, workers=1, auth=False).start()
    connect_backend(ls_client, project["id"], backend.url)
    task = next(studio.iter_tasks(ls_client, project["id"]))
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.set_default_timeout(30_000)
    a = Annotator(ctx.new_page(), label_studio.url)
    a.login(label_studio.credentials.email, label_studio.credentials.password)
    a.page.goto(f"{label_studio.url}/projects/{project['id']}/data?task={task['id']}")
    a.page.locator("[data-testid='phrase:0']").wait_for()
    a.page.get_by_text("Auto-Annotation", exact=True).click()
    a.page.evaluate("window.__te_same_page = true")  # gone if the page reloads
    box = a.page.locator(".te-live-score")

    def shown(expect: str) -> str:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and expect not in box.inner_text():
            time.sleep(0.2)
        return box.inner_text()

    def details():
        if not a.page.locator(".te-step-details").is_visible():
            a.select_region(step)

    step = 1
    a.mark_step(step)
    assert "Running score: 100 of 100" in shown("step 2: +0")
    details()
    a.choose_severity("Major")
    a.page.keyboard.press("Escape")
    step = 3
    a.mark_step(step)  # a new region sends the current regions: step 2's Major now counts
    assert "Running score: 95 of 100" in shown("Running score: 95")
    details()
    a.choose_severity("Critical")
    rationale = a.page.locator(".te-step-details textarea").first
    rationale.fill("finishes too early")
    rationale.press("Shift+Enter")  # a per-region text submit also calls the backend
    text = shown("Running score: 85")
    assert "Running score: 85 of 100" in text and "step 2: \u22125 (Major)" in text
    assert "step 4: \u221210 (Critical)" in text
    assert a.page.evaluate("window.__te_same_page === true")  # no reload happened
    ctx.close()
