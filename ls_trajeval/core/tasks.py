"""Trace → Label Studio task data (pure).

A task carries the trace as given plus what its layout displays: ``te_transcript`` (Paragraphs:
one utterance per step) always, and in a paged project ``te_pages`` (Repeater: one rendered HTML
card per step, as a one-item list for the ``List`` tag that shows it); the step count and the seeded
score fields (:func:`initial_scores`). ``te_pages`` is
about 70% of a task's bytes and 95% of the time to build it, so a transcript project does without
it; :mod:`relayout` adds it when a project switches to the paged layout.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .config import Config
from .fields import N_STEPS, PAGES, SUGGESTED, TRANSCRIPT, initial_scores
from .labelconfig import _env
from .labels import TraceLabels, step_number
from .suggestions import beside
from .trace import Step, Trace

#: Lines shown before a long block is folded behind "show N more lines".
FOLD_AFTER = 40
DIFF_STYLES = {
    "add": "background:#E6FFEC;color:#1A7F37",
    "del": "background:#FFEBE9;color:#CF222E",
    "hunk": "background:#DDF4FF;color:#0550AE",
    "meta": "color:#57606A;font-weight:600",
    "ctx": "",
}
BLOCK_STYLES = {
    "text": "background:transparent;font-family:inherit",
    "code": "background:#F6F8FA;border:1px solid #ddd;font-family:monospace",
    "terminal": "background:#1E1E1E;color:#E6E6E6;font-family:monospace",
}
_DIFF_START = re.compile(r"^(diff --git |--- \S|\+\+\+ \S|@@ -\d)", re.M)
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


@dataclass
class Block:
    """A piece of a step's content as the paged layout shows it: text, code, terminal output or a diff."""
    kind: str  # text | code | terminal | diff
    head: list
    rest: list
    title: str = ""


def is_diff(text: str) -> bool:
    """Whether ``text`` reads as a unified diff (a diff header and two or more +/-/@ lines)."""
    lines = text.splitlines()
    return bool(_DIFF_START.search(text)) and sum(1 for ln in lines if ln[:1] in "+-@") >= 2


def _diff_kind(line: str) -> str:
    if line.startswith(("+++", "---", "diff --git", "index ")):
        return "meta"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def _block(kind: str, text: str, title: str = "") -> Block:
    lines: list = text.split("\n")
    if kind == "diff":
        lines = [{"kind": _diff_kind(ln), "text": ln} for ln in lines]
    head, rest = (lines, []) if len(lines) <= FOLD_AFTER + 5 else (lines[:FOLD_AFTER], lines[FOLD_AFTER:])
    return Block(kind, head, rest, title)


def _blocks_for_text(text: str, default_kind: str) -> list[Block]:
    """Split text into prose, fenced code and diffs, so each renders in its own style."""
    if is_diff(text) and not _FENCE.search(text):
        return [_block("diff", text)]
    blocks, pos = [], 0
    for m in _FENCE.finditer(text):
        before = text[pos:m.start()].strip("\n")
        if before:
            blocks.append(_block(default_kind, before))
        body = m.group(1).rstrip("\n")
        blocks.append(_block("diff" if is_diff(body) else "code", body))
        pos = m.end()
    tail = text[pos:].strip("\n") if blocks else text
    if tail or not blocks:
        blocks.append(_block(default_kind, tail))
    return blocks


def _kind_for(step: Step) -> str:
    if step.type in ("observation", "error"):
        return "terminal"
    if step.type == "code":
        return "code"
    return "text"


def _path_of(step: Step) -> str:
    for holder in (step, step["metadata"] if isinstance(step.get("metadata"), dict) else {}):
        for key in ("path", "file_path", "file"):
            value = holder.get(key)
            if isinstance(value, str) and value:
                return value
    return ""


def _timestamp(step: Step) -> str:
    for key in ("timestamp", "time", "start_time"):
        value = step.get(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    return ""


def step_text(step: Step) -> str:
    """The step as plain text: the content, and for an action its input below the tool name."""
    text = step.content
    extra = step.action_input_text
    if extra:
        text = f"{text}\n{extra}" if text else extra
    return text


def transcript_entry(step: Step, index: int, config: Config) -> dict:
    """A step as one utterance of the transcript layout's Paragraphs: its type's label and its numbered text."""
    prefix = []
    if config.show_step_numbers:
        prefix.append(step_number(index))
    if config.show_timestamps and _timestamp(step):
        prefix.append(f"[{_timestamp(step)}]")
    text = step_text(step)
    if prefix:
        text = " ".join(prefix) + ("\n" if "\n" in text else " ") + text
    return {"author": config.step_style(step.type).label, "text": text}


@lru_cache(maxsize=1)
def _step_template():
    return _env().get_template("step.html.j2")


def page_html(step: Step, index: int, total: int, config: Config) -> str:
    """A step as the paged layout's card: escaped HTML from ``templates/step.html.j2``."""
    style = config.step_style(step.type)
    kind = _kind_for(step)
    if step.type == "action":
        blocks = [_block("code", step.content, "tool")]
        if step.action_input is not None:
            given = _blocks_for_text(step.action_input_text, "code")
            given[0].title = "input"
            blocks += given
    else:
        blocks = _blocks_for_text(step.content, kind)
        if step.action_input is not None:
            blocks.append(_block("code", step.action_input_text, "input"))
    return _step_template().render(
        kind=re.sub(r"[^a-z0-9_-]", "", step.type.lower()) or "other",
        style=style,
        number=index + 1 if config.show_step_numbers else None,
        total=total,
        timestamp=_timestamp(step) if config.show_timestamps else "",
        path=_path_of(step),
        blocks=blocks,
        diff_styles=DIFF_STYLES,
        block_styles=BLOCK_STYLES,
    )


def pages(trace: Trace, config: Config) -> list[list[dict]]:
    """``te_pages``: the paged layout's rendered card per step, each as the one item of a ``List`` tag."""
    n = len(trace.steps)
    return [[{"id": f"step-{i + 1}", "html": page_html(s, i, n, config)}] for i, s in enumerate(trace.steps)]


def has_pages(data: dict) -> bool:
    """Whether task ``data`` carries the paged layout's cards, one per step, in the current shape."""
    cards = data.get(PAGES)
    return (isinstance(cards, list) and len(cards) == data.get(N_STEPS)
            and all(isinstance(c, list) and c and isinstance(c[0], dict) for c in cards))


def task_data(trace: Trace, config: Config, layout: str = "transcript") -> dict:
    """The ``data`` of the Label Studio task for one trace, in a project of ``layout``."""
    data = trace.to_json(config.id_key, config.text_key, config.trace_key)
    data[TRANSCRIPT] = [transcript_entry(s, i, config) for i, s in enumerate(trace.steps)]
    if layout == "paged":
        data[PAGES] = pages(trace, config)
    data[N_STEPS] = len(trace.steps)
    data.update(initial_scores(config, len(trace.steps)))
    if not config.suggestions.prelabel:  # the workbench shows suggestions beside the steps, from this field
        data[SUGGESTED] = beside(TraceLabels([]), config, "")
    return data

