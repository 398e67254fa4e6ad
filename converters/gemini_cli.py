"""Gemini CLI chat recordings.

Accepted shapes:

- a session file ``~/.gemini/tmp/<projectHash>/chats/session-*.json``: ``{sessionId, projectHash,
  startTime, lastUpdated, messages: [...]}``, one trace;
- the same session as JSONL (newer Gemini CLI, ``session-*.jsonl``): a metadata line, then message
  records re-written under their ``id`` whenever they change, ``{"$set": {...}}`` metadata updates
  (``$set.messages`` a whole checkpoint) and ``{"$rewindTo": id}`` (drops that message and all after
  it); replayed, then one trace;
- the prompt log ``~/.gemini/tmp/<projectHash>/logs.json``: ``[{sessionId, messageId, type, message,
  timestamp}]``, the user's prompts only, one trace per session.

Messages: ``user`` → message (the first is the task); ``gemini`` → one thought per ``thoughts``
entry, a message for its ``content`` (when not empty), then its ``toolCalls``. One ``toolCalls`` list
holds every call of the agentic turn up to the next text answer, across several model requests: the
calls are ordered by their own ``timestamp``, and calls of one request (one timestamp) share
``request_index``. Each call carries its result (``result[].functionResponse.response``): the action
is followed by an observation, or an error when the call failed or was cancelled. ``info`` and
``warning`` → system; ``error`` → error.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import documents, is_jsonl, load_located
from ls_trajeval.core.trace import Step, TraceError, describe

from .base import Converter, Sample
from .support.chat import call_id, content_text
from .support.errors import BadRecord, expect, guarded, record_error, warning
from .support.files import Origin
from .support.steps import finish, render_args, stable_id, step, text

NAME = "gemini_cli"

MESSAGE_TYPES = {"user", "gemini", "info", "error", "warning"}
#: a call in one of these states did not produce a normal result
FAILED = {"error", "cancelled"}
LOG_KEYS = {"sessionId", "messageId", "type", "message"}
TOKEN_KEYS = ("input", "output", "cached", "thoughts", "tool", "total")
#: the opening of a session file too big for the detectors' sample to hold whole
_BIG_SESSION = re.compile(r'^\s*\{\s*"sessionId":\s*"[^"]*",\s*"projectHash":')


# ---------------------------------------------------------------- detection

def _is_session(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("sessionId"), str) and isinstance(doc.get("projectHash"), str)
            and ("messages" in doc or "startTime" in doc))


def _is_log_entry(e: Any) -> bool:
    return isinstance(e, dict) and LOG_KEYS <= e.keys() and isinstance(e.get("messageId"), int)


def detect(sample: Sample) -> float:
    doc = sample.first_json
    if sample.first_records:
        # JSONL session: the metadata line first, then message, $set and $rewindTo records
        return 0.95 if _is_session(sample.first_records[0]) else 0.0
    if _is_session(doc) and isinstance(doc.get("messages"), list):
        msgs = [m for m in doc["messages"][:10] if isinstance(m, dict)]
        return 0.95 if all(m.get("type") in MESSAGE_TYPES for m in msgs) else 0.0
    if isinstance(doc, list) and doc and all(_is_log_entry(e) for e in doc[:10]):
        return 0.9
    return 0.9 if doc is None and _BIG_SESSION.match(sample.head) else 0.0


# ---------------------------------------------------------------- one message

def _result(parts: Any, w: str) -> tuple[str, bool]:
    """(text, is_error) of a call's ``result``: each functionResponse's output (or its error), other parts as
    content."""
    if parts is None:
        return "", False
    if not isinstance(parts, list):
        parts = [parts]
    out, failed = [], False
    for k, p in enumerate(parts):
        fr = p.get("functionResponse") if isinstance(p, dict) else None
        if fr is None:
            out.append(content_text(p))
            continue
        expect(fr, dict, f"{w}[{k}].functionResponse")
        resp = fr.get("response")
        if isinstance(resp, dict) and set(resp) <= {"output", "error"} and resp:
            if resp.get("error") is not None:
                failed = True
                out.append(text(resp["error"]))
            if resp.get("output") is not None:
                out.append(text(resp["output"]))
        else:
            out.append(text(resp))
    return "\n".join(out), failed


def _tool_steps(calls: list, w: str, said: dict) -> list[Step]:
    """The calls of one gemini message in time order, each followed by its result."""
    for j, c in enumerate(calls):
        expect(c, dict, f"{w}.toolCalls[{j}]")
    order = sorted(
        range(len(calls)),
        key=lambda j: (not isinstance(calls[j].get("timestamp"), str), calls[j].get("timestamp") or ""),
    )
    steps: list[Step] = []
    request, last_ts = -1, object()
    for j in order:
        c, cw = calls[j], f"{w}.toolCalls[{j}]"
        name = c.get("name")
        if not isinstance(name, str) or not name:
            raise BadRecord(f"{cw}.name", "missing" if name is None else f"expected a string, got {describe(name)}")
        ts = c.get("timestamp")
        if ts != last_ts:
            request, last_ts = request + 1, ts
        cid = call_id(c.get("id"))
        status = c.get("status")
        steps.append(step("action", name, render_args(c.get("args")),
                          {**said, "tool_call_id": cid, "timestamp": ts, "request_index": request, "status": status,
                           "display_name": c.get("displayName")}))
        body, failed = _result(c.get("result"), f"{cw}.result")
        failed = failed or status in FAILED
        if not body and c.get("resultDisplay"):
            body = text(c.get("resultDisplay"))
        if body or failed:
            steps.append(step("error" if failed else "observation", body or f"({status})", None,
                              {"tool_call_id": cid, "tool_name": name, "status": status if failed else None}))
    return steps


def _message_steps(m: Any, i: int) -> list[Step]:
    w = f"messages[{i}]"
    if not isinstance(m, dict):
        expect(m, dict, w)
    kind = m.get("type")
    if kind not in MESSAGE_TYPES:
        raise BadRecord(f"{w}.type", f"expected one of {', '.join(sorted(MESSAGE_TYPES))}, got {kind!r}")
    meta = {"role": kind, "message_id": m.get("id"), "timestamp": m.get("timestamp")}
    body = content_text(m.get("content"))
    if kind == "user":
        return [step("message", body, None, meta)]
    if kind != "gemini":
        return [step("error" if kind == "error" else "system", body, None, meta)] if body else []
    said = {"role": kind, "agent": m.get("model")}
    steps = []
    thoughts = expect(m.get("thoughts"), list, f"{w}.thoughts", optional=True) or []
    for k, th in enumerate(thoughts):
        expect(th, dict, f"{w}.thoughts[{k}]")
        desc, subject = text(th.get("description")), text(th.get("subject"))
        steps.append(
            step(
                "thought",
                desc or subject,
                None,
                {
                    **said,
                    "message_id": m.get("id"),
                    "subject": subject if desc else None,
                    "timestamp": th.get("timestamp"),
                },
            )
        )
    if body:
        steps.append(step("message", body, None, {**said, **meta}))
    calls = expect(m.get("toolCalls"), list, f"{w}.toolCalls", optional=True)
    if calls:
        steps += _tool_steps(calls, w, {**said, "message_id": m.get("id")})
    return steps


# ---------------------------------------------------------------- sessions

class _Session:
    """A session read from its file: its header fields and its messages (a JSONL log replayed)."""

    __slots__ = ("head", "messages")

    def __init__(self, head: dict, messages: list) -> None:
        self.head, self.messages = head, messages


def one(rec: Any, origin: Origin) -> list:
    """A session to its trace, after the located errors of the messages left out of it; logs.json (a list of
    prompts) to one trace per session."""
    if not isinstance(rec, _Session):
        return list(_prompt_log(origin, rec))
    steps: list[Step] = []
    errors: list = []
    task = None
    tokens: dict = {}
    models: list = []
    for i, m in enumerate(rec.messages):
        out = guarded(origin, _message_steps, m, i)
        if out and isinstance(out[0], TraceError):
            errors.append(out[0])
            continue
        steps += out
        if task is None and m.get("type") == "user":
            task = content_text(m.get("content"))
        if m.get("type") == "gemini":
            if m.get("model") and m["model"] not in models:
                models.append(m["model"])
            tk = m.get("tokens")
            if isinstance(tk, dict):
                for k in TOKEN_KEYS:
                    if isinstance(tk.get(k), (int, float)) and not isinstance(tk.get(k), bool):
                        tokens[k] = tokens.get(k, 0) + tk[k]
    head = rec.head
    sid = head.get("sessionId")
    meta = {"session_id": sid, "project_hash": head.get("projectHash"), "started_at": head.get("startTime"),
            "last_updated": head.get("lastUpdated"), "summary": head.get("summary"), "kind": head.get("kind"),
            "models": models or None, "tokens": tokens or None}
    tid = sid if isinstance(sid, str) and sid else stable_id(origin.file_name, origin.position)
    try:
        return [*errors, finish(origin, tid, task, steps, meta)]
    except BadRecord as exc:  # the session's own error, after those of its messages
        return [*errors, record_error(origin, exc)]


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """A session file (JSON, or the JSONL log replayed) as one :class:`_Session`, or logs.json's list of prompts."""
    source = str(path)
    origin = Origin(fmt, source)
    if is_jsonl(path):  # the newer session log
        head, messages, errors = _replay(path)
        yield from ((origin, e) for e in errors)
        if head or messages:
            yield origin, _Session(head, messages)
        return
    doc = load_located(path)
    if isinstance(doc, TraceError) or isinstance(doc, list):
        yield origin, doc
    elif not _is_session(doc):
        yield origin, TraceError(source, None, None, "expected a Gemini CLI session {sessionId, projectHash, messages} "
                                                     "or a logs.json list")
    elif not isinstance(doc.get("messages"), list):
        messages = doc.get("messages")
        yield origin, TraceError(source, None, "messages", "missing" if messages is None else
                                 f"expected a list, got {describe(messages)}")
    else:
        yield origin, _Session(doc, doc["messages"])


def _replay(path: Path) -> tuple[dict, list, list]:
    """(metadata, messages, errors) of a JSONL session, replayed as Gemini CLI loads it."""
    head: dict = {}
    messages: dict[str, dict] = {}
    errors: list = []
    for n, rec in documents(path, jsonl=True):
        if isinstance(rec, TraceError):
            errors.append(rec)
        elif not isinstance(rec, dict):
            errors.append(TraceError(str(path), n, None, f"expected a JSON object, got {describe(rec)}"))
        elif "$rewindTo" in rec:
            ids = list(messages)
            cut = ids.index(rec["$rewindTo"]) if rec["$rewindTo"] in messages else 0
            for k in ids[cut:]:
                del messages[k]
        elif "$set" in rec:
            upd = rec["$set"]
            if not isinstance(upd, dict):
                errors.append(TraceError(str(path), n, "$set", f"expected an object, got {describe(upd)}"))
                continue
            if isinstance(upd.get("messages"), list):
                messages = {
                    str(m.get("id", k)) if isinstance(m, dict) else str(k): m for k, m in enumerate(upd["messages"])
                }
            head.update({k: v for k, v in upd.items() if k != "messages"})
        elif isinstance(rec.get("id"), str):
            messages[rec["id"]] = rec
        elif isinstance(rec.get("sessionId"), str):
            head.update(rec)
        else:
            errors.append(
                TraceError(
                    str(path), n, None, "neither a message (id), a session header (sessionId), $set nor $rewindTo"
                )
            )
    return head, list(messages.values()), errors


def _has_session_file(log: Path, sid: str) -> str | None:
    """The session file beside a logs.json (in the same folder or its ``chats/``) holding session ``sid``:
    Gemini CLI names it ``session-<time>-<first 8 characters of the id>.json`` (or ``.jsonl``)."""
    for folder in (log.parent, log.parent / "chats"):
        for suffix in (".json", ".jsonl"):
            hit = next(iter(sorted(folder.glob(f"session-*-{sid[:8]}{suffix}"))), None)
            if hit is not None:
                return str(hit)
    return None


def _prompt_log(origin: Origin, entries: list) -> Iterator:
    """logs.json: the user's prompts of each session, one trace per session (in order of first prompt),
    except sessions whose session file lies beside it (that file holds the same prompts and the rest)."""
    sessions: dict[str, list] = {}
    for i, e in enumerate(entries):
        if not _is_log_entry(e):
            yield TraceError(origin.source, None, f"[{i}]", "expected {sessionId, messageId, type, message, timestamp}")
            continue
        sessions.setdefault(str(e["sessionId"]), []).append(e)
    for sid, es in sessions.items():
        beside = _has_session_file(Path(origin.source), sid)
        if beside is not None:
            yield warning(origin.source, sid, f"prompts only; the whole session is converted from {beside}")
            continue
        steps = [step("message", text(e.get("message")), None,
                      {"role": e.get("type"), "message_index": e.get("messageId"), "timestamp": e.get("timestamp")})
                 for e in es]
        task = next((s.content for s in steps if s.content), "")
        yield finish(origin, f"{sid}/prompts", task, steps, {"session_id": sid, "prompts_only": True})


CONVERTER = Converter(
    name=NAME,
    description="Gemini CLI chat recordings (session-*.json / .jsonl: messages with thoughts and toolCalls; "
                "logs.json prompts)",
    shapes='{"sessionId", "projectHash", "messages": [{type: user|gemini|info|error, content, thoughts, toolCalls}]}; '
    "the JSONL session log ($set / $rewindTo); logs.json [{sessionId, messageId, type, message}]",
    detect=detect,
    one=one,
    read=_read,
)
