"""The review project `adjudicate` makes, as the adjudicator sees it in Label Studio: the address it prints opens
the task list on the "Most disputed" tab, its number columns typed as numbers; a task opened from there has one tab
per annotator (named after them, with the share of the score they keep as its percentage) and "Compare All"; the
disagreement summary shows as Data Manager columns."""
from __future__ import annotations

import uuid

import pytest
from studio.uishapes import ui_marks

from ls_trajeval.analysis.disagreement import Thresholds
from ls_trajeval.core import trace
from ls_trajeval.core.fields import META_TRACE_ID
from ls_trajeval.flows.adjudicate import adjudicate
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.flows.projects import load_config
from ls_trajeval.studio import client as studio
from ls_trajeval.studio.urls import task_list_url

pytestmark = pytest.mark.browser

EMAILS = ["rev-a@view.test", "rev-b@view.test", "rev-c@view.test"]
MARKS = [{1: ("action", "wrong_tool", "major", "wrong tool")}, {1: ("action", "wrong_tool", "major", "same")}, {}]


@pytest.fixture(scope="module")
def review(ls_client):
    config = load_config("trajectory_eval")
    run = uuid.uuid4().hex[:8]  # a kept test data dir ($LS_TRAJEVAL_TEST_DATA_DIR) has the projects of earlier runs
    source = studio.create_project(ls_client, config, "transcript", f"review view source {run}")
    t = {"trace_id": "rv-1", "task": "Find the file", "trace": [
        {"type": "thought", "content": "Search for it."}, {"type": "action", "content": "grep", "action_input": "x"},
        {"type": "observation", "content": "nothing"}]}
    assert import_traces(ls_client, source["id"], [trace.parse_trace(t)], config, progress=False).imported == 1
    (task,) = studio.iter_tasks(ls_client, source["id"])
    for email, marks in zip(EMAILS, MARKS):
        user = studio.ensure_user(ls_client, email)
        ls_client.annotations.create(id=task["id"], result=ui_marks("transcript", task["data"]["te_transcript"], marks),
                                     completed_by=user["id"])
    summary = adjudicate(ls_client, source["id"], create_title=f"review view {run}", thresholds=Thresholds())
    assert summary.tasks_added == 1
    (rtask,) = studio.iter_tasks(ls_client, summary.review_project_id)
    assert rtask["meta"][META_TRACE_ID] == "rv-1"
    return summary.review_project_id, rtask["id"], summary.tab_id


def test_one_tab_per_annotator_and_the_summary_columns(review, guard):
    pid, task_id, _ = review
    guard.open(pid, task_id)
    page = guard.page
    names = page.locator(".lsf-annotation-button__name").all_inner_texts()
    assert set(EMAILS) <= set(names)  # the three predictions' tabs, named after the annotators
    assert page.get_by_text("Compare All").first.is_visible()
    # the Data Manager's table beside the task shows the dispute summary: steps as the UI numbers them
    cells = page.locator(".lsf-table__cell").all_inner_texts()
    assert "#2" in cells and any(c.startswith("rev-a@view.test: #2; rev-b@view.test: #2; rev-c@view.test: none")
                                 for c in cells)
    assert guard.watch.errors == []


def test_the_printed_address_lists_the_tasks_and_a_task_there_shows_every_annotator(review, guard, label_studio):
    pid, task_id, tab = review
    page = guard.page
    page.goto(task_list_url(label_studio.url, pid, tab))  # what `adjudicate` prints
    page.wait_for_selector(".lsf-th")
    assert page.locator(".lsf-tabs-dm__item_active").inner_text() == "Most disputed"
    # Label Studio types data columns as text ("str"); the numbers read "num", so they sort and filter as numbers
    heads = dict(h.split("\n") for h in page.locator(".lsf-th").all_inner_texts() if "\n" in h)
    assert heads["disputedness"] == heads["n_annotators"] == heads["running_score"] == heads["n_steps"] == "num"
    assert heads["first_error_step"] == "num" and heads["steps_in_dispute"] == heads["first_errors"] == "str"
    assert "te_pages" not in heads and "Inner ID" not in page.locator(".lsf-th").all_inner_texts()  # hidden as usual
    page.locator(".lsf-table__cell").filter(has_text="rv-1").first.click()
    page.wait_for_selector(".lsf-annotation-button")
    tabs = page.locator(".lsf-annotation-button").all_inner_texts()
    # rev-a and rev-b marked #2 major (-5 of 100): 95 of 100 kept; rev-c marked nothing
    kept = {"rev-a@view.test": "95.00%", "rev-b@view.test": "95.00%", "rev-c@view.test": "100.00%"}
    for email, share in kept.items():
        (label,) = [t for t in tabs if t.startswith(email)]
        assert label.endswith(share), tabs
    assert page.get_by_text("Compare All").first.is_visible()
    # Compare All heads each column with Label Studio's own id ("ID 3"); the annotator is the icon's tooltip
    page.get_by_text("Compare All").first.click()
    try:
        page.wait_for_selector(".lsf-entity-tab__userpic_prediction")
        icons = page.locator(".lsf-entity-tab__userpic_prediction")
        seen = set()
        for i in range(icons.count()):
            icons.nth(i).hover()
            tip = page.locator("[class*=tooltip]").filter(has_text="@view.test")
            tip.first.wait_for()
            seen |= {t for t in tip.all_inner_texts() if t in kept}
    finally:
        # Label Studio keeps Compare All on for every task this browser opens next (localStorage
        # "annotation-store-viewing-all"), where no annotation is selected: the other tests' pages need it off
        page.evaluate("() => window.localStorage.setItem('annotation-store-viewing-all', 'false')")
    assert seen == set(kept)
    assert guard.watch.errors == []
