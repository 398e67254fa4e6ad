"""Building steps and traces: the one step constructor, the one place provenance goes, stable ids,
calls paired with their results, and the text rendering of values and tool arguments.

The step convention
===================
Every converter's output follows it; :func:`convention_problems` checks it, and
``tests/converters/test_convention.py`` runs that check on every converter's output for every fixture.

A step's top level holds only these keys:

``type``
    one of :data:`ls_trajeval.core.trace.STEP_TYPES` (thought, action, observation, code, message, error,
    system, other).
``content``
    text, ``""`` where the source has none, never null. For an action: the tool's (or command's) name.
``action_input``
    on actions only, always there: the call's arguments as text (:func:`render_args`), ``""`` when none.
``timestamp``
    optional: when the step happened, exactly as the source wrote it (ISO 8601 text, or an epoch
    number or digit string); the start time for spans and runs. Any other time (an end time), or a
    "timestamp" that is neither text nor a number, goes to metadata.
``metadata``
    optional: an object, never empty, without null values, holding everything else about the step.
``actor``
    optional: who produced the step, ``{"kind": K, "name": N}``. ``kind`` is one of ``user`` (a person),
    ``simulated_user`` (a model playing the user: tau-bench, tau2-bench; its tool calls are its own, not the
    agent's), ``agent`` (the agent under evaluation), ``subagent`` (an agent it started or handed over to),
    ``tool`` (a tool or the environment answering a call) and ``system`` (the harness: system prompts,
    injected context); ``name``, optional, the agent's, model's or tool's own name ("Researcher", "Bash").
    Set it where the source says who spoke; without it the labeling UI infers the actor from the type and
    ``metadata.role`` / ``agent`` / ``tool_name`` (:mod:`ls_trajeval.core.render`).
``render``
    optional, a hint for how the labeling UI shows the step; it never changes ``content``:
    ``{"as": "text" | "code" | "terminal" | "diff", "language": "python", "path": "src/app.py", "folded": true}``,
    every key optional: ``as`` how the body reads (shell output as terminal, a patch as diff), ``language``
    of the code, ``path`` the file the step reads or writes, ``folded`` to start the card folded (injected
    context, boilerplate). Without it the UI decides from the step itself.

Inside a step's ``metadata``:

- ``tool_call_id``: the source's id linking a call and its result; the action and its result both
  carry it. A pairing key a converter makes up itself (an index, a line) is not shown.
- ``tool_name`` on a result: the tool that produced it. ``unpaired: true`` on a result whose call
  the trace does not hold.
- ``role`` (the source's role: user, assistant, ...) and ``agent`` (the agent or model that spoke).
- ``subagent_trace`` on a call that starts a sub-agent, or on its result: the sub-agent's trace id.
- the source's own ids for the record a step came from, under the source's name for them
  (``span_id``, ``run_id``, ``observation_id``, ``message_id``, ``item_id``, ``uuid``, ``step_id``),
  and its place in the tree as ``depth``; ``message_index`` is the position in a message list.
- ``source_line`` / ``source_record``: the JSONL line / JSON list index a step came from, in formats
  where one trace is several records (session logs, event streams).

A trace's ``metadata`` starts with its provenance, written by :func:`finish` from the record's
:class:`~.files.Origin` and nowhere else: ``source_format`` (the converter's name), ``source_file``
(the path as given; ``archive!member`` inside an archive), ``source_line`` (the JSONL line of the
record the trace came from) and ``source_record`` (its index in a JSON list), the last two only where
they apply. The format's own trace-level facts follow; a sub-agent's trace names its parent's trace id as
``parent_trace``. No null values.

The trace id is the source's own id where it has one, else :func:`stable_id` of the file name and the
record's position, so converting the same file again gives the same ids (re-import is idempotent).

Text is kept exactly as the source has it: nothing here escapes, strips or normalises a string (only
null becomes ``""``); structured values become indented JSON.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from ls_trajeval.core.trace import STEP_TYPES, Step, Trace, all_blank

from .errors import BadRecord
from .files import Origin

#: the keys a step may have at its top level (see the module docstring)
STEP_KEYS = frozenset({"type", "content", "action_input", "timestamp", "metadata", "actor", "render"})


# ---------------------------------------------------------------- text

def dumps(value: Any) -> str:
    """Readable JSON text (indented, non-ASCII kept)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # ints beyond 64 bits, non-str keys: let json handle them
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def compact(value: Any) -> str:
    """One-line JSON (for whole records kept as ``other`` steps)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, default=str)


def text(value: Any) -> str:
    """A value that should be text: a string as it is, null as "", anything else as indented JSON."""
    if value is None:
        return ""
    if value.__class__ is str:
        return value
    return dumps(value)


def render_args(args: Any) -> str:
    """Tool arguments as readable text: JSON (structured, or a string holding JSON) indented; any
    other string as it is. The same call reads the same whether its source wrote the arguments as
    an object (Anthropic, MCP) or as JSON text (OpenAI)."""
    if args is None:
        return ""
    if args.__class__ is str:
        s = args.strip()
        if not s or s[0] not in "{[":
            return args
        try:
            parsed = orjson.loads(s)
        except ValueError:
            return args
        return dumps(parsed)
    return dumps(args)


_CALL = re.compile(r"\s*([A-Za-z_][\w.\-]*)\((.*)\)\s*\Z", re.S)


def split_call(written: str) -> tuple[str, str] | None:
    """(tool name, arguments as written) of an action written as a call, ``search(origin='JFK')`` or
    ``Bash({"command": "ls"})``; None for any other text."""
    m = _CALL.match(written)
    return None if m is None else (m.group(1), m.group(2))


# ---------------------------------------------------------------- steps

def step(type_: str, content: Any, action_input: str | None = None, metadata: dict | None = None) -> Step:
    """The one way to make a step. ``metadata`` is a dict made for this step (it becomes the step's
    metadata, not a copy): its null values are dropped, so a key appears only where known, and its
    ``timestamp`` goes to the step's top level when it is text or a number."""
    # a hot path (every step of every converter): the step object is built in its output order, key by key
    s = Step(type=type_, content=content if content.__class__ is str else text(content))
    if action_input is not None:
        s["action_input"] = action_input
    if not metadata:
        return s
    if None in metadata.values():  # most steps have no null: the dict is rebuilt only when one has
        metadata = {k: v for k, v in metadata.items() if v is not None}
    ts = metadata.get("timestamp")
    if ts is not None and (ts.__class__ is str or ts.__class__ is int or ts.__class__ is float):
        del metadata["timestamp"]
        s["timestamp"] = ts
    # else none, or not a time a reader can show (an object, a boolean): it stays in metadata
    if metadata:
        s["metadata"] = metadata
    return s


def step_metadata(s: Step) -> dict:
    """A step's metadata object, created when it has none (to add to a step already made)."""
    return s.setdefault("metadata", {})


class StepList:
    """Steps in order, with each tool result moved right after its call.

    Parallel calls arrive as call A, call B, result A, result B; annotators judge a call by its
    result, so the trace shows A, result A, B, result B. ``key`` pairs a call with its result (the
    source's call id, or one the converter makes up); the steps show an id only where the converter
    put one in their metadata. A result whose call is unknown stays where it came, marked ``unpaired``.

    Some sources reuse a call id within one trace (tau-bench's recorded OpenAI ids, a retried call):
    a result goes to the earliest call with its key that has no result yet, and only when every such
    call is answered, after the latest one (a second result of the same call).
    """

    def __init__(self) -> None:
        self._slots: list[list[Step]] = []
        self._open: dict[str, list[list[Step]]] = {}  # calls with no result yet, oldest first, by key
        self._last: dict[str, list[Step]] = {}  # the latest call of each key

    def add(self, s: Step) -> None:
        self._slots.append([s])

    def call(self, key: Any, s: Step) -> None:
        slot = [s]
        self._slots.append(slot)
        if key is not None and key != "":
            k = key if key.__class__ is str else str(key)
            self._last[k] = slot
            waiting = self._open.get(k)
            if waiting is None:
                self._open[k] = [slot]
            else:
                waiting.append(slot)

    def result(self, key: Any, s: Step) -> bool:
        """Put a result after its call; False (and kept in place) when the call is unknown."""
        slot = None
        if key is not None:
            k = key if key.__class__ is str else str(key)
            waiting = self._open.get(k)
            slot = waiting.pop(0) if waiting else self._last.get(k)
        if slot is None:
            if key is not None:
                step_metadata(s)["unpaired"] = True
            self._slots.append([s])
            return False
        slot.append(s)
        return True

    def has_call(self, key: Any) -> bool:
        return key is not None and str(key) in self._last

    def steps(self) -> list[Step]:
        return [s for slot in self._slots for s in slot]

    def __len__(self) -> int:
        return len(self._slots)


class StepBatch:
    """One record's steps, held back until the record has converted whole, then moved into the trace's
    :class:`StepList` by :meth:`commit`. In a trace spread over many records (a session log), a record
    that fails part-way thus adds none of its steps (:meth:`discard` them), and its neighbours still
    pair their calls and results across it. It takes the same ``add`` / ``call`` / ``result`` as a
    StepList (so a dialect helper can write into either); pairing happens at :meth:`commit`. One batch
    serves record after record.
    """

    __slots__ = ("_ops",)

    def __init__(self) -> None:
        self._ops: list[tuple] = []  # (key, step, 0 add / 1 call / 2 result)

    def add(self, s: Step) -> None:
        self._ops.append((None, s, 0))

    def call(self, key: Any, s: Step) -> None:
        self._ops.append((key, s, 1))

    def result(self, key: Any, s: Step) -> None:
        self._ops.append((key, s, 2))

    def commit(self, into: StepList) -> None:
        for key, s, op in self._ops:
            if op == 0:
                into.add(s)
            elif op == 1:
                into.call(key, s)
            else:
                into.result(key, s)
        self._ops.clear()

    def discard(self) -> None:
        self._ops.clear()


# ---------------------------------------------------------------- traces

#: what json.dumps(parts, sort_keys=True, default=str) makes, without building an encoder per call (once per trace)
_ID_JSON = json.JSONEncoder(sort_keys=True, default=str)


def stable_id(*parts: Any) -> str:
    """A trace id that is the same on every run for the same source (so re-import is idempotent)."""
    import hashlib  # here: loading OpenSSL is a tenth of the start-up, and most records carry their own id

    return hashlib.sha1(_ID_JSON.encode(parts).encode()).hexdigest()[:16]


def default_id(origin: Origin, *more: Any) -> str:
    """The id of a record that has none of its own: stable for the same file name and position."""
    return stable_id(Path(origin.source).name, origin.position, *more)


def finish(origin: Origin, trace_id: Any, task: str | None, steps: list[Step], metadata: dict | None = None,
           field: str | None = None) -> Trace:
    """The record's Trace, its metadata the origin's provenance then ``metadata`` (null values dropped).

    A record that made no steps, or only steps without any text, or whose id is empty, is rejected
    (BadRecord naming ``field``): a converter that read nothing of a record has failed, not converted it.
    """
    tid = trace_id if trace_id.__class__ is str else str(trace_id)
    if not steps:
        raise BadRecord(field, "no steps: the record holds nothing to annotate", tid, about_record=True)
    first = steps[0].content
    if (not first or first.isspace()) and all_blank(steps):  # a first step with text settles it (a hot path)
        raise BadRecord(field, f"no text: all {len(steps)} step(s) made of it are empty, nothing to annotate", tid,
                        about_record=True)
    if not tid.strip():  # a converter's own fallback should have given one; never emit an empty id
        raise BadRecord(field, "the record's trace id is empty")
    meta = origin.provenance()
    if metadata:
        meta.update(metadata)
    if None in meta.values():
        meta = {k: v for k, v in meta.items() if v is not None}
    return Trace(tid, task or "", steps, meta)


def convention_problems(trace: Trace) -> list[str]:
    """What in a converted trace breaks the step convention (see the module docstring); [] when nothing."""
    out = []
    meta = trace.metadata
    for k in ("source_format", "source_file"):
        if not isinstance(meta.get(k), str) or not meta[k]:
            out.append(f"trace metadata.{k}: missing")
    out += [f"trace metadata.{k}: null" for k, v in meta.items() if v is None]
    if not isinstance(trace.trace_id, str) or not trace.trace_id.strip():
        out.append("trace_id: empty")
    for i, s in enumerate(trace.steps):
        where = f"step {i} ({s.type})"
        if s.type not in STEP_TYPES:
            out.append(f"{where}: unknown type")
        if not isinstance(s.content, str):
            out.append(f"{where}: content is not text")
        if s.type == "action":
            if not isinstance(s.action_input, str):
                out.append(f"{where}: action_input is not text")
        elif s.action_input is not None:
            out.append(f"{where}: action_input on a step that is not an action")
        out += [f"{where}: key {k!r} at the top level" for k in s if k not in STEP_KEYS]
        ts = s.get("timestamp", "")
        if ts is None or isinstance(ts, bool) or not isinstance(ts, (str, int, float)):
            out.append(f"{where}: timestamp is {ts!r}")
        if "metadata" in s:
            m = s["metadata"]
            if not isinstance(m, dict) or not m:
                out.append(f"{where}: metadata is not a non-empty object")
            else:
                out += [f"{where}: metadata.{k} is null" for k, v in m.items() if v is None]
    return out
