"""Potato's agent traces: the files Potato's trace converter writes and its example projects read.

A record ``{id, task_description | task, agent_name?, model?, metadata_table?, ...}`` holds its steps
in one of three lists (the first non-empty one of these is read; the others are the same trace again):

``conversation: [{speaker, text, step_type?, tool?, agent_id?, turn_id?, addressee?, run_id?}]``
    Potato's own trace shape. The speaker says what a turn is: ``Agent (Thought)`` (or ``<agent>
    (Thought)``, ``(Plan)``, ``(Reasoning)``) a thought; ``Agent (Action)`` an action, its text a call
    ``search_flights(origin='JFK')`` split into tool and input (text that is no call is the action as
    written); ``Agent (<Tool>)`` (``Agent (Bash)``, Potato's Claude Code and SWE-agent output) an action
    of that tool; ``Agent (Patch)`` code; ``Environment`` / ``Observation`` / ``Tool`` what the preceding
    action returned (``Environment (Error)`` an error); ``System`` a system step; ``User`` (or ``User
    (<sender>)``, ``Human``) a user message; ``Agent`` / ``Assistant`` the model's message; any other
    name an agent's message. An explicit ``step_type`` wins over the speaker.
``structured_turns: [{role, content, tool_calls: [{tool, input, output, output_type?}]}]``
    (Potato's coding-agent traces): a user turn is a message; an assistant turn's text a message (a
    thought when it calls tools), then each call an action followed by its output.
``steps: [{agent, content, tool_calls?}]`` (Potato's multi-agent examples)
    each step an agent's message (an agent named like ``Tool`` / ``Environment`` an observation); step
    objects written as ``{speaker, text}``, ``{step_type, content}`` or ``{thought, action, observation |
    result}`` are read as Potato's own trace display reads them; any other object is kept as ``other``.

The task is ``task_description`` (else ``task``, else the first user message). Everything else of
the record (``agent_name``, ``model``, ``usage``, ``metadata_table``, ``gold_labels``, ...) is kept in
the trace metadata as given.
"""
from __future__ import annotations

import re
from typing import Any

from ls_trajeval.core.trace import STEP_TYPES, Step

from .base import Converter, Sample
from .support.errors import BadRecord
from .support.files import Origin, sample_objects
from .support.steps import compact, default_id, finish, render_args, split_call, step, text

NAME = "potato"
LISTS = ("conversation", "structured_turns", "steps")
_SPEAKER = re.compile(r"^\s*(.*?)\s*\(([^()]*)\)\s*$", re.S)
_THOUGHT = frozenset({"thought", "thinking", "reasoning", "plan", "planning", "reflection"})
_ENVIRONMENT = frozenset({"environment", "observation", "tool", "tool result", "tool output", "result", "output",
                          "function"})
_USER = frozenset({"user", "human"})
_MODEL = frozenset({"agent", "assistant", "ai", "model"})
#: keys of a turn read into the step itself; every other key goes to the step's metadata as given
_TURN_OWN = frozenset({"speaker", "text", "step_type", "tool"})


def _speaker_kind(speaker: str) -> tuple[str, dict, str | None]:
    """(step type, metadata, tool name or None) of a Potato speaker label."""
    m = _SPEAKER.match(speaker)
    name, annot = (m.group(1), m.group(2).strip()) if m else (speaker.strip(), "")
    low, note = name.lower(), annot.lower()
    meta: dict = {"speaker": speaker} if speaker else {}
    if low in _ENVIRONMENT:
        return ("error" if note == "error" else "observation"), meta, None
    if low == "system":
        return "system", meta, None
    if low in _USER:
        meta["role"] = "user"
        if annot:
            meta["agent"] = annot
        return "message", meta, None
    if name and low not in _MODEL:
        meta["agent"] = name
    elif low in _MODEL:
        meta["role"] = "assistant"
    if note in _THOUGHT:
        return "thought", meta, None
    if note == "action":
        return "action", meta, None
    if note == "patch":
        return "code", meta, None
    if note == "error":
        return "error", meta, None
    if annot:  # "Agent (Bash)": an action of that tool
        return "action", meta, annot
    return "message", meta, None


def _action(written: str, tool: str | None) -> tuple[str, str]:
    """(tool name, input) of an action's text: a call split, else the text is the input of ``tool``,
    else the action as written."""
    call = split_call(written)
    if call is not None:
        return call[0], render_args(call[1])
    if tool:
        return tool, render_args(written)
    return written, ""


class _Steps:
    """Steps in order; an observation carries the tool of the action it follows."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self._tool: str | None = None  # the tool of the latest step, when it is an action

    def call(self, name: str, given: str, meta: dict) -> None:
        self.steps.append(step("action", name, given, meta))
        self._tool = name

    def add(self, type_: str, content: str, meta: dict, tool: str | None = None) -> None:
        if type_ == "action":
            self.call(*_action(content, tool), meta)
            return
        if type_ in ("observation", "error") and self._tool is not None:
            meta.setdefault("tool_name", self._tool)
        self.steps.append(step(type_, content, None, meta))
        self._tool = None


def _turn_meta(item: dict, i: int, own: frozenset) -> dict:
    meta = {k: v for k, v in item.items() if k not in own}
    meta["message_index"] = i
    return meta


def _typed(item: dict) -> str | None:
    t = item.get("step_type")
    return t if isinstance(t, str) and t in STEP_TYPES else None


def _conversation_turn(item: dict, i: int, out: _Steps) -> None:
    speaker = item.get("speaker")
    kind, meta, tool = _speaker_kind(speaker if isinstance(speaker, str) else text(speaker))
    meta.update(_turn_meta(item, i, _TURN_OWN))
    agent = item.get("agent_id")
    if isinstance(agent, str) and agent:
        meta["agent"] = agent
    explicit = item.get("tool")
    out.add(_typed(item) or kind, text(item.get("text")), meta,
            explicit if isinstance(explicit, str) and explicit else tool)


def _conversation(turns: list, field: str, out: _Steps) -> None:
    for i, item in enumerate(turns):
        if not isinstance(item, dict):
            raise BadRecord(f"{field}[{i}]", "expected a turn object with speaker and text")
        _conversation_turn(item, i, out)


def _structured_turns(turns: list, field: str, out: _Steps) -> None:
    for i, t in enumerate(turns):
        where = f"{field}[{i}]"
        if not isinstance(t, dict):
            raise BadRecord(where, "expected a turn object with role, content and tool_calls")
        role = t.get("role")
        calls = t.get("tool_calls") or []
        if not isinstance(calls, list):
            raise BadRecord(f"{where}.tool_calls", "expected a list of tool calls")
        meta = _turn_meta(t, i, frozenset({"role", "content", "tool_calls"}))
        if role is not None:
            meta["role"] = role
        said = text(t.get("content"))
        if role == "system":
            out.add("system", said, meta)
        elif role == "tool":
            out.add("observation", said, meta)
        elif said or not calls:
            out.add("thought" if calls and role == "assistant" else "message", said, meta)
        for k, c in enumerate(calls):
            if not isinstance(c, dict):
                raise BadRecord(f"{where}.tool_calls[{k}]", "expected an object with tool, input and output")
            name = c.get("tool", c.get("name"))
            if not isinstance(name, str) or not name:
                raise BadRecord(f"{where}.tool_calls[{k}].tool", "missing: a tool call needs the tool's name")
            call_meta = {"message_index": i, "call_index": k}
            out.call(name, render_args(c.get("input", c.get("args"))), dict(call_meta))
            if "output" in c and c["output"] is not None:
                kind = "error" if c.get("output_type") == "error" or c.get("is_error") is True else "observation"
                extra = {k2: v for k2, v in c.items() if k2 not in ("tool", "name", "input", "args", "output")}
                out.steps.append(step(kind, text(c["output"]), None, {"tool_name": name, **call_meta, **extra}))


def _steps(items: list, field: str, out: _Steps) -> None:
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise BadRecord(f"{field}[{i}]", "expected a step object")
        if "speaker" in item and "text" in item:
            _conversation_turn(item, i, out)
            continue
        agent = item.get("agent")
        if any(k in item for k in ("thought", "action", "observation", "result")) and "content" not in item:
            meta = _turn_meta(item, i, frozenset({"thought", "action", "observation", "result"}))
            if agent is not None:
                meta["agent"] = agent
            for key, kind in (("thought", "thought"), ("action", "action"), ("observation", "observation"),
                              ("result", "observation")):
                v = item.get(key)
                if v is not None and v != "":
                    if kind == "action" and isinstance(v, dict):
                        name = v.get("tool", v.get("name"))
                        args = v.get("params", v.get("args", v.get("input")))
                        out.call(text(name), render_args(args), dict(meta))
                    else:
                        out.add(kind, text(v), dict(meta))
            continue
        if "content" in item:
            kind, meta, _ = _speaker_kind(agent if isinstance(agent, str) else "")
            meta.pop("speaker", None)  # the name came from "agent", which the step keeps
            if agent is not None and "agent" not in meta:
                meta["agent"] = agent
            meta.update(_turn_meta(item, i, frozenset({"agent", "content", "step_type", "tool_calls"})))
            calls = item.get("tool_calls") or []
            said = text(item.get("content"))
            typed = _typed(item)
            if said or not calls:
                out.add(typed or ("thought" if calls and kind == "message" else kind), said, meta)
            for k, c in enumerate(calls if isinstance(calls, list) else []):
                if not isinstance(c, dict):
                    raise BadRecord(f"{field}[{i}].tool_calls[{k}]", "expected an object with name and args")
                out.call(
                    text(c.get("name", c.get("tool"))),
                    render_args(c.get("args", c.get("arguments", c.get("input")))),
                    {"agent": agent, "message_index": i, "call_index": k},
                )
            continue
        out.add("other", compact(item), {"message_index": i})


_READERS = {"conversation": _conversation, "structured_turns": _structured_turns, "steps": _steps}


def _list_of(rec: dict) -> str:
    present = [k for k in LISTS if k in rec]
    for k in present:
        if not isinstance(rec[k], list):
            raise BadRecord(k, f"expected a list, got {type(rec[k]).__name__}")
    for k in present:
        if rec[k]:
            return k
    if present:
        raise BadRecord(present[0], "empty: the record has no turns to annotate")
    raise BadRecord(None, "no conversation, structured_turns or steps list")


def _first_user(steps: list[Step]) -> str | None:
    for s in steps:
        if s.type == "message" and s.get("metadata", {}).get("role") == "user":
            return s.content
    return None


def one(rec: Any, origin: Origin) -> list:
    if not isinstance(rec, dict):
        raise BadRecord(None, "expected a trace object with a conversation, structured_turns or steps list")
    key = _list_of(rec)
    out = _Steps()
    _READERS[key](rec[key], key, out)
    task = next((rec[k] for k in ("task_description", "task") if isinstance(rec.get(k), str) and rec[k]), None)
    if task is None:
        task = _first_user(out.steps)
    meta = {"potato_field": key}
    for k, v in rec.items():
        if k not in LISTS and k not in ("id", "task_description", "task"):
            meta[k] = v
    tid = rec.get("id")
    return [finish(origin, tid if tid not in (None, "") else default_id(origin), task, out.steps, meta, key)]


def _score(rec: Any) -> float:
    if not isinstance(rec, dict):
        return 0.0
    conv = rec.get("conversation")
    if isinstance(conv, list):
        head = conv[:20]
        if head and all(isinstance(t, dict) and "speaker" in t and "text" in t for t in head):
            return 0.9
        if not head and "task_description" in rec:  # Potato writes an empty conversation for what it could not read
            return 0.8
    turns = rec.get("structured_turns")
    if isinstance(turns, list) and turns:
        if all(isinstance(t, dict) and "role" in t and ("content" in t or "tool_calls" in t) for t in turns[:20]):
            return 0.9
    steps = rec.get("steps")
    if isinstance(steps, list) and steps:
        head = steps[:20]
        if all(
            isinstance(s, dict) and ("agent" in s and "content" in s or "speaker" in s and "text" in s) for s in head
        ):
            return 0.85
    return 0.0


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    return _score(objs[0]) if objs else 0.0



CONVERTER = Converter(
    name=NAME,
    description="Potato's agent traces: its trace converter's output and example projects (conversation, "
                "structured_turns, steps)",
    shapes='{"id", "task_description", "conversation": [{speaker, text}]} or {"structured_turns": [{role, content, '
           'tool_calls: [{tool, input, output}]}]} or {"task", "steps": [{agent, content}]}',
    detect=detect,
    one=one,
)
