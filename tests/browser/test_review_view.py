"""The review project `adjudicate` makes, as the adjudicator sees it in Label Studio: one tab per annotator
(named after them) with "Compare All" beside them, and the disagreement summary as Data Manager columns."""
from __future__ import annotations

import pytest

from ls_trajeval.analysis.disagreement import Thresholds
from ls_trajeval.core import trace
from ls_trajeval.core.fields import META_TRACE_ID
from ls_trajeval.flows.adjudicate import adjudicate
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.flows.projects import load_config
from ls_trajeval.studio import client as studio

from studio.uishapes import ui_marks

pytestmark = pytest.mark.browser

EMAILS = ["rev-a@view.test", "rev-b@view.test", "rev-c@view.test"]
MARKS = [{1: ("action", "wrong_tool", "major", "wrong tool")}, {1: ("action", "wrong_tool", "major", "same")}, {}]


@pytest.fixture(scope="module")
def review(ls_client):
    config = load_config("trajectory_eval")
    source = studio.create_project(ls_client, config, "transcript", "review view source")
    t = {"trace_id": "rv-1", "task": "Find the file", "trace": [
        {"type": "thought", "content": "Search for it."}, {"type": "action", "content": "grep", "action_input": "x"},
        {"type": "observation", "content": "nothing"}]}
    assert import_traces(ls_client, source["id"], [trace.parse_trace(t)], config, progress=False).imported == 1
    (task,) = studio.iter_tasks(ls_client, source["id"])
    for email, marks in zip(EMAILS, MARKS):
        user = studio.create_user(ls_client, email)
        ls_client.annotations.create(id=task["id"], result=ui_marks("transcript", task["data"]["te_transcript"], marks),
                                     completed_by=user["id"])
    summary = adjudicate(ls_client, source["id"], create_title="review view", thresholds=Thresholds())
    assert summary.tasks_added == 1
    (rtask,) = studio.iter_tasks(ls_client, summary.review_project_id)
    assert rtask["meta"][META_TRACE_ID] == "rv-1"
    return summary.review_project_id, rtask["id"]


def test_one_tab_per_annotator_and_the_summary_columns(review, guard):
    pid, task_id = review
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
