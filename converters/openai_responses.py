"""OpenAI Responses API items, and Codex CLI rollout JSONL (``~/.codex/sessions/**/rollout-*.jsonl``).

Items: ``message`` (role user / assistant / system / developer, content parts ``input_text`` /
``output_text`` / ``refusal`` / ...), ``reasoning`` (its ``summary`` texts, else ``content``; an
encrypted-only item is kept as a marker), ``function_call`` / ``custom_tool_call`` / ``local_shell_call``
paired with their ``*_output`` by ``call_id``; ``web_search_call`` is a ``web_search`` action (its query,
else its action, as the input; the API logs no result); Codex's ``ghost_snapshot`` items (git snapshots for
undo) are counted in ``metadata.ghost_snapshots``, not steps; any other item type (file_search_call,
computer_call, ...) becomes an ``other`` step holding the item as JSON.

Context Codex injects as user messages (``# AGENTS.md instructions …``, ``<environment_context>``,
``<user_instructions>``, ``<permissions instructions>``) is a ``system`` step (``injected: true``), never the
task. The task is the user's first prompt; where the IDE wrapped it (``## My request for Codex:``), the words
after that heading.

Accepted: a Response object (``{"object": "response", "output": [...]}``, ``input`` items first when
logged with it), ``{"input": [...], "output": [...]}``, a list of items, JSONL of such records (one
trace per line), and Codex rollouts (one trace per file: ``session_meta`` gives id and metadata,
``response_item`` lines are the items, ``turn_context`` the model, ``event_msg`` lines repeat the items
for the UI and are counted in metadata, their last ``token_count`` giving the token usage; a
``user_message`` event that no user ``response_item`` of its turn carries, as some Codex versions write
them, is the user's prompt step).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import describe

from .base import Converter, Sample, Unit
from .support.chat import RecordsOrSession, call_id, content_text, record_meta
from .support.errors import BadRecord, expect, warning
from .support.files import Origin, documents_only, elements
from .support.steps import StepList, compact, finish, numbered_id, render_args, stable_id, step, text

NAME = "openai_responses"

CALLS = {"function_call": "name", "custom_tool_call": "name", "local_shell_call": None, "mcp_call": "name"}
OUTPUTS = {
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "computer_call_output",
    "mcp_call_output",
}
ITEM_TYPES = {"message", "reasoning", *CALLS, *OUTPUTS}
ROLLOUT = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
PART_TEXT = ("text", "refusal")
#: how context Codex injects as a user message begins (not the user's words)
INJECTED = (
    "# AGENTS.md instructions",
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<INSTRUCTIONS>",
)
#: the heading after which Codex's IDE extension writes the user's own request (files mentioned come first)
IDE_REQUEST = "## My request for Codex:"


def _kind(x: Any) -> str | None:
    """``x["type"]`` when ``x`` is an object whose type is a string (else None: no known kind)."""
    t = x.get("type") if isinstance(x, dict) else None
    return t if isinstance(t, str) else None


def _is_item(x: Any) -> bool:
    return _kind(x) in ITEM_TYPES


def _score(rec: Any) -> float:
    if isinstance(rec, dict):
        if _kind(rec) in ROLLOUT and "payload" in rec:
            return 0.95
        if (
            rec.get("object") == "response"
            or isinstance(rec.get("output"), list)
            and any(_is_item(i) for i in rec["output"][:5])
        ):
            return 0.9
        if isinstance(rec.get("input"), list) and any(_is_item(i) for i in rec["input"][:10]):
            return 0.85
        if _is_item(rec) and rec["type"] != "message":
            return 0.8  # legacy rollout: items as lines
        if (
            rec.get("type") == "message"
            and isinstance(rec.get("content"), list)
            and any(isinstance(p, dict) and p.get("type") in ("input_text", "output_text") for p in rec["content"])
        ):
            return 0.8
        if "instructions" in rec and "timestamp" in rec and "id" in rec and len(rec) <= 6:
            return 0.6  # legacy rollout header line
    if (
        isinstance(rec, list)
        and rec
        and all(isinstance(i, dict) for i in rec[:5])
        and any(
            _is_item(i)
            and i["type"] != "message"
            or i.get("type") == "message"
            and isinstance(i.get("content"), list)
            and any(isinstance(p, dict) and p.get("type") in ("input_text", "output_text") for p in i["content"])
            for i in rec[:20]
        )
    ):
        return 0.85
    return 0.0


def detect(sample: Sample) -> float:
    if sample.first_records:
        return max(_score(r) for r in sample.first_records[:10])
    return _score(sample.first_json) if sample.first_json is not None else 0.0


class _Builder:
    def __init__(self) -> None:
        self.out = StepList()
        self.task: str | None = None
        # the user's prompt of the current turn, from a response item / from a user_message event: Codex writes
        # both for one prompt (some versions only the event), so the second one is no step of its own
        self.prompt_item: str | None = None
        self.prompt_event: str | None = None
        self.ghost_snapshots = 0

    def prompt(self, body: str, meta: dict) -> None:
        if self.task is None:
            _, found, request = body.partition(IDE_REQUEST)
            self.task = request.strip() if found else body
        self.out.add(step("message", body, None, {"role": "user", **meta}))

    def user_event(self, message: Any, **meta: Any) -> None:
        """A ``user_message`` event: the prompt, unless a user item of this turn already holds it."""
        body = text(message)
        if not body.strip():  # an image-only prompt: no words to show (the event is counted in metadata)
            return
        if self.prompt_item is not None:
            self.prompt_item = None
        else:
            self.prompt_event = body
            self.prompt(body, {"event": "user_message", **meta})

    def item(self, it: Any, where: str, **meta: Any) -> None:
        expect(it, dict, where)
        t = it.get("type")
        if t is not None and not isinstance(t, str):
            raise BadRecord(f"{where}.type", f"expected a string, got {describe(t)}")
        if t is None and "role" in it:
            t = "message"  # EasyInputMessage: {"role", "content"}
        ident = it.get("id")
        if t == "message":
            role = it.get("role")
            content = it.get("content")
            if content is not None and not isinstance(content, (str, list)):
                raise BadRecord(
                    f"{where}.content", f"expected a string or a list of parts, got {type(content).__name__}"
                )
            body = content_text(content, PART_TEXT)
            if role in ("system", "developer"):
                self.out.add(step("system", body, None, {"role": role, "item_id": ident, **meta}))
            elif role == "user" and body.lstrip().startswith(INJECTED):
                self.out.add(step("system", body, None, {"role": role, "injected": True, "item_id": ident, **meta}))
            elif role == "user":
                if self.prompt_event is not None and self.prompt_event.strip() == body.strip():
                    self.prompt_event = None  # its user_message event came first and is the step already
                    return
                self.prompt_item = body
                self.prompt(body, {"item_id": ident, **meta})
            else:
                self.prompt_item = self.prompt_event = None
                self.out.add(step("message", body, None, {"role": role, "item_id": ident, **meta}))
            return
        self.prompt_item = self.prompt_event = None  # the model's turn: the prompt is behind us
        if t == "reasoning":
            summary = it.get("summary") or []
            body = content_text(summary) if summary else content_text(it.get("content"), ("text", "reasoning_text"))
            if not body and it.get("encrypted_content"):
                body = "[encrypted reasoning]"
            self.out.add(step("thought", body, None, {"item_id": ident, **meta}))
        elif t in CALLS:
            if t == "local_shell_call":
                action = it.get("action") or {}
                cmd = action.get("command") if isinstance(action, dict) else None
                name, args = "shell", (cmd if cmd is not None else action)
            else:
                name = it.get("name")
                if name is None:
                    raise BadRecord(f"{where}.name", "missing")
                args = it.get("arguments", it.get("input"))
            cid = call_id(it.get("call_id") or ident)
            self.out.call(
                cid,
                step(
                    "action",
                    text(name),
                    render_args(args),
                    {
                        "item_id": ident,
                        "item_type": t if t != "function_call" else None,
                        "status": it.get("status"),
                        **meta,
                        "tool_call_id": cid,
                    },
                ),
            )
        elif t in OUTPUTS:
            output = it.get("output")
            is_err = False
            if isinstance(output, dict):
                is_err = output.get("success") is False
                output = output.get("content", output)
            body = content_text(output, ("text", "output")) if not isinstance(output, str) else output
            cid = call_id(it.get("call_id"))
            self.out.result(cid, step("error" if is_err else "observation", body, None,
                                      {"item_id": ident, **meta, "tool_call_id": cid}))
        elif t == "ghost_snapshot":  # Codex's git snapshot for undo: bookkeeping, nothing the agent did
            self.ghost_snapshots += 1
        elif t == "web_search_call":
            action = it.get("action")
            query = (
                action.get("query") if isinstance(action, dict) and action.get("type", "search") == "search" else None
            )
            self.out.add(step("action", "web_search", query if isinstance(query, str) else render_args(action),
                              {"item_id": ident, "item_type": t, "status": it.get("status"),
                               "search_action": action.get("type") if isinstance(action, dict) else None, **meta}))
        else:
            self.out.add(step("other", compact(it), None, {"item_type": t, "item_id": ident, **meta}))


def one(rec: Any, origin: Origin) -> Iterator:
    """A Response object, ``{"input", "output"}`` or a list of items; or a Codex rollout gathered by :class:`_Lines`."""
    if isinstance(rec, _Rollout):
        yield from rec.traces(origin)
        return
    b = _Builder()
    meta: dict = {}
    tid = None
    if isinstance(rec, list):
        items = [("input", rec)]
    else:
        expect(rec, dict, "(record)")
        items = []
        if rec.get("instructions"):
            b.out.add(step("system", text(rec["instructions"]), None, {"role": "instructions"}))
        for k in ("input", "output"):
            v = rec.get(k)
            if isinstance(v, str):
                v = [{"type": "message", "role": "user", "content": v}]
            if v is not None:
                items.append((k, expect(v, list, k)))
        if not items:
            raise BadRecord("output", "missing: expected a Response object or {\"input\"/\"output\": [items]}")
        tid = rec.get("trace_id") or rec.get("id")
        meta = record_meta(rec, ("model", "usage", "status", "created_at", "metadata"))
    for k, lst in items:
        for j, it in enumerate(lst):
            b.item(it, f"{k}[{j}]")
    yield finish(origin, text(tid) if tid else numbered_id(origin), b.task or "", b.out.steps(), meta)


class _Rollout:
    """A Codex rollout, line by line: one trace per file."""

    def __init__(self, first_line: int | None) -> None:
        self.b = _Builder()
        self.meta: dict = {"variant": "codex_rollout"}
        self.events: Counter = Counter()
        self.models: list = []
        self.tid: Any = None
        self.first_line = first_line

    def take(self, rec: Any, line: int | None) -> None:
        """One line of the rollout (a bad one is its own located error; the rollout goes on)."""
        b, meta, events = self.b, self.meta, self.events
        expect(rec, dict, "(line)")
        kind = rec.get("type")
        payload = rec.get("payload") if "payload" in rec else rec
        lmeta = {"source_line": line, "timestamp": rec.get("timestamp")}
        if kind == "session_meta":
            expect(payload, dict, "payload")
            self.tid = payload.get("id") or self.tid
            for k in ("cwd", "cli_version", "originator", "source", "git", "timestamp", "model_provider"):
                if payload.get(k) is not None:
                    meta[k if k != "timestamp" else "started_at"] = payload[k]
            if payload.get("instructions"):
                b.out.add(step("system", text(payload["instructions"]), None, {"role": "instructions", **lmeta}))
        elif kind == "response_item":
            b.item(payload, "payload", **lmeta)
        elif kind == "turn_context":
            m = payload.get("model") if isinstance(payload, dict) else None
            if m and m not in self.models:
                self.models.append(m)
        elif kind == "event_msg":
            et = payload.get("type") if isinstance(payload, dict) else None
            events[str(et)] += 1
            if et == "user_message":
                b.user_event(payload.get("message"), **lmeta)
            elif et == "token_count" and isinstance(payload.get("info"), dict):
                meta["usage"] = payload["info"].get("total_token_usage", payload["info"])
        elif kind == "compacted":
            b.out.add(step("system", text(payload.get("message") if isinstance(payload, dict) else payload), None,
                           {"role": "compacted", **lmeta}))
        elif "payload" not in rec and (_is_item(rec) or rec.get("type") == "message"):
            b.item(rec, "(line)", **lmeta)  # legacy rollout: items directly
        elif "instructions" in rec and "id" in rec and line == self.first_line:
            self.tid = rec.get("id")
            if rec.get("instructions"):
                b.out.add(step("system", text(rec["instructions"]), None, {"role": "instructions", **lmeta}))
        else:
            events[f"unknown:{kind}"] += 1
            b.out.add(step("other", compact(rec), None, {**lmeta}))

    def traces(self, origin: Origin) -> Iterator:
        meta, events = self.meta, self.events
        if self.models:
            meta["models"] = self.models
        if events:
            meta["event_msg_counts"] = dict(events)
        if self.b.ghost_snapshots:
            meta["ghost_snapshots"] = self.b.ghost_snapshots
        tid = self.tid
        yield finish(origin, text(tid) if tid else stable_id(origin.file_name, 0), self.b.task or "",
                     self.b.out.steps(), meta)


class _Lines(RecordsOrSession):
    """Records one by one; JSONL whose first line is a rollout's is one trace."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.rollout: _Rollout | None = None

    def starts_session(self, first: Any) -> bool:
        return isinstance(first, dict) and (
            _kind(first) in ROLLOUT or _is_item(first) or "instructions" in first and "payload" not in first
            and "output" not in first)

    def take(self, rec: Any, origin: Origin) -> None:
        if self.rollout is None:
            self.rollout = _Rollout(origin.line)
        self.rollout.take(rec, origin.line)

    def made(self) -> Iterator:
        rollout = self.rollout  # made by the first line's take
        if rollout is None:
            return
        yield Unit(Origin(NAME, self.source), rollout)
        unknown = sum(v for k, v in rollout.events.items() if k.startswith("unknown:"))
        if unknown:
            yield warning(self.source, None, f"{unknown} rollout line(s) of unknown kind kept as 'other' steps")


@documents_only
def _split(value: Any, origin: Origin) -> list | None:
    """A JSON list of records is its records (a list of items is one record)."""
    if isinstance(value, list) and value and isinstance(value[0], dict) and (
            "output" in value[0] or "input" in value[0]) and "type" not in value[0]:
        return elements(value, origin)
    return None


CONVERTER = Converter(
    name=NAME,
    description="OpenAI Responses API items (message, reasoning, function_call/_output) and Codex CLI rollouts",
    shapes='Response objects {"output": [items]}; {"input", "output"}; list of items; JSONL of those; Codex rollout '
           'JSONL (session_meta/response_item/event_msg/turn_context)',
    detect=detect,
    one=one,
    split=_split,
    gather=_Lines,
)
