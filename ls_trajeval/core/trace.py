"""The trace model and the trace JSONL reader (on the reading layer, :mod:`.jsonfiles`).

A trace is ``{"trace_id", "task", "trace": [step, ...], "metadata"?}``; a step is
``{"type", "content", "action_input"?, ...}``. Extra keys on a trace or a step are kept
as given: they travel into the Label Studio task unchanged.

Reading never raises on bad input: it yields :class:`TraceError` values that carry the
file, line and field, and goes on with the next line.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import itemgetter, methodcaller
from pathlib import Path
from typing import Any

from .jsonfiles import TraceError, iter_lines

#: Step types the converters emit; the reader accepts any non-empty string.
STEP_TYPES = {
    "thought": "the agent's reasoning, plan or reflection",
    "action": "a tool call: content is the tool name, action_input its arguments",
    "observation": "what a tool or the environment returned",
    "code": "code the agent wrote or ran",
    "message": "a message to or from a user or another agent that is not a tool call",
    "error": "a failed tool call, exception or environment error",
    "system": "a system prompt or configuration message",
    "other": "a record kind a converter does not know, kept verbatim",
}


def _set_action_input(step: Step, value: Any) -> None:
    if value is None:
        step.pop("action_input", None)
    else:
        step["action_input"] = value


class Step(dict):
    """One step: its JSON object itself, ``{"type", "content", "action_input"?, ...}`` with every other key
    (timestamp, metadata, ...) kept as given. Being the object it is written as, a step costs no copy when its
    trace is written (a copy per step was a sixth of writing a converted trace). Make one with :meth:`of`."""

    __slots__ = ()

    type = property(itemgetter("type"), lambda s, v: s.__setitem__("type", v))
    content = property(itemgetter("content"), lambda s, v: s.__setitem__("content", v))
    #: None when the step has none
    action_input = property(methodcaller("get", "action_input"), _set_action_input)

    @classmethod
    def of(cls, type: str, content: str, action_input: Any = None, extra: dict | None = None) -> Step:
        """A step of ``type`` and ``content``, its ``action_input`` when not None, then the keys of ``extra``."""
        s = cls(type=type, content=content)
        if action_input is not None:
            s["action_input"] = action_input
        if extra:
            s.update(extra)
        return s

    def to_json(self) -> dict:
        """The step as a plain JSON object."""
        return dict(self)

    @property
    def action_input_text(self) -> str:
        """The action input as readable text (JSON for structured arguments)."""
        return format_action_input(self.action_input)


@dataclass
class Trace:
    """One agent trace: its id, the task it was given, its steps and its metadata."""
    trace_id: str
    task: str
    steps: list[Step]
    metadata: dict = field(default_factory=dict)
    #: every other top-level key, kept as given
    extra: dict = field(default_factory=dict)

    def to_json(self, id_key: str = "trace_id", text_key: str = "task", trace_key: str = "trace") -> dict:
        """The trace's JSON object; its steps are the trace's own step objects (not copies)."""
        out: dict[str, Any] = {id_key: self.trace_id, text_key: self.task, trace_key: list(self.steps)}
        if self.metadata:
            out["metadata"] = self.metadata
        out.update(self.extra)
        return out


ReadResult = Trace | TraceError


def is_blank(s: Step) -> bool:
    """A step with no text at all (content and action input empty or white space): nothing to judge."""
    c = s.content
    if c and not c.isspace():
        return False
    a = s.action_input
    if a is None or a == "":
        return True
    return a.isspace() if isinstance(a, str) else not a


def blank_steps(steps: list[Step]) -> int:
    """How many of the steps are blank (:func:`is_blank`)."""
    return sum(1 for s in steps if is_blank(s))


def all_blank(steps: list[Step]) -> bool:
    """True when there are steps and none has any text (stops at the first that has)."""
    return bool(steps) and all(is_blank(s) for s in steps)


def blank_trace_error(steps: list[Step], source: str, line: int | None, field: str | None,
                      trace_id: str | None) -> TraceError | None:
    """The refusal of a trace to import whose steps are all empty (nothing to annotate); None when some step has
    text."""
    if not all_blank(steps):
        return None
    return TraceError(source, line, field, f"all {len(steps)} step(s) are empty (no content, no action_input): "
                                           "nothing to annotate", trace_id)


def format_action_input(value: Any) -> str:
    """An action's input as readable text: strings as they are, structured arguments as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False)


def describe(value: Any) -> str:
    """A value's JSON kind, for error messages ('expected a string, got a number')."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def parse_trace(
    obj: Any,
    *,
    source: str = "<input>",
    line: int | None = None,
    id_key: str = "trace_id",
    text_key: str = "task",
    trace_key: str = "trace",
    require_text: bool = False,
) -> ReadResult:
    """Validate one decoded JSON value as a trace; return a Trace or the first TraceError.

    ``require_text`` refuses a trace whose steps are all empty (:func:`blank_trace_error`): a trace to import
    must hold something to annotate (a trace already in a project is read as it is).
    """

    def err(fld: str | None, msg: str, tid: str | None = None) -> TraceError:
        return TraceError(source, line, fld, msg, tid)

    if not isinstance(obj, dict):
        return err(None, f"expected a JSON object, got {describe(obj)}")
    tid = obj.get(id_key)
    if tid is None or tid == "":
        return err(id_key, "missing")
    if isinstance(tid, bool) or not isinstance(tid, (str, int)):
        return err(id_key, f"expected a string, got {describe(tid)}")
    tid = str(tid)
    task = obj.get(text_key, "")
    if task is None:
        task = ""
    if not isinstance(task, str):
        return err(text_key, f"expected a string, got {describe(task)}", tid)
    raw_steps = obj.get(trace_key)
    if raw_steps is None:
        return err(trace_key, "missing", tid)
    if not isinstance(raw_steps, list):
        return err(trace_key, f"expected a list of steps, got {describe(raw_steps)}", tid)
    if not raw_steps:
        return err(trace_key, "empty: a trace needs at least one step", tid)
    steps: list[Step] = []
    for i, raw in enumerate(raw_steps):
        where = f"{trace_key}[{i}]"
        if not isinstance(raw, dict):
            return err(where, f"expected a step object, got {describe(raw)}", tid)
        stype = raw.get("type")
        if stype is None:
            return err(f"{where}.type", "missing", tid)
        if not isinstance(stype, str) or not stype.strip():
            return err(f"{where}.type", f"expected a non-empty string, got {describe(stype)}", tid)
        if "content" not in raw or raw["content"] is None:
            return err(f"{where}.content", "missing", tid)
        content = raw["content"]
        if not isinstance(content, str):
            return err(f"{where}.content", f"expected a string, got {describe(content)}", tid)
        extra = {k: v for k, v in raw.items() if k not in ("type", "content", "action_input")}
        steps.append(Step.of(stype, content, raw.get("action_input"), extra))
    if require_text:
        blank = blank_trace_error(steps, source, line, trace_key, tid)
        if blank is not None:
            return blank
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        return err("metadata", f"expected an object, got {describe(metadata)}", tid)
    extra = {k: v for k, v in obj.items() if k not in (id_key, text_key, trace_key, "metadata")}
    return Trace(tid, task, steps, metadata, extra)


def read_traces(
    path: str | Path,
    *,
    id_key: str = "trace_id",
    text_key: str = "task",
    trace_key: str = "trace",
) -> Iterator[ReadResult]:
    """Stream a trace JSONL file to import: one Trace or TraceError per non-blank line.

    Duplicate ``trace_id`` values inside the file are rejected (the first one wins), and so is a trace
    whose steps are all empty.
    """
    source = str(path)
    seen: dict[str, int] = {}
    for n, value in iter_lines(path):
        if isinstance(value, TraceError):
            yield value
            continue
        result = parse_trace(value, source=source, line=n, id_key=id_key, text_key=text_key, trace_key=trace_key,
                             require_text=True)
        if isinstance(result, Trace):
            first = seen.get(result.trace_id)
            if first is not None:
                yield TraceError(source, n, id_key, f"duplicate trace_id {result.trace_id!r} (first on line {first})",
                                 result.trace_id)
                continue
            seen[result.trace_id] = n
        yield result
