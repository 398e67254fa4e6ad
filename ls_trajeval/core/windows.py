"""Long traces worked in windows of steps (pure).

Label Studio's editor costs every click in proportion to the steps a task holds (a mark on a 1000-step trace takes
seconds, see docs/annotating.md), so a trace longer than the window size is imported as several tasks, one per
window of consecutive steps. A window task is an ordinary task of a shorter trace: its data holds the trace's id,
task and metadata, and under the trace key only its own steps, so the editor, the decoder, the ML backend and the
judges work on it unchanged; its ``te_window`` field (:data:`~.fields.WINDOW`) says where the steps sit in the whole
trace. What the annotator sees numbers the steps as in the whole trace and shows, above the window, the task and the
steps before it. The export puts one annotator's windows back together into one record of the whole trace
(:func:`~.records.build_windowed_record`), so scores, agreement and everything read from the export are the whole
trace's.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .fields import WINDOW
from .labels import StepLabel, TraceLabels
from .trace import Trace

__all__ = ["Window", "plan", "split", "window_of", "labels_in", "placed", "incomplete"]


@dataclass(frozen=True)
class Window:
    """Where a window task's steps sit in their trace: steps ``start`` to ``end`` (exclusive, 0-based) of ``total``,
    the ``index``-th (0-based) of ``count`` windows."""

    index: int
    count: int
    start: int
    end: int
    total: int

    def to_json(self) -> dict:
        """The task field's value."""
        return {"index": self.index, "count": self.count, "start": self.start, "end": self.end, "total": self.total}

    @property
    def size(self) -> int:
        """How many steps the window holds."""
        return self.end - self.start


def plan(n_steps: int, size: int) -> list[Window]:
    """The windows of a trace of ``n_steps`` steps, at most ``size`` steps each and as even as can be (250 steps in
    windows of 100 are 84 + 83 + 83, not 100 + 100 + 50); one window for a trace that fits in one, none for an
    empty one."""
    if size < 1:
        raise ValueError(f"a window holds at least one step, not {size}")
    if n_steps <= 0:
        return []
    count = -(-n_steps // size)
    base, extra = divmod(n_steps, count)
    windows, start = [], 0
    for i in range(count):
        end = start + base + (1 if i < extra else 0)
        windows.append(Window(i, count, start, end, n_steps))
        start = end
    return windows


def split(trace: Trace, size: int) -> list[tuple[Window, Trace]]:
    """``trace`` as windows of at most ``size`` steps, each with the trace of its own steps (same id, task, metadata
    and other keys; the steps are the trace's own objects, not copies)."""
    return [(w, Trace(trace.trace_id, trace.task, trace.steps[w.start:w.end], trace.metadata, trace.extra))
            for w in plan(len(trace.steps), size)]


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def window_of(data: Mapping) -> Window | None:
    """The window a task's ``data`` is, or None for a task of a whole trace (or a ``te_window`` that does not read
    as one: the task is then read as the trace it holds)."""
    raw = data.get(WINDOW)
    if not isinstance(raw, Mapping):
        return None
    index, count, start, end, total = (_count(raw.get(k)) for k in ("index", "count", "start", "end", "total"))
    if index is None or count is None or start is None or end is None or total is None:
        return None
    if not (index < count and start < end <= total):
        return None
    return Window(index, count, start, end, total)


def labels_in(labels: TraceLabels, window: Window) -> TraceLabels:
    """The labels of the whole trace's steps that ``window`` holds, numbered from 0 as its task's steps are (cause
    links to a step before the window are left out: a window task cannot show them)."""
    steps = [replace(s, step_index=s.step_index - window.start,
                     caused_by=tuple(c - window.start for c in s.caused_by if c >= window.start))
             for s in labels.steps if window.start <= s.step_index < window.end]
    return TraceLabels(steps, dict(labels.whole_trace))


def placed(step: StepLabel, window: Window) -> StepLabel:
    """A label of a window task's step (numbered from 0 in the window) numbered as in the whole trace."""
    return replace(step, step_index=step.step_index + window.start,
                   caused_by=tuple(c + window.start for c in step.caused_by))


def incomplete(windows: Sequence[Window]) -> str | None:
    """What keeps ``windows`` (one trace's, in their order) from being the whole trace, or None when they are: every
    window of one plan, once each, in order, steps end to end."""
    if not windows:
        return "no window"
    count, total = windows[0].count, windows[0].total
    if any(w.count != count or w.total != total for w in windows):
        return "its windows come from different imports (their counts of windows or steps differ)"
    missing = sorted(set(range(count)) - {w.index for w in windows})
    if missing:
        return f"window{'s' if len(missing) > 1 else ''} {', '.join(str(i + 1) for i in missing)} of {count} missing"
    if len(windows) != count or [w.index for w in windows] != list(range(count)):
        return "a window is there more than once"
    if windows[0].start != 0 or windows[-1].end != total or any(a.end != b.start for a, b in zip(windows, windows[1:])):
        return "its windows' steps do not join up"
    return None
