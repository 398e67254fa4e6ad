"""What an annotator does in Label Studio's labeling UI, as Playwright steps (both layouts).

Selectors are Label Studio 1.23.2's own (class names, test ids, aria labels), found by reading
the rendered page; keep them here so one UI change means one edit.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig, trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.studio import client as studio

#: Set by an XSS payload if any script ever runs.
PWNED = "__pwned"
#: a mark's two boxes under it in the Regions list: the rationale, then the correction (its placeholder says so)
CORRECTION_BOX = "[data-testid='textarea-region-input'][placeholder^='Correction']"
RATIONALE_BOX = "[data-testid='textarea-region-input']:not([placeholder^='Correction'])"
#: the selected mark's rationale box, under it in the Regions panel
SELECTED_RATIONALE = f".lsf-tree-treenode-selected {RATIONALE_BOX}"
#: the workbench's live score, the text the ML backend answers each change with
LIVE_SCORE = ".te-live [data-testid='htx-textbox-content']"


@dataclass
class Watch:
    dialogs: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    console: list = field(default_factory=list)


class Annotator:
    def __init__(self, page, url: str):
        self.page = page
        self.url = url
        self.watch = Watch()
        page.on("dialog", self._on_dialog)
        page.on("pageerror", lambda exc: self.watch.errors.append(str(exc)))
        page.on("console", lambda m: self.watch.console.append(f"{m.type}: {m.text}"))

    def _on_dialog(self, dialog):
        self.watch.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def reset_watch(self):
        self.watch = Watch()

    def login(self, email: str, password: str):
        p = self.page
        p.goto(self.url + "/user/login/")
        p.fill("input[name=email]", email)
        p.fill("input[name=password]", password)
        p.click("button[type=submit]")
        p.wait_for_url(re.compile(r".*/(projects/?|)$"))

    # ------------------------------------------------------------ opening a task
    def open(self, project_id: int, task_id: int | None, ready: str | None = None) -> float:
        """Open a task in the labeling UI; return seconds until ``ready`` (default: first step) is usable.

        ``task_id`` None opens the label stream ("Label All Tasks"): Label Studio's next task in the queue.
        """
        p = self.page
        t0 = time.monotonic()
        query = "labeling=1" if task_id is None else f"task={task_id}"
        p.goto(f"{self.url}/projects/{project_id}/data?{query}")
        p.wait_for_selector(ready or "[data-testid='phrase:0'] button, .te-step", timeout=120_000)
        elapsed = time.monotonic() - t0
        p.wait_for_load_state("networkidle")
        # the data manager's explorer overlay takes pointer events for a moment after load
        p.wait_for_function("() => { const main = document.querySelector('.lsf-main-view');"
                            " return !document.querySelector('.lsf-label-view__lsf-wrapper_mode_explorer')"
                            " || (!!main && getComputedStyle(main).pointerEvents !== 'none'); }")
        # the editor done loading, its annotation selected: what the keys and clicks that follow act on
        p.wait_for_function("() => window.Htx && Htx.initialized && !Htx.isLoading && !!Htx.annotationStore.selected")
        if task_id is None:  # the stream opens with the project's instructions over the task
            modal = p.locator(".lsf-modal-ls_visible")
            if modal.count():
                modal.get_by_role("button", name="Close modal").click()
                modal.wait_for(state="detached")
        return elapsed

    @property
    def main(self):
        return self.page.locator(".lsf-main-view")

    def pwned(self) -> bool:
        return bool(self.page.evaluate(f"() => Boolean(window.{PWNED})"))

    def hotkey_hints(self) -> list[str]:
        """Every hotkey the UI shows next to a label or choice."""
        return self.page.locator(".lsf-main-view sup.lsf-hint, .lsf-main-view .lsf-label__hotkey").all_inner_texts()

    # ------------------------------------------------------------ transcript layout (the workbench)
    def phrase(self, step: int):
        return self.page.locator(f"[data-testid='phrase:{step}']")

    def mark_button(self, step: int):
        return self.phrase(step).locator("button[aria-label^='Label whole utterance']")

    def arm_label(self, step: int, label: str = "incorrect"):
        """The marking label selected (clicked unless it still is: preselected, or the selected mark's), so that
        the step's "label whole utterance" button is enabled; the workbench's side pane or a plain config's."""
        if self.mark_button(step).get_attribute("aria-label").endswith("(disabled)"):
            where = ".te-side-pane .lsf-label" if self.workbench else ".lsf-label"
            self.main.locator(where, has_text=label).first.click()

    def mark_step(self, step: int, label: str = "incorrect", select: bool = True):
        """Transcript: the error label, then the step's "label whole utterance" button; then select the new mark
        to see its controls."""
        self.arm_label(step, label)
        self.mark_button(step).click()
        self.phrase(step).locator(".htx-highlight").first.wait_for()
        if select:
            self.select_region(step)

    def select_region(self, step: int):
        """A new mark is not selected by itself: click its highlight to show its controls."""
        self.phrase(step).locator(".htx-highlight").first.click()
        self.page.locator(".te-step-details").wait_for(state="visible")

    def unmark_selected(self):
        """Delete the selected region (Backspace is Label Studio's delete-region hotkey)."""
        self.page.keyboard.press("Backspace")

    def selected_rationale(self):
        """The selected mark's rationale box, under it in the Regions panel."""
        return self.page.locator(SELECTED_RATIONALE)

    def selected_correction(self):
        """The selected mark's correction box, under its rationale in the Regions panel."""
        return self.page.locator(f".lsf-tree-treenode-selected {CORRECTION_BOX}")

    def live_score(self) -> str:
        return self.page.locator(LIVE_SCORE).inner_text()

    def live_score_shows(self, text: str):
        """Wait until the live score's text contains ``text`` (the backend's answer to a change)."""
        self.page.wait_for_function("([sel, t]) => { const e = document.querySelector(sel);"
                                    " return !!e && e.innerText.includes(t); }", arg=[LIVE_SCORE, text])

    # ------------------------------------------------------------ suggestions and marks (the workbench)
    def selected_step(self) -> int | None:
        """The step of the selected mark (its region's start), or None."""
        return self.page.evaluate("() => { const n = Htx.annotationStore.selected.highlightedNode;"
                                  " return n ? Number(n.start) : null; }")

    def next_mark(self):
        """Alt+. : Label Studio's "select the next region"; waits until the selection moved."""
        before = self.selected_step()
        self.page.keyboard.press("Alt+.")
        self.page.wait_for_function("b => { const n = Htx.annotationStore.selected.highlightedNode;"
                                    " return n && Number(n.start) !== b; }", arg=-1 if before is None else before)

    def label_key(self, label: str) -> str:
        """The key Label Studio shows on a marking label (e.g. "incorrect 1" -> "1")."""
        text = self.main.locator(".te-side-pane .lsf-label", has_text=label).first.inner_text()
        return re.fullmatch(rf"{re.escape(label)}\s*\[?(\w)\]?", " ".join(text.split())).group(1)

    def undecided(self) -> int:
        """The undecided suggestions the workbench counts: the highlights its own CSS counter counts (the selector
        is read from the rule that increments the counter, so the test counts what the page counts)."""
        return self.page.evaluate("""() => {
            for (const sheet of document.styleSheets) {
                let rules; try { rules = sheet.cssRules; } catch (e) { continue; }
                for (const r of rules) if (r.style && (r.style.counterIncrement || '').startsWith('te-undecided'))
                    return document.querySelectorAll(r.selectorText).length;
            }
            return -1; }""")

    def warning(self) -> str:
        """The text of Label Studio's warning dialog (e.g. Submit refused by a required choice)."""
        box = self.page.locator(".ant-modal-content:visible, .lsf-modal:visible").first
        box.wait_for()
        return box.inner_text()

    def close_warning(self):
        box = self.page.locator(".ant-modal-content:visible, .lsf-modal:visible").first
        box.get_by_role("button", name="OK").click()
        box.wait_for(state="hidden")

    def editor_settings(self, toggles: dict[str, bool]):
        """Label Studio's own editor settings (the Settings button under the trace), by title: what an annotator
        sets once per browser (Label Studio keeps them in the browser's storage, no config reaches them)."""
        self.page.locator("button[aria-label='Settings']").click()
        dialog = self.page.locator(".lsf-modal:visible, .ant-modal:visible").first
        for title, on in toggles.items():
            box = dialog.locator("label.lsf-settings__field", has_text=title).locator("input[type=checkbox]")
            if box.is_checked() != on:
                box.click()
        close = dialog.locator(".ant-modal-close")
        if close.count():  # Escape closes it only while the focus is inside (not when nothing was clicked)
            close.click()
        else:
            self.page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")

    # ------------------------------------------------------------ paged layout
    def current_step(self) -> int:
        text = self.page.locator(".te-step-number").first.inner_text()
        return int(re.search(r"step (\d+) of", text).group(1)) - 1

    def page_to(self, step: int, keyboard: bool = False):
        """Paged: walk to ``step`` with the pager's arrows (or Alt+Left/Right)."""
        for _ in range(500):
            now = self.current_step()
            if now == step:
                return
            forward = step > now
            if keyboard:
                self.page.keyboard.press("Alt+ArrowRight" if forward else "Alt+ArrowLeft")
            else:
                side = "right" if forward else "left"
                self.page.locator(f".lsf-pagination__btn_arrow-{side}:not(.lsf-pagination__btn_arrow-{side}-double)").click()
            self.page.locator(".te-step-number", has_text=f"step {now + (2 if forward else 0)} of").wait_for()
        raise AssertionError(f"could not page to step {step}")

    def jump_to(self, step: int, start: int = 0):
        """Paged: straight to ``step`` through the pager's page box (a click on "N of M" opens it to type in). In a
        window task (its first step ``start`` of the whole trace) ``step`` is the page, and the step's heading
        numbers it as in the whole trace."""
        if self.current_step() == start + step:
            return
        self.page.locator(".lsf-pagination__page-indicator").click()
        box = self.page.locator(".lsf-pagination__input input")
        box.fill(str(step + 1))
        box.press("Enter")
        self.page.locator(".te-step-number", has_text=f"step {start + step + 1} of").wait_for()

    def correctness(self, label: str):
        """Paged: the current step's correctness radio named ``label``."""
        return self.main.locator("label.ant-radio-wrapper").filter(
            has_text=re.compile(rf"^{re.escape(label)}(\[\w+\])?$")).first

    def set_correctness(self, label: str):
        self.correctness(label).click()

    # ------------------------------------------------------------ per-step details (both layouts)
    @property
    def details(self):
        return self.page.locator(".te-step-details:visible, .te-paged-details:visible").first

    @property
    def workbench(self) -> bool:
        return self.page.locator(".te-workbench").count() > 0

    def type_option(self, leaf: str):
        """What a click picks ``leaf`` with: the workbench's radio of that name; in the paged layout the leaf in
        the Taxonomy's tree, which this opens and filters to it first."""
        d = self.details
        if self.workbench:
            return d.locator(".te-types label").filter(has_text=re.compile(rf"^{re.escape(leaf)}(\[\w+\])?$"))
        d.locator(".ant-select-selector").click()
        search = self.page.locator("input[placeholder='Search']:visible").first
        search.click()  # the tree's own search box; typing before it has the focus goes nowhere
        search.fill(leaf[:12])
        return self.page.locator(".ant-select-tree-node-content-wrapper:visible").filter(
            has_text=re.compile(rf"^{re.escape(leaf)}$")).first

    def choose_type(self, leaf: str):
        self.type_option(leaf).click()
        if not self.workbench:
            self.page.keyboard.press("Escape")  # the tree stays open after a pick

    def pick_type_by_keys(self, leaf: str, press=None, type_text=None) -> str:
        """Keyboard, a Taxonomy whose box has the focus: Enter opens the tree (its search box takes the focus a
        moment later), the name is typed, ↓ Enter through the filtered tree to the leaf, Escape closes it. Enter
        on a category picks the category: Enter again takes it back. ``press``/``type_text`` default to the
        keyboard (a walk passes its counting ones). Returns what the box shows."""
        press = press or self.page.keyboard.press
        type_text = type_text or self.page.keyboard.type
        press("Enter")
        self.page.locator("input[placeholder='Search']:focus").wait_for()
        type_text(leaf)
        # the tree filters a moment after the typing: its visible leaves are then the matching ones
        self.page.wait_for_function(
            """text => {
                const shown = [...document.querySelectorAll('.ant-select-tree-treenode')].filter(e => e.offsetParent);
                const leaves = shown.filter(e => e.querySelector('.ant-select-tree-switcher-noop'));
                return leaves.length > 0 && leaves.every(e => e.innerText.toLowerCase().includes(text.toLowerCase()));
            }""", arg=leaf)
        chosen = self.page.locator(".te-step-details:visible .ant-select-selection-item")
        for _ in range(4):
            press("ArrowDown")
            press("Enter")
            if leaf in " ".join(chosen.all_inner_texts()):
                break
            if chosen.count():
                press("Enter")
        press("Escape")
        return chosen.first.inner_text()

    def severity(self, label: str):
        """The severity control named ``label``: a label on the selected mark (workbench), else a radio."""
        if self.workbench:
            return self.details.locator(".lsf-label", has_text=label).first
        return self.details.locator("label.ant-radio-wrapper", has_text=label).first

    def choose_severity(self, label: str):
        self.severity(label).click()

    def write_rationale(self, text: str):
        if self.workbench:
            self.page.keyboard.press("Enter")  # Label Studio's "focus the selected region's first box"
            box = self.selected_rationale()
            box.wait_for()
            box.fill(text)
            box.press("Enter")  # adds it; Shift+Enter would break the line
            self.page.locator(".lsf-tree-treenode-selected").get_by_text(text.splitlines()[0].strip()[:30]).first.wait_for()
            return
        area = self.details.locator("textarea").first
        area.fill(text)
        area.press("Shift+Enter")  # a TextArea keeps text only once it is added
        self.details.get_by_text(text.splitlines()[0].strip()[:30]).first.wait_for()

    def choose(self, label: str):
        """A whole-trace or checkbox choice by its shown label."""
        self.main.locator(".te-whole-trace label, label.ant-checkbox-wrapper", has_text=label).first.click()

    # ------------------------------------------------------------ saving
    def submit(self, button: str = "Submit") -> dict:
        with self.page.expect_response(lambda r: re.search(r"/api/(tasks/\d+/annotations|annotations/\d+)", r.url)
                                       and r.request.method in ("POST", "PATCH"), timeout=120_000) as resp:
            self.submit_button(button).click()
        return resp.value.json()

    def submit_button(self, button: str = "Submit"):
        return self.page.locator("button", has_text=re.compile(rf"^{button}$"))

    def screenshot(self, path, full_page: bool = True):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=full_page)


@contextmanager
def logged_in(browser, server) -> Iterator[Annotator]:
    """A logged-in page of ``server``'s admin in a browser context of its own (its own storage, so Label Studio's
    editor settings too), closed afterwards."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    try:
        a = Annotator(context.new_page(), server.url)
        a.login(server.credentials.email, server.credentials.password)
        yield a
    finally:
        context.close()


class Projects:
    """Projects and tasks for the browser tests, made through the product's own API."""

    def __init__(self, client):
        self.client = client

    def make(self, config: cfg.Config, layout: str, traces: list[dict], title: str) -> tuple[int, dict[str, int]]:
        project = studio.create_project(self.client, config, layout, title)
        items = [trace.parse_trace(t, id_key=config.id_key, text_key=config.text_key, trace_key=config.trace_key)
                 for t in traces]
        summary = import_traces(self.client, project["id"], items, config, progress=False)
        assert summary.imported == len(traces), summary.errors
        tasks = {t["data"][config.id_key]: t["id"] for t in studio.iter_tasks(self.client, project["id"])}
        return project["id"], tasks

    def annotations(self, task_id: int) -> list[dict]:
        return studio.task_annotations(self.client, task_id)

    def drafts(self, task_id: int) -> list[dict]:
        r = self.client._client_wrapper.httpx_client.request(f"api/tasks/{task_id}/drafts", method="GET")
        return r.json()


def layout_config(config: cfg.Config, layout: str) -> str:
    return labelconfig.generate(config, layout)


def dumps(x) -> str:
    return json.dumps(x, ensure_ascii=False, sort_keys=True)
