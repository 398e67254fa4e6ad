"""A newcomer's first marks in the workbench (issue 28): a new mark is selected with its severity and type shown, the
error label stays armed for the next one, the new mark's rationale box is in view without scrolling the Regions list
(with nine marks before it), and a marked step stays readable.

Label Studio 1.23 keeps the two behaviours the first items need ("Select region after creating it", "Keep label
selected after creating a region") as editor settings in the browser's own storage, off by default, and no label
config or project setting reaches them. So: with Label Studio's defaults the workbench says, at the moment the label
turns off, which two settings to turn on; once they are on (as the hint says, in Label Studio's own Settings dialog)
the items hold. These tests run in a browser context of their own, so the settings never leak into other tests.
"""
from __future__ import annotations

import re

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results
from ls_trajeval.core.labels import StepLabel, TraceLabels
from ls_trajeval.studio import client as studio

from .test_annotate import SHOTS
from .ui import SELECTED_RATIONALE, Projects, logged_in

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
SETTINGS = ("Select region after creating it", "Keep label selected after creating a region")
N = 30
EARLIER = list(range(0, 27, 3))  # nine marks before the new ones
DIFF = ("--- a/pricing.py\n+++ b/pricing.py\n@@ -45 +45 @@\n-    return price * pct / 100\n"
        "+    return price - price * pct / 100")


def trace(tid: str) -> dict:
    return {"trace_id": tid, "task": "Fix the discount bug", "trace": [
        {"type": "code" if i == 28 else "thought", "content": DIFF if i == 28 else f"step {i}: reading pricing.py"}
        for i in range(N)]}


@pytest.fixture(scope="module")
def newcomer(browser, label_studio):
    """A fresh browser of its own, logged in: Label Studio's editor settings as they come."""
    with logged_in(browser, label_studio) as a:
        yield a


def marked_project(client, title: str) -> int:
    """One 30-step trace with nine marks already made (accepted suggestions: the label stream starts from them)."""
    pid, _ = Projects(client).make(CONFIG, "transcript", [trace(title)], title)
    (task,) = studio.iter_tasks(client, pid)
    labels = TraceLabels([StepLabel(i, "incorrect", "action", "wrong_tool", "minor", f"why {i}")
                          if i in EARLIER else StepLabel(i, "correct") for i in range(N)])
    studio.create_prediction(client, task["id"], {"model_version": "earlier", "score": 91, "result": results.encode(
        labels, CONFIG, "transcript", task["data"]["te_transcript"], origin="prediction", confirm_review=False)})
    studio.set_prelabel(client, pid, True, "earlier")
    return pid


def disabled(a, step: int) -> bool:
    return a.mark_button(step).get_attribute("aria-label").endswith("(disabled)")


# the selected mark's rationale box lies inside the Regions list's frame, the list not scrolled
RATIONALE_IN_VIEW = """(sel) => {
  const list = document.querySelector('.lsf-outliner'), box = document.querySelector(sel);
  if (!list || !box || list.closest('.lsf-tabs__contents').scrollTop !== 0) return false;
  const b = box.getBoundingClientRect(), f = list.getBoundingClientRect();
  return b.height > 0 && b.top >= f.top && b.bottom <= f.bottom;
}"""


def test_with_label_studios_defaults_the_workbench_says_what_to_turn_on(newcomer, ls_client):
    a = newcomer
    a.reset_watch()
    pid = marked_project(ls_client, "first marks, defaults")
    a.open(pid, None)
    hint = a.page.locator(".te-disarmed")
    assert not hint.is_visible()  # the error label comes armed
    a.phrase(28).scroll_into_view_if_needed()
    a.mark_button(28).click()
    a.phrase(28).locator(".htx-highlight").first.wait_for()
    # Label Studio's defaults: the new mark is not selected and the label turned off ("Select a label first")
    assert a.selected_step() is None and disabled(a, 29)
    assert hint.is_visible() and all(s in hint.inner_text() for s in SETTINGS)
    a.page.keyboard.press(a.label_key("incorrect"))  # what the hint says first: the key arms it again
    assert not disabled(a, 29) and not hint.is_visible()


def test_once_the_settings_are_on_a_new_mark_is_selected_armed_and_its_rationale_in_view(newcomer, ls_client):
    a = newcomer
    a.reset_watch()
    pid = marked_project(ls_client, "first marks, settings")
    a.open(pid, None)
    a.editor_settings({s: True for s in SETTINGS})
    a.phrase(28).scroll_into_view_if_needed()
    a.mark_button(28).click()
    # the new mark is selected, its severity and type shown
    a.page.wait_for_function("() => Htx.annotationStore.selected.highlightedNode?.start === '28'")
    assert a.page.locator(".te-step-details").is_visible()
    assert a.details.locator(".lsf-label", has_text="Major").is_visible()
    assert a.details.locator(".te-types label", has_text="Wrong Tool").is_visible()
    # its rationale box comes first in the Regions list, in view, the list not scrolled (nine entries before it)
    box = a.selected_rationale()
    box.wait_for()
    # the list puts the selected entry first a frame after it draws the new one at the end: wait for it to settle
    a.page.wait_for_function(RATIONALE_IN_VIEW, arg=SELECTED_RATIONALE, timeout=5000)
    assert a.page.locator(".lsf-outliner .lsf-tree-list .lsf-tree-treenode").count() == len(EARLIER) + 1
    box.click()
    box.fill("the fix inverts the discount")
    box.press("Enter")
    # the label stays armed: the next step is one click
    assert not disabled(a, 29)
    a.mark_button(29).click()
    a.page.wait_for_function("() => Htx.annotationStore.selected.highlightedNode?.start === '29'")
    a.screenshot(SHOTS / "workbench-new-mark-selected.png", full_page=False)
    assert a.watch.errors == []


def test_a_marked_step_stays_readable(newcomer, ls_client):
    """Label Studio paints a mark in its label's colour at 0.3 alpha, 0.8 when selected, over the step's content:
    the workbench keeps a light tint of it and a bar in that colour at the card's left."""
    a = newcomer
    pid = marked_project(ls_client, "first marks, readable")
    a.open(pid, None)
    a.phrase(28).scroll_into_view_if_needed()
    a.mark_button(28).click()
    mark = a.phrase(28).locator(".htx-highlight").first
    mark.wait_for()
    if a.selected_step() != 28:
        mark.click()
    a.page.wait_for_function("() => Htx.annotationStore.selected.highlightedNode?.start === '28'")
    painted = mark.get_attribute("style")
    assert re.search(r"rgba\(211, 47, 47, 0\.8\)", painted)  # what Label Studio painted: the error red, selected
    alpha = float(re.fullmatch(r"rgba\(211, 47, 47, ([\d.]+)\)",
                               mark.evaluate("e => getComputedStyle(e).backgroundColor")).group(1))
    assert alpha <= 0.15
    assert a.phrase(28).evaluate("e => getComputedStyle(e).borderLeftColor") == "rgb(211, 47, 47)"
    # the step's text keeps its own colour
    assert mark.evaluate("e => getComputedStyle(e).color") == a.phrase(27).locator("[class*=dialoguetext]").evaluate(
        "e => getComputedStyle(e).color")
