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
    text, ``""`` where the source has none, never null. For an action: the tool's (or command's) name. An agent's
    message or thought that was empty in the source (an empty generation) reads ``(empty response)``, with
    ``empty_response: true`` in its metadata.
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

#: the content of an agent's turn that was empty in the source
EMPTY_RESPONSE = "(empty response)"
#: the roles of messages that are not the agent's own turn (the user's, the system's, a tool's, a task given)
NOT_AGENT_ROLES = frozenset({"user", "human", "system", "developer", "tool", "function", "task", "hints",
                             "instructions", "compacted", "environment", "info"})


#: who produced a step: the kinds of ``actor`` (see the module docstring)
ACTOR_KINDS = frozenset({"user", "simulated_user", "agent", "subagent", "tool", "system"})
#: the source roles of a person's turn
USER_ROLES = frozenset({"user", "human"})
#: the source roles of what the harness put in front of the agent (a system prompt, a task or instructions given)
HARNESS_ROLES = frozenset({"system", "developer", "task", "instructions", "hints", "compacted"})
#: the types of step an agent produces when the source says no more (a result is a tool's or the environment's)
AGENT_TYPES = frozenset({"thought", "action", "code", "message"})
#: the source roles that say who spoke a message
_ROLE_KIND = {**dict.fromkeys(USER_ROLES, "user"), **dict.fromkeys(HARNESS_ROLES, "system")}
#: what the step constructor looks into, by the step's type: a message (empty? who spoke, by its role), a thought
#: (empty?), a result (who answered, by its tool), a system step (the harness's, folded); the others, nothing
_MESSAGE, _THOUGHT, _RESULT, _SYSTEM = 1, 2, 3, 4
_LOOK_INTO = {"message": _MESSAGE, "thought": _THOUGHT, "observation": _RESULT, "error": _RESULT, "system": _SYSTEM}
#: the keys ``render`` may hold, and the values of its ``as``
RENDER_KEYS = frozenset({"as", "language", "path", "folded"})
RENDER_AS = frozenset({"text", "code", "terminal", "diff"})
#: tools that run a shell command (their call and its output read as a terminal), by the names the formats give
SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "local_shell", "exec_command", "execute_bash", "run_shell_command",
                         "execute_command", "terminal", "cmd_run", "run_command", "container.exec", "shell_command"})
#: tools whose arguments are a patch
PATCH_TOOLS = frozenset({"apply_patch"})
#: tools that read or write the file their arguments name (Claude Code, OpenHands, Gemini CLI, Cline, SWE-agent,
#: Codex, Aider's and the generic names), whose calls carry its ``path``
FILE_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "Read", "NotebookEdit", "str_replace_editor", "edit_file",
                        "write_file", "read_file", "replace", "create_file", "view", "write_to_file", "apply_diff",
                        "read_many_files", "insert_content", "search_and_replace", "str_replace", "edit", "open",
                        "create", "text_editor", "str_replace_based_edit_tool"})
#: the tools whose calls get a render hint: the others' are not looked into (a set lookup per call)
_HINTED_TOOLS = SHELL_TOOLS | PATCH_TOOLS | FILE_TOOLS
#: the argument that names the file a tool reads or writes, by the names the formats give it
PATH_ARGS = ("file_path", "path", "absolute_path", "filename", "target_file", "notebook_path")


#: the actor objects made so far, by kind and name: steps share them (no dict made per step), so a converter replaces
#: a step's actor, never changes one in place
_ACTORS: dict[tuple[str, str | None], dict] = {}
#: ``who`` for a step whose source says no more than its type about who made it (a converter that knows so, as a
#: chat dialect knows an assistant's turn): no actor, and none looked for
NO_ACTOR: dict = {}
#: the render hints every step of a kind shares (as the actors: replaced, never changed)
FOLDED = {"folded": True}
TERMINAL = {"as": "terminal"}
DIFF = {"as": "diff"}


def actor(kind: str, name: str | None = None) -> dict:
    """The actor ``{"kind", "name"?}`` (one object per kind and name, shared by the steps that have it)."""
    found = _ACTORS.get((kind, name))
    if found is None:
        found = {"kind": kind, "name": name} if name else {"kind": kind}
        if len(_ACTORS) < 10_000:  # names come from the logs: a flood of distinct ones is not kept
            _ACTORS[(kind, name)] = found
            if name and (kind == "tool" or kind == "agent"):
                (_TOOL_ACTORS if kind == "tool" else _AGENT_ACTORS)[name] = found
    return found


for _kind in ACTOR_KINDS:  # the nameless ones, looked up directly by the step constructor
    actor(_kind)
#: the named tools' and agents' actors, by name alone (looked up once per result, once per agent step)
_TOOL_ACTORS: dict[str, dict] = {}
_AGENT_ACTORS: dict[str, dict] = {}
#: the actor of a message by its source role
_ROLE_ACTORS = {role: _ACTORS[kind, None] for role, kind in _ROLE_KIND.items()}
_SYSTEM_ACTOR = _ACTORS["system", None]


def step(type_: str, content: Any, action_input: str | None = None, metadata: dict | None = None,
         who: dict | None = None, render: dict | None = None) -> Step:
    """The one way to make a step. ``metadata`` is a dict made for this step (it becomes the step's
    metadata, not a copy): its null values are dropped, so a key appears only where known, and its
    ``timestamp`` goes to the step's top level when it is text or a number. An agent's message or thought
    without any text (an empty generation: real data, something to judge) says so: content ``(empty response)``,
    ``empty_response: true`` in its metadata; other empty steps (a tool that returned nothing, an empty user
    message) stay as they are.

    ``who`` (the step's actor, from :func:`actor`, or :data:`NO_ACTOR`: none, and none looked for), when the
    converter does not give it, is what the source role says where it says more than the type: a person's turn (role
    user or human) the user's, what the harness set (a system step, role system, developer, task, instructions) the
    system's, a result the named tool's (``metadata.tool_name``, or the call's name once :class:`StepList` pairs it).
    A step left without one is the agent's or a tool's by its type; multi-agent formats name their agents with
    :func:`name_agents` (or :func:`agent_actor` as ``who``). A system step starts folded unless ``render`` says
    otherwise."""
    # a hot path (every step of every converter, benchmarks/converter_instructions.py): the step object is built in
    # its output order, key by key, and what is looked into for the type is found with one lookup
    if content.__class__ is not str:
        content = text(content)
    look = _LOOK_INTO.get(type_)  # None for an action, code or other step: nothing to look into
    if look is not None and look <= _THOUGHT and (not content or content.isspace()) and action_input is None \
            and (metadata is None or metadata.get("role") not in NOT_AGENT_ROLES):
        content = EMPTY_RESPONSE
        metadata = {**(metadata or {}), "empty_response": True}
    s = Step()  # (filled key by key: cheaper than keyword arguments, which make a dict of their own first)
    s["type"] = type_
    s["content"] = content
    if action_input is not None:
        s["action_input"] = action_input
    if metadata:
        # most steps have no null: the dict is rebuilt only when one has. An identity test per value, written out:
        # ``None in metadata.values()`` compares each value with None by rich comparison, which a value of another
        # type answers the long way (this and the step filled key by key: about 2% of a chat format's conversion,
        # benchmarks/converter_instructions.py)
        for v in metadata.values():
            if v is None:
                metadata = {k: v for k, v in metadata.items() if v is not None}
                break
        if "timestamp" in metadata:
            ts = metadata["timestamp"]
            if ts.__class__ is str or ts.__class__ is int or ts.__class__ is float:
                del metadata["timestamp"]
                s["timestamp"] = ts
            # else not a time a reader can show (an object, a boolean): it stays in metadata
        if metadata:
            s["metadata"] = metadata
    if who is not None:
        if who:  # an actor, not NO_ACTOR
            s["actor"] = who
    elif look is not None:
        # who spoke, where the source says more than the type (a person's or the harness's message, a named tool's
        # result, a system step); the rest the labeling UI reads from the type and metadata. The tests are as few
        # as the type allows: an actor on every step cost the chat formats a seventh of their conversion
        # (benchmarks/converter_instructions.py). Multi-agent formats name their agents with :func:`name_agents`.
        if look == _SYSTEM:
            s["actor"] = _SYSTEM_ACTOR
            if render is None:
                render = FOLDED
        elif metadata and look != _THOUGHT:
            if look == _MESSAGE:
                role = metadata.get("role")
                if role.__class__ is str and role in _ROLE_ACTORS:
                    s["actor"] = _ROLE_ACTORS[role]
            else:
                name = metadata.get("tool_name")
                if name.__class__ is str and name:
                    s["actor"] = _TOOL_ACTORS.get(name) or actor("tool", name)
    if render is not None:
        s["render"] = render
    return s


def agent_actor(name: str) -> dict:
    """The actor of the agent named ``name``, as :func:`name_agents` gives it (for a converter that names its agents'
    steps as it makes them)."""
    return _AGENT_ACTORS.get(name) or actor("agent", name)


def role_actor(role: Any) -> dict | None:
    """The actor :func:`step` gives a message of the source role ``role`` (a person's, the harness's), else None."""
    return _ROLE_ACTORS.get(role) if role.__class__ is str else None


def name_agents(steps: list[Step], kind: str = "agent") -> None:
    """Each agent step (thought, action, code, message) without an actor gets its agent's: ``metadata.agent``, the
    agent of a multi-agent log (CrewAI, AutoGen, Who&When, OpenAI Agents, LangGraph), as ``kind``."""
    named = _AGENT_ACTORS if kind == "agent" else {}
    for s in steps:
        meta = s.get("metadata")
        # most steps name no agent: that is tested first (a pass over every step of these formats)
        if meta is not None and "agent" in meta and s["type"] in AGENT_TYPES and "actor" not in s:
            name = meta["agent"]
            if name.__class__ is str and name:
                s["actor"] = named.get(name) or actor(kind, name)


def call_render(tool: Any, args: Any) -> dict | None:
    """How a tool call reads, where its tool says more than its text: a shell command as a terminal, a patch as a
    diff, and the file the call reads or writes (``args``: the call's arguments, an object or JSON text)."""
    if tool in SHELL_TOOLS and not (args.__class__ is str and '"apply_patch"' in args):
        return TERMINAL
    if tool in PATCH_TOOLS or tool in SHELL_TOOLS:  # apply_patch, or Codex's shell running ["apply_patch", patch]
        patch = args if args.__class__ is str else args.get("input") if isinstance(args, dict) else None
        if tool in SHELL_TOOLS and isinstance(patch, str) and patch[:1] == "{":
            try:
                command = orjson.loads(patch).get("command")
            except (ValueError, AttributeError):
                command = None
            patch = command[1] if isinstance(command, list) and len(command) > 1 else None
        path = patch_path(patch) if isinstance(patch, str) else None
        return {"as": "diff", "path": path} if path else DIFF
    if args.__class__ is str and args[:1] == "{":
        try:
            args = orjson.loads(args)
        except ValueError:
            return None
    if isinstance(args, dict):
        for k in PATH_ARGS:
            v = args.get(k)
            if v.__class__ is str and v:
                return {"path": v}
    return None


#: how a unified diff's text starts (a shell's output that may be one is looked into further)
_DIFF_STARTS = ("diff --git ", "--- ")


def result_render(tool: Any, content: str) -> dict:
    """How a shell command's output reads: the unified diff it printed (``git diff``) as a diff, else a terminal."""
    if content.startswith("diff --git ") or content.startswith("--- ") and "\n+++ " in content[:2000]:
        return DIFF
    return TERMINAL


def patch_path(patch: str) -> str | None:
    """The first file a patch touches (``*** Update File: x`` of apply_patch, ``+++ b/x`` of a unified diff)."""
    for line in patch.splitlines()[:50]:
        for head in ("*** Update File: ", "*** Add File: ", "*** Delete File: ", "+++ b/", "+++ "):
            if line.startswith(head):
                path = line[len(head):].strip()
                if path and path != "/dev/null":
                    return path
    return None


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
        # one list of the steps in their order: a result goes at the end when its call's group (the call and the
        # results it has so far) ends the list, the usual case, else it is inserted after the group (parallel calls);
        # no list per step, and no pass to flatten them at the end (benchmarks/converter_instructions.py)
        self._steps: list[Step] = []
        # a call's group is [the call, the last step of its group]
        self._open: dict[str, list[list[Step]]] = {}  # calls with no result yet, oldest first, by key
        self._last: dict[str, list[Step]] = {}  # the latest call of each key

    def add(self, s: Step) -> None:
        self._steps.append(s)

    def call(self, key: Any, s: Step) -> None:
        tool = s["content"]
        if tool in _HINTED_TOOLS and "render" not in s:  # a shell, a patch, a file tool: how the call reads
            args = s.get("action_input")
            if tool in SHELL_TOOLS and args.__class__ is str and '"apply_patch"' not in args:
                s["render"] = TERMINAL  # the usual shell call, without the general function (a call per call)
            elif tool not in FILE_TOOLS or args.__class__ is not str or args[:1] == "{":
                # (a file tool's arguments name its file only as a JSON object: aider's edit blocks do not)
                hint = call_render(tool, args)
                if hint is not None:
                    s["render"] = hint
        self._steps.append(s)
        if key is not None and key != "":
            k = key if key.__class__ is str else str(key)
            group = [s, s]
            self._last[k] = group
            waiting = self._open.get(k)
            if waiting is None:
                self._open[k] = [group]
            else:
                waiting.append(group)

    def result(self, key: Any, s: Step) -> bool:
        """Put a result after its call; False (and kept in place) when the call is unknown."""
        group = None
        if key is not None:
            k = key if key.__class__ is str else str(key)
            waiting = self._open.get(k)
            group = waiting.pop(0) if waiting else self._last.get(k)
        steps = self._steps
        if group is None:
            if key is not None:
                step_metadata(s)["unpaired"] = True
            steps.append(s)
            return False
        last = group[1]
        if steps[-1] is last:
            steps.append(s)
        else:  # after a later step: found from the end, by identity
            at = len(steps) - 2
            while steps[at] is not last:
                at -= 1
            steps.insert(at + 1, s)
        group[1] = s
        call = group[0]
        tool = call["content"]
        if "actor" not in s and call["type"] == "action":  # the tool that answered is the call's (not code's text)
            s["actor"] = _TOOL_ACTORS.get(tool) or actor("tool", tool)
        if tool in SHELL_TOOLS and "render" not in s:  # a shell's output, or the diff it printed
            body = s["content"]
            s["render"] = result_render(tool, body) if body.startswith(_DIFF_STARTS) else TERMINAL
        return True

    def has_call(self, key: Any) -> bool:
        return key is not None and str(key) in self._last

    def steps(self) -> list[Step]:
        return self._steps.copy()

    def __len__(self) -> int:
        """The number of steps held."""
        return len(self._steps)


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

    def pending(self) -> list[Step]:
        """The steps held back, in order."""
        return [s for _, s, _ in self._ops]

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
    # imported here: most records carry their own id, and loading OpenSSL costs an empty convert 11 M instructions,
    # a twentieth (benchmarks/converter_instructions.py, start-up)
    import hashlib

    return hashlib.sha1(_ID_JSON.encode(parts).encode()).hexdigest()[:16]


def default_id(origin: Origin, *more: Any) -> str:
    """The id of a record that has none of its own: stable for the same file name and position (a JSONL line that
    holds several records: the line and the record's index in it)."""
    if origin.line is not None and origin.index is not None:
        return stable_id(origin.file_name, origin.line, origin.index, *more)
    return stable_id(origin.file_name, origin.position, *more)


def numbered_id(origin: Origin) -> str:
    """The id of a record that has none of its own, in the formats that number a file's records as they come
    (:attr:`~.files.Origin.ordinal`): stable for the same file name and number."""
    return stable_id(origin.file_name, origin.ordinal)


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
        actor = s.get("actor")
        if actor is not None and (not isinstance(actor, dict) or actor.get("kind") not in ACTOR_KINDS
                                  or not set(actor) <= {"kind", "name"}
                                  or "name" in actor and (not isinstance(actor["name"], str) or not actor["name"])):
            out.append(f"{where}: actor {actor!r} is not {{kind, name?}} with a known kind")
        hint = s.get("render")
        if hint is not None and (not isinstance(hint, dict) or not hint or not set(hint) <= RENDER_KEYS
                                 or "as" in hint and hint["as"] not in RENDER_AS):
            out.append(f"{where}: render {hint!r} is not a known hint")
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
