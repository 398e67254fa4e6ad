"""Required fields as configured: Label Studio's own message, and nothing saved until they are filled."""
from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg

from .test_annotate import trace

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))  # require_all_steps on, outcome required


@pytest.fixture(scope="module")
def required(projects, ls_env):
    assert CONFIG.require_all_steps and CONFIG.whole_trace[0].required
    return {layout: projects.make(CONFIG, layout, [trace(f"req-{layout}")], f"browser required {layout}")
            for layout in ("transcript", "paged")}


def refused(a, projects, tid, *words):
    """Submit, expect Label Studio's warning naming what is missing, dismiss it; nothing is saved."""
    a.page.locator("button", has_text="Submit").click()
    modal = a.page.locator(".ant-modal-content:visible").first
    modal.wait_for()
    text = modal.inner_text()
    assert "required" in text and all(w in text for w in words), text
    for attempt in range(3):  # a click that lands while the dialog still animates in is lost (seen under load)
        modal.locator("button", has_text="OK").click()
        try:
            modal.wait_for(state="hidden", timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    assert projects.annotations(tid) == []


@pytest.mark.parametrize("layout", ["transcript", "paged"])
def test_required_fields_block_submit(guard, required, projects, layout):
    a = guard
    pid, ids = required[layout]
    tid = ids[f"req-{layout}"]
    a.open(pid, tid)
    refused(a, projects, tid, "error_localization_reviewed")
    a.choose("I reviewed every step")
    if layout == "transcript":
        a.mark_step(2)
    else:
        a.page_to(2)
        a.set_correctness("incorrect")
    refused(a, projects, tid, "error_localization_type")
    a.choose_type("Missed Element")
    if layout == "paged":
        refused(a, projects, tid, "error_localization_severity")
    else:  # the workbench's severity is a label on the mark, and Label Studio has no "required" for labels:
        # Submit would save this mark without one (its export says None; the live score, "no severity yet")
        refused(a, projects, tid, "overall_success")
        a.select_region(2)  # a refused Submit leaves no mark selected
    a.choose_severity("Minor")
    refused(a, projects, tid, "overall_success")
    a.choose("partial")
    saved = a.submit()
    assert saved["id"] and len(projects.annotations(tid)) == 1
