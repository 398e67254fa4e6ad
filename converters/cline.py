"""Cline and Roo Code tasks (also Kilo Code, their fork).

A task folder (``…/globalStorage/<extension>/tasks/<taskId>/``) holds ``api_conversation_history.json``
(the messages sent to the model: the trace's steps), ``ui_messages.json`` (what the chat panel showed)
and ``task_metadata.json``. The history converts to one trace, its id the task folder's name; the two
files beside it add to it: the UI's ``reasoning`` entries become thoughts before the reply they led to
(Roo keeps the model's reasoning only there), its ``api_req_started`` entries give the task's cost
and tokens, and ``task_metadata.json``'s ``files_in_context`` goes to the trace metadata. Those two
files convert to nothing themselves when the history lies beside them (and to a located error when it
does not).

Messages (Anthropic-style ``{role, content: [blocks], ts}``):

- The first user message is ``<task>…</task>``: the task.
- Every user message ends with an ``<environment_details>`` block (open files, time, cost, mode, model)
  that the extension appends: not the user's words; kept in the metadata of the message's first step.
- A tool call is XML in the assistant's text, at most one a message: ``<read_file><args>…</args></read_file>``
  → an action, the tool's name, its parameters as arguments (a call cut off by the extension's
  ``[Response interrupted …]`` notice keeps what was written). Text before it is a thought, as are
  ``<thinking>`` blocks and text written after the call (marked ``after_call``: it comes before the
  action so that the result follows its call); a reply without a call is a message.
- A tool result is the next user message, opening with ``[tool_name] Result:`` or ``[tool_name for
  '…'] Result:`` (the brackets may hold a whole sentence): an observation right after its call, or an
  error when it reports ``The tool execution failed``. Native ``tool_use`` / ``tool_result`` blocks
  (newer versions) pair by their ids. ``attempt_completion`` usually has no result: the task ends.
- A message the extension added (``[ERROR] You did not use a tool …``) is a user message.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import load_located, loads
from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Sample
from .support.chat import anthropic_blocks, content_text
from .support.errors import BadRecord, expect
from .support.files import Origin
from .support.steps import StepList, default_id, finish, render_args, step

NAME = "cline"

HISTORY = "api_conversation_history.json"
UI = "ui_messages.json"
TASK_METADATA = "task_metadata.json"

#: tool names of Cline, Roo Code and Kilo Code (a call of another name is still found when its result names it)
TOOLS = frozenset("""
execute_command read_file write_to_file replace_in_file apply_diff insert_content search_and_replace edit_file
apply_patch search_files list_files list_code_definition_names codebase_search browser_action use_mcp_tool
access_mcp_resource load_mcp_documentation ask_followup_question attempt_completion plan_mode_respond
act_mode_respond new_task switch_mode update_todo_list fetch_instructions run_slash_command generate_image
condense summarize_task report_bug new_rule web_fetch web_search
""".split())
#: parameters whose value may hold anything, closing tags included: they end at their last closing tag
LONG_PARAMS = frozenset({"content", "diff", "result"})

RESULT = re.compile(r"\[([\w-]+)(?:\s+for\s+(.*?))?\]\s*Result:", re.S)
ENV_OPEN, ENV_CLOSE = "<environment_details>", "</environment_details>"
TASK = re.compile(r"\s*<task>\n?(.*?)\n?</task>", re.S)
THINKING = re.compile(r"<thinking>\s*(.*?)\s*</thinking>", re.S)
INTERRUPTED = re.compile(r"\s*(\[Response interrupted [^\]]*\])\s*\Z")
PARAM = re.compile(r"<([A-Za-z_][\w-]*)>")
MODEL = re.compile(r"<model>(.*?)</model>", re.S)
FAILED = "The tool execution failed"


# ---------------------------------------------------------------- detection

def _texts(m: Any) -> list[str]:
    c = m.get("content") if isinstance(m, dict) else None
    if isinstance(c, str):
        return [c]
    return (
        [b["text"] for b in c if isinstance(b, dict) and isinstance(b.get("text"), str)] if isinstance(c, list) else []
    )


def _is_history(doc: Any) -> bool:
    if not (
        isinstance(doc, list)
        and doc
        and all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in doc[:10])
    ):
        return False
    users = [t for m in doc[:10] if m.get("role") == "user" for t in _texts(m)]
    return bool(users) and (
        users[0].lstrip().startswith("<task>") or any(ENV_OPEN in t or RESULT.match(t) for t in users)
    )


def _is_ui(doc: Any) -> bool:
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(u, dict) and u.get("type") in ("say", "ask") and "ts" in u for u in doc[:10])
    )


def _is_task_metadata(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("files_in_context"), list)


def detect(sample: Sample) -> float:
    doc = sample.first_json
    if doc is None:  # too big to be read whole: the folder's file names and the history's opening
        if (
            sample.path.name == HISTORY
            and sample.head.lstrip().startswith("[")
            and ("<task>" in sample.head or ENV_OPEN in sample.head)
        ):
            return 0.9
        return 0.0
    if _is_history(doc):  # above anthropic's 0.9 for the same blocks: the task tags and environment are Cline's
        return 0.99 if sample.path.name == HISTORY else 0.97
    if _is_ui(doc) or _is_task_metadata(doc):
        return 0.9
    return 0.0


# ---------------------------------------------------------------- assistant messages

def _params(body: str) -> dict:
    """The parameters of one tool call's XML body, as Cline parses them (values trimmed; a parameter
    cut off at the end runs to the end)."""
    out: dict = {}
    pos = 0
    while True:
        m = PARAM.search(body, pos)
        if m is None:
            return out
        name = m.group(1)
        close = f"</{name}>"
        end = body.rfind(close, m.end()) if name in LONG_PARAMS else body.find(close, m.end())
        if end < 0:
            out[name] = body[m.end():].strip()
            return out
        out[name] = body[m.end():end].strip()
        pos = end + len(close)


def _find_call(text: str, expected: str | None) -> tuple[int, int, str, str] | None:
    """(start, end, tool name, body) of the tool call in an assistant text: the first opening tag of a
    known tool (or of the tool the next result names), to its last closing tag or the end."""
    names = TOOLS | {expected} if expected else TOOLS
    best = None
    for m in re.finditer(r"<([a-z_][\w-]*)>", text):
        if m.group(1) in names:
            best = m
            break
    if best is None:
        return None
    name = best.group(1)
    close = text.rfind(f"</{name}>", best.end())
    end = close + len(name) + 3 if close >= 0 else len(text)
    return best.start(), end, name, text[best.end():close if close >= 0 else len(text)]


def _assistant(text: str, out: StepList, meta: dict, key: str, expected: str | None, acts: bool) -> str | None:
    """Steps of an assistant text; the name of its tool call (made under ``key``), None without one.
    ``acts``: the message calls a tool in another block (its prose is then a thought too)."""
    notice = INTERRUPTED.search(text)
    if notice:
        text = text[:notice.start()]
    call = _find_call(text, expected)
    before = text[:call[0]] if call else text
    after = text[call[1]:] if call else ""
    for part in THINKING.findall(before):
        out.add(step("thought", part, None, dict(meta)))
    said = THINKING.sub("", before).strip()
    if said:
        out.add(step("thought" if call or acts else "message", said, None, dict(meta)))
    if call is None:
        return None
    _, _, name, body = call
    if after.strip():  # written after the call, before its result came: it stays on this side of the result
        out.add(step("thought", after.strip(), None, {**meta, "after_call": True}))
    out.call(
        key,
        step("action", name, render_args(_params(body)), {**meta, "interrupted": notice.group(1) if notice else None}),
    )
    return name


# ---------------------------------------------------------------- user messages

def _split_env(blocks: list) -> tuple[list, str | None]:
    """(the blocks without the trailing <environment_details>, its text)."""
    env = None
    kept = list(blocks)
    while kept:
        b = kept[-1]
        t = b.get("text") if isinstance(b, dict) and b.get("type") == "text" else None
        if not isinstance(t, str):
            break
        start = t.rfind(ENV_OPEN)
        tail = t[start:].rstrip() if start >= 0 else ""
        if not tail or ENV_CLOSE in tail and not tail.endswith(ENV_CLOSE):  # none, or text follows it
            break
        env = tail if env is None else env
        rest = t[:start]
        kept[-1:] = [dict(b, text=rest)] if rest.strip() else []
    return kept, env


class _Task:
    def __init__(self) -> None:
        self.out = StepList()
        self.task: str | None = None
        self.pending: tuple[str, str] | None = None  # (key, tool name) of the call awaiting its result
        self.calls = 0
        self.model: str | None = None

    def user(self, blocks: list, meta: dict, w: str) -> None:
        blocks, env = _split_env(blocks)
        if env and self.model is None:
            found = MODEL.search(env)
            self.model = found.group(1).strip() if found else None
        first = {**meta, "environment_details": env}
        current: list | None = None  # the blocks of the result being read
        header: re.Match[str] | None = None  # the result's header line, beside its blocks
        loose: list = []  # blocks that belong to no result

        def flush_result() -> None:
            nonlocal current, header, first
            if current is None or header is None:
                return
            body = content_text(current)
            name = header.group(1)
            kind = "error" if body.lstrip().startswith(FAILED) else "observation"
            m = {**first, "tool_name": name, "result_header": header.group(0)}
            s = step(kind, body, None, m)
            if self.pending is not None and self.pending[1] == name:
                self.out.result(self.pending[0], s)
                self.pending = None
            else:
                self.out.result(f"missing:{name}", s)  # no call of that tool waits: kept in place, unpaired
            first = dict(meta)
            current, header = None, None

        for b in blocks:
            t = b.get("text") if b.get("type") == "text" else None
            if isinstance(t, str):
                h = RESULT.match(t.lstrip())
                if h:
                    flush_result()
                    header, current = h, []
                    rest = t.lstrip()[h.end():].lstrip("\n")
                    if rest:
                        current.append(dict(b, text=rest))
                    continue
            if b.get("type") in ("tool_result", "tool_use"):
                anthropic_blocks("user", [b], self.out, w, meta=first)
                first = dict(meta)
                continue
            (current if current is not None else loose).append(b)
        flush_result()
        if loose:
            body = content_text(loose)
            if self.task is None:  # the first words of the user: the <task> they hold, else all of them
                found = TASK.match(body)
                self.task = found.group(1) if found else body
            self.out.add(step("message", body, None, first))

    def assistant(self, blocks: list, meta: dict, w: str, expected: str | None) -> None:
        native = any(b.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use") for b in blocks)
        for b in blocks:
            t = b.get("text") if b.get("type") == "text" else None
            if isinstance(t, str):
                key = f"call{self.calls}"
                name = _assistant(t, self.out, meta, key, expected, native)
                if name is not None:
                    self.calls += 1
                    self.pending = (key, name)
            else:  # thinking, native tool_use, images: the Anthropic blocks
                anthropic_blocks("assistant", [b], self.out, w, meta=meta)


def _next_result_tool(messages: list, i: int) -> str | None:
    """The tool the user message after ``messages[i]`` reports on, if it opens with a result header."""
    nxt = messages[i + 1] if i + 1 < len(messages) else None
    for t in _texts(nxt) if isinstance(nxt, dict) and nxt.get("role") == "user" else []:
        m = RESULT.match(t.lstrip())
        return m.group(1) if m else None
    return None


# ---------------------------------------------------------------- the task folder

def _reasoning(ui: Any) -> list[tuple[float, str]]:
    """(ts, text) of the UI's reasoning entries, in time order."""
    if not isinstance(ui, list):
        return []
    out = [(u["ts"], u["text"]) for u in ui if isinstance(u, dict) and u.get("say") == "reasoning"
           and isinstance(u.get("ts"), (int, float)) and isinstance(u.get("text"), str) and u["text"].strip()]
    return sorted(out, key=lambda r: r[0])


def _usage(ui: Any) -> dict:
    """The task's cost and tokens: the sums over the UI's api_req_started entries."""
    total: dict = {}
    for u in ui if isinstance(ui, list) else []:
        if not (isinstance(u, dict) and u.get("say") == "api_req_started" and isinstance(u.get("text"), str)):
            continue
        try:
            info = loads(u["text"])
        except (ValueError, RecursionError):
            continue
        for k in ("cost", "tokensIn", "tokensOut", "cacheReads", "cacheWrites"):
            v = info.get(k) if isinstance(info, dict) else None
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                total[k] = total.get(k, 0) + v
    return total


def _companion(path: Path) -> Any:
    """A file of the task folder beside the history, parsed; None when absent or unreadable."""
    if not path.is_file():
        return None
    doc = load_located(path)
    return None if isinstance(doc, TraceError) else doc


def _blocks(m: Any, w: str) -> list:
    """The content blocks of one history message, checked before any of its steps is made."""
    if not isinstance(m, dict):
        expect(m, dict, w)
    if m.get("role") not in ("user", "assistant"):
        raise BadRecord(f"{w}.role", f"expected user or assistant, got {m.get('role')!r}")
    content = m.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    for j, b in enumerate(expect(content, list, f"{w}.content")):
        if not isinstance(b, dict):
            expect(b, dict, f"{w}.content[{j}]")
        if b.get("type") == "text":
            expect(b.get("text"), str, f"{w}.content[{j}].text")
    return content


def one(messages: Any, origin: Origin) -> list:
    """A task's api_conversation_history.json (its messages), with the task folder's other files beside it."""
    folder = Path(origin.source).parent
    expect(messages, list, None)
    ui = _companion(folder / UI)
    thoughts = _reasoning(ui)
    t = _Task()
    errors = []
    for i, m in enumerate(messages):
        w = f"[{i}]"
        try:
            blocks = _blocks(m, w)
        except BadRecord as exc:  # a bad message is left out; the rest of the task converts
            errors.append(TraceError(origin.source, None, exc.field, exc.message))
            continue
        role, ts = m["role"], m.get("ts")
        meta = {"role": role, "message_index": i, "timestamp": ts}
        if m.get("isSummary"):
            t.out.add(step("system", content_text(blocks), None, {**meta, "summary": True}))
        elif role == "user":
            t.user(blocks, meta, w)
        else:
            # the UI's reasoning since the previous reply led to this one (unless the reply keeps its own thinking)
            if isinstance(ts, (int, float)) and thoughts:
                has_thinking = any(b.get("type") == "thinking" for b in blocks)
                while thoughts and thoughts[0][0] <= ts:
                    r_ts, r_text = thoughts.pop(0)
                    if not has_thinking:
                        t.out.add(step("thought", r_text, None, {"role": "assistant", "timestamp": r_ts, "from": UI}))
            t.assistant(blocks, meta, w, _next_result_tool(messages, i))
    # the folder of an api_conversation_history.json is named after the task's id
    task_id = folder.name if Path(origin.source).name == HISTORY else None
    meta = {"task_id": task_id, "model": t.model}
    usage = _usage(ui)
    if usage:
        meta["usage"] = usage
    tm = _companion(folder / TASK_METADATA)
    if _is_task_metadata(tm):
        meta["files_in_context"] = tm["files_in_context"]
    return [*errors, finish(origin, task_id or default_id(origin), t.task, t.out.steps(), meta)]


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """The history file's messages as one record; the task folder's other files are read with it."""
    source = str(path)
    origin = Origin(fmt, source)
    doc = load_located(path)
    if isinstance(doc, TraceError):
        yield origin, doc
    elif _is_ui(doc) or _is_task_metadata(doc):
        if not (path.parent / HISTORY).is_file():  # else read with the history beside it, into its trace
            yield origin, TraceError(source, None, None, f"a Cline/Roo task file without its {HISTORY}: the trace is "
                                                         "made from that file")
    elif not isinstance(doc, list):
        yield origin, TraceError(source, None, None, f"expected a list of messages ({HISTORY}), got {describe(doc)}")
    else:
        yield origin, doc


CONVERTER = Converter(
    name=NAME,
    description="Cline / Roo Code task folders (api_conversation_history.json with XML tool calls and [tool] "
                "Result: blocks, "
    "ui_messages.json reasoning and costs, task_metadata.json)",
    shapes="api_conversation_history.json [{role, content: [{type: text, text}], ts}]; ui_messages.json [{ts, type: "
           "say|ask, ...}]; "
    "task_metadata.json {files_in_context}",
    detect=detect,
    one=one,
    read=_read,
)
