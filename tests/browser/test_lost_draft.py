"""The paged layout's lost-draft problem (facts sheet), reproduced: Label Studio autosaves a draft a few
seconds after an edit, and paging inside that window cancels the save, so a reload loses the edit.
Waiting for the autosave before paging keeps it. The README documents the remainder."""
from __future__ import annotations

import re
import time

import pytest

from ls_trajeval import config as cfg
from ls_trajeval import label_configs

from .test_annotate import trace

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


@pytest.fixture(scope="module")
def paged(projects, ls_env):
    return projects.make(CONFIG, "paged", [trace("lost-1"), trace("kept-1")], "browser lost draft")


def draft_saves(a):
    saves = []
    a.page.on("request", lambda r: saves.append(r.url) if re.search(r"/drafts?(/\d+)?/?(\?|$)", r.url)
              and r.method in ("POST", "PATCH", "PUT") else None)
    return saves


def step_zero_after_reload(a, pid, tid) -> str:
    a.page.reload()
    a.open(pid, tid)
    checked = a.main.locator("label.ant-radio-wrapper-checked").first.inner_text()
    return re.sub(r"\[\w+\]$", "", checked).strip()


def test_paging_within_seconds_of_an_edit_loses_it(guard, paged):
    a = guard
    pid, ids = paged
    a.open(pid, ids["lost-1"])
    saves = draft_saves(a)
    a.set_correctness("incorrect")
    a.page_to(1)  # at once, as an annotator who knows the step is wrong moves on
    time.sleep(8)
    lost = step_zero_after_reload(a, pid, ids["lost-1"])
    assert (lost, saves) == ("correct", []), "Label Studio now keeps the edit: update docs/annotator.md"


def test_waiting_for_the_autosave_before_paging_keeps_it(guard, paged):
    a = guard
    pid, ids = paged
    a.open(pid, ids["kept-1"])
    with a.page.expect_request(lambda r: "draft" in r.url and r.method in ("POST", "PATCH"), timeout=15_000):
        a.set_correctness("incorrect")
    a.page_to(1)
    assert step_zero_after_reload(a, pid, ids["kept-1"]) == "incorrect"
