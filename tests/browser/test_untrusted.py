"""Untrusted content in a real browser: known XSS payloads and template syntax in every field a trace
or a config can fill. No script may run (dialogs, page errors and an injected global are watched),
every payload shows literally, and the export holds it byte for byte."""
from __future__ import annotations

import json

import pytest
import yaml

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.labelconfig import WORD_JOINER

from .test_annotate import export
from .ui import PWNED

pytestmark = pytest.mark.browser

W = f"window.{PWNED}"
PAYLOADS = [
    f"<script>{W}=1</script>",
    f"<img src=x onerror=\"{W}=2\">",
    f"<svg onload=\"{W}=3\"></svg>",
    f"<svg><script>{W}=4</script></svg>",
    f"<a href=\"javascript:{W}=5\">click me</a>",
    f"javascript:{W}=6",
    f"<iframe src=\"javascript:{W}=7\"></iframe>",
    f"<body onload=\"{W}=8\">",
    f"\"><img src=x onerror={W}=9>",
    f"'><svg/onload={W}=10>",
    f"</textarea><script>{W}=11</script>",
    f"<details open ontoggle=\"{W}=12\">",
    f"<math><mtext><table><mglyph><style><img src=x onerror={W}=13>",
    f"<!--<img src=x onerror={W}=14>-->",
    f"]]><script>{W}=15</script>",
    "{{idx}}",
    "$task",
    "$te_transcript",
    f"${{{W}=19}}",
    f"{{{{constructor.constructor('{W}=20')()}}}}",
    f"<input autofocus onfocus=\"{W}=21\">",
    f"<object data=\"javascript:{W}=22\"></object>",
    "&lt;b&gt;entity&amp;amp; &#x3C;",
    f"<div style=\"background:url(javascript:{W}=24)\">css</div>",
    "<b>bold?</b> <i>italic?</i> < > & \" ' `",
    "$running_score $n_steps {{ idx }} [[idx]] %idx% #{idx}",
]
ALL = " | ".join(PAYLOADS)


def hostile_config() -> cfg.Config:
    """The shipped config with a payload in every text a config gives the UI."""
    raw = yaml.safe_load(label_configs.path("trajectory_eval").read_text(encoding="utf-8"))
    scheme, outcome = raw["annotation_schemes"][0], raw["annotation_schemes"][1]
    scheme["description"] = ALL
    scheme["error_taxonomy"] = [
        {"category": "hostile", "label": ALL, "description": ALL,
         "types": [{"name": f"p{i}", "label": p, "description": p} for i, p in enumerate(PAYLOADS)]},
        *scheme["error_taxonomy"][:1],
    ]
    for s in scheme["severity_levels"]:
        s["description"] = ALL
    scheme["rationale"]["placeholder"] = ALL
    outcome["description"] = ALL
    outcome["labels"] = [{"name": p, "tooltip": ALL} for p in PAYLOADS]
    raw["annotation_instructions"] = ALL
    raw["display"]["step_display"]["thought"]["label"] = PAYLOADS[1]
    raw["display"]["step_display"]["action"]["label"] = PAYLOADS[0]
    return cfg.load_dict(raw, source="hostile")


def hostile_trace() -> dict:
    steps = [{"type": "thought" if i % 3 == 0 else "observation", "content": p} for i, p in enumerate(PAYLOADS)]
    steps.insert(1, {"type": "action", "content": ALL, "action_input": {"q": ALL, "p": PAYLOADS}})
    # what the renderer reads besides the content: an edit's strings, a JSON result's text, who acted, the hint, the
    # sub-agent's trace, the parent's
    steps += [
        {"type": "action", "content": PAYLOADS[0], "action_input": json.dumps(
            {"file_path": PAYLOADS[3], "old_string": "\n".join(PAYLOADS[:13]), "new_string": "\n".join(PAYLOADS[13:])}),
         "actor": {"kind": "subagent", "name": PAYLOADS[1]}, "metadata": {"tool_call_id": "x1"}},
        {"type": "observation", "content": json.dumps({"output": ALL, "metadata": {"exit_code": PAYLOADS[5]}}),
         "render": {"as": "diff", "path": PAYLOADS[2], "language": PAYLOADS[4], "folded": True},
         "metadata": {"tool_call_id": "x1", "subagent_trace": PAYLOADS[6]}},
    ]
    return {"trace_id": "xss-1", "task": ALL, "trace": steps,
            "metadata": {"agent": ALL, "tags": PAYLOADS, "source_format": PAYLOADS[7], "parent_trace": PAYLOADS[8]}}


@pytest.fixture(scope="module")
def hostile(projects, ls_env):
    c = hostile_config()
    return c, {layout: projects.make(c, layout, [hostile_trace()], f"browser xss {layout}")
               for layout in ("transcript", "paged")}


def assert_nothing_ran(a):
    assert not a.pwned(), f"a payload ran: window.{PWNED} = {a.page.evaluate(f'() => window.{PWNED}')!r}"
    assert not a.watch.dialogs, a.watch.dialogs
    assert not a.watch.errors, a.watch.errors
    # no element the payloads would have created made it into the labeling UI
    injected = a.main.locator("script, iframe, object, svg[onload], img[onerror], input[onfocus], details[ontoggle]")
    assert injected.count() == 0
    assert a.main.locator("a[href^='javascript']").count() == 0


def pick_hostile_type(a, choose: str):
    """Every payload type label is shown literally: as radios in the workbench; in the paged layout's Taxonomy,
    after opening the hostile category and scrolling its (virtualised) list."""
    if a.workbench:
        shown = [seen(t) for t in a.details.locator(".te-types label").all_inner_texts()]
        for p in PAYLOADS:
            assert any(t == p or t.startswith(p + "[") for t in shown), f"type label not shown literally: {p!r}"
        a.choose_type(choose)
        assert_nothing_ran(a)
        return
    a.details.locator(".ant-select-selector").click()
    tree = a.page.locator(".ant-select-tree:visible").first
    tree.locator(".ant-select-tree-switcher").first.click()
    holder = tree.locator(".ant-select-tree-list-holder")
    titles: list[str] = []
    for _ in range(60):
        for t in tree.locator(".ant-select-tree-title").all_inner_texts():
            if seen(t) not in titles:
                titles.append(seen(t))
        if all(p in titles for p in PAYLOADS):
            break
        # scrolled, and the virtual list drawn again (two animation frames: its rows are rendered on the next one)
        holder.evaluate("el => { el.scrollTop += 120; return new Promise(r => requestAnimationFrame("
                        "() => requestAnimationFrame(r))); }")
    for p in PAYLOADS:
        assert p in titles, f"taxonomy label not shown literally: {p!r}"
    a.page.keyboard.press("Escape")
    a.choose_type(choose)
    assert_nothing_ran(a)


def seen(text: str | None) -> str:
    """What the annotator reads: the generator's invisible word joiners do not count."""
    return (text or "").replace(WORD_JOINER, "")


def shown_text(a) -> str:
    return seen(a.main.inner_text())


def test_transcript_shows_every_payload_literally_and_runs_none(guard, hostile, tmp_path):
    a = guard
    c, made = hostile
    pid, tasks = made["transcript"]
    a.open(pid, tasks["xss-1"])
    text = shown_text(a)
    for p in PAYLOADS:
        assert p in text, f"not shown literally: {p!r}"
    assert text.count(ALL) >= 3  # task text, scheme description, outcome description
    assert a.main.get_by_text(PAYLOADS[0], exact=True).count() >= 1  # a step-type label (author)
    headers = [seen(h) for h in a.main.locator("h4").all_inner_texts()]
    # the scheme's and the outcome's descriptions and the hostile category's name over its types, not substituted
    assert headers.count(ALL) == 3, headers
    a.mark_step(3)
    assert seen(a.selected_rationale().get_attribute("placeholder")) == ALL
    pick_hostile_type(a, "Incorrect Assumption")
    a.choose_severity("Major")
    a.write_rationale(ALL)
    a.choose("I reviewed every step")
    a.main.locator(".te-whole-trace label").nth(16).click()  # the "$task" outcome
    assert_nothing_ran(a)
    a.submit()
    assert_nothing_ran(a)
    check_export(c, pid, tmp_path, error_type="incorrect_assumption", outcome=PAYLOADS[16])


def test_paged_shows_every_payload_literally_and_runs_none(guard, hostile, tmp_path):
    a = guard
    c, made = hostile
    pid, tasks = made["paged"]
    a.open(pid, tasks["xss-1"])
    steps = hostile_trace()["trace"]
    for i, step in enumerate(steps):
        a.page_to(i)
        card = a.main.locator(".te-step").text_content()  # a folded card's text too
        shown = json.loads(step["content"])["output"] if step["content"].startswith('{"output"') else step["content"]
        assert shown in card, f"step {i} not literal"
        assert_nothing_ran(a)
    assert all(p in a.main.locator(".te-head").inner_text() for p in PAYLOADS[6:9])  # trace ids, source format
    a.page_to(3)
    a.set_correctness("incorrect")
    assert seen(a.details.locator("textarea[name*='_rationale_']").get_attribute("placeholder")) == ALL
    pick_hostile_type(a, "Incorrect Assumption")
    a.choose_severity("Major")
    a.write_rationale(ALL)
    text = shown_text(a)
    for p in PAYLOADS:
        assert p in text, f"not shown literally: {p!r}"
    a.choose("I reviewed every step")
    a.main.locator(".te-whole-trace label").nth(16).click()
    assert_nothing_ran(a)
    a.submit()
    assert_nothing_ran(a)
    check_export(c, pid, tmp_path, error_type="incorrect_assumption", outcome=PAYLOADS[16])


def check_export(c, pid, tmp_path, error_type, outcome):
    rec = export(pid, tmp_path)["xss-1"]
    t = hostile_trace()
    assert rec["task"] == ALL
    steps = rec["error_localization"]
    assert [s["step_text"].split("\n")[0] for s in steps] == [s["content"] for s in t["trace"]]
    assert steps[1]["step_text"] == ALL + "\n" + json.dumps(t["trace"][1]["action_input"], ensure_ascii=False, indent=2)
    wrong = steps[3]
    assert (wrong["correctness"], wrong["error_category"], wrong["error_type"], wrong["severity"]) == (
        "incorrect", "reasoning", error_type, "major")
    assert wrong["rationale"] == ALL
    assert rec["overall_success"] == outcome
