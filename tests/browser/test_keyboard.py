"""Keyboard only: walk a trace and label a wrong step without the mouse (paged layout); the hotkeys the UI
shows never collide (both layouts)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig

from .test_annotate import export, trace

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


@pytest.fixture(scope="module")
def keyed(projects, ls_env):
    return {layout: projects.make(CONFIG, layout, [trace(f"keys-{layout}")], f"browser keyboard {layout}")
            for layout in ("transcript", "paged")}


def key_of(a, label: str) -> str | None:
    """The hotkey Label Studio shows next to a visible choice, e.g. "incorrect[7]" -> "7" (None: it ran out)."""
    for text in a.main.locator("label.ant-radio-wrapper:visible, label.ant-checkbox-wrapper:visible").all_inner_texts():
        m = re.fullmatch(rf"{re.escape(label)}\s*(\[(\w)\])?", text.strip())
        if m:
            return m.group(2)
    raise AssertionError(f"no choice {label!r} shown")


def press_choice(a, label: str):
    """Its hotkey; where Label Studio has none left to give (every step's choices take theirs first), Tab to
    it and Space, as an annotator does."""
    key = key_of(a, label)
    if key:
        a.page.keyboard.press(key)
    else:
        focus_choice(a, label)
        a.page.keyboard.press("Space")


def assert_unique_hotkeys(a):
    keys = a.hotkey_hints()
    assert keys, "no hotkeys shown"
    assert len(keys) == len(set(keys)), f"colliding hotkeys: {keys}"


def test_hotkeys_never_collide(guard, keyed):
    a = guard
    pid, ids = keyed["transcript"]
    a.open(pid, ids["keys-transcript"])
    a.mark_step(1)  # the per-region severities get theirs too
    assert_unique_hotkeys(a)
    pid, ids = keyed["paged"]
    a.open(pid, ids["keys-paged"])
    for step in range(6):
        a.page_to(step)
        a.set_correctness("incorrect")
        assert_unique_hotkeys(a)


def focus(a, selector: str, limit: int = 80):
    """Tab until the focused element matches ``selector`` (what an annotator does with the keyboard)."""
    for _ in range(limit):
        if a.page.evaluate("s => !!document.activeElement && document.activeElement.matches(s)", selector):
            return
        a.page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def focus_choice(a, label: str, limit: int = 80):
    """Tab until the focused element is the radio or checkbox labelled ``label``."""
    for _ in range(limit):
        if a.page.evaluate("t => { const e = document.activeElement; const l = e && e.closest('label');"
                           " return !!l && (e.type === 'radio' || e.type === 'checkbox') && l.innerText.includes(t); }",
                           label):
            return
        a.page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached the choice {label!r}")


def shown_step(a) -> int:
    text = a.page.locator(".te-step-number:visible").first.inner_text()
    return int(re.search(r"step (\d+) of", text).group(1))


def walk_to(a, target: int, limit: int = 12) -> list[int]:
    """Alt+→ / Alt+← until step ``target`` (1-based) shows; the steps seen on the way.

    A key pressed while Label Studio is still binding its hotkeys after the task opened is lost (CI saw
    this once); an annotator presses again, and so does this walk, up to three times per step."""
    seen = [shown_step(a)]
    moved = "n => ![...document.querySelectorAll('.te-step-number')].some(" \
            "e => e.offsetParent && e.textContent.includes('step ' + n + ' of'))"
    for _ in range(limit):
        if seen[-1] == target:
            return seen
        for attempt in range(3):
            a.page.keyboard.press("Alt+ArrowRight" if seen[-1] < target else "Alt+ArrowLeft")
            try:
                a.page.wait_for_function(moved, arg=seen[-1], timeout=8_000)
                break
            except PlaywrightTimeout as exc:
                if attempt == 2:
                    focused = a.page.evaluate(
                        "() => document.activeElement && document.activeElement.outerHTML.slice(0, 200)")
                    raise AssertionError(f"Alt+arrow did not leave step {seen[-1]} after 3 presses: {seen}; "
                                         f"focus on {focused}") from exc
        seen.append(shown_step(a))
    raise AssertionError(f"the keyboard did not reach step {target}: {seen}")


def test_keyboard_only_walk_and_label(guard, keyed, tmp_path):
    a = guard
    pid, ids = keyed["paged"]
    a.open(pid, ids["keys-paged"])
    kb = a.page.keyboard
    assert walk_to(a, 6)[-1] == 6  # to the last step
    assert walk_to(a, 4)[-1] == 4  # and back
    press_choice(a, "incorrect")
    a.details.wait_for()
    focus(a, ".te-step-details input[role=combobox]")
    assert "Reasoning Error / Incorrect Assumption" in a.pick_type_by_keys("Incorrect Assumption")
    # the focus is still in the type's box, where letters are typed, not hotkeys: Tab on to the severity
    # radio "Major" (Label Studio's radios are focusable one by one), Space picks it
    focus_choice(a, "Major")
    kb.press("Space")
    assert "Major" in a.details.locator("label.ant-radio-wrapper-checked").first.inner_text()
    focus(a, ".te-step-details textarea")
    kb.type("guessed the fix")
    kb.press("Shift+Enter")
    kb.press("Escape")  # out of the text box: keys are hotkeys again
    press_choice(a, labelconfig.REVIEWED_TEXT)
    press_choice(a, "failure")
    saved = re.compile(r"/api/tasks/\d+/annotations")
    with a.page.expect_response(lambda r: bool(saved.search(r.url)) and r.request.method == "POST"):
        kb.press("Control+Enter")
    step = export(pid, tmp_path)["keys-paged"]["error_localization"][3]
    assert (step["correctness"], step["error_type"], step["severity"], step["rationale"]) == (
        "incorrect", "incorrect_assumption", "major", "guessed the fix")
