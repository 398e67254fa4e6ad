"""How steps look: type labels, code, coloured diffs, terminal output, file paths, folded long output
(paged layout's HTML cards) and transcript text with its line breaks and indentation kept."""
from __future__ import annotations

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import render

from .test_annotate import SHOTS

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("coding_agent"))
LONG = "\n".join(f"line {i}: PASSED" for i in range(render.FOLD_AFTER + 20))
TRACE = {"trace_id": "display-1", "task": "Make the failing test pass", "trace": [
    {"type": "thought", "content": "Plan:\n  1. read the file\n    2. patch it"},
    {"type": "action", "content": "read_file", "action_input": {"path": "src/pricing.py"}},
    {"type": "observation", "content": "def total(x):\n    return x * 2", "path": "src/pricing.py"},
    {"type": "code", "content": "--- a/src/pricing.py\n+++ b/src/pricing.py\n@@ -1,2 +1,2 @@\n def total(x):\n"
                                "-    return x * 2\n+    return x * 3"},
    {"type": "observation", "content": "$ pytest -q\n" + LONG},
    {"type": "message", "content": "Here is the fix:\n```python\nprint('ok')\n```\nDone."},
]}


@pytest.fixture(scope="module")
def shown(projects, ls_env):
    return {layout: projects.make(CONFIG, layout, [TRACE], f"browser display {layout}")
            for layout in ("transcript", "paged")}


def test_paged_cards_render_code_diffs_terminal_paths_and_folds(guard, shown):
    a = guard
    pid, ids = shown["paged"]
    a.open(pid, ids["display-1"])
    card = a.main.locator(".te-step")
    assert card.locator(".te-step-label").inner_text() == CONFIG.step_style("thought").label
    assert "  1. read the file\n    2. patch it" in card.locator("pre").inner_text()
    a.page_to(1)
    # the tool after the actor, its file in the header: no JSON
    assert card.locator(".te-step-tool").inner_text() == "→ read_file"
    assert card.locator(".te-step-path").inner_text().endswith("src/pricing.py") and "{" not in card.inner_text()
    a.page_to(2)
    assert card.locator(".te-step-path").inner_text().endswith("src/pricing.py")
    assert card.locator("pre.te-terminal").count() == 1
    a.page_to(3)
    added = card.locator(".te-diff-add")
    removed = card.locator(".te-diff-del")
    assert added.inner_text() == "+    return x * 3" and removed.inner_text() == "-    return x * 2"
    colour = lambda loc: loc.evaluate("el => getComputedStyle(el).backgroundColor")  # noqa: E731
    assert colour(added) == "rgb(230, 255, 236)" and colour(removed) == "rgb(255, 235, 233)"
    a.screenshot(SHOTS / "paged-diff.png", full_page=False)
    a.page_to(4)
    fold = card.locator("details")
    assert fold.locator("summary").inner_text() == "show 21 more lines"
    assert f"line {render.FOLD_AFTER + 19}: PASSED" in fold.text_content()
    assert fold.evaluate("el => el.open") is False
    fold.locator("summary").click()
    assert fold.evaluate("el => el.open") is True
    a.page_to(5)
    assert card.locator("pre.te-code").inner_text() == "print('ok')"
    assert not a.watch.errors


def test_transcript_keeps_line_breaks_and_indentation(guard, shown):
    a = guard
    pid, ids = shown["transcript"]
    a.open(pid, ids["display-1"])
    text = a.phrase(0).locator("[class*='dialoguetext']").inner_text()
    assert text == "#1 · agent\nPlan:\n  1. read the file\n    2. patch it"
    assert a.phrase(3).get_by_text("+    return x * 3").count() == 1
    # the dialogue layout's meaningless "00:00:00 - 00:00:00" times are hidden
    assert not a.phrase(0).locator("[class*='time--']").is_visible()
    authors = [a.phrase(i).locator("[class*='dialoguename']").inner_text() for i in range(6)]
    assert authors == [CONFIG.step_style(s["type"]).label for s in TRACE["trace"]]
