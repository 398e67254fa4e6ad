"""Anthropic Messages API conversations.

Accepted shapes: ``{"system"?, "messages": [...]}`` requests (``system`` a string or text blocks),
optionally with the reply under ``response``; a bare list of messages; a Message response object
(``{"type": "message", "role": "assistant", "content": [...]}``); JSONL of any of these, one trace
per line; and JSONL of streaming events (``message_start`` … ``message_stop``), joined into messages.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import loads
from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Sample
from .support.chat import anthropic_blocks, content_text, record_id, record_meta
from .support.errors import BadRecord, expect
from .support.files import Origin, documents_only, elements, records
from .support.steps import StepList, finish, numbered_id, step

NAME = "anthropic"

BLOCKS = {"text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image", "document", "server_tool_use"}
EVENTS = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
}


def _is_event(rec: Any) -> bool:
    t = rec.get("type") if isinstance(rec, dict) else None
    return isinstance(t, str) and t in EVENTS


def _messages(rec: Any) -> list | None:
    if isinstance(rec, list):
        return rec
    if isinstance(rec, dict):
        if isinstance(rec.get("messages"), list):
            return rec["messages"]
        if rec.get("type") == "message" and rec.get("role") == "assistant":
            return [rec]
    return None


def _score(rec: Any) -> float:
    if isinstance(rec, dict) and _is_event(rec):
        return 0.9 if rec.get("type") == "message_start" or "delta" in rec or "content_block" in rec else 0.5
    msgs = _messages(rec)
    if msgs is None:
        return 0.0
    blocks = [b for m in msgs[:10] if isinstance(m, dict) and isinstance(m.get("content"), list) for b in m["content"]]
    typed = [b for b in blocks if isinstance(b, dict) and "type" in b]
    if typed and all(b["type"] in BLOCKS or str(b["type"]).endswith("_tool_result") for b in typed):
        if any(b["type"] in ("tool_use", "tool_result", "thinking", "redacted_thinking") for b in typed):
            return 0.9
        if isinstance(rec, dict) and ("system" in rec or rec.get("type") == "message"):
            return 0.8
        return 0.5  # text blocks alone are also valid OpenAI parts
    if (
        isinstance(rec, dict)
        and "system" in rec
        and msgs
        and all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in msgs[:10])
    ):
        return 0.75  # a top-level system is Anthropic's; OpenAI keeps it as a message
    return 0.0


def detect(sample: Sample) -> float:
    if sample.first_records:
        return (
            max(_score(r) for r in sample.first_records[:5])
            if _is_event(sample.first_records[0])
            else min(_score(r) for r in sample.first_records[:5])
        )
    doc = sample.first_json
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "messages" in doc[0]:
        return _score(doc[0])
    return _score(doc) if doc is not None else 0.0


def one(rec: Any, origin: Origin) -> Iterator:
    msgs = _messages(rec)
    if msgs is None:
        if isinstance(rec, dict) and "messages" in rec:
            expect(rec["messages"], list, "messages")
        raise BadRecord("messages", "missing: expected {\"messages\": [...]} or a list of messages")
    msgs = list(msgs)
    meta: dict = {}
    out = StepList()
    tid = None
    if isinstance(rec, dict):
        tid = record_id(rec)
        system = rec.get("system")
        if system is not None:
            if not isinstance(system, (str, list)):
                raise BadRecord("system", f"expected a string or a list of text blocks, got {type(system).__name__}")
            out.add(step("system", content_text(system), None, {"role": "system"}))
        resp = rec.get("response")
        if isinstance(resp, dict) and isinstance(resp.get("content"), list):
            msgs.append(resp)
        meta = record_meta(rec, ("model", "usage", "stop_reason", "metadata"), resp if isinstance(resp, dict) else None)
    task = None
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            expect(m, dict, f"messages[{i}]")
        role = m.get("role")
        if role != "user" and role != "assistant" and role != "system":
            raise BadRecord(f"messages[{i}].role", f"expected user or assistant, got {role!r}")
        if "content" not in m:
            raise BadRecord(f"messages[{i}].content", "missing")
        if role == "system":
            out.add(step("system", content_text(m["content"]), None, {"role": "system", "message_index": i}))
            continue
        said = anthropic_blocks(
            role, m["content"], out, f"messages[{i}]", agent=m.get("model"), meta={"message_index": i}
        )
        if task is None and role == "user" and said:
            task = said
    yield finish(origin, tid or numbered_id(origin), task or "", out.steps(), meta)


def _index(ev: dict, default: int) -> int:
    i = ev.get("index")
    if i is None:
        return default
    if not isinstance(i, int) or isinstance(i, bool):
        raise BadRecord("index", f"expected an integer, got {describe(i)}")
    return i


def _join_events(events: list, path: Path) -> tuple[dict, list]:
    """(a Message object from a stream of (line, event), the located errors of events that were unusable).

    Deltas are appended in block order. An event whose fields have the wrong type is left out with an
    error naming its line and field; the other events of the stream still make the message.
    """
    msg: dict = {"type": "message", "role": "assistant", "content": []}  # even when message_start is lost
    blocks: dict[int, dict] = {}
    partial: dict[int, list] = {}
    errors: list = []
    for line, ev in events:
        t = ev.get("type")
        try:
            if t == "message_start":
                m = expect(ev.get("message"), dict, "message", optional=True) or {}
                expect(m.get("usage"), dict, "message.usage", optional=True)
                msg.update({k: v for k, v in m.items() if k != "content"})
                msg["type"] = "message"
            elif t == "content_block_start":
                b = expect(ev.get("content_block"), dict, "content_block", optional=True) or {}
                for k in ("text", "thinking"):
                    expect(b.get(k), str, f"content_block.{k}", optional=True)
                blocks[_index(ev, len(blocks))] = dict(b)
            elif t == "content_block_delta":
                i = _index(ev, 0)
                d = expect(ev.get("delta"), dict, "delta", optional=True) or {}
                dt = d.get("type")
                for k in ("text", "thinking", "partial_json"):
                    expect(d.get(k), str, f"delta.{k}", optional=True)
                b = blocks.setdefault(i, {"type": "text", "text": ""})
                if dt == "text_delta":
                    b["text"] = (b.get("text") or "") + (d.get("text") or "")
                elif dt == "thinking_delta":
                    b["thinking"] = (b.get("thinking") or "") + (d.get("thinking") or "")
                elif dt == "input_json_delta":
                    partial.setdefault(i, []).append(d.get("partial_json") or "")
                elif dt == "signature_delta":
                    b["signature"] = d.get("signature")
            elif t == "message_delta":
                d = expect(ev.get("delta"), dict, "delta", optional=True) or {}
                u = expect(ev.get("usage"), dict, "usage", optional=True)
                msg.update(d)
                if u:
                    before = msg.get("usage")
                    msg["usage"] = {**(before if isinstance(before, dict) else {}), **u}
        except BadRecord as exc:
            errors.append(TraceError(str(path), line, exc.field, exc.message))
    for i, parts in partial.items():
        raw = "".join(parts)
        try:
            blocks[i]["input"] = loads(raw) if raw else {}
        except (ValueError, RecursionError):
            blocks[i]["input"] = raw
    msg["content"] = [blocks[i] for i in sorted(blocks)]
    return msg, errors


@documents_only
def _split(value: Any, origin: Origin) -> list | None:
    """A JSON list of requests is its records (a list of messages is one conversation)."""
    if isinstance(value, list) and value and isinstance(value[0], dict) and "messages" in value[0]:
        return elements(value, origin)
    return None


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """The file's records, a stream's events (``message_start`` … ``message_stop``) joined into their message.

    Records with no id are numbered in the file as they come (a joined stream counts as one, a broken line as
    none), the elements of a JSON list by their index."""
    count = 0
    events: list = []
    for origin, value in records(path, fmt, _split):
        if isinstance(value, TraceError):
            yield origin, value
        elif origin.line is not None and _is_event(value):
            events.append((origin.line, value))
            if value.get("type") == "message_stop":
                yield from _joined(path, fmt, events, count)
                events, count = [], count + 1
        elif origin.index is not None and origin.line is None:
            yield origin, value
        else:
            origin.ordinal, count = count, count + 1
            yield origin, value
    if events:  # a stream cut before message_stop: convert what arrived
        yield from _joined(path, fmt, events, count)


def _joined(path: Path, fmt: str, events: list, ordinal: int) -> Iterator[tuple[Origin, Any]]:
    msg, errors = _join_events(events, path)
    for e in errors:
        yield Origin(fmt, str(path), e.line), e
    yield Origin(fmt, str(path), events[0][0], None, ordinal), msg


CONVERTER = Converter(
    name=NAME,
    description="Anthropic Messages (text, thinking, tool_use / tool_result, system; streaming events)",
    shapes='{"system"?, "messages": [...]}; list of messages; Message objects; JSONL of those or of stream events',
    detect=detect,
    one=one,
    split=_split,
    read=_read,
)
