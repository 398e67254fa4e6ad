"""Deeper marks in the workbench, on a 200-step trace with hostile and multi-byte text: words selected inside step
#151 mark the error on that span, the mark is linked to an earlier mark (Alt+R, a click on the cause) and given a
correction; the export holds exactly that span (offsets and text, counted by hand in the step's own content), the
link, the roles, ``root_cause_step`` and the correction. The actions are counted as the workbench's test counts
them: a span mark against a whole-step mark, and the link. Also: the marks the round trips (tests/studio,
tests/pg) post made by hand, the browser's offsets and texts compared with uishapes'; and the paged layout's
caused-by and correction boxes."""
from __future__ import annotations

import json

import pytest
from commandline import invoke
from studio.uishapes import DEEP_TRACE, NASTY

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.studio import client as studio

from .test_annotate import SHOTS, export
from .test_workbench import Counted, see_step, step_values
from .ui import logged_in

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
N_STEPS, SPAN_STEP, CAUSE_STEP = 200, 150, 120  # "#151" is index 150, its cause "#121"
#: the words the annotator selects in #151: after an emoji and the hostile text (so UTF-16 units and code points
#: differ there), holding a non-BMP emoji and combining accents themselves
WORDS = "skips the 🧪 re\u0301sume\u0301 check"
CORRECTION = "run the tests before <b>trusting</b> the résumé 🧪 check"
SETTINGS = {"Select region after creating it": True, "Keep label selected after creating a region": True}


def content(i: int) -> str:
    if i == SPAN_STEP:
        return f"thought {i}: 😀 the agent trusts {NASTY} and {WORDS} 東京 then moves on"
    return f"step {i} 🚀 reads pricing.py {NASTY if i % 7 == 0 else ''} e\u0301 東京".strip()


def long_trace(tid: str) -> dict:
    steps = [{"type": ("thought", "action", "observation")[i % 3], "content": content(i)} for i in range(N_STEPS)]
    for i in range(1, N_STEPS, 3):
        steps[i]["action_input"] = {"cmd": f"pytest -q tests/test_{i}.py {NASTY}"}
    return {"trace_id": tid, "task": f"Fix the discount bug {NASTY}", "trace": steps}


@pytest.fixture(scope="module")
def marker(browser, label_studio):
    """A browser context of its own with the two editor settings on (docs/annotating.md advises them), so the
    session's annotator keeps Label Studio's defaults for the other tests."""
    with logged_in(browser, label_studio) as a:
        a.page.goto(label_studio.url + "/projects/")
        yield a


@pytest.fixture()
def hands(marker):
    marker.reset_watch()
    return marker


@pytest.fixture(scope="module")
def deep_project(projects, ls_env):
    return projects.make(CONFIG, "transcript", [long_trace("deep-marks")], "deeper marks")


def drag_between(a, start: tuple[int, str], end: tuple[int, str]):
    """Drag from the first character of ``start``'s words to the last of ``end``'s, each in its step."""
    points = a.page.evaluate("""([[s1, w1], [s2, w2]]) => {
        const rect = (step, needle, last) => {
            const root = document.querySelector(`[data-testid='phrase:${step}']`);
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                const i = n.data.indexOf(needle);
                if (i < 0) continue;
                const r = document.createRange();
                r.setStart(n, i); r.setEnd(n, i + needle.length);
                const rects = r.getClientRects(), f = rects[0], l = rects[rects.length - 1];
                return last ? {x: l.right - 1, y: l.top + l.height / 2} : {x: f.left + 1, y: f.top + f.height / 2};
            }
            return null;
        };
        return [rect(s1, w1, false), rect(s2, w2, true)]; }""", [list(start), list(end)])
    assert all(points), (start, end)
    m = a.page.mouse
    m.move(points[0]["x"], points[0]["y"])
    m.down()
    m.move(points[1]["x"], points[1]["y"], steps=8)
    m.up()


def select_words(a, step: int, words: str, hand: Counted | None = None):
    """Drag over ``words`` inside the step's card, as a person selects them (one action when counted)."""
    drag_between(a, (step, words), (step, words))
    if hand is not None:
        hand.log.append("drag over the words")
        hand.clicks += 1


def selected_region(a) -> list | None:
    return a.page.evaluate("() => { const n = Htx.annotationStore.selected.highlightedNode;"
                           " return n ? [Number(n.start), n.startOffset, n.endOffset] : null; }")


def test_span_link_correction_on_step_151(hands, deep_project, tmp_path):
    a = hands
    pid, tasks = deep_project
    a.open(pid, tasks["deep-marks"])
    a.editor_settings(SETTINGS)  # once per browser, as docs/annotating.md advises

    # the cause: a whole-step mark, counted as the baseline
    see_step(a, CAUSE_STEP)
    whole = Counted(a.page)
    whole.click(a.mark_button(CAUSE_STEP), "the step's button")  # the error label is preselected
    whole.click(a.details.locator(".lsf-label", has_text="Critical"), "the severity")
    whole.click(a.details.locator(".te-types label", has_text="Incorrect Assumption"), "the type's name")
    assert step_values(a, CAUSE_STEP) == {"mark": ["incorrect"], "severity": ["critical"],
                                          "type": ["incorrect_assumption"]}

    # #151: the words, not the whole step
    see_step(a, SPAN_STEP)
    span = Counted(a.page)
    select_words(a, SPAN_STEP, WORDS, span)
    wait_selected(a, SPAN_STEP)
    span.click(a.details.locator(".lsf-label", has_text="Major"), "the severity")
    span.click(a.details.locator(".te-types label", has_text="Wrong Arguments"), "the type's name")
    assert step_values(a, SPAN_STEP) == {"mark": ["incorrect"], "severity": ["major"], "type": ["wrong_arguments"]}
    assert span.actions <= whole.actions + 1, (span.log, whole.log)
    print(f"whole-step mark: {whole.actions} actions {whole.log}; span mark: {span.actions} actions {span.log}")

    # the link: Alt+R on the selected mark, then a click on the cause's mark
    assert selected_region(a)[0] == SPAN_STEP
    a.phrase(CAUSE_STEP).scroll_into_view_if_needed()  # reading back up to the cause is not an action
    link = Counted(a.page)
    link.press("Alt+r")
    link.click(a.phrase(CAUSE_STEP).locator(".htx-highlight").first, "the cause's mark")
    a.page.wait_for_function("() => Htx.annotationStore.selected.relationStore.relations.length === 1")
    assert link.actions <= 2, link.log

    # the correction, in the box under the mark in the Regions list
    see_step(a, SPAN_STEP)
    a.phrase(SPAN_STEP).locator(".htx-highlight").first.click()
    wait_selected(a, SPAN_STEP)
    a.selected_correction().click()
    a.page.keyboard.type(CORRECTION)
    a.page.keyboard.press("Enter")
    a.page.locator(".lsf-tree-treenode-selected").get_by_text(CORRECTION[:20]).first.wait_for()
    a.screenshot(SHOTS / "workbench-span-link.png", full_page=False)

    a.choose("I reviewed every step")
    a.choose("failure")
    saved = a.submit()
    # what the UI saved (written out literally in tests/studio/uishapes.py)
    shapes = [r for r in saved["result"] if r.get("type") == "relation" or
              (r.get("value") or {}).get("start") == str(SPAN_STEP)]
    print(json.dumps(shapes, ensure_ascii=False))

    record = export(pid, tmp_path)["deep-marks"]
    steps = record["error_localization"]
    text = content(SPAN_STEP)
    start = text.index(WORDS)  # code points, counted in the step's own content
    assert steps[SPAN_STEP]["evidence"] == [{"start": start, "end": start + len(WORDS), "text": WORDS}]
    assert text[start:start + len(WORDS)] == WORDS
    assert steps[SPAN_STEP]["caused_by"] == [CAUSE_STEP]
    assert steps[SPAN_STEP]["role"] == "propagated"
    assert steps[SPAN_STEP]["correction"] == CORRECTION
    assert (steps[SPAN_STEP]["error_type"], steps[SPAN_STEP]["severity"]) == ("wrong_arguments", "major")
    assert steps[CAUSE_STEP]["role"] == "origin" and steps[CAUSE_STEP]["evidence"] == []
    assert steps[CAUSE_STEP]["caused_by"] == [] and steps[CAUSE_STEP]["correction"] is None
    assert record["root_cause_step"] == CAUSE_STEP
    assert [s["step_index"] for s in steps if s["correctness"] != "correct"] == [CAUSE_STEP, SPAN_STEP]
    assert not a.pwned()


def test_paged_caused_by_and_correction(guard, projects, ls_env, tmp_path):
    """The paged layout: a "caused by step #" box and a correction box under each wrong step's details."""
    a = guard
    t = {**DEEP_TRACE, "trace_id": "deep-paged"}
    pid, tasks = projects.make(CONFIG, "paged", [t], "deeper marks paged")
    a.open(pid, tasks["deep-paged"])
    a.page_to(2)
    a.set_correctness("incorrect")
    a.choose_type("Hallucinated Element")
    a.choose_severity("Minor")
    a.page_to(3)
    a.set_correctness("incorrect")
    a.choose_type("Incorrect Assumption")
    a.choose_severity("Major")
    # a one-row TextArea is an input (Enter adds), a taller one a textarea (Shift+Enter adds; Enter breaks the line)
    for box, key, text in ((".te-caused-by input", "Enter", "#3"), (".te-correction textarea", "Shift+Enter",
                                                                   CORRECTION)):
        area = a.details.locator(box)
        area.fill(text)
        area.press(key)  # a TextArea keeps text only once it is added
        a.details.get_by_text(text[:20]).first.wait_for()
    a.screenshot(SHOTS / "paged-caused-by.png", full_page=False)
    a.choose("I reviewed every step")
    a.choose("failure")
    saved = a.submit()
    print(json.dumps([r for r in saved["result"] if r["type"] == "textarea"], ensure_ascii=False))
    steps = export(pid, tmp_path)["deep-paged"]["error_localization"]
    assert [(s["step_index"], s["caused_by"], s["role"], s["correction"]) for s in steps
            if s["correctness"] == "incorrect"] == [(2, [], "origin", None), (3, [2], "propagated", CORRECTION)]


def wait_selected(a, step: int):
    a.page.wait_for_function(f"() => {{ const n = Htx.annotationStore.selected.highlightedNode;"
                             f" return n && Number(n.start) === {step}; }}")


def labelled(a, step: int, severity: str, etype: str):
    """The selected mark's severity (unless the new mark took it on from the one selected before) and type."""
    if step_values(a, step).get("severity") != [severity.split(" ")[0].lower()]:
        a.details.locator(".lsf-label", has_text=severity).click()
    a.details.locator(".te-types label", has_text=etype).click()


def link(a, effect, cause):
    """Select the effect's mark, Alt+R, click the cause's mark."""
    effect.click()
    a.page.keyboard.press("Alt+r")
    before = a.page.evaluate("() => Htx.annotationStore.selected.relationStore.relations.length")
    cause.click()
    a.page.wait_for_function(f"() => Htx.annotationStore.selected.relationStore.relations.length > {before}")


def test_the_round_trips_shapes_are_the_browsers(hands, projects, ls_env, tmp_path):
    """The marks tests/studio/test_deep_marks.py posts through the API, made here by hand: the browser saves the same
    offsets and texts as uishapes writes, and the export says the same."""
    from studio.test_deep_marks import check
    from studio.uishapes import DEEP_CORRECTION, DEEP_WORDS, ui_deep

    a = hands
    t = {**DEEP_TRACE, "trace_id": "deep-ui"}
    pid, tasks = projects.make(CONFIG, "transcript", [t], "deeper marks by hand")
    a.open(pid, tasks["deep-ui"])
    a.editor_settings(SETTINGS)
    a.mark_button(2).click()
    wait_selected(a, 2)
    labelled(a, 2, "Minor", "Hallucinated Element")
    for words in DEEP_WORDS[3]:
        select_words(a, 3, words)
        a.phrase(3).locator(".htx-highlight", has_text=words).first.wait_for()
        wait_selected(a, 3)
        labelled(a, 3, "Major", "Incorrect Assumption")
    drag_between(a, (4, "pricing.py"), (5, DEEP_WORDS[5]))
    wait_selected(a, 4)
    labelled(a, 4, "Critical", "Premature Termination")
    m2, m45 = a.phrase(2).locator(".htx-highlight").first, a.phrase(5).locator(".htx-highlight").first
    m3a, m3b = (a.phrase(3).locator(".htx-highlight", has_text=w).first for w in DEEP_WORDS[3])
    link(a, m3a, m2)
    link(a, m2, m3b)  # a cause after its effect: the export drops it, with a warning
    link(a, m45, m3a)
    m3a.click()
    wait_selected(a, 3)
    a.selected_correction().click()
    a.page.keyboard.type(DEEP_CORRECTION)
    a.page.keyboard.press("Enter")
    a.page.locator(".lsf-tree-treenode-selected").get_by_text(DEEP_CORRECTION[:20]).first.wait_for()
    a.choose("I reviewed every step")
    a.choose("failure")
    saved = a.submit()["result"]
    (task,) = studio.iter_tasks(projects.client, pid)
    written = ui_deep("transcript", task["data"]["te_transcript"])

    def places(result):
        return sorted((r["from_name"], v["start"], v["end"], v["startOffset"], v["endOffset"],
                       v["text"] if r["type"] != "textarea" else None)
                      for r in result if "start" in (v := r.get("value") or {}))
    print(json.dumps([r for r in saved if (r.get("value") or {}).get("end") == "5"], ensure_ascii=False))
    assert places(saved) == places(written)
    assert sorted(r["direction"] for r in saved if r.get("type") == "relation") == ["right"] * 3

    out = tmp_path / "deep-ui.jsonl"
    r = invoke("export", "--project", pid, "-o", out)
    assert r.exit_code == 0, r.output
    (record,) = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    check(record, r.stderr, "transcript")
