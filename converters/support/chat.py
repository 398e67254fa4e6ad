"""Chat messages in their dialects: OpenAI Chat Completions (``tool_calls``, ``tool`` results, legacy
``function_call``), Anthropic content blocks (``tool_use`` / ``tool_result``, thinking), and the
generic ``{role, content | parts}`` shapes of LangChain, OpenInference and OpenTelemetry (content
part lists with ``tool_call`` / ``tool_call_response`` parts). Tool calls are read into
:class:`ToolCall`; calls are paired with their results through :class:`~.steps.StepList`.

Message content (a string or a list of parts) becomes text with :func:`content_text`: text parts give
their text, media parts a short reference (never inline base64), any other part one line of JSON. A
tool's output becomes text with :func:`value_text`: the same for a list of text parts, indented JSON
for data.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import Step, describe

from ..base import Gather, Unit
from .errors import BadRecord, expect
from .files import Origin, maybe_json
from .steps import NO_ACTOR, StepBatch, StepList, compact, dumps, render_args, role_actor, step, text

#: the actor of a user's message (what step() finds from its role, given directly where the dialect says so)
_USER = role_actor("user")
_MEDIA = frozenset({"image_url", "image", "input_image", "blob", "uri", "file"})
_DATA_URL = re.compile(r"^data:([^;,]*)(;base64)?,", re.I)
_B64ISH = re.compile(r"^[A-Za-z0-9+/=\s]{2000,}$")


# ---------------------------------------------------------------- content

#: where an API log record (a Chat Completions or Messages request with its reply) names its conversation
RECORD_ID_KEYS = ("trace_id", "id", "conversation_id", "session_id")


def record_id(rec: dict, keys: tuple[str, ...] = RECORD_ID_KEYS) -> str | None:
    """An API log record's own id (the first of ``keys`` it has, as text), None when it has none."""
    for k in keys:  # once per record (a loop rather than a generator: benchmarks/converter_instructions.py)
        v = rec.get(k)
        if v is not None and v != "":
            return text(v)
    return None


def record_meta(rec: dict, keys: tuple[str, ...], reply: dict | None = None) -> dict:
    """The trace metadata an API log record gives: its ``keys`` that are not null, each read from ``reply`` (the
    response logged with the request) where that has the key, else from the record; ``metadata`` as
    ``record_metadata``."""
    src = rec if reply is None else reply
    meta = {}
    for k in keys:
        v = src[k] if k in src else rec.get(k)
        if v is not None:
            meta["record_metadata" if k == "metadata" else k] = v
    return meta


class RecordsOrSession(Gather):
    """An API log's records, one trace each, or, when a JSONL file's first line says so, the whole file as one
    trace written line by line (a conversation message by message, a Codex rollout). The first line decides (a
    broken one decides for records). A subclass says which first line (:meth:`starts_session`), how a line of the
    session is taken (:meth:`take`: what it returns is ready now, what it raises is the line's error) and what the
    session makes at the end (:meth:`made`); records go to ``one``, as the record they are."""

    def __init__(self, path: Path) -> None:
        self.source = str(path)
        self.session: bool | None = None

    def starts_session(self, first: Any) -> bool:
        raise NotImplementedError

    def take(self, rec: Any, origin: Origin) -> Iterable | None:
        raise NotImplementedError

    def made(self) -> Iterable:
        raise NotImplementedError

    def add(self, rec: Any, origin: Origin) -> Iterable | None:
        if self.session is None:
            self.session = origin.line is not None and origin.ordinal == 0 and self.starts_session(rec)
        return self.take(rec, origin) if self.session else [Unit(origin, rec)]

    def end(self) -> Iterable:
        return self.made() if self.session else ()


def media_ref(value: Any) -> str:
    """A short reference for an image or file: paths and URLs as given, inline data summarised, never inlined."""
    if value is None:
        return ""
    if not isinstance(value, str):
        if isinstance(value, (list, dict)):
            return f"<inline {describe(value)} image data, not kept>"
        return str(value)
    m = _DATA_URL.match(value)
    if m:
        kind = m.group(1) or "application/octet-stream"
        return f"data:{kind}{m.group(2) or ''},<{len(value) - m.end()} chars not inlined>"
    if len(value) > 2000 and _B64ISH.match(value[:4000]):
        return f"<base64 data, {len(value)} chars not inlined>"
    return value


def part_text(p: dict, text_keys: tuple[str, ...] = ("text",)) -> str | None:
    """The text of one content part: its first string under ``text_keys`` (or ``content`` of a text
    part), a reference for a media part; None for any other part."""
    for k in text_keys:
        v = p.get(k)
        if v.__class__ is str:
            return v
    ptype = p.get("type")
    if (ptype is None or ptype == "text") and p.get("content").__class__ is str:
        return p["content"]
    if ptype.__class__ is str and ptype in _MEDIA:
        src = p.get("image_url") or p.get("url") or p.get("uri") or p.get("source") or p.get("content") or p.get("file")
        if isinstance(src, dict):
            src = src.get("url") or src.get("data") or src.get("uri") or src.get("path")
        return f"[{ptype}: {media_ref(src)}]"
    return None


def content_text(content: Any, text_keys: tuple[str, ...] = ("text",)) -> str:
    """Message content as one string: a string as it is; a list of parts joined by newlines (each
    part's text, a media reference, or one line of JSON for any other part); a lone typed part
    likewise; any other value as indented JSON."""
    if content.__class__ is str:
        return content
    if content is None:
        return ""
    if content.__class__ is dict:  # a typed part alone; any other object is a value
        t = part_text(content, text_keys) if "type" in content else None
        return t if t is not None else dumps(content)
    if content.__class__ is not list:
        return text(content)
    out = []
    for p in content:
        if p.__class__ is str:
            out.append(p)
        elif p.__class__ is dict:
            t = part_text(p, text_keys)
            out.append(t if t is not None else compact(p))
        else:
            out.append(text(p))
    return "\n".join(out)


def value_text(value: Any) -> str:
    """A tool's output (or another value) as text: a string as it is; a list made only of text and
    media parts joined like message content; any other value (records, documents) as indented JSON."""
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    if value.__class__ is list and value and all(p.__class__ is str or p.__class__ is dict and part_text(p) is not None
                                                 for p in value):
        return content_text(value)
    return text(value)


# ---------------------------------------------------------------- tool calls

@dataclass
class ToolCall:
    name: str
    args: Any
    call_id: str | None = None


def call_id(value: Any) -> str | None:
    """A call id as text; None when absent or empty (then nothing pairs by it)."""
    return None if value is None or value == "" else value if value.__class__ is str else str(value)


def tool_call(tc: Any, where: str) -> ToolCall:
    """One OpenAI-style tool call ``{id, function: {name, arguments}}``; Inspect's and smolagents'
    flat ``{id, function: "name", arguments}`` too. A call without a name is a BadRecord at ``where``."""
    if tc.__class__ is not dict:
        expect(tc, dict, where)
    fn = tc.get("function")
    if fn.__class__ is dict:
        name, args = fn.get("name"), fn.get("arguments")
    else:
        name, args = (fn if isinstance(fn, str) else tc.get("name")), tc.get("arguments", tc.get("input"))
    if name is None:
        raise BadRecord(f"{where}.function.name", "missing")
    return ToolCall(name if name.__class__ is str else text(name), args, call_id(tc.get("id")))


def tool_calls_of(m: dict) -> list[ToolCall]:
    """The tool calls of a message in any dialect (``tool_calls``, LangChain's ``additional_kwargs``,
    legacy ``function_call``, OpenInference's ``tool_call`` wrapper); calls that are not objects are skipped."""
    if "tool_calls" not in m and "additional_kwargs" not in m and "function_call" not in m:
        return []  # the usual plain message: nothing to look at (tested key by key: no generator on a hot path)
    out = []
    raw = m.get("tool_calls")
    if raw is None and isinstance(m.get("additional_kwargs"), dict):
        raw = m["additional_kwargs"].get("tool_calls")
    if raw is None and isinstance(m.get("function_call"), dict):
        raw = [{"function": m["function_call"]}]
    for tc in raw if isinstance(raw, list) else []:
        if not isinstance(tc, dict):
            continue
        fn: dict = tc["function"] if isinstance(tc.get("function"), dict) else tc
        if "tool_call" in tc and isinstance(tc["tool_call"], dict):
            inner = tc["tool_call"]
            fn = inner["function"] if isinstance(inner.get("function"), dict) else inner
            tc = inner
        name = fn.get("name")
        args = fn.get("arguments", fn.get("args", fn.get("input")))
        out.append(
            ToolCall(str(name) if name is not None else "", args, call_id(tc.get("id") or tc.get("tool_call_id")))
        )
    return out


# ---------------------------------------------------------------- OpenAI Chat Completions

def openai_messages(messages: list, out: StepList, *, where: str = "messages", agent: str | None = None,
                    warnings: list | None = None) -> str:
    """Append the steps of OpenAI Chat Completions messages; return the task (the first user text).

    Roles: system/developer → system; user → message; assistant → thought (reasoning), message
    (text) and one action per tool call; tool/function → observation, or error when the message
    says so. Unknown roles become ``other`` steps with the message as JSON (and a warning).
    """
    expect(messages, list, where)
    task = None
    legacy_calls: list[str] = []
    for i, m in enumerate(messages):
        if m.__class__ is not dict:
            expect(m, dict, f"{where}[{i}]")
        role = m.get("role")
        meta = {"message_index": i}
        if m.get("id") is not None:
            meta["message_id"] = m.get("id")
        if role in ("system", "developer"):
            out.add(step("system", content_text(m.get("content")), None, {"role": role, **meta}))
        elif role == "user":
            content = content_text(m.get("content"))
            if task is None:
                task = content
            nm = m.get("name")
            out.add(step("message", content, None,
                         {"role": "user", "name": nm, **meta} if nm else {"role": "user", **meta}, _USER))
        elif role == "assistant":
            name = m.get("name") or agent
            by = {"agent": name, **meta} if name else meta  # each step's metadata is a new dict made from these
            said = {"role": "assistant", **by}
            reasoning = m.get("reasoning_content") or m.get("reasoning")
            if reasoning:
                out.add(step("thought", content_text(reasoning), None, dict(said)))
            content = m.get("content")
            if content is not None and not isinstance(content, (str, list, dict)):
                raise BadRecord(
                    f"{where}[{i}].content", f"expected a string or a list of parts, got {describe(content)}"
                )
            # Inspect AI and others keep reasoning as a content part
            if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "reasoning" for p in content):
                for p in content:
                    if isinstance(p, dict) and p.get("type") == "reasoning":
                        out.add(step("thought", text(p.get("reasoning") or p.get("summary")), None, dict(said)))
                content = [p for p in content if not (isinstance(p, dict) and p.get("type") == "reasoning")]
            body = content_text(content)
            calls = m.get("tool_calls") or []
            if calls.__class__ is not list:
                expect(calls, list, f"{where}[{i}].tool_calls")
            if body or not calls and not m.get("function_call"):
                out.add(step("message", body, None, said, NO_ACTOR))  # the assistant's: no actor, none looked for
            for j, tc in enumerate(calls):
                c = tool_call(tc, f"{where}[{i}].tool_calls[{j}]")
                out.call(c.call_id, step("action", c.name, render_args(c.args), {**by, "tool_call_id": c.call_id}))
            fc = m.get("function_call")
            if fc:
                expect(fc, dict, f"{where}[{i}].function_call")
                legacy = f"legacy-{i}"  # no id: the next function message answers the oldest open call
                legacy_calls.append(legacy)
                out.call(legacy, step("action", text(fc.get("name")), render_args(fc.get("arguments")), dict(by)))
        elif role in ("tool", "function"):
            cid = call_id(m.get("tool_call_id"))
            key: str | None = cid
            if cid is None and role == "function" and legacy_calls:
                key = legacy_calls.pop(0)
            err = m.get("error")
            content = content_text(m.get("content"))
            extra: dict[str, Any] = dict(meta)
            by = None  # a named tool's result: its actor is found by step(); else by the call it answers, or none
            if m.get("name") or m.get("function"):
                extra["tool_name"] = m.get("name") or m.get("function")
            else:
                by = NO_ACTOR
            if err:
                if isinstance(err, dict):
                    extra["error_type"] = err.get("type")
                    msg = text(err.get("message"))
                else:
                    msg = text(err)
                if content and content != msg:
                    extra["tool_output"] = content
                out.result(key, step("error", msg or content, None, {**extra, "tool_call_id": cid}, by))
            else:
                out.result(key, step("observation", content, None, {**extra, "tool_call_id": cid}, by))
        else:
            out.add(step("other", compact(m), None, {"role": role, **meta}))
            if warnings is not None:
                warnings.append(f"{where}[{i}]: unknown role {role!r} kept as an 'other' step")
    return task or ""


# ---------------------------------------------------------------- Anthropic content blocks

def anthropic_blocks(role: str, content: Any, out: StepList | StepBatch, where: str, *, agent: str | None = None,
                     meta: dict | None = None, result_meta: dict | None = None) -> str:
    """Append the steps of one Anthropic message (string or content blocks); return its user text.

    text → message; thinking → thought; redacted_thinking → thought (its opaque data kept in
    ``redacted_data``); tool_use / server_tool_use / mcp_tool_use → action; tool_result and
    ``*_tool_result`` → observation, or error when ``is_error``; other blocks (image, document, ...)
    → ``other`` as JSON. ``meta`` goes on every step, ``result_meta`` on results only.
    """
    base = meta or {}
    # the metadata every kind of step starts from, made once per message (the loop runs once per block)
    said = {"role": role, "agent": agent, **base} if agent is not None and role != "user" else {"role": role, **base}
    # who made its text and its results, found once per message rather than by step() per block: a person's or the
    # harness's text by its role; a result by its named tool, else by the call it answers (StepList)
    said_by = role_actor(role) or NO_ACTOR
    if content is None:
        content = ""
    if content.__class__ is str:
        out.add(step("message", content, None, dict(said), said_by))
        return content if role == "user" else ""
    if content.__class__ is not list:
        expect(content, list, f"{where}.content")
    tool = {"agent": agent, **base} if agent is not None else base
    results = {**base, **result_meta} if result_meta else base
    results_by = None if "tool_name" in results else NO_ACTOR
    user_text = []
    # the location string is built only when a block is bad
    for j, b in enumerate(content):
        if b.__class__ is str:
            b = {"type": "text", "text": b}
        elif b.__class__ is not dict:
            expect(b, dict, f"{where}.content[{j}]")
        bt = b.get("type")
        if bt == "text":
            t = b.get("text")
            if t is None:
                t = ""
            elif t.__class__ is not str:
                raise BadRecord(f"{where}.content[{j}].text", f"expected a string, got {describe(t)}")
            if role == "user":
                user_text.append(t)
            out.add(step("message", t, None, dict(said), said_by))
        elif bt == "tool_use" or bt == "server_tool_use" or bt == "mcp_tool_use":
            name = b.get("name")
            if name is None:
                raise BadRecord(f"{where}.content[{j}].name", "missing")
            cid = call_id(b.get("id"))
            m = {**tool, "tool_call_id": cid} if bt == "tool_use" else {"block_type": bt, **tool, "tool_call_id": cid}
            out.call(cid, step("action", name if name.__class__ is str else text(name), render_args(b.get("input")), m))
        elif bt == "tool_result" or isinstance(bt, str) and bt.endswith("_tool_result"):
            body = b.get("content")
            body_text = content_text(body) if not isinstance(body, dict) else compact(body)
            is_err = bool(b.get("is_error"))
            if isinstance(body, dict) and isinstance(body.get("type"), str) and body["type"].endswith("_error"):
                is_err = True
            cid = call_id(b.get("tool_use_id"))
            m = (
                {**results, "tool_call_id": cid}
                if bt == "tool_result"
                else {"block_type": bt, **results, "tool_call_id": cid}
            )
            out.result(cid, step("error" if is_err else "observation", body_text, None, m, results_by))
        elif bt == "thinking":
            out.add(step("thought", text(b.get("thinking")), None, {"role": role, **tool}))
        elif bt == "redacted_thinking":
            out.add(
                step("thought", "[redacted thinking]", None, {"role": role, **tool, "redacted_data": b.get("data")})
            )
        else:
            out.add(step("other", compact(b), None, {"role": role, "block_type": bt, **base}))
    return "\n".join(user_text)


# ---------------------------------------------------------------- generic {role, content | parts} messages

_ROLE = {
    "human": "user",
    "user": "user",
    "humanmessage": "user",
    "humanmessagechunk": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "aimessage": "assistant",
    "aimessagechunk": "assistant",
    "model": "assistant",
    "system": "system",
    "systemmessage": "system",
    "developer": "system",
    "tool": "tool",
    "toolmessage": "tool",
    "function": "tool",
    "functionmessage": "tool",
    "ipython": "tool",
}


def unwrap_message(msg: Any) -> dict | None:
    """A chat message in any of the common dialects as a new {role, content, tool_calls, ...}; None if not one."""
    if not isinstance(msg, dict):
        return None
    # LangChain serialisation: {"lc":1,"type":"constructor","id":[..., "AIMessage"],"kwargs":{...}}
    if msg.get("lc") and isinstance(msg.get("kwargs"), dict):
        ids = msg.get("id") or []
        kw = dict(msg["kwargs"])
        kw.setdefault("role", _ROLE.get(str(ids[-1]).lower(), str(ids[-1])) if ids else kw.get("type"))
        return kw
    # messages_to_dict: {"type": "ai", "data": {...}}
    if isinstance(msg.get("data"), dict) and isinstance(msg.get("type"), str) and "content" in msg["data"]:
        d = dict(msg["data"])
        d.setdefault("role", msg["type"])
        return d
    # OpenInference / Phoenix: {"message": {"role":..., "content":...}}
    if len(msg) == 1 and "message" in msg and isinstance(msg["message"], dict):
        return unwrap_message(msg["message"])
    if "role" in msg or ("type" in msg and ("content" in msg or "parts" in msg)):
        d = dict(msg)
        if "role" not in d:
            d["role"] = d.get("type")
        return d
    return None


def read_message(msg: Any) -> dict | None:
    """unwrap_message for reading only: a plain {role, ...} message is returned as is, not copied."""
    if msg.__class__ is dict and "role" in msg and "lc" not in msg and "data" not in msg:
        return msg
    return unwrap_message(msg)


def norm_role(role: Any) -> str:
    """user, assistant, system or tool for the usual spellings (human, ai, AIMessage, ...); others lowercased."""
    if role is None:
        return ""
    r = (role if type(role) is str else str(role)).lower()
    return _ROLE.get(r, r)


def message_parts(m: dict) -> tuple[str, str, list[ToolCall], list[tuple[str | None, Any, bool]]]:
    """(text, reasoning, tool calls, tool results) of one message, from its content string or part list."""
    content = m.get("content")
    if type(content) is str and "parts" not in m:  # the usual case: one text, no part list
        return content, "", tool_calls_of(m), []
    parts = m.get("parts") if isinstance(m.get("parts"), list) else (content if isinstance(content, list) else None)
    texts, reasons, calls, results = [], [], list(tool_calls_of(m)), []
    if parts is None:
        texts.append(content_text(content))
    else:
        for p in parts:
            if not isinstance(p, dict):
                texts.append(p if isinstance(p, str) else text(p))
                continue
            pt = p.get("type")
            if pt in ("reasoning", "thinking", "redacted_thinking"):
                reasons.append(content_text(p.get("content", p.get("thinking", p.get("text", p.get("data"))))))
            elif pt in ("tool_call", "tool_use", "function_call", "tool-call"):
                calls.append(ToolCall(str(p.get("name", "")), p.get("arguments", p.get("input", p.get("args"))),
                                      call_id(p.get("id") or p.get("call_id") or p.get("toolCallId"))))
            elif pt in ("tool_call_response", "tool_result", "function_call_output", "tool-result"):
                val = p.get("response", p.get("content", p.get("output", p.get("result"))))
                results.append((call_id(p.get("id") or p.get("tool_use_id") or p.get("call_id") or p.get("toolCallId")),
                                val, bool(p.get("is_error"))))
            else:
                t = part_text(p)
                texts.append(t if t is not None else compact(p))
    return "\n".join(t for t in texts if t), "\n".join(r for r in reasons if r), calls, results


def message_steps(msg: Any, **meta: Any) -> list[Step]:
    """Steps for one chat message outside a model turn (inputs, histories)."""
    m = unwrap_message(msg)
    if m is None:
        return [step("other", content_text(msg), None, dict(meta))]
    role = norm_role(m.get("role"))
    body, reasoning, calls, results = message_parts(m)
    if m.get("name") and role != "tool":
        meta.setdefault("name", m.get("name"))
    if role == "system":
        return [step("system", body, None, dict(meta))]
    if role == "tool":
        is_err = m.get("status") == "error" or bool(m.get("is_error"))
        return [step("error" if is_err else "observation", body, None,
                     {"tool_call_id": call_id(m.get("tool_call_id")), "tool_name": m.get("name"), **meta})]
    steps = []
    if reasoning:
        steps.append(step("thought", reasoning, None, {"role": role, **meta}))
    if body or not (calls or results or reasoning):
        stype = "thought" if (calls and role == "assistant") else "message"
        steps.append(step(stype, body, None, {"role": role or None, **meta}))
    for tc in calls:
        steps.append(step("action", tc.name, render_args(tc.args), {"tool_call_id": tc.call_id, **meta}))
    for cid, val, is_err in results:
        steps.append(step("error" if is_err else "observation", value_text(val), None, {"tool_call_id": cid, **meta}))
    return steps


def first_user_text(msgs: Iterable) -> str | None:
    for raw in msgs or []:
        m = unwrap_message(raw)
        if m is not None and norm_role(m.get("role")) == "user":
            return message_parts(m)[0]
    return None


def task_from_input(value: Any) -> str | None:
    """The user's request out of a run or span input: a string, messages, or an object with a usual key."""
    value = maybe_json(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        t = first_user_text(value)
        if t is not None:
            return t
        if value and isinstance(value[0], list):
            return first_user_text(value[0])
        return None
    if isinstance(value, dict):
        for k in (
            "task",
            "input",
            "question",
            "query",
            "prompt",
            "goal",
            "instruction",
            "user_input",
            "request",
            "message",
        ):
            v = value.get(k)
            if isinstance(v, str):
                return v
        for k in ("messages", "inputs", "prompts"):
            if k in value:
                t = task_from_input(value[k])
                if t is not None:
                    return t
    return None
