"""Several annotators on one project, as docs/annotating.md tells it (Label Studio 1.23 Community, in Chromium):
people join through the organisation's invite link; "annotations per task" (the project's ``maximum_annotations``,
set through the API: Community has no field for it) decides whether the label stream serves a task someone has
labelled; and an annotator who opens such a task from the task list lands on that annotation (Update) and starts
their own with "Create an annotation" (Submit)."""
from __future__ import annotations

import re
import uuid

import pytest
from studio.uishapes import ui_marks

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.studio import client as studio

from .test_annotate import trace
from .ui import Annotator

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
PASSWORD = "several-annotators-1"
WRONG_TOOL = ("action", "wrong_tool", "major", "the admin's reading")
#: the editor done loading: a task (with an annotation selected) or none left
READY = ("() => window.Htx && Htx.initialized && !Htx.isLoading && (Htx.noTask || (Htx.task && "
         "!!Htx.annotationStore.selected))")


@pytest.fixture(scope="module")
def project(projects, ls_client, ls_env):
    """Two traces; the admin (the API's user) has labelled the first."""
    run = uuid.uuid4().hex[:8]  # a kept test data dir has the projects and users of earlier runs
    pid, ids = projects.make(CONFIG, "transcript", [trace(f"team-1-{run}"), trace(f"team-2-{run}")],
                             f"several annotators {run}")
    first, second = ids[f"team-1-{run}"], ids[f"team-2-{run}"]
    transcript = studio.get_task(ls_client, first)["data"]["te_transcript"]
    studio.create_annotation(ls_client, first, ui_marks("transcript", transcript, {1: WRONG_TOOL}))
    return {"id": pid, "first": first, "second": second, "run": run}


@pytest.fixture(scope="module")
def team(browser, annotator, label_studio, ls_client, project):
    """Two people who joined through the invite link the Organization page shows (Add Members)."""
    page = annotator.page
    page.goto(label_studio.url + "/organization/")
    page.get_by_text("Add Members").first.click()
    link = page.locator("input[value*='/user/signup/?token=']").first.input_value()
    page.keyboard.press("Escape")
    people = {}
    for who in ("stream", "list"):
        email = f"{who}-{project['run']}@team.test"
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(30_000)
        a = Annotator(context.new_page(), label_studio.url)
        a.page.goto(link)
        a.page.fill("input[name=email]", email)
        a.page.fill("input[name=password]", PASSWORD)
        a.page.click("button[type=submit]")
        a.page.wait_for_url(re.compile(r".*/(projects/?)?$"))
        people[who] = (email, a)
    yield people
    for _, a in people.values():
        a.page.context.close()


def test_an_invite_link_makes_members(team, ls_client):
    emails = {u["email"] for u in studio.users_by_id(ls_client).values()}
    assert {email for email, _ in team.values()} <= emails


def stream(a: Annotator, pid: int) -> tuple[int | None, int, str]:
    """The task the label stream serves this annotator, how many results its open annotation has, and its
    button."""
    a.page.goto(f"{a.url}/projects/{pid}/data?labeling=1")
    a.page.wait_for_function(READY, timeout=60_000)
    if a.page.evaluate("() => Htx.noTask"):
        return None, 0, ""
    task, results = a.page.evaluate("() => [Htx.task.id, Htx.annotationStore.selected.results.length]")
    return task, results, save_button(a)


def save_button(a: Annotator) -> str:
    (text,) = [t for t in a.page.locator("button").all_inner_texts() if t in ("Submit", "Update")]
    return text


def test_annotations_per_task_decides_whether_the_stream_serves_a_labelled_task(team, project, ls_client):
    _, a = team["stream"]
    assert studio.get_project(ls_client, project["id"])["maximum_annotations"] == 1  # Label Studio's default
    assert stream(a, project["id"]) == (project["second"], 0, "Submit")  # the labelled task is done
    studio.update_project(ls_client, project["id"], maximum_annotations=2)
    assert stream(a, project["id"]) == (project["first"], 0, "Submit")  # a fresh annotation of its own


def test_from_the_task_list_one_lands_on_the_others_annotation_and_starts_ones_own(team, project, ls_client):
    email, a = team["list"]
    (theirs,) = studio.task_annotations(ls_client, project["first"])
    a.page.goto(f"{a.url}/projects/{project['id']}/data")
    a.page.locator(".lsf-table__cell").filter(has_text=re.compile(rf"^{project['first']}$")).first.click()
    # the editor shows a new annotation while it loads, then the task's: the admin's
    a.page.wait_for_function("pk => window.Htx && !Htx.isLoading && Htx.annotationStore.selected"
                             " && Htx.annotationStore.selected.pk === pk", arg=str(theirs["id"]), timeout=60_000)
    assert save_button(a) == "Update"  # submitting here would change the admin's annotation
    a.page.get_by_role("button", name="Create an annotation").click()
    a.page.wait_for_function("() => !Htx.annotationStore.selected.pk && Htx.annotationStore.selected.results"
                             ".length === 0")
    assert save_button(a) == "Submit"
    a.choose("I reviewed every step")  # this annotator finds no error: the required choices, and Submit
    a.choose("success")
    mine = a.submit()
    assert mine["task"] == project["first"] and mine["id"] != theirs["id"]
    users = {u["id"]: u["email"] for u in studio.users_by_id(ls_client).values()}
    owners = sorted(users[x["completed_by"]] for x in studio.task_annotations(ls_client, project["first"]))
    assert owners == sorted([users[theirs["completed_by"]], email])
