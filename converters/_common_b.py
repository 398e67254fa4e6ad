"""Helpers shared by the part-B converters (span trees, chat messages, locating bad input).

Kept apart from ``_common.py`` (owned by part A) so both halves can move independently.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ls_trajeval.core.trace import Step, Trace, TraceError, describe, loads_strict, open_text

from . import _io
from ._common import BadRecord, dumps
from .base import ConvertWarning, Sample


#: one record's conversion failed; becomes a located TraceError for that record only
Bad = BadRecord


def want(obj: dict, key: str, types: type | tuple, where: str, required: bool = False, default: Any = None) -> Any:
    """obj[key] checked against types; missing/None gives default (or Bad when required)."""
    val = obj.get(key)
    if val is None:
        if required:
            raise Bad(f"{where}{key}", "missing")
        return default
    if val.__class__ is types:  # the common case, checked first: this runs for every field read
        return val
    if isinstance(val, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise Bad(f"{where}{key}", f"expected {_tname(types)}, got {describe(val)}")
    if not isinstance(val, types):
        raise Bad(f"{where}{key}", f"expected {_tname(types)}, got {describe(val)}")
    return val


def _tname(types) -> str:
    names = {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object", bool: "a boolean"}
    if not isinstance(types, tuple):
        types = (types,)
    return " or ".join(dict.fromkeys(names.get(t, t.__name__) for t in types))


# ---------------------------------------------------------------- text

def jdump(value: Any) -> str:
    return dumps(value)  # orjson when it can (several times faster), json with default=str when not


def text_of(value: Any) -> str:
    """Readable text for a content value: strings byte for byte, parts joined, other JSON pretty-printed."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(p, (dict, str)) for p in value):
        pieces = []
        for p in value:
            if isinstance(p, str):
                pieces.append(p)
                continue
            t = part_text(p)
            if t is None:
                return jdump(value)
            pieces.append(t)
        return "\n".join(pieces)
    return jdump(value)


def part_text(p: dict) -> str | None:
    """Text of one content part (OpenAI/Anthropic/OTel/LangChain part dialects), None if unknown."""
    ptype = p.get("type")
    if ptype in (None, "text", "input_text", "output_text") and isinstance(p.get("text"), str):
        return p["text"]
    if ptype in (None, "text") and isinstance(p.get("content"), str):
        return p["content"]
    if ptype in ("image_url", "image", "input_image", "blob", "uri", "file"):
        src = p.get("image_url") or p.get("url") or p.get("uri") or p.get("source") or p.get("content") or p.get("file")
        if isinstance(src, dict):
            src = src.get("url") or src.get("data") or src.get("uri") or src.get("path")
        return f"[{ptype}: {media_ref(src)}]"
    return None


_DATA_URL = re.compile(r"^data:([^;,]*)(;base64)?,", re.I)
_B64ISH = re.compile(r"^[A-Za-z0-9+/=\s]{2000,}$")


def media_ref(value: Any) -> str:
    """A short reference for a screenshot/image: paths and URLs as given, inline data summarised, never inlined."""
    if value is None:
        return ""
    if not isinstance(value, str):
        if isinstance(value, (list, dict)):
            return f"<inline {describe(value)} image data, not kept>"
        return str(value)
    m = _DATA_URL.match(value)
    if m:
        return f"data:{m.group(1) or 'application/octet-stream'}{m.group(2) or ''},<{len(value) - m.end()} chars not inlined>"
    if len(value) > 2000 and _B64ISH.match(value[:4000]):
        return f"<base64 data, {len(value)} chars not inlined>"
    return value


def args_text(value: Any) -> str:
    """Tool arguments as readable text: structured values as indented JSON, strings exactly as given."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return jdump(value)


def maybe_json(value: Any) -> Any:
    """A JSON-looking string decoded, anything else unchanged (for attributes that carry JSON text)."""
    if isinstance(value, str):
        s = value.lstrip()
        if s[:1] in ("{", "["):
            try:
                return _io.loads(value)
            except (ValueError, RecursionError):
                return value
    return value


# ---------------------------------------------------------------- time

_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from ISO text or epoch numbers in s/ms/us/ns; None when unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        s = value.strip()
        if _NUMBER.fullmatch(s):
            return parse_time(float(s) if "." in s else int(s))
        try:
            dt = datetime.fromisoformat(s)  # Python 3.11 reads "Z" and long fractions itself: the fast path
        except ValueError:
            try:
                s = s.replace("Z", "+00:00").replace("z", "+00:00")
                # older fromisoformat takes at most 6 fractional digits; OTel/LangSmith often write 9
                s = _LONG_FRACTION.sub(r"\1", s)
                dt = datetime.fromisoformat(s)
            except ValueError:
                return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    if isinstance(value, (int, float)):
        v = float(value)
        a = abs(v)
        if a > 1e17:
            return v / 1e9
        if a > 1e14:
            return v / 1e6
        if a > 1e11:
            return v / 1e3
        return v
    return None


# ---------------------------------------------------------------- trees

def tree_order(
    nodes: list,
    get_id: Callable[[Any], Any],
    get_parent: Callable[[Any], Any],
    sort_key: Callable[[Any], Any],
) -> list[tuple[Any, int]]:
    """(node, depth) in depth-first order, siblings by sort_key then input order.

    A node whose parent is absent is a root; nodes caught in a parent cycle are appended as roots
    so none is lost.
    """
    ids = {}
    for i, n in enumerate(nodes):
        nid = get_id(n)
        if nid is not None and nid not in ids:
            ids[nid] = i
    children: dict[int, list[int]] = {}
    roots = []
    for i, n in enumerate(nodes):
        pid = get_parent(n)
        if pid is not None and pid in ids and ids[pid] != i:
            children.setdefault(ids[pid], []).append(i)
        else:
            roots.append(i)

    keys = []  # each node's sort key once (it is a timestamp parse), not once per sort
    for i, n in enumerate(nodes):
        k = sort_key(n)
        keys.append((k is None, k if k is not None else 0, i))
    key = keys.__getitem__
    if not children:  # a flat list, the usual export: one sort
        return [(nodes[i], 0) for i in sorted(range(len(nodes)), key=key)]

    out: list[tuple[Any, int]] = []
    seen = set()

    def walk(start: int):
        stack = [(start, 0)]
        while stack:
            i, d = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            out.append((nodes[i], d))
            kids = children.get(i)
            if kids:
                kids = sorted(kids, key=key)
                for k in reversed(kids):
                    stack.append((k, d + 1))

    for r in sorted(roots, key=key):
        walk(r)
    for i in range(len(nodes)):
        if i not in seen:
            walk(i)
    return out


# ---------------------------------------------------------------- steps

def clean_meta(meta: dict) -> dict:
    """A copy of step metadata without its empty entries (None values and empty objects)."""
    return {k: v for k, v in meta.items() if v is not None and (v.__class__ is not dict or v)}


def mk_step(stype: str, content: Any, action_input: Any = None, **meta: Any) -> Step:
    if meta:
        meta = clean_meta(meta)
    return Step(stype, content if content.__class__ is str else text_of(content), action_input,
                {"metadata": meta} if meta else {})


def step_meta(step: Step) -> dict:
    return step.extra.setdefault("metadata", {})


@dataclass
class ToolCall:
    name: str
    args: Any
    call_id: str | None = None


@dataclass
class LLMEvent:
    """One model turn; its text becomes a thought (if tools follow) or a message."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    #: tool results the model was given in its input, by call id (OTel/LangChain message histories)
    input_results: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    #: non-assistant messages of the output (rare), kept as extra steps
    extra_steps: list[Step] = field(default_factory=list)


@dataclass
class ToolEvent:
    name: str
    args: Any
    output: Any
    is_error: bool = False
    call_id: str | None = None
    meta: dict = field(default_factory=dict)
    has_output: bool = True


def assemble(events: list) -> list[Step]:
    """Turn LLM/tool events (and ready Steps) into ordered steps with every call followed by its result.

    A tool call the model asked for that a later tool span/run executes is shown once, by the tool
    span (it has the result); calls no span executed become action steps of their own, followed by
    the result when a later model input carries it.
    """
    tools = [(i, e) for i, e in enumerate(events) if isinstance(e, ToolEvent)]
    consumed: set[int] = set()
    unmatched: dict[int, list[ToolCall]] = {}
    # one backward pass: the index of the next model turn after each event, and whether the next
    # tool-or-model event after it is a tool (both were forward scans per turn: quadratic)
    n = len(events)
    next_llm = [n] * n
    tool_next = [False] * n
    nl, tk = n, False
    for i in range(n - 1, -1, -1):
        next_llm[i] = nl
        tool_next[i] = tk
        e = events[i]
        if isinstance(e, LLMEvent):
            nl, tk = i, False
        elif isinstance(e, ToolEvent):
            tk = True
    for i, e in enumerate(events):
        if not isinstance(e, LLMEvent):
            continue
        nxt = next_llm[i]
        for tc in e.tool_calls:
            hit = None
            for j, t in tools:
                if j <= i or j in consumed:
                    continue
                if tc.call_id and t.call_id:
                    if tc.call_id == t.call_id:
                        hit = j
                        break
                elif t.name == tc.name and j < nxt:
                    # without ids, only a tool run before the model's next turn can be this call
                    hit = j
                    break
            if hit is None:
                unmatched.setdefault(i, []).append(tc)
                continue
            consumed.add(hit)
            if tc.call_id and not events[hit].call_id:
                events[hit].call_id = tc.call_id

    steps: list[Step] = []
    for i, e in enumerate(events):
        if isinstance(e, Step):
            steps.append(e)
        elif isinstance(e, ToolEvent):
            # Step() with cleaned metadata built once per event: this loop makes most of a trace's steps
            meta = clean_meta(e.meta)
            cid = e.call_id
            am = {"tool_call_id": cid, **meta} if cid else meta
            steps.append(Step("action", e.name, args_text(e.args), {"metadata": am} if am else {}))
            if e.has_output or e.is_error:
                om = {"tool_call_id": cid, "tool_name": e.name, **meta} if cid else {"tool_name": e.name, **meta}
                steps.append(Step("error" if e.is_error else "observation", text_of(e.output), None, {"metadata": om}))
        elif isinstance(e, LLMEvent):
            follows_tool = bool(e.tool_calls) or tool_next[i]
            meta = clean_meta(e.meta)
            if e.tool_calls:
                meta["tool_calls"] = [{"name": t.name, "id": t.call_id} if t.call_id else {"name": t.name} for t in e.tool_calls]
            emitted = False
            if e.reasoning:
                steps.append(mk_step("thought", e.reasoning, reasoning=True, **meta))
                emitted = True
            if e.text or not (emitted or e.tool_calls):
                steps.append(Step("thought" if follows_tool else "message", e.text, None, {"metadata": dict(meta)} if meta else {}))
                emitted = True
            steps.extend(e.extra_steps)
            for tc in unmatched.get(i, []):
                m = {k: v for k, v in e.meta.items() if k not in ("usage", "input_tokens", "output_tokens")}
                steps.append(mk_step("action", tc.name, args_text(tc.args), tool_call_id=tc.call_id, **m))
                if not emitted and "tool_calls" in meta:
                    # the turn had no text: keep its provenance (tokens, model) on its first action
                    step_meta(steps[-1]).update({k: v for k, v in meta.items() if k != "tool_calls"})
                    emitted = True
                res = None
                for later in events[i + 1:]:
                    if isinstance(later, LLMEvent) and tc.call_id and tc.call_id in later.input_results:
                        res = later.input_results[tc.call_id]
                        break
                if res is not None:
                    val, is_err = res
                    steps.append(mk_step("error" if is_err else "observation", text_of(val), tool_call_id=tc.call_id, tool_name=tc.name))
            if not emitted and e.tool_calls:
                # every call was executed by a tool span: the turn itself leaves a thought only for its
                # provenance, so tokens and model are not lost
                steps.append(mk_step("thought", "", **meta))
    return steps


# ---------------------------------------------------------------- chat messages

_ROLE = {
    "human": "user", "user": "user", "humanmessage": "user", "humanmessagechunk": "user",
    "ai": "assistant", "assistant": "assistant", "aimessage": "assistant", "aimessagechunk": "assistant", "model": "assistant",
    "system": "system", "systemmessage": "system", "developer": "system",
    "tool": "tool", "toolmessage": "tool", "function": "tool", "functionmessage": "tool", "ipython": "tool",
}


def unwrap_message(msg: Any) -> dict | None:
    """A chat message in any of the common dialects as {role, content, tool_calls, ...}; None if not one."""
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
    if set(msg) == {"message"} and isinstance(msg["message"], dict):
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
    if role is None:
        return ""
    r = (role if type(role) is str else str(role)).lower()
    return _ROLE.get(r, r)


_CALL_KEYS = ("tool_calls", "additional_kwargs", "function_call")


def tool_calls_of(m: dict) -> list[ToolCall]:
    if not any(k in m for k in _CALL_KEYS):  # the usual plain message: nothing to look at
        return []
    out = []
    raw = m.get("tool_calls")
    if raw is None and isinstance(m.get("additional_kwargs"), dict):
        raw = m["additional_kwargs"].get("tool_calls")
    if raw is None and isinstance(m.get("function_call"), dict):
        raw = [{"function": m["function_call"]}]
    for tc in raw if isinstance(raw, list) else []:
        if not isinstance(tc, dict):
            continue
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
        # OpenInference flattens as tool_call.function.name
        if "tool_call" in tc and isinstance(tc["tool_call"], dict):
            inner = tc["tool_call"]
            fn = inner.get("function") if isinstance(inner.get("function"), dict) else inner
            tc = inner
        name = fn.get("name")
        args = fn.get("arguments", fn.get("args", fn.get("input")))
        out.append(ToolCall(str(name) if name is not None else "", args, _sid(tc.get("id") or tc.get("tool_call_id"))))
    return out


def tree_id(value: Any, where: str) -> Any:
    """A run or span id as given, when it can key a tree (a string or a number), else a located error."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise Bad(where, f"expected a string, got {describe(value)}")


def _sid(v: Any) -> str | None:
    return None if v is None or v == "" else str(v)


def message_parts(m: dict) -> tuple[str, str, list[ToolCall], list[tuple[str | None, Any, bool]]]:
    """(text, reasoning, tool calls, tool results) of one message, from content string or part lists."""
    content = m.get("content")
    if type(content) is str and "parts" not in m:  # the usual case: one text, no part list
        return content, "", tool_calls_of(m), []
    parts = m.get("parts") if isinstance(m.get("parts"), list) else (content if isinstance(content, list) else None)
    texts, reasons, calls, results = [], [], list(tool_calls_of(m)), []
    if parts is None:
        texts.append(text_of(content))
    else:
        for p in parts:
            if isinstance(p, str):
                texts.append(p)
                continue
            if not isinstance(p, dict):
                texts.append(jdump(p))
                continue
            pt = p.get("type")
            if pt in ("reasoning", "thinking", "redacted_thinking"):
                reasons.append(text_of(p.get("content", p.get("thinking", p.get("text", p.get("data"))))))
            elif pt in ("tool_call", "tool_use", "function_call", "tool-call"):
                calls.append(ToolCall(str(p.get("name", "")), p.get("arguments", p.get("input", p.get("args"))),
                                      _sid(p.get("id") or p.get("call_id") or p.get("toolCallId"))))
            elif pt in ("tool_call_response", "tool_result", "function_call_output", "tool-result"):
                val = p.get("response", p.get("content", p.get("output", p.get("result"))))
                results.append((_sid(p.get("id") or p.get("tool_use_id") or p.get("call_id") or p.get("toolCallId")),
                                val, bool(p.get("is_error"))))
            else:
                t = part_text(p)
                texts.append(t if t is not None else jdump(p))
    return "\n".join(t for t in texts if t), "\n".join(r for r in reasons if r), calls, results


def message_steps(msg: Any, **meta: Any) -> list[Step]:
    """Steps for one chat message outside a model turn (inputs, histories)."""
    m = unwrap_message(msg)
    if m is None:
        return [mk_step("other", text_of(msg), **meta)]
    role = norm_role(m.get("role"))
    text, reasoning, calls, results = message_parts(m)
    if m.get("name") and role != "tool":
        meta.setdefault("name", m.get("name"))
    if role == "system":
        return [mk_step("system", text, **meta)]
    if role == "tool":
        cid = _sid(m.get("tool_call_id"))
        is_err = m.get("status") == "error" or bool(m.get("is_error"))
        return [mk_step("error" if is_err else "observation", text, tool_call_id=cid, tool_name=m.get("name"), **meta)]
    steps = []
    if reasoning:
        steps.append(mk_step("thought", reasoning, role=role, **meta))
    if text or not (calls or results or reasoning):
        stype = "thought" if (calls and role == "assistant") else "message"
        steps.append(mk_step(stype, text, role=role or None, **meta))
    for tc in calls:
        steps.append(mk_step("action", tc.name, args_text(tc.args), tool_call_id=tc.call_id, **meta))
    for cid, val, is_err in results:
        steps.append(mk_step("error" if is_err else "observation", text_of(val), tool_call_id=cid, **meta))
    return steps


def llm_event_from_messages(out_msgs: list, in_msgs: list | None = None, **meta: Any) -> LLMEvent:
    """A model turn from its output messages; tool results in its input are kept for call pairing."""
    ev = LLMEvent(meta=meta)  # its empty entries go when assemble() makes the steps
    texts, reasons = [], []
    for raw in out_msgs:
        m = read_message(raw)
        if m is None:
            texts.append(text_of(raw))
            continue
        role = norm_role(m.get("role"))
        if role and role not in ("assistant",):
            ev.extra_steps.extend(message_steps(m))
            continue
        text, reasoning, calls, _ = message_parts(m)
        if text:
            texts.append(text)
        if reasoning:
            reasons.append(reasoning)
        ev.tool_calls.extend(calls)
    ev.text = "\n".join(texts)
    ev.reasoning = "\n".join(reasons)
    for raw in in_msgs or []:
        m = read_message(raw)
        if m is None:
            continue
        if norm_role(m.get("role")) == "tool" and m.get("tool_call_id"):
            ev.input_results[str(m["tool_call_id"])] = (text_of(m.get("content")), False)
        if m.get("content").__class__ is str and "parts" not in m:  # plain text: no tool results in it
            continue
        for cid, val, is_err in message_parts(m)[3]:
            if cid:
                ev.input_results[cid] = (val, is_err)
    return ev


def first_user_text(msgs: Iterable) -> str | None:
    for raw in msgs or []:
        m = unwrap_message(raw)
        if m is not None and norm_role(m.get("role")) == "user":
            return message_parts(m)[0]
    return None


def task_from_input(value: Any) -> str | None:
    """The user's request out of a run/span input: a string, messages, or a dict with a usual key."""
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
        for k in ("task", "input", "question", "query", "prompt", "goal", "instruction", "user_input", "request", "message"):
            v = value.get(k)
            if isinstance(v, str):
                return v
        for k in ("messages", "inputs", "prompts"):
            if k in value:
                t = task_from_input(value[k])
                if t is not None:
                    return t
    return None


# ---------------------------------------------------------------- input files

def read_input(path: Path) -> tuple[str, Iterator[tuple[int | None, Any]]]:
    """("jsonl", (line, value|TraceError) streamed) or ("json", one (None, value|TraceError)).

    A file is JSONL when its first non-blank line is a complete JSON value and more follows, so a
    pretty-printed JSON document is read whole while a log is streamed line by line.
    """
    source = str(path)
    name = path.name.lower()
    is_jsonl = name.endswith((".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz"))
    if not is_jsonl:
        try:
            with open_text(path) as fh:
                first, second = None, None
                for ln in fh:
                    if ln.strip():
                        if first is None:
                            first = ln
                        else:
                            second = ln
                            break
        except OSError as exc:
            return "json", iter([(None, TraceError(source, None, None, f"cannot read: {exc}"))])
        if first is not None and second is not None:
            try:
                loads_strict(first)
                is_jsonl = True
            except (ValueError, RecursionError):
                # a broken first line of a log must not hide the good lines after it
                if first.lstrip().startswith("{") and first.rstrip().endswith("}"):
                    try:
                        loads_strict(second)
                        is_jsonl = True
                    except (ValueError, RecursionError):
                        pass
    if is_jsonl:
        def gen():
            try:
                # bytes + orjson, line by line: several times faster than text + json
                yield from _io.iter_records(path)
            except OSError as exc:
                yield None, TraceError(source, None, None, f"cannot read: {exc}")
        return "jsonl", gen()

    def whole():
        try:
            with open_text(path) as fh:
                text = fh.read()
        except OSError as exc:
            yield None, TraceError(source, None, None, f"cannot read: {exc}")
            return
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            yield None, TraceError(source, None, None, "invalid UTF-8")
            return
        try:
            yield None, loads_strict(text)
        except json.JSONDecodeError as exc:
            yield exc.lineno, TraceError(source, exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
        except (ValueError, RecursionError) as exc:
            yield None, TraceError(source, None, None, f"invalid JSON: {exc}")
    return "json", whole()


def guarded(source: str, line: int | None, where: str, fn: Callable[[], list]) -> list:
    """Run one record's conversion; a Bad or any unexpected exception becomes that record's TraceError."""
    try:
        return fn()
    except Bad as b:
        fld = b.field if not where else (where + ("." if b.field and not b.field.startswith("[") else "") + (b.field or "")).rstrip(".")
        return [TraceError(source, line, fld or None, b.message)]
    except RecursionError:
        return [TraceError(source, line, where or None, "nested too deeply")]
    except Exception as exc:  # a converter never raises: one odd record must not stop the file
        return [TraceError(source, line, where or None, f"could not convert: {type(exc).__name__}: {exc}")]


def sample_objects(sample: Sample, limit: int = 5) -> list:
    """The first few JSON values a detector should look at (whole-file value, its list items, or JSONL records)."""
    out = []
    fj = sample.first_json
    if isinstance(fj, dict):
        out.append(fj)
    elif isinstance(fj, list):
        out.extend(fj[:limit])
    out.extend(sample.first_records[:limit])
    if not out and sample.head:
        # large files are only sniffed: try the first line on its own
        first = sample.head.lstrip().split("\n", 1)[0]
        try:
            v = loads_strict(first)
            if isinstance(v, dict):
                out.append(v)
        except (ValueError, RecursionError):
            pass
    return out


def finish_trace(trace_id: str, task: str | None, steps: list[Step], metadata: dict, where: str = "") -> Trace:
    if not steps:
        raise Bad(where or None, "no steps could be made from this record")
    if not str(trace_id).strip():  # a converter's own fallback should have given one; never emit an empty id
        raise Bad(where or None, "the record's trace id is empty")
    return Trace(str(trace_id), task or "", steps, {k: v for k, v in metadata.items() if v is not None})


def warn(source: str, record: Any, message: str) -> ConvertWarning:
    return ConvertWarning(source, None if record is None else str(record), message)


@dataclass
class Ctx:
    """Where one record came from: for messages, provenance and stable ids."""

    path: Path
    line: int | None  # JSONL line, or the JSON error's line
    index: int | None  # position in a JSON list
    where: str  # field path prefix of the record inside the file ("" or "[3]")

    @property
    def source(self) -> str:
        return str(self.path)

    @property
    def record(self) -> int:
        """The record's position: its line in JSONL, its list index in JSON (0 for a lone object)."""
        return self.line if self.line is not None else (self.index or 0)

    def default_id(self, *more: Any) -> str:
        from .base import stable_id
        return stable_id(self.path.name, self.record, *more)

    def provenance(self, fmt: str) -> dict:
        out = {"source_format": fmt, "source_file": self.source}
        if self.line is not None:
            out["source_line"] = self.line
        if self.index is not None:
            out["source_record"] = self.index
        return out


def drive(path: Path, one: Callable[[Any, Ctx], list], unwrap: Callable[[Any], list | None] | None = None) -> Iterator:
    """Stream a file's records through ``one``; a JSON list is a list of records, JSONL one per line.

    ``unwrap`` may turn a whole-file value into its records (e.g. ``{"data": [...]}``).
    """
    path = Path(path)
    kind, it = read_input(path)
    for line, val in it:
        if isinstance(val, TraceError):
            yield val
            continue
        recs = unwrap(val) if unwrap else None
        if recs is None:
            recs = val if (kind == "json" and isinstance(val, list)) else None
        if recs is None:
            yield from guarded(str(path), line, "", lambda: one(val, Ctx(path, line, None, "")))
            continue
        for k, rec in enumerate(recs):
            ctx = Ctx(path, line, k, f"[{k}]")
            yield from guarded(str(path), line, ctx.where, lambda: one(rec, ctx))


# ---------------------------------------------------------------- OpenTelemetry spans

def otlp_value(v: Any) -> Any:
    """An OTLP/JSON AnyValue as a plain Python value."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "doubleValue" in v:
        return v["doubleValue"]
    if "arrayValue" in v:
        return [otlp_value(x) for x in (v["arrayValue"] or {}).get("values", []) or []]
    if "kvlistValue" in v:
        return otlp_attrs((v["kvlistValue"] or {}).get("values", []) or [], "", "kvlistValue")
    if "bytesValue" in v:
        return v["bytesValue"]
    return None if not v else v


def otlp_attrs(attrs: Any, where: str = "", field: str = "attributes") -> dict:
    """An OTLP attribute list as a dict; errors are located at ``where + field`` (built only then)."""
    if attrs is None:
        return {}
    if isinstance(attrs, dict):
        return attrs
    if not isinstance(attrs, list):
        raise Bad(where + field, f"expected a list of key/value pairs, got {describe(attrs)}")
    out = {}
    for i, kv in enumerate(attrs):
        key = kv.get("key") if kv.__class__ is dict else None
        if key.__class__ is not str:
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise Bad(f"{where}{field}[{i}]", "expected {key, value}")
            key = kv["key"]
        v = kv.get("value")
        # most attributes are strings: skip the general decoder for them
        out[key] = v["stringValue"] if v.__class__ is dict and "stringValue" in v else otlp_value(v)
    return out


def _status(st: Any) -> tuple[str, str | None]:
    if not isinstance(st, dict):
        return ("UNSET", None) if st is None else (str(st).upper().replace("STATUS_CODE_", ""), None)
    code = st.get("code", st.get("status_code"))
    if code in (2, "2") or (isinstance(code, str) and code.upper().endswith("ERROR")):
        c = "ERROR"
    elif code in (1, "1") or (isinstance(code, str) and code.upper().endswith("OK")):
        c = "OK"
    else:
        c = "UNSET"
    return c, st.get("message") or st.get("description")


def otlp_spans(req: Any, where: str = "", first: int = 0) -> list[dict]:
    """Normalised spans out of one OTLP/JSON export request ``{resourceSpans: [...]}``.

    ``first`` is the index of its first resourceSpans entry in the file (for error locations when a
    big export is streamed one entry at a time).
    """
    if not isinstance(req, dict):
        raise Bad(where or None, f"expected an OTLP export object, got {describe(req)}")
    rss = req.get("resourceSpans")
    if not isinstance(rss, list):
        raise Bad(f"{where}resourceSpans", "missing" if rss is None else f"expected a list, got {describe(rss)}")
    out = []
    for i, rs in enumerate(rss, first):
        w = f"{where}resourceSpans[{i}]"
        if not isinstance(rs, dict):
            raise Bad(w, f"expected an object, got {describe(rs)}")
        res = otlp_attrs((rs.get("resource") or {}).get("attributes"), w, ".resource.attributes")
        for j, ss in enumerate(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []):
            sw = f"{w}.scopeSpans[{j}]"
            if not isinstance(ss, dict):
                raise Bad(sw, f"expected an object, got {describe(ss)}")
            scope = (ss.get("scope") or ss.get("instrumentationLibrary") or {}).get("name")
            spans = ss.get("spans") or []
            if not isinstance(spans, list):
                raise Bad(f"{sw}.spans", f"expected a list, got {describe(spans)}")
            for k, sp in enumerate(spans):
                spw = f"{sw}.spans[{k}]"
                if not isinstance(sp, dict):
                    raise Bad(spw, f"expected a span object, got {describe(sp)}")
                for idk in ("traceId", "spanId", "parentSpanId"):  # ids group and link spans: an object cannot
                    if isinstance(sp.get(idk), (dict, list)):
                        raise Bad(f"{spw}.{idk}", f"expected a string, got {describe(sp[idk])}")
                code, msg = _status(sp.get("status"))
                events = []
                for e_i, ev in enumerate(sp.get("events") or []):
                    if isinstance(ev, dict):
                        events.append({"name": ev.get("name"), "time": parse_time(ev.get("timeUnixNano")),
                                       "attrs": otlp_attrs(ev.get("attributes"), spw, f".events[{e_i}].attributes")})
                out.append({
                    "trace_id": sp.get("traceId"), "span_id": sp.get("spanId"), "parent_id": sp.get("parentSpanId") or None,
                    "name": sp.get("name"), "kind": sp.get("kind"),
                    "start": time_key(sp.get("startTimeUnixNano")), "end": parse_time(sp.get("endTimeUnixNano")),
                    "start_raw": sp.get("startTimeUnixNano"), "attrs": otlp_attrs(sp.get("attributes"), spw, ".attributes"),
                    "events": events, "status_code": code, "status_message": msg,
                    "service": res.get("service.name"), "scope": scope, "_where": spw,
                })
    return out


def flat_attrs(attrs: dict, prefix: str = "") -> dict:
    """Nested attribute objects (Phoenix exports) as dotted keys, lists by index, like OTLP flattening."""
    out = {}
    for k, v in attrs.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flat_attrs(v, key + "."))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                out.update(flat_attrs(x, f"{key}.{i}."))
        else:
            out[key] = v
    return out


def indexed(attrs: dict, prefix: str) -> list[dict]:
    """``prefix.N.rest`` keys gathered into a list of {rest: value} dicts ordered by N."""
    groups: dict[int, dict] = {}
    dotted = prefix + "."
    plen = len(dotted)
    for k, v in attrs.items():
        if not k.startswith(dotted):
            continue
        rest = k[plen:]
        n, _, tail = rest.partition(".")
        if not n.isdigit():
            continue
        groups.setdefault(int(n), {})[tail] = v
    return [groups[i] for i in sorted(groups)]


def nest(flat: dict) -> dict:
    """{"a.b": 1, "a.c.0.d": 2} -> {"a": {"b": 1, "c": [{"d": 2}]}}, for flattened message attributes."""
    root: dict = {}
    if not any("." in k or v.__class__ is dict for k, v in flat.items()):  # the usual {role, content}
        root.update(flat)
        return [root[k] for k in sorted(root, key=int)] if root and all(k.isdigit() for k in root) else root
    for k, v in flat.items():
        parts = k.split(".") if k else [k]
        cur = root
        for p in parts[:-1]:
            nxt = cur.get(p)
            if not isinstance(nxt, dict):
                nxt = {}
                cur[p] = nxt
            cur = nxt
        cur[parts[-1]] = v

    def lists(d):
        if isinstance(d, dict):
            d = {k: lists(v) for k, v in d.items()}
            if d and all(k.isdigit() for k in d):
                return [d[k] for k in sorted(d, key=int)]
        return d
    return lists(root)


def pair_by_id(steps: list[Step]) -> list[Step]:
    """Move each tool result right after the action with the same tool_call_id (parallel calls log
    all calls first, then all results); results with no earlier matching action stay where they are."""
    def cid(s):
        return s.extra.get("metadata", {}).get("tool_call_id")

    later: dict[str, int] = {}
    for i, s in enumerate(steps):
        if s.type in ("observation", "error") and cid(s) is not None:
            later.setdefault(cid(s), i)
    out, moved = [], set()
    for i, s in enumerate(steps):
        if i in moved:
            continue
        out.append(s)
        if s.type == "action" and cid(s) is not None:
            j = later.get(cid(s))
            if j is not None and j > i and j not in moved:
                out.append(steps[j])
                moved.add(j)
    return out


_INT = re.compile(r"-?\d+")
_DECIMAL = re.compile(r"-?\d+\.\d+")
_ISO_FAST = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|z|[+-]\d{2}:\d{2})?")
_EPOCH_ORD = date(1970, 1, 1).toordinal()
_EPOCH_DT = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EPOCH_NAIVE = datetime(1970, 1, 1)  # a time without an offset counts as UTC, as in parse_time
_MICROSECOND = timedelta(microseconds=1)
_DIGITS = re.compile(r"\d+")
_ISO_FRAC = re.compile(r"^(.*?T\d{2}:\d{2}:\d{2})(?:[.,](\d+))?(.*)$")


def time_key(value: Any) -> int | None:
    """Integer nanoseconds since the epoch, exact (float seconds lose the ns that order OTel spans)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        s = value.strip()
        if s.isdigit() and s.isascii():  # OTLP's startTimeUnixNano is a decimal string
            return time_key(int(s))
        if s[4:5] == "-":
            try:
                dt = datetime.fromisoformat(s)  # C code, and exact to the microsecond (3.11 reads "Z")
            except ValueError:
                dt = None
            if dt is not None:
                ns = (dt - (_EPOCH_DT if dt.tzinfo is not None else _EPOCH_NAIVE)) // _MICROSECOND * 1000
                dot = s.find(".", 19)
                if dot == -1:
                    dot = s.find(",", 19)
                if dot != -1:
                    frac = _DIGITS.match(s, dot + 1)
                    if frac is not None and len(frac.group()) > 6:  # digits past the microsecond: OTel's ns
                        ns += int(frac.group()[6:9].ljust(3, "0"))
                return ns
            m = _ISO_FAST.fullmatch(s)  # what an older fromisoformat refuses ("Z", 9 digits)
            if m is not None:
                y, mo, d, h, mi, sec, frac, tz = m.groups()
                try:
                    days = date(int(y), int(mo), int(d)).toordinal() - _EPOCH_ORD
                except ValueError:
                    days = None
                hh, mm, ss = int(h), int(mi), int(sec)
                if days is not None and hh < 24 and mm < 60 and ss < 60:
                    off = 0
                    if tz and tz not in "Zz":
                        off = (int(tz[1:3]) * 3600 + int(tz[-2:]) * 60) * (1 if tz[0] == "+" else -1)
                    secs = days * 86400 + hh * 3600 + mm * 60 + ss - off
                    return secs * 1_000_000_000 + (int(frac[:9].ljust(9, "0")) if frac else 0)
        if _INT.fullmatch(s):
            return time_key(int(s))
        if _DECIMAL.fullmatch(s):
            return time_key(float(s))
        m = _ISO_FRAC.match(s)
        if not m:
            t = parse_time(s)
            return None if t is None else int(round(t * 1e9))
        base = parse_time(m.group(1) + m.group(3))
        if base is None:
            return None
        frac = (m.group(2) or "")[:9].ljust(9, "0")
        return int(round(base)) * 1_000_000_000 + int(frac)
    if isinstance(value, int):
        a = abs(value)
        if a > 10**17:
            return value
        if a > 10**14:
            return value * 1_000
        if a > 10**11:
            return value * 1_000_000
        return value * 1_000_000_000
    if isinstance(value, float):
        t = parse_time(value)
        return None if t is None else int(round(t * 1e9))
    return None
