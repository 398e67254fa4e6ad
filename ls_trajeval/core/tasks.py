"""Trace → Label Studio task data (pure).

A task carries the trace as given plus what its layout displays, all of it from the one renderer
(:mod:`render`): ``te_transcript`` (Paragraphs: one utterance per step) and ``te_header`` (the trace's facts, its
parent's and sub-agents' traces, linked to their tasks after import, and the workbench's per-task style) always, and
in a paged project ``te_pages`` (Repeater: one rendered HTML card per step, as a one-item list for the
``List`` tag that shows it); the step count and the seeded score fields (:func:`initial_scores`). ``te_pages`` is
about 70% of a task's bytes and 95% of the time to build it, so a transcript project does without it;
:mod:`relayout` adds it when a project switches to the paged layout.

From a selection in the workbench back to the step's ``content``
----------------------------------------------------------------
Each ``te_transcript`` entry is ``{"author", "text", "content_at"}``: ``text`` is the card's header line ("#4 ·
agent → Bash · exit 1"), a line break, then its body; ``content_at`` is where the step's ``content`` starts
verbatim in ``text``, in code points, or null where the card shows a derived view instead (a JSON result shown by
its one text field). For a step other than an action the body is the ``content`` itself, so ``content_at`` is the
header line's length + 1; for an action it is where the tool name (the action's ``content``) sits in the header
line, and the body (its arguments as fields, diffs, commands) is derived from ``action_input``. A selection
``[s, e)`` of ``text`` maps to ``content[s - content_at : e - content_at]`` when ``content_at <= s`` and
``e - content_at <= len(content)``; anything else is not in ``content``. Label Studio reports a Paragraphs
selection in UTF-16 code units of ``text``: convert to code points first.
"""
from __future__ import annotations

from .config import Config
from .fields import HEADER, N_STEPS, PAGES, SUGGESTED, TRANSCRIPT, WINDOW, initial_scores
from .labels import TraceLabels
from .render import Card, card_html, card_text, context, header_html, render_trace
from .suggestions import beside
from .trace import Step, Trace
from .windows import Window, split

__all__ = ["step_text", "transcript_entry", "pages", "has_pages", "task_data", "window_tasks"]


def step_text(step: Step) -> str:
    """The step as plain text: the content, and for an action its input below the tool name (the export's
    ``step_text``: the trace's own text, not the card's)."""
    text = step.content
    extra = step.action_input_text
    if extra:
        text = f"{text}\n{extra}" if text else extra
    return text


def transcript_entry(card: Card, step: Step, config: Config) -> dict:
    """One step of the workbench's Paragraphs (see the module docstring for ``content_at``)."""
    text, at = card_text(card, step, config)
    return {"author": card.author, "text": text, "content_at": at}


def pages(trace: Trace, config: Config, cards: list[Card] | None = None,
          window: Window | None = None) -> list[list[dict]]:
    """``te_pages``: the paged layout's rendered card per step, each as the one item of a ``List`` tag; for a window
    task's ``trace``, numbered as in the whole trace."""
    if cards is None:
        cards = render_trace(trace, config, first=window.start if window else 0)
    n = window.total if window else len(cards)
    return [[{"id": f"step-{c.index + 1}", "html": card_html(c, n, config)}] for c in cards]


def has_pages(data: dict) -> bool:
    """Whether task ``data`` carries the paged layout's cards, one per step, in the current shape."""
    cards = data.get(PAGES)
    return (isinstance(cards, list) and len(cards) == data.get(N_STEPS)
            and all(isinstance(c, list) and c and isinstance(c[0], dict) for c in cards))


def task_data(trace: Trace, config: Config, layout: str = "transcript") -> dict:
    """The ``data`` of the Label Studio task for one trace, in a project of ``layout``."""
    return _data(trace, render_trace(trace, config), config, layout)


def window_tasks(trace: Trace, config: Config, layout: str, size: int) -> list[tuple[Window | None, dict]]:
    """The ``data`` of each window task of a trace longer than ``size`` steps (see :mod:`windows`), with its window;
    a trace that fits in one window is one task of :func:`task_data`, with no window. The whole trace is rendered
    once, so each step reads as it does in the whole trace (its number, who made a tool call)."""
    windows = split(trace, size)
    cards = render_trace(trace, config)
    if len(windows) <= 1:
        return [(None, _data(trace, cards, config, layout))]
    entries = [transcript_entry(c, s, config) for c, s in zip(cards, trace.steps)]
    texts = [e["text"] for e in entries]
    out: list[tuple[Window | None, dict]] = []
    for window, part in windows:
        mine = cards[window.start:window.end]
        header = header_html(trace, mine, window=window, before=context(texts, window))
        out.append((window, _data(part, mine, config, layout, window, header, entries[window.start:window.end])))
    return out


def _data(trace: Trace, cards: list[Card], config: Config, layout: str, window: Window | None = None,
          header: str | None = None, transcript: list[dict] | None = None) -> dict:
    data = trace.to_json(config.id_key, config.text_key, config.trace_key)
    data[TRANSCRIPT] = ([transcript_entry(c, s, config) for c, s in zip(cards, trace.steps)] if transcript is None
                        else transcript)
    data[HEADER] = header_html(trace, cards) if header is None else header
    if layout == "paged":
        data[PAGES] = pages(trace, config, cards, window)
    data[N_STEPS] = len(trace.steps)
    data.update(initial_scores(config, len(trace.steps)))
    if window is not None:
        data[WINDOW] = window.to_json()
    if not config.suggestions.prelabel:  # the workbench shows suggestions beside the steps, from this field
        data[SUGGESTED] = beside(TraceLabels([]), config, "")
    return data

