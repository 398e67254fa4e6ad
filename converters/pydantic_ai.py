"""pydantic-ai message histories: what ``ModelMessagesTypeAdapter.dump_json(result.all_messages())`` writes.

A history is a list of messages, ``{"kind": "request" | "response", "parts": [{"part_kind": ...}, ...]}``.
Files: a JSON list of messages (one trace), a JSON list of such lists or an object whose values are such
lists (one trace each, named by the key), JSONL with one history per line, or JSONL with one message
per line (the file is one trace).

Request parts: ``system-prompt`` -> system; the request's ``instructions`` -> system, once, and again
only when they change; ``user-prompt`` -> user message (text, media as references; the first is the
task); ``tool-return`` -> observation right after its call (by ``tool_call_id``; an error when its
``outcome`` is not success; unpaired when the history does not hold the call); ``retry-prompt`` ->
error (the call's result when it names a tool, else a rejected answer). Response parts: ``thinking``
-> thought; ``text`` -> thought when the response also calls tools, else message; ``tool-call`` and
builtin/native tool calls -> actions with their arguments; builtin/native tool returns -> their
results; ``file`` -> message with a reference. Model, usage, finish reason and provider ids go to
the metadata of the response's steps.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Sample
from .support.chat import call_id, media_ref, value_text
from .support.errors import BadRecord, expect
from .support.files import Origin, records, sample_objects
from .support.steps import StepList, default_id, dumps, finish, render_args, step

NAME = "pydantic_ai"
_OPENING = re.compile(
    r'\s*\[?\s*\[?\s*\{\s*"parts"\s*:\s*\[\s*\{[\s\S]*?"part_kind"\s*:\s*"(system-prompt|user-prompt|tool-return|retry-prompt)"'
)
_CALLS = frozenset({"tool-call", "builtin-tool-call", "native-tool-call"})
_RETURNS = frozenset({"tool-return", "builtin-tool-return", "native-tool-return"})
_PART_KINDS = _CALLS | _RETURNS | {"system-prompt", "user-prompt", "retry-prompt", "text", "thinking", "file"}


def _is_message(o: Any) -> bool:
    if not isinstance(o, dict) or o.get("kind") not in ("request", "response"):
        return False
    parts = o.get("parts")
    return isinstance(parts, list) and any(
        isinstance(p, dict) and p.get("part_kind") in _PART_KINDS for p in parts[:10]
    )


def _is_history(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and _is_message(v[0])


def _named_histories(o: Any) -> bool:
    return isinstance(o, dict) and bool(o) and "kind" not in o and any(_is_history(v) for v in list(o.values())[:10])


def detect(sample: Sample) -> float:
    fj = sample.first_json
    if _is_history(fj) or _named_histories(fj) or isinstance(fj, list) and fj and _is_history(fj[0]):
        return 0.95
    objs = sample_objects(sample, 3)
    for o in objs:
        if _is_message(o) or _is_history(o) or _named_histories(o):
            return 0.95
    # a history too big to be sampled whole: ModelMessagesTypeAdapter writes "parts" first, then part_kind
    return 0.9 if not objs and _OPENING.match(sample.head) else 0.0


def _user_content(content: Any, where: str) -> tuple[str, str]:
    """(text of the prompt with media as references, its words alone) of a user-prompt's content."""
    if content is None or isinstance(content, str):
        return content or "", content or ""
    if not isinstance(content, list):
        raise BadRecord(where, f"expected a string or a list, got {describe(content)}")
    out, words = [], []
    for c in content:
        if isinstance(c, str):
            out.append(c)
            words.append(c)
        elif isinstance(c, dict) and c.get("kind") == "binary":
            data_url = f"data:{c.get('media_type') or ''};base64,{c.get('data') or ''}"
            out.append(f"[binary: {media_ref(data_url)}]")
        elif isinstance(c, dict) and isinstance(c.get("kind"), str):
            out.append(f"[{c['kind']}: {media_ref(c.get('url'))}]")
        else:
            out.append(value_text(c))
    return "\n".join(out), "\n".join(words)


def history_steps(msgs: list, where: str = "") -> tuple[list, str]:
    out = StepList()
    task = None
    instructions = None
    for i, m in enumerate(msgs):
        w = f"{where}[{i}]"
        expect(m, dict, w)
        kind = m.get("kind")
        parts = expect(m.get("parts"), list, f"{w}.parts")
        base = {"message_index": i, "timestamp": m.get("timestamp")}
        if kind == "request":
            ins = m.get("instructions")
            if ins and ins != instructions:
                out.add(step("system", value_text(ins), None, {"instructions": True, **base}))
            instructions = ins or instructions
        elif kind == "response":
            base.update(role="assistant", model=m.get("model_name"), usage=m.get("usage") or None,
                        finish_reason=m.get("finish_reason"), provider_name=m.get("provider_name"),
                        provider_response_id=m.get("provider_response_id") or m.get("vendor_id"))
        else:
            raise BadRecord(f"{w}.kind", f"expected \"request\" or \"response\", got {describe(kind)}")
        calls_here = any(isinstance(p, dict) and p.get("part_kind") in _CALLS for p in parts)
        for j, p in enumerate(parts):
            pw = f"{w}.parts[{j}]"
            expect(p, dict, pw)
            pk = p.get("part_kind")
            meta = dict(base)
            if p.get("timestamp") is not None:
                meta["timestamp"] = p["timestamp"]
            if pk == "system-prompt":
                out.add(step("system", value_text(p.get("content")), None, meta))
            elif pk == "user-prompt":
                body, words = _user_content(p.get("content"), f"{pw}.content")
                if task is None:
                    task = words
                out.add(step("message", body, None, {"role": "user", **meta}))
            elif pk in _CALLS:
                cid = call_id(p.get("tool_call_id"))
                name = expect(p.get("tool_name"), str, f"{pw}.tool_name")
                meta.update(tool_call_id=cid, builtin=True if pk != "tool-call" else None)
                out.call(cid, step("action", name, render_args(p.get("args")), meta))
            elif pk in _RETURNS:
                cid = call_id(p.get("tool_call_id"))
                outcome = p.get("outcome")
                failed = outcome is not None and outcome != "success"
                meta.update(tool_call_id=cid, tool_name=p.get("tool_name"), outcome=outcome if failed else None,
                            tool_metadata=p.get("metadata") or None)
                out.result(cid, step("error" if failed else "observation", value_text(p.get("content")), None, meta))
            elif pk == "retry-prompt":
                cid = call_id(p.get("tool_call_id"))
                content = p.get("content")
                meta.update(tool_call_id=cid, tool_name=p.get("tool_name"), retry=True)
                text = content if isinstance(content, str) else dumps(content)
                if p.get("tool_name") and cid is not None:
                    out.result(cid, step("error", text, None, meta))
                else:  # the model's answer failed validation: the retry request goes back to it
                    out.add(step("error", text, None, meta))
            elif pk == "thinking":
                out.add(step("thought", value_text(p.get("content")), None, {"reasoning": True, **meta}))
            elif pk == "text":
                out.add(step("thought" if calls_here else "message", value_text(p.get("content")), None, meta))
            elif pk == "file":
                f = p.get("content") if isinstance(p.get("content"), dict) else {}
                out.add(step("message", f"[file: {media_ref(f.get('url') or f.get('data'))}]", None, meta))
            else:
                out.add(step("other", dumps(p), None, {"part_kind": pk, **meta}))
    return out.steps(), task or ""


def one(msgs: Any, origin: Origin) -> list:
    """One message history; ``origin.place`` is its name in an object of histories."""
    name = origin.place
    expect(msgs, list, None)
    steps, task = history_steps(msgs)
    return [finish(origin, default_id(origin, name) if name is not None else default_id(origin), task, steps,
                   {"history_name": name})]


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """The histories of a file: a document or line each, a list of them, or an object of named ones; JSONL with
    one message a line is one history (given at the end)."""
    source = str(path)
    loose: list = []
    for origin, val in records(path, fmt, None):
        if isinstance(val, TraceError):
            yield origin, val
        elif _is_message(val):
            loose.append(val)
        elif _named_histories(val):
            for name, msgs in val.items():
                yield Origin(fmt, source, origin.line, place=name), msgs
        elif isinstance(val, list) and val and all(isinstance(v, list) for v in val):
            for k, msgs in enumerate(val):
                yield Origin(fmt, source, origin.line, k), msgs
        else:
            yield origin, val
    if loose:
        yield Origin(fmt, source), loose


CONVERTER = Converter(
    name=NAME,
    description="pydantic-ai message histories (ModelMessagesTypeAdapter JSON: ModelRequest / ModelResponse with "
                "parts)",
    shapes='[{"kind": "request" | "response", "parts": [{"part_kind": "user-prompt" | "tool-call" | "tool-return" | '
    '"retry-prompt" | "text" | "thinking" | ...}]}] (a history; lists of them, {name: history}, or JSONL)',
    detect=detect,
    one=one,
    read=_read,
)
