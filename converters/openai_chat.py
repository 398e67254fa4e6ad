"""OpenAI Chat Completions messages.

Accepted shapes: a JSON list of messages; ``{"messages": [...]}`` (optionally with ``id``, ``model``,
``usage``, ``tools``); a ``{"request": {"messages"}, "response": {"choices"}}`` log record or a record
with ``choices`` (the reply is appended); JSONL of any of these, one trace per line; JSONL of single
messages (the whole file is one conversation); and JSONL of ``chat.completion.chunk`` streaming
chunks (the deltas of one completion id are joined into one assistant message).
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Iterator

from ls_trajeval.trace import TraceError

from . import _io
from ._common import BadRecord, StepList, chat_messages_to_steps, expect, file_id, finish, guarded, text, warn_all
from .base import Converter, Sample

ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
ID_KEYS = ("trace_id", "id", "conversation_id", "session_id")


def _is_message(m: Any) -> bool:
    return isinstance(m, dict) and m.get("role") in ROLES and ("content" in m or "tool_calls" in m or "function_call" in m)


def _messages_of(rec: Any) -> list | None:
    if isinstance(rec, list):
        return rec if rec and all(_is_message(m) for m in rec[:3]) else None
    if not isinstance(rec, dict):
        return None
    if isinstance(rec.get("messages"), list):
        return rec["messages"]
    req = rec.get("request")
    if isinstance(req, dict) and isinstance(req.get("messages"), list):
        return req["messages"]
    return None


def _score(rec: Any) -> float:
    msgs = _messages_of(rec)
    if msgs is None:
        if isinstance(rec, dict) and rec.get("object") == "chat.completion.chunk":
            return 0.9
        return 0.9 if _is_message(rec) and rec.get("role") != "tool" or isinstance(rec, dict) and rec.get("object") == "chat.completion" else 0.0
    if not msgs:
        return 0.3
    head = msgs[:10]
    if not all(isinstance(m, dict) and m.get("role") in ROLES for m in head):
        return 0.0
    s = 0.7
    if any("tool_calls" in m or "tool_call_id" in m or "function_call" in m for m in head):
        s = 0.85
    if any(isinstance(m.get("content"), list) and any(isinstance(p, dict) and p.get("type") in ("tool_use", "tool_result") for p in m["content"]) for m in head):
        return 0.2  # Anthropic blocks in a messages list
    return s


def detect(sample: Sample) -> float:
    if sample.first_records:
        return min(_score(r) for r in sample.first_records[:5])
    doc = sample.first_json
    if isinstance(doc, list) and doc and _messages_of(doc[0]) is not None:
        return _score(doc[0])
    return _score(doc) if doc is not None else 0.0


def _reply(rec: dict) -> list:
    resp = rec.get("response") if isinstance(rec.get("response"), dict) else rec
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices:
        return []
    msg = choices[0].get("message") if isinstance(choices[0], dict) else None
    return [msg] if isinstance(msg, dict) else []


def _one(path: Path, line: Any, index: int, rec: Any) -> Iterator:
    msgs = _messages_of(rec)
    if msgs is None:
        if isinstance(rec, dict) and "messages" in rec:
            expect(rec["messages"], list, "messages")
        if isinstance(rec, dict) and isinstance(rec.get("choices"), list):
            msgs = []
        else:
            raise BadRecord("messages", "missing: expected a list of messages or {\"messages\": [...]}")
    meta: dict = {"source_format": "openai_chat", "source_file": str(path), "source_line": line}
    tid = None
    if isinstance(rec, dict):
        msgs = list(msgs) + _reply(rec)
        tid = next((text(rec[k]) for k in ID_KEYS if rec.get(k) not in (None, "")), None)
        resp = rec.get("response") if isinstance(rec.get("response"), dict) else rec
        for k in ("model", "usage", "created", "agent", "metadata"):
            v = resp.get(k, rec.get(k))
            if v is not None:
                meta[k if k != "metadata" else "record_metadata"] = v
        tools = rec.get("tools")
        if tools is None and isinstance(rec.get("request"), dict):
            tools = rec["request"].get("tools")
        if isinstance(tools, list):
            meta["tools"] = [t.get("function", t).get("name") for t in tools if isinstance(t, dict)]
    out = StepList()
    warnings: list = []
    task = chat_messages_to_steps(msgs, out, warnings=warnings)
    yield finish(path, line, tid or file_id(path, index), task, out.steps(), meta)
    yield from warn_all(path, line, warnings)


def _join_chunks(chunks: list) -> dict:
    """One assistant message from streaming deltas: text concatenated, tool calls assembled by index."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict] = {}
    usage = None
    for ch in chunks:
        if ch.get("usage"):
            usage = ch["usage"]
        for choice in ch.get("choices") or []:
            d = choice.get("delta") or {}
            if isinstance(d.get("content"), str):
                content.append(d["content"])
            if isinstance(d.get("reasoning_content"), str):
                reasoning.append(d["reasoning_content"])
            for tc in d.get("tool_calls") or []:
                slot = calls.setdefault(tc.get("index", len(calls)), {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                if tc.get("id"):
                    slot["id"] = tc["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
    msg: dict = {"role": "assistant", "content": "".join(content)}
    if reasoning:
        msg["reasoning_content"] = "".join(reasoning)
    if calls:
        msg["tool_calls"] = [calls[k] for k in sorted(calls)]
    return {"id": chunks[0].get("id"), "model": chunks[0].get("model"), "usage": usage, "messages": [msg]}


def convert(path: Path) -> Iterator:
    docs = _io.iter_documents(path)
    first = next(docs, None)
    if first is None:
        return
    line, value = first
    if line is None:  # one JSON document
        if isinstance(value, TraceError):
            yield value
        elif isinstance(value, list) and value and _messages_of(value[0]) is not None:
            for j, rec in enumerate(value):
                yield from guarded(path, None, _one, path, f"[{j}]", j, rec)
        else:
            yield from guarded(path, None, _one, path, None, 0, value)
        return
    if isinstance(value, dict) and (_is_message(value) or value.get("object") == "chat.completion.chunk"):
        yield from _per_message_file(path, first, docs)
        return
    index = 0
    for line, value in [first]:
        yield from (value,) if isinstance(value, TraceError) else guarded(path, line, _one, path, line, index, value)
    for line, value in docs:
        index += 1
        yield from (value,) if isinstance(value, TraceError) else guarded(path, line, _one, path, line, index, value)


def _per_message_file(path: Path, first, rest) -> Iterator:
    """JSONL whose lines are messages or chunks: the file is one conversation."""
    msgs: list = []
    chunks: list = []
    errors = 0
    for line, value in itertools.chain([first], rest):
        if isinstance(value, TraceError):
            errors += 1
            yield value
            continue
        if isinstance(value, dict) and value.get("object") == "chat.completion.chunk":
            if chunks and chunks[-1].get("id") != value.get("id"):
                msgs.extend(_join_chunks(chunks)["messages"])
                chunks = []
            chunks.append(value)
            continue
        if chunks:
            msgs.extend(_join_chunks(chunks)["messages"])
            chunks = []
        if not isinstance(value, dict):
            errors += 1
            yield TraceError(str(path), line, None, "expected a message object")
            continue
        msgs.append(value)
    if chunks:
        joined = _join_chunks(chunks)
        msgs.extend(joined["messages"])
    rec = {"messages": msgs, "id": file_id(path, "conversation")}
    yield from guarded(path, None, _one, path, None, 0, rec)


CONVERTER = Converter(
    name="openai_chat",
    description="OpenAI Chat Completions messages (tool_calls, tool results, legacy function_call, streaming chunks)",
    shapes='JSON list of messages; {"messages": [...]}; JSONL of those; JSONL of messages or chat.completion.chunk lines',
    detect=detect,
    convert=convert,
)
