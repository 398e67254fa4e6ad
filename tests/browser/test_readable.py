"""Real traces, readable (issue 32), in a real Label Studio and Chromium: public logs of Claude Code, Codex, Gemini
CLI, OpenHands, tau-bench, smolagents, SWE-agent, aider and a multi-agent crew, converted by today's converters and
imported into one project per layout. Every assertion reads the rendered DOM (text, computed styles, positions);
the expected values come from the source logs. Screenshots of each go to docs/screenshots/readable-*.png.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.fields import SCORE_NOT_KEPT
from ls_trajeval.core.trace import Trace
from ls_trajeval.flows.convert import convert_inputs
from ls_trajeval.studio import client as studio

from .test_annotate import SHOTS, export

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
CONVERTERS = Path(__file__).resolve().parents[1] / "fixtures" / "converters"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SOURCES = [
    CONVERTERS / "claude_code" / "ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",  # a parent and 2 sub-agents
    CONVERTERS / "openai_responses" / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
    CONVERTERS / "gemini_cli" / "session-2025-12-01T21-45-5b959dae.json",
    CONVERTERS / "openhands" / "multi_swe_bench_output.jsonl",
    CONVERTERS / "tau_bench" / "e2e_telecom_baseline.json",
    CONVERTERS / "smolagents" / "code_o1_27-01_text.jsonl",
    REAL / "swe_agent" / "function_calling_simple.traj",
    CONVERTERS / "project.aider.chat.history.md",
    CONVERTERS / "multi_agent" / "crew.jsonl",
]
CLAUDE = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
CODEX = "019b7f94-51b4-7593-922e-ba12b5b73b52"
GEMINI = "5b959dae-8655-4cd1-b10f-720b8c336ea2"
OPENHANDS = "ponylang__ponyc-4588"  # 149 steps, a 20 kB system prompt first, the task again second
OPENHANDS_EDITS = "ponylang__ponyc-4593"
TAU = "85e11d5b-441e-455e-b6d9-02597a3a875e"
SWE = "202d1f535e18ecdc"
CREW = "crew-1"
TEXT = "[class*='dialoguetext']"


@pytest.fixture(scope="module")
def real(projects, ls_env):
    """The converted logs (by trace id) and one project per layout holding all of them."""
    traces = {t.trace_id: t for t in convert_inputs(SOURCES, "auto", jobs=1) if isinstance(t, Trace)}
    assert {CLAUDE, CODEX, GEMINI, OPENHANDS, TAU, SWE, CREW} <= set(traces)
    dicts = [t.to_json() for t in traces.values()]
    made = {layout: projects.make(CONFIG, layout, dicts, f"browser readable {layout}")
            for layout in ("transcript", "paged")}
    return traces, made


def open_trace(a, real, trace_id: str, layout: str = "transcript"):
    traces, made = real
    pid, ids = made[layout]
    a.open(pid, ids[trace_id])
    return traces[trace_id]


def phrase_texts(a) -> list[str]:
    return a.page.locator(f"[data-testid^='phrase:'] {TEXT}").all_text_contents()


def style_of(locator, prop: str) -> str:
    return locator.evaluate("(el, p) => getComputedStyle(el).getPropertyValue(p)", prop)


def rgb(hex_colour: str) -> str:
    h = hex_colour.lstrip("#")
    return "rgb({}, {}, {})".format(*(int(h[k:k + 2], 16) for k in (0, 2, 4)))


#: the colour a line of a phrase's text is painted with: its row's stripe in the text's background, read from the
#: computed gradients at the line's own position (a Range over the line's first character)
LINE_COLOUR = """([idx, line]) => {
  const span = document.querySelector(`[data-testid="phrase:${idx}"] [class*="dialoguetext"]`);
  const node = span.firstChild;
  const text = node.data;
  let start = 0;
  for (let k = 0; k < line; k++) start = text.indexOf("\\n", start) + 1;
  const r = document.createRange();
  r.setStart(node, start); r.setEnd(node, start + 1);
  const y = r.getClientRects()[0].top - span.getBoundingClientRect().top + span.scrollTop + 9;
  const layers = getComputedStyle(span).backgroundImage.split(/,\\s*(?=linear-gradient)/);
  for (const layer of layers) {
    const stops = [...layer.matchAll(/(rgba?\\([^)]*\\))\\s+(-?[\\d.]+)px/g)].map(m => [m[1], parseFloat(m[2])]);
    let colour = null;
    for (const [c, pos] of stops) if (pos <= y) colour = c;
    if (colour && !colour.startsWith("rgba(0, 0, 0, 0)")) return colour;
  }
  return "none";
}"""


#: each card brought to the pane's top, measured once the browser has drawn it: cards taller than 60% of the window,
#: cards whose text overflows without scrolling, mark buttons outside the window
CARDS_IN_REACH = """async pane => {
  const vh = window.innerHeight, out = {n: 0, tall: [], unreachable: [], out_of_reach: []};
  const drawn = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (const ph of pane.querySelectorAll('[data-testid^="phrase:"]')) {
    out.n++;
    pane.scrollTop += ph.getBoundingClientRect().top - pane.getBoundingClientRect().top;
    await drawn();
    pane.scrollTop += ph.getBoundingClientRect().top - pane.getBoundingClientRect().top;
    if (ph.getBoundingClientRect().height > 0.6 * vh) out.tall.push(ph.dataset.testid);
    const text = ph.querySelector('[class*="dialoguetext"]');
    if (text.scrollHeight > text.clientHeight + 1 && getComputedStyle(text).overflowY !== "auto")
      out.unreachable.push(ph.dataset.testid);
    const b = ph.querySelector('button[aria-label^="Label whole utterance"]').getBoundingClientRect();
    if (b.top < 0 || b.bottom > vh) out.out_of_reach.push(ph.dataset.testid);
  }
  pane.scrollTop = 0;
  return out;
}"""


def cards_in_reach(a) -> dict:
    """:data:`CARDS_IN_REACH` over the open task's trace pane."""
    return a.page.locator(".te-trace-pane").evaluate(CARDS_IN_REACH)


def strings_in(value) -> list[str]:
    """Every string inside an argument value (nested lists and objects too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [x for v in value.values() for x in strings_in(v)]
    if isinstance(value, list):
        return [x for v in value for x in strings_in(v)]
    return []


SMOL = "6a4c3da772d50d76"  # smolagents: a 24 kB result (a 48,156 px card before)


@pytest.mark.parametrize("trace_id", [CLAUDE, CODEX, GEMINI, TAU, SMOL, SWE, CREW])
def test_every_card_bounded_whole_and_no_argument_json_escaped(guard, real, ls_client, trace_id):
    """Beside OpenHands (above): every card of these traces within 60% of the window with its mark button in reach
    and its whole text there; a multi-line argument as real lines: no more ``\\n`` or ``\\"`` in the card than
    the argument's own strings hold (JSON would escape every line break and quote)."""
    a = guard
    t = open_trace(a, real, trace_id)
    assert cards_in_reach(a) == {"n": len(t.steps), "tall": [], "unreachable": [], "out_of_reach": []}
    texts = phrase_texts(a)
    data = studio.get_task(ls_client, real[1]["transcript"][1][trace_id])["data"]
    assert texts == [e["text"] for e in data["te_transcript"]]
    checked = 0
    for i, s in enumerate(t.steps):
        raw = s.action_input_text if s.type == "action" else ""
        try:
            strings = strings_in(json.loads(raw)) if raw.strip()[:1] in "{[" else [raw]
        except ValueError:
            strings = [raw]
        if not any("\n" in x for x in strings):
            continue
        for escaped in ("\\n", '\\"'):
            assert texts[i].count(escaped) <= sum(x.count(escaped) for x in strings), (i, escaped)
        checked += 1
    if trace_id in (CLAUDE, GEMINI):  # their logs hold multi-line arguments (file contents, prompts, edits)
        assert checked


def test_a_long_trace_opens_at_its_top_every_card_bounded_and_its_mark_in_reach(guard, real, ls_client):
    a = guard
    t = open_trace(a, real, OPENHANDS)
    pane = a.page.locator(".te-trace-pane")
    assert pane.evaluate("el => el.scrollTop") == 0  # not mid system prompt
    a.screenshot(SHOTS / "readable-opens-at-top.png", full_page=False)
    m = cards_in_reach(a)
    assert m == {"n": len(t.steps), "tall": [], "unreachable": [], "out_of_reach": []}
    # go to step #N: the browser's find (Ctrl+F, Enter for the next match) of "#N · ": its first match in the trace
    # is card N's header (the task list behind the editor holds the transcript's data too)
    n = len(t.steps) - 20
    found = a.page.evaluate("""s => { for (let k = 0; k < 5 && window.find(s); k++) {
      const node = getSelection().getRangeAt(0).startContainer.parentElement;
      if (node.closest('.te-trace-pane')) return node.closest('[data-testid^="phrase:"]').dataset.testid; }
      return null; }""", f"#{n} · ")
    assert found == f"phrase:{n - 1}"
    a.page.evaluate("() => getSelection().removeAllRanges()")
    # nothing is cut: every card holds its whole text, the longest scrolls inside its card
    data = studio.get_task(ls_client, real[1]["transcript"][1][OPENHANDS])["data"]
    assert phrase_texts(a) == [e["text"] for e in data["te_transcript"]]
    longest = max(range(len(t.steps)), key=lambda i: len(t.steps[i].content))
    text = a.phrase(longest).locator(TEXT)
    text.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    assert text.evaluate("el => Math.abs(el.scrollTop + el.clientHeight - el.scrollHeight) <= 1")
    # the system prompt starts folded; a press on it opens it, and it stays open
    system = a.phrase(0).locator(TEXT)
    assert t.steps[0].type == "system" and system.evaluate("el => el.clientHeight") <= 7 * 20
    system.click()
    a.page.locator(".te-side-pane").click(position={"x": 5, "y": 5})
    assert system.evaluate("el => el.clientHeight") > 300
    # after Submit Label Studio rebuilds the editor: the task is at its top again, not mid system prompt
    a.choose("I reviewed every step")
    a.choose("failure")
    pane.evaluate("el => { el.scrollTop = el.scrollHeight / 2; el.dataset.before = 'submit'; }")
    a.submit()
    a.page.wait_for_function("() => { const p = document.querySelector('.te-trace-pane'); return p"
                             " && !p.dataset.before && p.querySelector('[data-testid=\"phrase:0\"] button'); }")
    a.page.wait_for_load_state("networkidle")
    assert a.page.locator(".te-trace-pane").evaluate("el => el.scrollTop") == 0


def source_strings(args: dict) -> tuple[str, str]:
    """An edit's old and new text as its source wrote them."""
    return (next(args[k] for k in ("old_string", "old_str", "search") if k in args),
            next(args[k] for k in ("new_string", "new_str", "replace") if k in args))


def edit_lines(args: dict) -> tuple[list[str], list[str]]:
    """The removed and added lines an edit's arguments imply, read from the source (what a diff must show)."""
    old, new = (x.splitlines() for x in source_strings(args))
    return [ln for ln in old if ln not in new], [ln for ln in new if ln not in old]


def action_steps(t: Trace, tools: set[str]) -> list[int]:
    return [i for i, s in enumerate(t.steps) if s.type == "action" and s.content in tools]


@pytest.mark.parametrize("trace_id, tools", [
    (CLAUDE, {"Edit", "MultiEdit"}),
    (GEMINI, {"replace"}),
    (OPENHANDS_EDITS, {"str_replace_editor"}),
    (SWE, {"edit"}),
])
def test_an_edit_is_a_diff_of_real_lines_in_monospace_with_its_lines_coloured(guard, real, trace_id, tools):
    a = guard
    t = open_trace(a, real, trace_id)
    checked = 0
    for i in action_steps(t, tools):
        args = json.loads(t.steps[i].action_input)
        edits = args.get("edits") or [args]
        if not any(k in e for e in edits for k in ("old_string", "old_str", "search")):
            continue  # a view
        shown = a.phrase(i).locator(TEXT).text_content()
        lines = shown.split("\n")
        strings = [x for e in edits for x in source_strings(e)]
        # real lines, not JSON: every line of the diffs is a line of the edits' strings, none their escaped form
        assert {ln[1:] for ln in lines if ln[:1] in "+- " and not ln.startswith(("---", "+++"))} \
            <= {ln for x in strings for ln in x.splitlines()}
        for x in strings:  # around each string's first line break, its JSON-escaped form is not what shows
            k = x.find("\n")
            if k >= 0:
                assert json.dumps(x[max(0, k - 12):k + 12])[1:-1] not in shown
        for e in edits:
            removed, added = edit_lines(e)
            assert removed or added
            for ln in removed:
                row = lines.index("-" + ln)
                assert a.page.evaluate(LINE_COLOUR, [i, row]) == "rgb(255, 235, 233)", ("-", ln)
            for ln in added:
                row = lines.index("+" + ln)
                assert a.page.evaluate(LINE_COLOUR, [i, row]) == "rgb(230, 255, 236)", ("+", ln)
        context = next((n for n, ln in enumerate(lines) if ln.startswith(" ")), None)
        if context is not None:
            assert a.page.evaluate(LINE_COLOUR, [i, context]) == "none"
        assert "monospace" in style_of(a.phrase(i).locator(TEXT), "font-family")
        checked += 1
    assert checked
    if trace_id == CLAUDE:
        # a multi-line argument of another tool (a sub-agent's prompt): its real lines under its name
        for i in action_steps(t, {"Task"}):
            prompt = json.loads(t.steps[i].action_input).get("prompt")
            if prompt:
                shown = a.phrase(i).locator(TEXT).text_content()
                assert "\nprompt:\n" + prompt in shown and json.dumps(prompt)[1:-1] not in shown
                checked += 1
        assert checked > len(action_steps(t, {"Edit", "MultiEdit"}))
        step = action_steps(t, {"MultiEdit"})[0]
        a.phrase(step).scroll_into_view_if_needed()
        a.screenshot(SHOTS / "readable-diff.png", full_page=False)


def test_commands_outputs_and_a_json_result_read_as_text_in_monospace(guard, real):
    a = guard
    t = open_trace(a, real, CODEX)
    results = [i for i, s in enumerate(t.steps) if s.type == "observation" and s.content.startswith('{"output"')]
    assert results
    for i in results:
        output = json.loads(t.steps[i].content)["output"]
        shown = a.phrase(i).locator(TEXT).text_content()
        assert '{"output"' not in shown and shown.split("\n", 1)[1].startswith(output)
        assert "monospace" in style_of(a.phrase(i).locator(TEXT), "font-family")
        call = a.phrase(i - 1).locator(TEXT).text_content()
        command = json.loads(t.steps[i - 1].action_input)["command"][-1]
        assert call.split("\n")[1] == "$ " + command.split("\n")[0]
        assert "monospace" in style_of(a.phrase(i - 1).locator(TEXT), "font-family")
    thought = next(i for i, s in enumerate(t.steps) if s.type == "thought")
    assert "monospace" not in style_of(a.phrase(thought).locator(TEXT), "font-family")  # prose stays prose
    a.phrase(results[-1]).scroll_into_view_if_needed()
    a.screenshot(SHOTS / "readable-codex-output.png", full_page=False)


def test_who_spoke_user_agent_and_simulated_user_apart(guard, real):
    a = guard
    t = open_trace(a, real, TAU)
    authors = a.page.locator("[data-testid^='phrase:'] [class*='dialoguename']").all_text_contents()
    for i, s in enumerate(t.steps):
        meta = s.get("metadata") or {}
        label = CONFIG.step_style(s.type).label
        simulated = meta.get("role") == "user" or (s.type == "action" and meta.get("requestor") == "user")
        assert authors[i] == (f"{label} · simulated user" if simulated else label), i
    user = next(i for i, s in enumerate(t.steps) if s.type == "message" and s["metadata"]["role"] == "user")
    agent = next(i for i, s in enumerate(t.steps) if s.type == "message" and s["metadata"]["role"] == "assistant")
    user_call = next(i for i, s in enumerate(t.steps)
                     if s.type == "action" and s["metadata"].get("requestor") == "user")
    margin = lambda i: float(style_of(a.phrase(i), "margin-left").rstrip("px"))  # noqa: E731
    assert margin(user) > 20 and margin(user_call) > 20 and margin(agent) == 0
    # the simulated user's cards are also outlined (an inset ring); the agent's are not
    assert style_of(a.phrase(user), "box-shadow").endswith(" 2px inset")
    assert style_of(a.phrase(agent), "box-shadow") in ("none", "rgb(106, 27, 154) 0px 0px 0px 0px inset")
    assert a.phrase(user_call).locator(TEXT).text_content().startswith(f"#{user_call + 1} · simulated user → ")
    a.phrase(user_call).scroll_into_view_if_needed()
    a.screenshot(SHOTS / "readable-simulated-user.png", full_page=False)
    # a multi-agent crew: each card names its agent, as the log does
    t = open_trace(a, real, CREW)
    for i, s in enumerate(t.steps):
        agent_name = (s.get("metadata") or {}).get("agent")
        if agent_name and s.type in ("thought", "message", "action"):
            assert a.phrase(i).locator(TEXT).text_content().startswith(f"#{i + 1} · {agent_name}")


def test_step_types_in_the_configs_colours_and_errors_in_the_error_colour(guard, real):
    a = guard
    t = open_trace(a, real, CLAUDE)
    errors = [i for i, s in enumerate(t.steps) if s.type == "error"]
    assert errors
    for i, s in enumerate(t.steps):
        assert style_of(a.phrase(i), "background-color") == rgb(CONFIG.step_style(s.type).color), i
    assert rgb(CONFIG.step_style("error").color) == "rgb(255, 235, 238)"
    for i in errors:
        assert style_of(a.phrase(i), "border-left-color") == "rgb(211, 47, 47)"
    a.phrase(errors[0]).scroll_into_view_if_needed()
    a.screenshot(SHOTS / "readable-error.png", full_page=False)
    # a failed command (non-zero exit code) is marked so, in the error accent, though typed an observation
    t = open_trace(a, real, OPENHANDS_EDITS)
    failed = [i for i, s in enumerate(t.steps) if (s.get("metadata") or {}).get("exit_code") not in (None, 0)]
    assert failed
    for i in failed:
        code = t.steps[i]["metadata"]["exit_code"]
        assert f" · exit {code}" in a.phrase(i).locator(TEXT).text_content().split("\n")[0]
        assert style_of(a.phrase(i), "border-left-color") == "rgb(211, 47, 47)"


def test_the_request_once_and_parent_and_sub_agent_tasks_linked(guard, real, tmp_path):
    a = guard
    traces, made = real
    pid, ids = made["transcript"]
    t = open_trace(a, real, OPENHANDS)
    assert a.page.locator(".te-request").inner_text().strip().startswith(t.task.strip()[:40])
    repeated = next(i for i, s in enumerate(t.steps) if s.type == "message" and s.content.strip() == t.task.strip())
    first = a.phrase(repeated).locator(TEXT)
    assert first.text_content().split("\n")[0] == f"#{repeated + 1} · user · the task, as shown above"
    assert first.evaluate("el => el.clientHeight") <= 7 * 20  # folded, not a second full copy
    assert a.page.locator(".te-head .te-facts").inner_text() == f"{len(t.steps)} steps · openhands · " \
        f"{t.metadata['model']}"
    # the parent names each sub-agent's trace and links its task; each sub-agent names its parent
    a.open(pid, ids[CLAUDE])
    children = sorted(x for x, c in traces.items() if c.metadata.get("parent_session") == CLAUDE)
    assert len(children) == 2
    links = a.page.locator(".te-head .te-links a")
    assert sorted(links.evaluate_all("els => els.map(e => e.getAttribute('href'))")) == \
        sorted(f"?task={ids[c]}" for c in children)
    lines = a.page.locator(".te-head .te-link").all_inner_texts()
    for c in children:
        step = next(i for i, s in enumerate(traces[CLAUDE].steps) if s.type == "action" and s.content == "Task"
                    and json.loads(s.action_input).get("prompt", "").split() == traces[c].task.split())
        assert f"Step #{step + 1} starts sub-agent trace {c}: open its task" in lines
    a.screenshot(SHOTS / "readable-subagent-links.png", full_page=False)
    with a.page.context.expect_page() as opened:
        links.first.click()
    child_page = opened.value
    child_page.wait_for_selector("[data-testid='phrase:0']", timeout=60_000)
    child_id = int(re.search(r"task=(\d+)", child_page.url).group(1))
    child = next(c for c in children if ids[c] == child_id)
    back = child_page.locator(".te-head .te-link-parent")
    assert back.inner_text() == f"Sub-agent of trace {CLAUDE}: open its task"
    assert back.locator("a").get_attribute("href") == f"?task={ids[CLAUDE]}"
    assert child_page.locator(".te-head .te-facts").inner_text().startswith(f"{len(traces[child].steps)} steps")
    child_page.close()


def test_the_score_header_says_when_no_backend_keeps_it_current(guard, real, tmp_path):
    a = guard
    pid, ids = real[1]["transcript"]
    t = open_trace(a, real, SWE)
    header = a.page.locator(".te-score h5, .te-score h4").first
    assert header.inner_text() == f"Running score: 100 ({SCORE_NOT_KEPT})"
    a.mark_step(2)
    a.choose_type("Wrong Tool")
    a.choose_severity("Major")
    a.choose("I reviewed every step")
    a.choose("failure")
    a.submit()
    assert export(pid, tmp_path)[SWE]["final_score"] == 95
    a.open(pid, ids[SWE])
    assert a.page.locator(".te-score h5, .te-score h4").first.inner_text() == f"Running score: 100 ({SCORE_NOT_KEPT})"
    assert len(t.steps) > 2


def test_paged_cards_come_from_the_same_renderer(guard, real, ls_client):
    a = guard
    traces, made = real
    pid, ids = made["paged"]
    t = open_trace(a, real, CLAUDE, "paged")
    step = action_steps(t, {"MultiEdit"})[0]
    a.page_to(step)
    card = a.main.locator(".te-step")
    removed = card.locator(".te-diff-del").all_text_contents()
    added = card.locator(".te-diff-add").all_text_contents()
    data = studio.get_task(ls_client, ids[CLAUDE])["data"]
    workbench = data["te_transcript"][step]["text"].split("\n")
    assert removed == [ln for ln in workbench if ln.startswith("-") and not ln.startswith("---")]
    assert added == [ln for ln in workbench if ln.startswith("+") and not ln.startswith("+++")]
    assert "monospace" in style_of(card.locator("pre.te-diff").first, "font-family")
    assert card.evaluate("el => el.getBoundingClientRect().height <= 0.6 * window.innerHeight + 1")
    assert card.locator(".te-step-actor").inner_text() == t.steps[step]["metadata"]["agent"]
    a.screenshot(SHOTS / "paged-readable-diff.png", full_page=False)
    error = next(i for i, s in enumerate(t.steps) if s.type == "error")
    a.page_to(error)
    assert style_of(card, "background-color") == rgb(CONFIG.step_style("error").color)
    assert style_of(card, "border-left-color") == "rgb(211, 47, 47)"
    # go to step #N: the page number under the card takes a number, Enter goes there
    last = len(t.steps)
    a.page.locator(".lsf-pagination__page-indicator").click()
    number = a.page.locator(".lsf-pagination__input input")
    number.fill(str(last))
    number.press("Enter")
    a.page.locator(".te-step-number", has_text=f"step {last} of {last}").wait_for()
    assert a.current_step() == last - 1
