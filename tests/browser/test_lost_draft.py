"""The facts sheet's lost draft in a paged layout, reproduced and prevented.

Label Studio autosaves a draft ~5 s after an edit. Mounting a Text or HyperText cancels that pending save
(its first render pauses and restarts the autosave), and a Repeater page change mounts the next step's one:
an edit followed at once by a page change was never saved, and a reload lost it. The paged layout shows a
step's card as a ``List`` item, which does not touch the autosave; the same config with a HyperText card
still loses the edit, which pins the cause."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig
from ls_trajeval.studio import client as studio

from .test_annotate import trace

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
LIST_CARD = '<List name="te_step_{{idx}}" value="$te_pages[{{idx}}]"/>'
HYPERTEXT_CARD = '<HyperText name="te_step_{{idx}}" value="$te_pages[{{idx}}][0].html" inline="true"/>'


@pytest.fixture(scope="module")
def paged(projects, ls_env):
    return projects.make(CONFIG, "paged", [trace("kept-1"), trace("kept-2")], "browser lost draft")


@pytest.fixture(scope="module")
def hypertext(projects, ls_client, ls_env):
    """The paged layout with its card as a HyperText: the only difference."""
    xml = labelconfig.generate(CONFIG, "paged")
    assert xml.count(LIST_CARD) == 1
    pid, ids = projects.make(CONFIG, "paged", [trace("lost-1")], "browser lost draft hypertext")
    studio.set_label_config(ls_client, pid, xml.replace(LIST_CARD, HYPERTEXT_CARD))
    return pid, ids


#: Label Studio's autosave comes about 5 s after an edit; this is more than enough for it
AUTOSAVE_MS = 8_000


def is_draft_save(request) -> bool:
    return bool(re.search(r"/drafts?(/\d+)?/?(\?|$)", request.url)) and request.method in ("POST", "PATCH", "PUT")


def autosaved(a) -> bool:
    """Wait for the autosave's draft request and its answer; False when none comes within the autosave delay."""
    try:
        with a.page.expect_request(is_draft_save, timeout=AUTOSAVE_MS) as saving:
            pass
        saving.value.response()
        return True
    except PlaywrightTimeout:
        return False


def edit_and_page_at_once(a, pid, tid, *, saved: bool) -> list[str]:
    """Mark step 1 incorrect and page on at once, as an annotator who knows the step is wrong does; then wait
    for the autosave when one should come (``saved``), or the whole autosave delay for the proof that none came;
    the drafts saved meanwhile."""
    a.open(pid, tid)
    saves = []
    a.page.on("request", lambda r: saves.append(r.url) if is_draft_save(r) else None)
    a.set_correctness("incorrect")
    a.page_to(1)
    if saved:
        autosaved(a)
    else:  # nothing to wait for but the time in which it would have come
        a.page.wait_for_timeout(AUTOSAVE_MS)  # not time.sleep: Playwright delivers request events only while it runs
    return saves


def step_one_after_reload(a, pid, tid) -> str:
    a.page.reload()
    a.open(pid, tid)
    checked = a.main.locator("label.ant-radio-wrapper-checked").all_inner_texts()
    return re.sub(r"\[\w+\]$", "", checked[0]).strip() if checked else "(no verdict)"


def test_paging_at_once_after_an_edit_keeps_it(guard, paged, projects):
    a = guard
    pid, ids = paged
    saves = edit_and_page_at_once(a, pid, ids["kept-1"], saved=True)
    assert saves, "no draft was saved within 8 s of the edit"
    assert any(r["value"] == {"choices": ["incorrect"]} for d in projects.drafts(ids["kept-1"]) for r in d["result"])
    assert step_one_after_reload(a, pid, ids["kept-1"]) == "incorrect"


def test_with_a_hypertext_card_the_same_edit_is_lost(guard, hypertext):
    a = guard
    pid, ids = hypertext
    saves = edit_and_page_at_once(a, pid, ids["lost-1"], saved=False)
    lost = step_one_after_reload(a, pid, ids["lost-1"])
    assert (saves, lost) == ([], "(no verdict)"), \
        "Label Studio now keeps the edit with a HyperText card too: the List card is no longer needed for it"


def test_paging_backwards_and_editing_twice_keeps_the_last(guard, paged):
    a = guard
    pid, ids = paged
    edit_and_page_at_once(a, pid, ids["kept-2"], saved=True)
    a.page_to(0)
    a.set_correctness("correct")
    a.page_to(2)
    assert autosaved(a), "the second edit was not saved as a draft"
    assert step_one_after_reload(a, pid, ids["kept-2"]) == "correct"
