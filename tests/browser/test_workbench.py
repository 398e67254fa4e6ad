"""The annotator's workbench on a 200-step trace: labelling step 150 by mouse and by keyboard, counted.

Each walk counts what the annotator does from "I see the wrong step" (step 150 is in view: scrolled to, or
reached with Ctrl+Down while reading) until the annotation holds its type, severity and rationale: every
click, every key (a chord is one), and the rationale's text as one action. The same walks run on the
transcript config as it was before the workbench (tests/fixtures/transcript_before_workbench.xml) for the
"before" figures. Then the outcome is set and the task submitted (not counted) and the export must hold
what was labelled. In the workbench the controls and the score are checked to be in the viewport with the
page itself never scrolled (only the trace pane scrolls).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.studio import client as studio

from .test_annotate import SHOTS, export
from .ui import RATIONALE_BOX

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
BEFORE_XML = Path(__file__).resolve().parents[1] / "fixtures" / "transcript_before_workbench.xml"
N_STEPS, STEP = 200, 149  # "step 150" is index 149
RATIONALE = "reads the old fixture although the test output two steps up names the new one"


def long_trace(tid: str) -> dict:
    kinds = ("thought", "action", "observation")
    steps = []
    for i in range(N_STEPS):
        kind = kinds[i % 3]
        if kind == "action":
            steps.append({"type": "action", "content": "run_shell",
                          "action_input": {"cmd": f"pytest -q tests/test_{i}.py"}})
        else:
            steps.append({"type": kind, "content": f"{kind} {i}: the agent looks at pricing.py and the failing test."})
    return {"trace_id": tid, "task": "Fix the discount bug; 200 steps", "trace": steps}


@dataclass
class Counted:
    """The annotator's hands: every action goes through here and is counted."""

    page: object
    clicks: int = 0
    keys: int = 0
    texts: int = 0
    log: list = field(default_factory=list)

    def click(self, locator, what: str):
        locator.click()
        self.clicks += 1
        self.log.append(f"click {what}")

    def press(self, key: str):
        self.page.keyboard.press(key)
        self.keys += 1
        self.log.append(f"key {key}")

    def type(self, text: str):
        self.page.keyboard.type(text)
        self.texts += 1
        self.log.append("type the text")

    @property
    def actions(self) -> int:
        return self.clicks + self.keys + self.texts


@pytest.fixture(scope="module")
def long_projects(projects, ls_client, ls_env):
    """One project per walk, each with one 200-step task, so that the label stream serves that task: the
    workbench's, and the config from before the workbench."""
    made = {}
    for walk in ("mouse", "keyboard"):
        made["after", walk] = projects.make(CONFIG, "transcript", [long_trace(f"after-{walk}")], f"workbench {walk}")
        p = studio.create_project_from_xml(ls_client, f"before the workbench {walk}",
                                           BEFORE_XML.read_text(encoding="utf-8"))
        assert import_traces(ls_client, p["id"], [trace.parse_trace(long_trace(f"before-{walk}"))], CONFIG,
                             progress=False).imported == 1
        made["before", walk] = p["id"], {}
    return made


def step_values(a, step: int) -> dict:
    """What the editor's annotation holds for ``step`` now (not yet submitted)."""
    got = {}
    for r in a.page.evaluate("() => Htx.annotationStore.selected.serializeAnnotation()"):
        v = r.get("value") or {}
        if v.get("start") != str(step):
            continue
        kind = r["from_name"].removeprefix("error_localization").lstrip("_") or "mark"
        got[kind] = (v.get("text") if r["type"] == "textarea" else
                     v.get("choices") or v.get("paragraphlabels") or v.get("taxonomy"))
    return got


def see_step(a, step: int):
    """The annotator scrolls the trace until the step is in view (not counted: reading is not an action)."""
    a.phrase(step).scroll_into_view_if_needed()
    a.phrase(step).wait_for()


def page_scrolled(a) -> int:
    return a.page.evaluate("() => Math.max(document.scrollingElement.scrollTop,"
                           " document.querySelector('.lsf-main-content').scrollTop)")


def in_viewport(a, locator) -> bool:
    box = locator.bounding_box()
    vp = a.page.viewport_size
    return bool(box) and box["y"] >= 0 and box["x"] >= 0 and box["y"] + box["height"] <= vp["height"] \
        and box["x"] + box["width"] <= vp["width"]


def hotkey(a, scope: str, label: str) -> str:
    """The key Label Studio shows next to a visible label or choice, e.g. "Wrong Tool[t]" -> "t"."""
    for text in a.page.locator(scope).all_inner_texts():
        m = re.fullmatch(rf"{re.escape(label)}\s*\[?(\w)\]?", " ".join(text.split()))
        if m:
            return m.group(1)
    raise AssertionError(f"no hotkey shown for {label!r} in {scope}")


def finish_and_export(a, pid: int, tid: str, tmp_path) -> dict:
    a.choose("I reviewed every step")
    a.choose("failure")
    a.submit()
    return export(pid, tmp_path)[tid]["error_localization"][STEP]


WANT = {"correctness": "incorrect", "error_category": "action", "error_type": "wrong_arguments",
        "severity": "major", "rationale": RATIONALE}


def exported(entry: dict) -> dict:
    return {k: entry[k] for k in WANT}


def mouse_walk(a, long_projects, which: str) -> tuple[int, Counted]:
    """Open the walk's project in the label stream and scroll to step 150: from here on, actions count."""
    pid, _ = long_projects[which, "mouse"]
    a.open(pid, None)
    see_step(a, STEP)
    return pid, Counted(a.page)


def test_mouse_before_the_workbench(guard, long_projects, tmp_path):
    a = guard
    pid, hand = mouse_walk(a, long_projects, "before")
    hand.click(a.main.locator(".lsf-label", has_text="incorrect").first, "the incorrect label")
    hand.click(a.mark_button(STEP), "the step's button")
    hand.click(a.phrase(STEP).locator(".htx-highlight").first, "the new mark")
    details = a.page.locator(".te-step-details")
    hand.click(details.locator(".ant-select-selector"), "the error-type box")
    tree = a.page.locator(".ant-select-tree:visible").first
    hand.click(tree.locator(".ant-select-tree-treenode", has_text="Action Error").locator(".ant-select-tree-switcher"),
               "the category's arrow")
    hand.click(tree.locator(".ant-select-tree-title", has_text="Wrong Arguments"), "the type")
    hand.press("Escape")  # the tree stays open over the severity
    hand.click(details.locator("label.ant-radio-wrapper", has_text="Major"), "the severity")
    hand.click(details.locator("textarea"), "the rationale box")
    hand.type(RATIONALE)
    hand.press("Shift+Enter")
    assert step_values(a, STEP) == {"mark": ["incorrect"], "type": [["action", "wrong_arguments"]],
                                    "severity": ["major"], "rationale": [RATIONALE]}
    assert (hand.clicks, hand.keys, hand.texts) == (8, 2, 1), hand.log
    assert page_scrolled(a) > 0  # the controls are after the whole trace: the page scrolled to reach them
    assert exported(finish_and_export(a, pid, "before-mouse", tmp_path)) == WANT


def test_mouse_in_the_workbench(guard, long_projects, tmp_path):
    a = guard
    pid, hand = mouse_walk(a, long_projects, "after")
    hand.click(a.mark_button(STEP), "the step's button")  # the error label is preselected
    hand.click(a.page.locator(RATIONALE_BOX).last, "the new mark's rationale box")
    hand.type(RATIONALE)
    hand.press("Enter")  # adds it (leaving the mark, or Submit, would add it too)
    hand.click(a.details.locator(".lsf-label", has_text="Major"), "the severity")
    hand.click(a.details.locator(".te-types label", has_text="Wrong Arguments"), "the type's name")
    assert step_values(a, STEP) == {"mark": ["incorrect"], "severity": ["major"], "type": ["wrong_arguments"],
                                    "rationale": [RATIONALE]}
    assert (hand.clicks, hand.keys, hand.texts) == (4, 1, 1), hand.log
    # everything the annotator needs is in view next to the step, and the page itself never scrolled
    assert page_scrolled(a) == 0
    for what in (a.phrase(STEP), a.page.locator(".te-score"), a.details.locator(".lsf-label", has_text="Major"),
                 a.details.locator(".te-types label", has_text="Wrong Arguments"),
                 a.page.locator(".lsf-tree-treenode-selected", has_text=RATIONALE),
                 a.main.locator(".te-whole-trace label", has_text="failure")):
        assert in_viewport(a, what), what
    a.screenshot(SHOTS / "workbench-step-150.png", full_page=False)

    # the next wrong step, with step 150's mark still selected: the new mark takes its label and severity
    see_step(a, STEP + 3)
    hand = Counted(a.page)
    hand.click(a.mark_button(STEP + 3), "the step's button")
    hand.click(a.page.locator(RATIONALE_BOX).last, "the new mark's rationale box")
    hand.type("same mistake again")
    hand.press("Enter")
    hand.click(a.details.locator(".te-types label", has_text="Wrong Arguments"), "the type's name")
    assert step_values(a, STEP + 3) == {"mark": ["incorrect"], "severity": ["major"], "type": ["wrong_arguments"],
                                        "rationale": ["same mistake again"]}
    assert (hand.clicks, hand.keys, hand.texts) == (3, 1, 1), hand.log

    # after leaving the marks (Escape: nothing selected, no label either), a mark starts with the label
    a.page.keyboard.press("Escape")
    see_step(a, STEP + 6)
    hand = Counted(a.page)
    hand.click(a.main.locator(".te-side-pane .lsf-label", has_text="incorrect"), "the incorrect label")
    hand.click(a.mark_button(STEP + 6), "the step's button")
    hand.click(a.page.locator(RATIONALE_BOX).last, "the new mark's rationale box")
    hand.type("third")
    hand.press("Enter")
    hand.click(a.details.locator(".lsf-label", has_text="Minor"), "the severity")
    hand.click(a.details.locator(".te-types label", has_text="Wrong Tool"), "the type's name")
    assert step_values(a, STEP + 6) == {"mark": ["incorrect"], "severity": ["minor"], "type": ["wrong_tool"],
                                        "rationale": ["third"]}
    assert (hand.clicks, hand.keys, hand.texts) == (5, 1, 1), hand.log
    assert exported(finish_and_export(a, pid, "after-mouse", tmp_path)) == WANT


def reach_by_keyboard(a, step: int):
    """Ctrl+Down walks the trace a step at a time (Label Studio's "next phrase"); the annotator reads on
    until the wrong step is the current one. Not counted: reading is not an action."""
    a.page.locator(".lsf-main-view").first.click(position={"x": 2, "y": 2})
    current = "() => Htx.annotationStore.selected.names.get('te_trace').playingId"
    for _ in range(step - a.page.evaluate(current)):
        a.page.keyboard.press("Control+ArrowDown")
    a.page.wait_for_function(f"{current} === {step}")


def test_keyboard_in_the_workbench(guard, long_projects, tmp_path):
    a = guard
    pid, _ = long_projects["after", "keyboard"]
    a.open(pid, None)
    reach_by_keyboard(a, STEP)
    assert in_viewport(a, a.phrase(STEP))  # the walk scrolls the trace pane along
    hand = Counted(a.page)
    hand.press(hotkey(a, ".te-side-pane .lsf-label, .te-step-details .lsf-label", "Major (−5)"))
    hand.press("Control+Shift+A")  # marks the current step with the selected labels (error label and severity)
    hand.press("Control+ArrowRight")  # selects the mark in the current step
    hand.press(hotkey(a, ".te-types label", "Wrong Arguments"))
    hand.press("Enter")  # focuses the selected mark's rationale
    # as a person waits for the cursor: keys typed before the box has the focus are hotkeys
    a.page.wait_for_function("() => document.activeElement && document.activeElement.tagName === 'TEXTAREA'")
    hand.type(RATIONALE)
    hand.press("Enter")  # adds it and leaves the box
    assert step_values(a, STEP) == {"mark": ["incorrect"], "severity": ["major"], "type": ["wrong_arguments"],
                                    "rationale": [RATIONALE]}
    assert (hand.clicks, hand.keys, hand.texts) == (0, 6, 1), hand.log
    assert page_scrolled(a) == 0
    assert exported(finish_and_export(a, pid, "after-keyboard", tmp_path)) == WANT


def test_keyboard_before_the_workbench(guard, long_projects, tmp_path):
    """Before, the error type, severity and rationale of a transcript mark had no keys: Tab had to walk past
    the rest of the trace first (the steps are focusable, in step order), then into the controls."""
    a = guard
    pid, _ = long_projects["before", "keyboard"]
    a.open(pid, None)
    reach_by_keyboard(a, STEP)
    hand = Counted(a.page)
    hand.press("1")  # the incorrect label
    hand.press("Control+Shift+A")
    hand.press("Control+ArrowRight")

    def tab_to(selector: str, limit: int = 800):
        for _ in range(limit):
            if a.page.evaluate("s => !!document.activeElement && document.activeElement.matches(s)", selector):
                return
            hand.press("Tab")
        raise AssertionError(f"Tab never reached {selector} ({hand.keys} keys so far)")

    tab_to(".te-step-details input[role=combobox]")
    assert "Wrong Arguments" in a.pick_type_by_keys("Wrong Arguments", hand.press, hand.type)
    # the focus is still in the type's box, where keys are typed, not hotkeys: Tab on to the severity radio
    tab_to(".te-step-details input[type=radio][name^='Major']")
    hand.press("Space")
    tab_to(".te-step-details textarea")
    hand.type(RATIONALE)
    hand.press("Shift+Enter")
    assert step_values(a, STEP) == {"mark": ["incorrect"], "type": [["action", "wrong_arguments"]],
                                    "severity": ["major"], "rationale": [RATIONALE]}
    tabs = hand.log.count("key Tab")
    assert tabs > 100, hand.log  # past the rest of the trace and its buttons: no practical keyboard path
    print(f"before the workbench, keyboard: {hand.keys} keys ({tabs} of them Tab) and the text")
    hand.press("Escape")
    assert exported(finish_and_export(a, pid, "before-keyboard", tmp_path)) == WANT
