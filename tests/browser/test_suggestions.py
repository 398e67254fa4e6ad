"""Suggestions are a choice, in the workbench: a project whose annotators start from a judge's suggestions; in the
label stream they accept one with the error label's key, change the type of another, reject a third with Backspace,
add a mark of their own and submit (Label Studio refusing Submit while any suggestion is undecided). What the browser
saved is the shape tests/studio/uishapes.py writes out for the API tests, and the export says exactly who made which
label. And the other choice: a blank trace with the suggestions shown beside each step."""
from __future__ import annotations

import json
import re

import pytest
from studio.uishapes import (
    ACCEPT,
    EDIT,
    EXPECTED_REJECTED,
    EXPECTED_SCORE,
    EXPECTED_STEPS,
    NASTY,
    OWN,
    REJECT,
    SUGGESTIONS_BY,
    project_with_suggestions,
    provenance_of,
    ui_decided,
)

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.fields import SUGGESTED
from ls_trajeval.flows.suggestions import show_suggestions
from ls_trajeval.studio import client as studio

from .test_annotate import SHOTS, export

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


def by_region(result: list[dict]) -> list[str]:
    """A result in a comparable form, the ids Label Studio makes up for the whole-trace choices left out."""
    return sorted(json.dumps({k: v for k, v in r.items() if k != "id" or "start" in r["value"]}, sort_keys=True,
                             ensure_ascii=False) for r in result)


def test_suggestions_are_decided_with_keys_and_the_export_says_who_made_what(guard, ls_client, ls_env, tmp_path):
    a = guard
    pid, task = project_with_suggestions(ls_client, CONFIG, "suggestions decided")
    (prediction,) = task["predictions"]
    a.open(pid, None)  # the label stream: a new annotation starts from the suggestions
    assert a.undecided() == 3
    a.screenshot(SHOTS / "suggestions-to-decide.png", full_page=False)
    # Submit refuses with Label Studio's own warning while any suggestion is undecided, and selects the first
    a.page.locator("button", has_text=re.compile(r"^Submit$")).click()
    assert "A suggestion is still undecided" in a.warning()
    a.close_warning()
    assert a.selected_step() == ACCEPT and a.page.locator(".te-suggestion").is_visible()
    key = a.label_key("incorrect")
    a.page.keyboard.press(key)  # accepted: relabelled with the error label's key
    a.page.wait_for_function("() => !document.querySelector('.te-suggestion') || "
                             "!document.querySelector('.te-suggestion').offsetParent")
    assert a.undecided() == 2
    a.next_mark()
    assert a.selected_step() == EDIT
    a.choose_type("Wrong Arguments")  # its type changed, then accepted
    a.page.keyboard.press(key)
    a.next_mark()
    assert a.selected_step() == REJECT
    a.unmark_selected()  # rejected: Backspace deletes it
    a.page.wait_for_function("() => Htx.annotationStore.selected.regionStore.regions.length === 2")
    assert a.undecided() == 0
    a.page.keyboard.press(key)  # Backspace left no label armed: the key arms it
    a.mark_step(OWN)
    a.choose_severity("Critical")
    a.choose_type("Premature Termination")
    a.choose("I reviewed every step")
    a.choose("failure")
    saved = a.submit()
    assert saved["parent_prediction"] == prediction["id"]
    # what the browser saved is what tests/studio/uishapes.py writes out for the API tests
    own = next(r["id"] for r in saved["result"] if r["value"].get("start") == str(OWN))
    assert by_region(saved["result"]) == by_region(ui_decided(prediction["result"], task["data"]["te_transcript"], own))
    record = export(pid, tmp_path)["rt-1"]
    assert provenance_of(record) == (EXPECTED_STEPS, EXPECTED_REJECTED)
    assert record["final_score"] == EXPECTED_SCORE and record["error_localization"][3]["rationale"].endswith(NASTY)
    assert a.watch.errors == [] and not a.pwned()


def test_beside_a_blank_trace_the_suggestions_are_lines_under_their_steps(guard, ls_client, ls_env):
    a = guard
    pid, task = project_with_suggestions(ls_client, CONFIG, "suggestions beside")
    summary = show_suggestions(ls_client, pid, prelabel=False)
    assert (summary.written, summary.config_changed) == (1, True)
    project = studio.get_project(ls_client, pid)
    assert project["show_collab_predictions"] is False
    a.open(pid, None)  # the label stream sends no predictions now: a blank trace
    assert a.page.locator(".htx-highlight").count() == 0
    def under(step: int) -> str:
        return a.page.evaluate("i => getComputedStyle(document.querySelector(`[data-testid=\"phrase:${i}\"] "
                               "[class*=dialoguename]`), '::after').content", step)
    assert under(ACCEPT) == ('"\u2691 suggested by judge-a, 0.60: Wrong Tool \u00b7 Minor (\u22121) \u2014 '
                             'searched the wrong thing"')
    assert under(EDIT).startswith(f'"\u2691 suggested by {SUGGESTIONS_BY}, 0.90: Incorrect Assumption')
    assert NASTY.replace('"', '\\"') in under(EDIT) and not a.pwned()  # the judge's words, as text
    assert under(0) == "none"
    listed = a.page.locator(".te-beside").inner_text()
    assert "#2" in listed and "#4" in listed and "#6" in listed
    a.screenshot(SHOTS / "suggestions-beside.png", full_page=False)
    # and back: annotators start from the suggestions again
    again = show_suggestions(ls_client, pid, prelabel=True)
    assert again.model_version == SUGGESTIONS_BY and again.config_changed
    project = studio.get_project(ls_client, pid)
    assert project["show_collab_predictions"] is True and project["model_version"] == SUGGESTIONS_BY
    assert SUGGESTED in studio.get_task(ls_client, task["id"])["data"]
