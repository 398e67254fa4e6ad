"""OpenAI Chat Completions messages.

Accepted shapes: a JSON list of messages; ``{"messages": [...]}`` (optionally with ``id``, ``model``,
``usage``, ``tools``); a ``{"request": {"messages"}, "response": {"choices"}}`` log record or a record
with ``choices`` (the reply is appended); JSONL of any of these, one trace per line; JSONL of single
messages (the whole file is one conversation); and JSONL of ``chat.completion.chunk`` streaming
chunks (the deltas of one completion id are joined into one assistant message).
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Sample, Unit
from .support.chat import RecordsOrSession, openai_messages, record_id, record_meta
from .support.errors import BadRecord, expect, warning
from .support.files import Origin, documents_only, elements
from .support.steps import StepList, finish, numbered_id, stable_id

NAME = "openai_chat"

ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


def _is_message(m: Any) -> bool:
    if not isinstance(m, dict):
        return False
    role = m.get("role")
    return isinstance(role, str) and role in ROLES and ("content" in m or "tool_calls" in m or "function_call" in m)


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
        return (
            0.9
            if _is_message(rec)
            and rec.get("role") != "tool"
            or isinstance(rec, dict)
            and rec.get("object") == "chat.completion"
            else 0.0
        )
    if not msgs:
        return 0.3
    head = msgs[:10]
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) and m["role"] in ROLES for m in head):
        return 0.0
    s = 0.7
    if any("tool_calls" in m or "tool_call_id" in m or "function_call" in m for m in head):
        s = 0.85
    if any(
        isinstance(m.get("content"), list)
        and any(isinstance(p, dict) and p.get("type") in ("tool_use", "tool_result") for p in m["content"])
        for m in head
    ):
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
    resp: dict = rec["response"] if isinstance(rec.get("response"), dict) else rec
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices:
        return []
    msg = choices[0].get("message") if isinstance(choices[0], dict) else None
    return [msg] if isinstance(msg, dict) else []


def one(rec: Any, origin: Origin) -> Iterator:
    msgs = _messages_of(rec)
    if msgs is None:
        if isinstance(rec, dict) and "messages" in rec:
            expect(rec["messages"], list, "messages")
        if isinstance(rec, dict) and isinstance(rec.get("choices"), list):
            msgs = []
        else:
            raise BadRecord("messages", "missing: expected a list of messages or {\"messages\": [...]}")
    meta: dict = {}
    tid = None
    if isinstance(rec, dict):
        msgs = list(msgs) + _reply(rec)
        tid = record_id(rec)
        meta = record_meta(rec, ("model", "usage", "created", "agent", "metadata"),
                           rec["response"] if isinstance(rec.get("response"), dict) else None)
        tools = rec.get("tools")
        if tools is None and isinstance(rec.get("request"), dict):
            tools = rec["request"].get("tools")
        if isinstance(tools, list):
            meta["tools"] = [
                (t["function"] if isinstance(t.get("function"), dict) else t).get("name")
                for t in tools
                if isinstance(t, dict)
            ]
    out = StepList()
    warnings: list = []
    task = openai_messages(msgs, out, warnings=warnings)
    yield finish(origin, tid or numbered_id(origin), task, out.steps(), meta)
    for w in warnings:
        yield warning(origin.source, origin.line, w)


def _join_chunks(chunks: list, path: Path) -> tuple[dict, list]:
    """(one assistant message from (line, chunk) streaming deltas, the located errors of unusable chunks).

    Text is concatenated and tool calls assembled by index. A chunk with a wrong-typed field is left out
    with an error naming its line and field; the rest of the stream still makes the message.
    """
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict] = {}
    usage = None
    errors: list = []
    for line, ch in chunks:
        try:
            # check the whole chunk before taking anything from it
            choices = expect(ch.get("choices"), list, "choices", optional=True) or []
            deltas = []
            for c, choice in enumerate(choices):
                expect(choice, dict, f"choices[{c}]")
                d = expect(choice.get("delta"), dict, f"choices[{c}].delta", optional=True) or {}
                tcs = expect(d.get("tool_calls"), list, f"choices[{c}].delta.tool_calls", optional=True) or []
                for j, tc in enumerate(tcs):
                    loc = f"choices[{c}].delta.tool_calls[{j}]"
                    expect(tc, dict, loc)
                    i = tc.get("index")
                    if i is not None and (not isinstance(i, int) or isinstance(i, bool)):
                        raise BadRecord(f"{loc}.index", f"expected an integer, got {describe(i)}")
                    fn = expect(tc.get("function"), dict, f"{loc}.function", optional=True) or {}
                    expect(fn.get("name"), str, f"{loc}.function.name", optional=True)
                    expect(fn.get("arguments"), str, f"{loc}.function.arguments", optional=True)
                deltas.append((d, tcs))
        except BadRecord as exc:
            errors.append(TraceError(str(path), line, exc.field, exc.message))
            continue
        if ch.get("usage"):
            usage = ch["usage"]
        for d, tcs in deltas:
            if isinstance(d.get("content"), str):
                content.append(d["content"])
            if isinstance(d.get("reasoning_content"), str):
                reasoning.append(d["reasoning_content"])
            for tc in tcs:
                i = tc.get("index")
                slot = calls.setdefault(
                    len(calls) if i is None else i,
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
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
    head = chunks[0][1]
    return {"id": head.get("id"), "model": head.get("model"), "usage": usage, "messages": [msg]}, errors


@documents_only
def _split(value: Any, origin: Origin) -> list | None:
    """A JSON list of records (conversations) is its records; a list of messages is one conversation."""
    if isinstance(value, list) and value and _messages_of(value[0]) is not None:
        return elements(value, origin)
    return None


class _Lines(RecordsOrSession):
    """Records one by one; JSONL whose first line is a message or a streaming chunk is one conversation (the chunks
    of one completion id joined into one message)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.msgs: list = []
        self.chunks: list = []

    def starts_session(self, first: Any) -> bool:
        return isinstance(first, dict) and (_is_message(first) or first.get("object") == "chat.completion.chunk")

    def take(self, value: Any, origin: Origin) -> list:
        done: list = []
        if isinstance(value, dict) and value.get("object") == "chat.completion.chunk":
            if self.chunks and self.chunks[-1][1].get("id") != value.get("id"):
                done = self._joined()
            self.chunks.append((origin.line, value))
            return done
        if self.chunks:
            done = self._joined()
        if not isinstance(value, dict):
            return [*done, TraceError(self.source, origin.line, None, "expected a message object")]
        self.msgs.append(value)
        return done

    def _joined(self) -> list:
        """The chunks so far as one message of the conversation; the located errors of those left out."""
        message, errors = _join_chunks(self.chunks, Path(self.source))
        self.msgs.extend(message["messages"])
        self.chunks = []
        return errors

    def made(self) -> Iterator:
        yield from self._joined() if self.chunks else ()
        yield Unit(Origin(NAME, self.source), {"messages": self.msgs,
                                               "id": stable_id(Path(self.source).name, "conversation")})


CONVERTER = Converter(
    name=NAME,
    description="OpenAI Chat Completions messages (tool_calls, tool results, legacy function_call, streaming chunks)",
    shapes='JSON list of messages; {"messages": [...]}; JSONL of those; JSONL of messages or chat.completion.chunk '
           'lines',
    detect=detect,
    one=one,
    split=_split,
    gather=_Lines,
)
