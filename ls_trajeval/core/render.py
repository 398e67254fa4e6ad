"""The one renderer: what a step shows the annotator, for both layouts.

:func:`render_trace` turns a trace's steps into :class:`Card` values: who acted (:class:`Actor`), a header
(step number, actor, tool, status, file) and a body of :class:`Block` values read from the step itself, not from
its JSON: tool arguments as named fields with multi-line strings as real lines, edits as unified diffs, file
writes as code, shell commands and their output as terminal blocks, a JSON result with one text field as that
text. Two serialisations of the same cards follow: :func:`card_text` (the workbench's plain-text Paragraphs) and
:func:`card_html` (the paged layout's HTML card). What the renderer reads first, when a converter set it: the
step's ``actor`` and ``render`` keys (see the step convention in ``converters/support/steps.py``); else the step's
type, tool name, arguments and ``metadata`` (``role``, ``agent``, ``tool_name``, ``exit_code``, ...).

The trace itself is never changed: a card is derived, the step's ``content`` stays as it was for the export.
Everything here is text: the HTML passes through autoescaped templates, and the workbench's per-task CSS
(:func:`trace_style`) holds step positions and the config's colours only, so trace content never becomes markup or
code.
"""
from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .config import Config
from .labelconfig import _env
from .labels import step_number
from .trace import Step, Trace
from .windows import Window

#: who can act in a trace (the ``actor.kind`` values of the step convention)
ACTOR_KINDS = ("user", "simulated_user", "agent", "subagent", "tool", "system")
#: how a kind reads on a card when the actor has no name of its own
KIND_WORDS = {"user": "user", "simulated_user": "simulated user", "agent": "agent", "subagent": "sub-agent",
              "tool": "tool", "system": "system"}
#: source formats whose "user" is a model playing the user (tau-bench and tau2-bench)
SIMULATED_USER_FORMATS = frozenset({"tau_bench"})
#: how a block's body reads (the ``render.as`` values of the step convention)
BLOCK_KINDS = ("text", "code", "terminal", "diff")
#: lines of a block the paged card shows before "show N more lines"
FOLD_AFTER = 40

_USER_ROLES = frozenset({"user", "human"})
_SYSTEM_ROLES = frozenset({"system", "developer", "instructions"})
_TOOL_ROLES = frozenset({"tool", "function", "ipython", "environment"})
_AGENT_ROLES = frozenset({"assistant", "agent", "ai", "model", "bot"})
_PATH_KEYS = ("file_path", "path", "filename", "file", "target_file", "notebook_path", "absolute_path")
_SHELL_KEYS = ("command", "cmd", "script")
#: a file editor's sub-commands (OpenHands' and SWE-agent's ``str_replace_editor``): a ``command`` that is not a shell's
_EDITOR_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit"})
_CODE_KEYS = ("code", "python_code", "source")
_WRITE_KEYS = ("content", "file_text", "contents", "text")
_DIFF_START = re.compile(r"^(diff --git |--- \S|\+\+\+ \S|@@ -\d|\*\*\* Begin Patch)", re.M)
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_SEARCH_REPLACE = re.compile(r"^<{5,9} SEARCH\n(.*?)^={5,9}\n(.*?)^>{5,9} REPLACE", re.M | re.S)
_LINE_EDIT = re.compile(r"\Aedit (\d+):(\d+)\n(.*?)\n?end_of_edit\s*\Z", re.S)
_EXTENSIONS = {"py": "python", "js": "javascript", "ts": "typescript", "tsx": "typescript", "jsx": "javascript",
               "rb": "ruby", "go": "go", "rs": "rust", "java": "java", "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp",
               "sh": "shell", "md": "markdown", "json": "json", "yaml": "yaml", "yml": "yaml", "toml": "toml",
               "html": "html", "css": "css", "sql": "sql", "pony": "pony", "ex": "elixir", "exs": "elixir"}


@dataclass(frozen=True, slots=True)
class Actor:
    """Who produced a step: a kind of :data:`ACTOR_KINDS` and, where known, its own name."""

    kind: str
    name: str = ""

    @property
    def label(self) -> str:
        """How the card names the actor: its name, else its kind ("user", "simulated user", ...)."""
        if self.kind in ("user", "simulated_user", "system") or not self.name:
            return KIND_WORDS[self.kind]
        return self.name


@dataclass(slots=True)
class Block:
    """A piece of a card's body. ``kind``: text, code, terminal, diff, or fields (``key: value`` lines).
    ``lines`` are the body's lines (a diff's carry their ``+``/``-``/`` `` prefix); ``title`` names the piece."""

    kind: str
    lines: list[str]
    title: str = ""
    language: str = ""


@dataclass(slots=True)
class Card:
    """One step as the annotator sees it (both layouts)."""

    index: int
    type: str
    label: str
    color: str
    actor: Actor
    blocks: list[Block]
    #: the tool of an action or of a tool's result
    tool: str = ""
    #: the file the step reads or writes
    path: str = ""
    #: short facts after the actor: "exit 1", "sub-agent trace X", "the task, as above"
    status: list[str] = field(default_factory=list)
    timestamp: str = ""
    #: starts folded: system prompts, injected context, a step repeating the task
    folded: bool = False
    #: the body is the step's content verbatim (else derived: an action's arguments, a JSON result's text)
    verbatim: bool = True
    #: the step failed (an ``error`` step, a non-zero exit code, an unsuccessful status)
    failed: bool = False

    @property
    def mono(self) -> bool:
        """The body reads as code or terminal output (a monospace block in both layouts)."""
        return bool(self.blocks) and self.blocks[0].kind in ("code", "terminal", "diff", "fields")

    @property
    def author(self) -> str:
        """The workbench's author of the step: the type's label, and who spoke when it is not the agent's
        (user turns and a simulated user's steps read apart from the agent's, also in the author filter)."""
        if self.actor.kind in ("user", "simulated_user"):
            return f"{self.label} · {KIND_WORDS[self.actor.kind]}"
        return self.label


# ---------------------------------------------------------------- reading a step

def _meta(step: Step) -> dict:
    m = step.get("metadata")
    return m if isinstance(m, dict) else {}


def _hint(step: Step) -> dict:
    h = step.get("render")
    return h if isinstance(h, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def arguments(step: Step) -> Any:
    """An action's arguments as a value: a dict or list when they are JSON (as converters write them), else the
    text as written (a command line, a patch), else None."""
    value = step.action_input
    if value is None or not isinstance(value, str):
        return value
    s = value.strip()
    if s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
        try:
            return json.loads(s)
        except ValueError:
            return value
    return value


def _json_text_result(content: str) -> tuple[str, dict] | None:
    """A result that is a JSON object with one text field (Codex's ``{"output": "…", "metadata": {…}}``): that
    text and the other fields, flattened one level ("metadata.exit_code"). None for anything else."""
    s = content.strip()
    if not (s.startswith("{") and s.endswith("}")):
        return None
    try:
        obj = json.loads(s)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    texts = [k for k, v in obj.items() if isinstance(v, str)]
    if len(texts) != 1:
        return None
    rest: dict = {}
    for k, v in obj.items():
        if k == texts[0]:
            continue
        if isinstance(v, dict):  # Codex's {"metadata": {"exit_code": 0}} reads as exit_code: 0
            rest.update({k2 if k == "metadata" else f"{k}.{k2}": v2 for k2, v2 in v.items()})
        else:
            rest[k] = v
    return obj[texts[0]], rest


def is_diff(text: str) -> bool:
    """Text that reads as a unified diff (or a Codex patch): a diff header and at least two ``+``/``-``/``@`` lines."""
    if not _DIFF_START.search(text):
        return False
    return sum(1 for ln in text.splitlines() if ln[:1] in "+-@") >= 2


def diff_line_kind(line: str) -> str:
    """add, del, hunk, meta or ctx: how a diff line is coloured."""
    if line.startswith(("+++", "---", "diff --git", "index ", "*** ")):
        return "meta"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def _language(path: str, given: str = "") -> str:
    if given:
        return given
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return _EXTENSIONS.get(ext, "")


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _diff(old: str, new: str, path: str, title: str = "") -> Block:
    label = path or "file"
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), path or "old", path or "new", lineterm=""))
    if not lines:  # identical: still show what the edit held
        lines = [f"--- {label}", f"+++ {label}", "(no change)"]
    return Block("diff", lines, title)


def _value_lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return _lines(value)
    return _lines(json.dumps(value, ensure_ascii=False, indent=2))


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _fields(args: dict, skip: Iterable[str] = ()) -> list[Block]:
    """The arguments not shown otherwise: one ``key: value`` line each, and a titled block for a multi-line or
    structured value (its lines as real lines)."""
    skip = set(skip)
    short, long = [], []
    for k, v in args.items():
        if k in skip:
            continue
        if isinstance(v, str) and "\n" not in v:
            short.append(f"{k}: {v}")
            continue
        compact = None if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        if compact is not None and len(compact) <= 80:
            short.append(f"{k}: {compact}")
        else:
            long.append(Block("code", _value_lines(v), f"{k}:"))
    return ([Block("fields", short)] if short else []) + long


def _shell_text(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        if len(value) == 3 and value[0] in ("bash", "sh", "zsh") and value[1] in ("-lc", "-c"):
            return value[2]
        return shlex.join(value)
    return value if isinstance(value, str) else ""


def _path_in(args: dict) -> str:
    for k in _PATH_KEYS:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
    return ""


def _patch_block(text: str, title: str = "") -> Block:
    return Block("diff", _lines(text.rstrip("\n")), title)


def _action_blocks(args: Any, hint: dict) -> tuple[list[Block], str]:
    """The body of an action (from its arguments) and the file it is about."""
    if isinstance(args, str):
        return _command_blocks(args, hint)
    if not isinstance(args, dict):
        return ([Block("code", _value_lines(args))] if args not in (None, "", [], {}) else []), ""
    path = _path_in(args)
    old = next((args[k] for k in ("old_string", "old_str", "search") if isinstance(args.get(k), str)), None)
    new = next((args[k] for k in ("new_string", "new_str", "replace") if isinstance(args.get(k), str)), None)
    used = set(_PATH_KEYS)
    if old is not None and new is not None:  # Claude Code Edit, OpenHands str_replace, Gemini replace, SWE-agent edit
        used |= {"old_string", "old_str", "search", "new_string", "new_str", "replace", "command"}
        return [_diff(old, new, path), *_fields(args, used)], path
    edits = args.get("edits")
    if isinstance(edits, list) and edits and all(isinstance(e, dict) for e in edits):  # MultiEdit
        blocks = []
        for n, e in enumerate(edits, 1):
            o = _text(e.get("old_string", e.get("old_str")))
            w = _text(e.get("new_string", e.get("new_str")))
            blocks.append(_diff(o, w, path, f"edit {n} of {len(edits)}"))
        return blocks + _fields(args, used | {"edits"}), path
    if new is not None and args.get("command") == "insert":  # OpenHands insert: added lines only
        after = args.get("insert_line")
        lines = [f"@@ inserted after line {after} @@", *("+" + ln for ln in new.splitlines())]
        return [Block("diff", lines), *_fields(args, used | {"new_str", "command", "insert_line"})], path
    written = next((k for k in _WRITE_KEYS if isinstance(args.get(k), str)), None)
    create = args.get("command") == "create"
    if written and (path or create):  # Write, write_file, str_replace_editor create
        block = Block("code", _lines(args[written]), "", _language(path, _text(hint.get("language"))))
        return [block, *_fields(args, used | {written} | ({"command"} if create else set()))], path
    for k in ("patch", "input"):  # apply_patch with its patch as an argument
        if isinstance(args.get(k), str) and is_diff(args[k]):
            return [_patch_block(args[k]), *_fields(args, {k, *used})], path
    for k in _SHELL_KEYS:
        value = args.get(k)
        if isinstance(value, list) and len(value) == 2 and value[0] == "apply_patch" and isinstance(value[1], str):
            return [_patch_block(value[1]), *_fields(args, {k, *used})], path  # Codex: the patch as the argument
        if k in args and not (k == "command" and isinstance(args[k], str) and args[k] in _EDITOR_COMMANDS):
            cmd = _shell_text(args[k])
            if cmd:
                if cmd.lstrip().startswith("apply_patch") and is_diff(cmd):  # apply_patch <<'EOF' ...
                    return [_patch_block(cmd.split("\n", 1)[-1]), *_fields(args, {k, *used})], path
                return [Block("terminal", _lines("$ " + cmd)), *_fields(args, {k, *used})], path
    for k in _CODE_KEYS:
        if isinstance(args.get(k), str):
            return [Block("code", _lines(args[k]), "", _text(hint.get("language"))), *_fields(args, {k, *used})], path
    return _fields(args, _PATH_KEYS if path else ()), path


def _command_blocks(text: str, hint: dict) -> tuple[list[Block], str]:
    """An action written as text: aider's SEARCH/REPLACE blocks and SWE-agent's ``edit N:M`` as diffs, a patch as a
    diff, anything else as the command it is."""
    pairs = _SEARCH_REPLACE.findall(text)
    if pairs:
        path = text.split("\n", 1)[0].strip() if "\n" in text else ""
        path = "" if path.startswith(("```", "<<<")) else path
        return [_diff(o, n, path, f"edit {k} of {len(pairs)}" if len(pairs) > 1 else "")
                for k, (o, n) in enumerate(pairs, 1)], path
    m = _LINE_EDIT.match(text.strip("\n"))
    if m:
        start, end, body = m.groups()
        lines = [f"@@ lines {start}-{end} of the open file replaced by @@", *("+" + ln for ln in body.split("\n"))]
        return [Block("diff", lines)], ""
    if is_diff(text):
        return [_patch_block(text)], ""
    kind = _text(hint.get("as")) or ("code" if "\n" in text.strip() else "terminal")
    return [Block(kind if kind in BLOCK_KINDS else "code", _lines(text))], ""


def _blocks_for_text(text: str, kind: str) -> list[Block]:
    """Prose, fenced code and diffs split apart, each in its own style (the paged card; the workbench keeps text
    verbatim)."""
    if is_diff(text) and not _FENCE.search(text):
        return [Block("diff", _lines(text))]
    if kind == "text":
        blocks: list[Block] = []
        pos = 0
        for m in _FENCE.finditer(text):
            before = text[pos:m.start()].strip("\n")
            if before:
                blocks.append(Block("text", _lines(before)))
            body = m.group(1).rstrip("\n")
            blocks.append(Block("diff" if is_diff(body) else "code", _lines(body)))
            pos = m.end()
        tail = text[pos:].strip("\n") if blocks else text
        if tail or not blocks:
            blocks.append(Block("text", _lines(tail)))
        return blocks
    return [Block(kind, _lines(text))]


def _failed(meta: dict, facts: dict) -> str:
    """The failure a result's metadata reports ("exit 1", "failed", "error"), else ""."""
    for source in (meta, facts):
        code = source.get("exit_code", source.get("returncode"))
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return f"exit {code}"
    if meta.get("success") is False or meta.get("is_error") is True:
        return "failed"
    status = meta.get("status")
    if isinstance(status, str) and status.lower() in ("error", "failed", "failure", "cancelled"):
        return status.lower()
    return ""


def _path_of(step: Step, meta: dict) -> str:
    """The file a step names of its own (a key of the step or of its metadata)."""
    for holder in (step, meta):
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


# ---------------------------------------------------------------- who acted

def actor_of(step: Step, simulated_user: bool = False, call_actor: Actor | None = None,
             tool_name: str = "") -> Actor:
    """Who produced ``step``: its ``actor`` when a converter set one, else what its type and metadata say.

    ``simulated_user``: the trace's user is a model playing one (tau-bench). ``call_actor`` / ``tool_name``: the
    actor and tool of the call a result answers, when known.
    """
    given = step.get("actor")
    if isinstance(given, dict) and given.get("kind") in ACTOR_KINDS:
        return Actor(given["kind"], _text(given.get("name")))
    meta = _meta(step)
    role = _text(meta.get("role")).lower()
    agent = _text(meta.get("agent"))
    stype = step.type
    user = Actor("simulated_user" if simulated_user else "user")
    if stype == "system" or role in _SYSTEM_ROLES:
        return Actor("system")
    if stype == "observation" or (stype == "error" and (tool_name or meta.get("tool_call_id") or role in _TOOL_ROLES
                                                         or call_actor is not None)):
        # what a tool or the environment returned; a role of its own ("aider") names it
        own = role if role and role not in _TOOL_ROLES | _AGENT_ROLES | _USER_ROLES else ""
        return Actor("tool", tool_name or _text(meta.get("tool_name")) or agent or own)
    if stype == "action" and _text(meta.get("requestor")).lower() == "user":
        return user
    if role in _USER_ROLES:
        if agent and agent.lower() not in _USER_ROLES:  # another agent in the user's seat (AutoGen group chats)
            return Actor("agent", agent)
        return user
    return Actor("agent", agent)


# ---------------------------------------------------------------- the cards

def _same_text(a: str, b: str) -> bool:
    return bool(a.strip()) and " ".join(a.split()) == " ".join(b.split())


def render_trace(trace: Trace, config: Config, first: int = 0) -> list[Card]:
    """Every step of ``trace`` as a :class:`Card`, in order; ``first`` is the first one's index (a window task's
    steps keep their places in the whole trace)."""
    simulated = trace.metadata.get("source_format") in SIMULATED_USER_FORMATS
    calls: dict[str, tuple[Actor, str]] = {}  # tool_call_id -> the call's actor and tool
    repeated = next((i for i, s in enumerate(trace.steps) if s.type in ("message", "other", "thought")
                     and _same_text(s.content, trace.task)), None)
    cards = []
    for i, step in enumerate(trace.steps):
        meta = _meta(step)
        hint = _hint(step)
        cid = meta.get("tool_call_id")
        cid = cid if isinstance(cid, str) and cid else None
        call_actor, call_tool = calls.get(cid, (None, "")) if cid else (None, "")
        tool = _text(meta.get("tool_name")) or call_tool
        actor = actor_of(step, simulated, call_actor, tool)
        style = config.step_style(step.type)
        card = Card(first + i, step.type, style.label, style.color, actor, [], timestamp=_timestamp(step))
        if step.type == "action":
            card.tool = step.content
            args = arguments(step)
            card.blocks, card.path = _action_blocks(args, hint)
            card.verbatim = False
            if cid:
                calls[cid] = (actor, step.content)
        else:
            card.tool = tool if actor.kind == "tool" else ""
            kind = _text(hint.get("as"))
            content = step.content
            extracted = _json_text_result(content) if step.type in ("observation", "error") else None
            facts: dict = {}
            if extracted is not None:
                content, facts = extracted
                card.verbatim = False
            if kind not in BLOCK_KINDS:
                if step.type == "code":
                    kind = "code"
                elif step.type in ("observation", "error") and actor.kind == "tool":
                    kind = "diff" if is_diff(content) else "terminal"
                elif step.type == "other":
                    kind = "code"
                else:
                    kind = "text"
            card.blocks = _blocks_for_text(content, kind)
            for b in card.blocks:
                if b.kind == "code" and not b.language:
                    b.language = _text(hint.get("language")) or _text(meta.get("language"))
            if facts:
                card.blocks.append(Block("fields", [f"{k}: {_scalar(v)}" for k, v in facts.items()]))
            failure = _failed(meta, facts)
            if failure:
                card.status.append(failure)
                card.failed = True
            if call_actor is not None and call_actor.kind == "simulated_user":
                card.status.append("answers the simulated user")
        card.failed = card.failed or step.type == "error"
        card.path = _text(hint.get("path")) or card.path or _path_of(step, meta)
        sub = meta.get("subagent_trace")
        if isinstance(sub, str) and sub:
            card.status.append(f"sub-agent trace {sub}")
        if i == repeated:
            card.status.append("the task, as shown above")
        card.folded = bool(hint.get("folded")) or step.type == "system" or i == repeated \
            or meta.get("injected") is True or meta.get("is_meta") is True
        cards.append(card)
    return cards


# ---------------------------------------------------------------- the workbench's text

def header_line(card: Card, config: Config) -> tuple[str, int | None]:
    """A card's first line, "#4 · agent → Bash · exit 1", and where an action's tool name (its ``content``) sits
    in it (None for other steps)."""
    parts = []
    if config.show_step_numbers:
        parts.append(step_number(card.index))
    if config.show_timestamps and card.timestamp:
        parts.append(f"[{card.timestamp}]")
    who = card.actor.label
    at = None
    if card.type == "action":
        head = " · ".join(parts + [who]) + " → "
        at = len(head) if "\n" not in card.tool else None  # a line break in the name is not kept in one line
        first = head + card.tool
    else:
        first = " · ".join(parts + [who if card.actor.kind != "tool" or not card.tool else card.tool])
    extra = ([card.path] if card.path else []) + card.status
    if extra:
        first += " · " + " · ".join(extra)
    return first.replace("\n", " "), at


def block_text(block: Block) -> str:
    """A block as the workbench's text: its title on a line of its own, then its lines."""
    lines = ([block.title] if block.title else []) + block.lines
    return "\n".join(lines)


def card_text(card: Card, step: Step, config: Config) -> tuple[str, int | None]:
    """The workbench's text of a card: its header line, then the body; and where the step's ``content`` starts
    verbatim in that text (code points), or None when the card shows a derived view of it.

    The body of a step other than an action is its ``content`` verbatim, unless it is a JSON result shown by its
    text field; an action's ``content`` (the tool name) is in the header line, its arguments are derived.
    """
    head, at = header_line(card, config)
    if card.type != "action" and card.verbatim:
        return f"{head}\n{step.content}", len(head) + 1
    body = "\n".join(block_text(b) for b in card.blocks)
    return (f"{head}\n{body}" if body else head), at


# ---------------------------------------------------------------- the paged layout's HTML

DIFF_STYLES = {
    "add": "background:#E6FFEC;color:#1A7F37",
    "del": "background:#FFEBE9;color:#CF222E",
    "hunk": "background:#DDF4FF;color:#0550AE",
    "meta": "color:#57606A;font-weight:600",
    "ctx": "",
}
#: the workbench's and the paged card's monospace font (``!important``: Label Studio's own font rule is)
MONO_FONT = "ui-monospace,SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace"
_MONO = f"font-family:{MONO_FONT} !important;font-size:13px"
BLOCK_STYLES = {
    "text": "background:transparent;font-family:inherit",
    "code": f"background:#F6F8FA;border:1px solid #ddd;{_MONO}",
    "fields": f"background:#F6F8FA;border:1px solid #ddd;{_MONO}",
    "terminal": f"background:#1E1E1E;color:#E6E6E6;{_MONO}",
    "diff": f"background:#fafafa;border:1px solid #ddd;{_MONO}",
}


@lru_cache(maxsize=1)
def _card_template():
    return _env().get_template("step.html.j2")


def card_html(card: Card, total: int, config: Config) -> str:
    """The paged layout's HTML card (autoescaped: trace content stays text)."""
    return _card_template().render(
        card=card,
        kind=re.sub(r"[^a-z0-9_-]", "", card.type.lower()) or "other",
        number=card.index + 1 if config.show_step_numbers else None,
        total=total,
        timestamp=card.timestamp if config.show_timestamps else "",
        blocks=[(b, _split_fold(b)) for b in card.blocks],
        diff_kind=diff_line_kind,
        diff_styles=DIFF_STYLES,
        block_styles=BLOCK_STYLES,
        actor_kind=card.actor.kind,
        n_lines=sum(len(b.lines) for b in card.blocks),
    )


def _split_fold(block: Block) -> tuple[list[str], list[str]]:
    lines = block.lines
    return (lines, []) if len(lines) <= FOLD_AFTER + 5 else (lines[:FOLD_AFTER], lines[FOLD_AFTER:])


# ---------------------------------------------------------------- the workbench's per-task style

#: the workbench's monospace line height (px): diff lines are coloured by a background striped at it
LINE_PX = 18


def _diff_stripes(lines: list[str], first_line: int) -> str:
    """A background that colours the diff's added, removed and hunk lines: one stripe per run of same-kind lines,
    ``first_line`` lines below the text's top."""
    colours = {"add": "#E6FFEC", "del": "#FFEBE9", "hunk": "#DDF4FF"}
    stops, run_start, run_kind = [], 0, None
    kinds = [diff_line_kind(ln) for ln in lines] + [None]
    for n, k in enumerate(kinds):
        k = k if k in colours else None
        if k != run_kind:
            if run_kind is not None:
                top, bottom = (first_line + run_start) * LINE_PX, (first_line + n) * LINE_PX
                stops.append(f"transparent {top}px,{colours[run_kind]} {top}px {bottom}px,transparent {bottom}px")
            run_start, run_kind = n, k
    return "linear-gradient(" + ",".join(stops) + ")" if stops else ""


def trace_style(cards: list[Card], first: int = 0) -> str:
    """The workbench's per-task CSS. Label Studio writes each step's position on its phrase
    (``data-testid="phrase:N"``); this gives each position one rule setting the custom properties the config's Style
    block reads: ``--te-color`` (the type's colour), ``--te-user`` / ``--te-sim`` / ``--te-folded`` (flags),
    ``--te-accent`` (a failure), ``--te-font`` / ``--te-size`` / ``--te-line`` (a monospace body) and, for a diff,
    ``--te-ws`` / ``--te-stripes`` (its lines' colours). One plain attribute selector a rule: the browser matches
    it only against elements that have the attribute (a selector list in ``:is()`` was checked against every
    element of the page, and made opening slower). Nothing of the trace's text is in it: only step indices and
    the config's colours (validated CSS colours). ``first`` is the first card's index in a window task's trace
    (its phrase is position 0)."""
    rules = []
    for c in cards:
        decl = [f"--te-color:{c.color}"]
        if c.actor.kind in ("user", "simulated_user"):
            decl.append("--te-user:1")
        if c.actor.kind == "simulated_user":
            decl.append("--te-sim:1")
        if c.failed:
            decl.append("--te-accent:#D32F2F")
        if c.mono:
            decl.append(f"--te-font:{MONO_FONT};--te-size:13px;--te-line:{LINE_PX}px")
        if c.folded:
            decl.append("--te-folded:1")
        stripes = _diff_body_stripes(c)
        if stripes:
            decl.append(f"--te-ws:pre;--te-stripes:{stripes}")
        rules.append(f'.te-trace-pane [data-testid="phrase:{c.index - first}"]{{{";".join(decl)}}}')
    return "\n".join(rules)


def _diff_body_stripes(card: Card) -> str:
    """Stripes for every diff block of a card's workbench text (their rows are known: the header line, then each
    block's title and lines), or "" for a card without one."""
    if not any(b.kind == "diff" for b in card.blocks):
        return ""
    if card.verbatim and card.type != "action" and len(card.blocks) > 1:
        return ""  # the text shows the content as it is, not these blocks: rows unknown
    grads, row = [], 1  # the header line is row 0
    for b in card.blocks:
        row += 1 if b.title else 0
        if b.kind == "diff":
            grads.append(_diff_stripes(b.lines, row))
        row += len(b.lines)
    return ",".join(g for g in grads if g)


# ---------------------------------------------------------------- the header: facts, relations, the style

_TASK_TOOLS = frozenset({"Task", "Agent", "delegate_to_agent", "task", "spawn_agent"})


@dataclass
class Relations:
    """A trace's parent and sub-agents, by trace id (what ``import`` turns into links between their tasks)."""

    trace_id: str
    #: the parent's trace id, on a sub-agent's trace
    parent: str = ""
    #: the sub-agent traces its steps name, with the step that names each
    subagents: list[tuple[str, int]] = field(default_factory=list)
    #: a sub-agent call's prompt and step, for sources that do not name the sub-agent's trace (Claude Code 1.x)
    prompts: list[tuple[str, int]] = field(default_factory=list)
    #: the trace's task text, by which a parent's call prompt finds it
    task: str = ""

    def __bool__(self) -> bool:
        return bool(self.parent or self.subagents or self.prompts)


def relations(trace: Trace) -> Relations:
    """Who ``trace``'s parent is and which sub-agents its steps start (``metadata.parent_trace``, or Claude Code's
    ``parent_session``; steps' ``metadata.subagent_trace``; a sub-agent call's ``prompt``)."""
    meta = trace.metadata
    parent = _text(meta.get("parent_trace")) or _text(meta.get("parent_session"))
    rel = Relations(trace.trace_id, parent if parent != trace.trace_id else "", task=trace.task if parent else "")
    calls: dict[str, int] = {}  # tool_call_id -> the call's step: a result naming the sub-agent points at its call
    for i, s in enumerate(trace.steps):
        meta = _meta(s)
        cid = meta.get("tool_call_id")
        if s.type == "action" and isinstance(cid, str):
            calls.setdefault(cid, i)
        sub = meta.get("subagent_trace")
        if isinstance(sub, str) and sub and all(sub != t for t, _ in rel.subagents):
            rel.subagents.append((sub, calls.get(cid, i) if isinstance(cid, str) else i))
        elif s.type == "action" and s.content in _TASK_TOOLS:
            args = arguments(s)
            prompt = args.get("prompt") if isinstance(args, dict) else None
            if isinstance(prompt, str) and prompt.strip():
                rel.prompts.append((" ".join(prompt.split()), i))
    return rel


def link_relations(rels: Iterable[Relations], task_ids: dict[str, int]) -> dict[str, list[dict]]:
    """Each trace's links to its parent's and its sub-agents' tasks: ``{trace_id: [{"rel", "trace_id", "task_id",
    "step"}]}`` for the traces of ``rels`` that have any; ``task_ids`` maps trace ids to task ids (a trace not in
    it is named without a link)."""
    rels = list(rels)
    by_parent: dict[str, list[Relations]] = {}
    for r in rels:
        if r.parent:
            by_parent.setdefault(r.parent, []).append(r)
    out: dict[str, list[dict]] = {}
    for r in rels:
        links = []
        if r.parent:
            links.append({"rel": "parent", "trace_id": r.parent, "task_id": task_ids.get(r.parent), "step": None})
        named = {t for t, _ in r.subagents}
        for t, step in r.subagents:
            links.append({"rel": "subagent", "trace_id": t, "task_id": task_ids.get(t), "step": step})
        children = {" ".join(c.task.split()): c.trace_id for c in by_parent.get(r.trace_id, [])}
        for prompt, step in r.prompts:
            child = children.get(prompt)
            if child and child not in named:
                named.add(child)
                links.append({"rel": "subagent", "trace_id": child, "task_id": task_ids.get(child), "step": step})
        for c in by_parent.get(r.trace_id, []):  # children no step names
            if c.trace_id not in named:
                links.append({"rel": "subagent", "trace_id": c.trace_id, "task_id": task_ids.get(c.trace_id),
                              "step": None})
        if links:
            out[r.trace_id] = links
    return out


@lru_cache(maxsize=1)
def _header_template():
    return _env().get_template("header.html.j2")


def header_html(trace: Trace, cards: list[Card], links: list[dict] | None = None, with_style: bool = True,
                window: Window | None = None, before: Sequence[dict] = ()) -> str:
    """The task's header under its request: the trace's facts, its parent's and sub-agents' traces (``links``, see
    :func:`link_relations`: each a link to its task where the task id is known, ``?task=ID``, a task of the same
    project opened in a new tab) and, for the workbench, the per-task style (:func:`trace_style`).

    A window task's (``window``; ``cards`` are then its own) also says which steps of how many it holds and shows
    the steps before it (``before``, :func:`context`), so its steps are judged knowing what came first."""
    meta = trace.metadata
    models = meta.get("models")
    model = ", ".join(m for m in models if isinstance(m, str)) if isinstance(models, list) else _text(meta.get("model"))
    facts = [f"{window.total if window else len(cards)} steps"]
    for value in (_text(meta.get("source_format")), _text(meta.get("agent")), model):
        if value:
            facts.append(value)
    if links is None:
        links = link_relations([relations(trace)], {}).get(trace.trace_id, [])
    style = trace_style(cards, window.start if window else 0) if with_style else ""
    if "<" in style:  # by construction it holds indices and validated colours only
        raise ValueError("a step style may not contain '<'")
    return _header_template().render(facts=facts, links=links, step_number=step_number, style=style, window=window,
                                     before=before)


#: the steps just before a window shown whole (up to :data:`CONTEXT_CHARS` each); earlier ones by their first line
CONTEXT_WHOLE = 3
CONTEXT_CHARS = 4000
CONTEXT_LINE_CHARS = 240


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def context(texts: Sequence[str], window: Window) -> list[dict]:
    """What a window task shows of the steps before it, each ``{"head", "text", "whole"}``: its header line as the
    workbench's ("#4 · agent → Bash · exit 1") and its text, whole for the last :data:`CONTEXT_WHOLE` steps before the
    window (clipped at :data:`CONTEXT_CHARS`), its first :data:`CONTEXT_LINE_CHARS` characters on one line for the
    rest. ``texts`` are the workbench's texts of the whole trace's steps (:func:`card_text`)."""
    out = []
    for i in range(window.start):
        head, _, body = texts[i].partition("\n")
        whole = i >= window.start - CONTEXT_WHOLE
        out.append({"head": head, "text": _clip(body, CONTEXT_CHARS) if whole
                    else _clip(" ".join(body.split()), CONTEXT_LINE_CHARS), "whole": whole})
    return out
