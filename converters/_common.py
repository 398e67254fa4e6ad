"""Helpers every converter needs: building steps, rendering tool arguments, pairing calls with
results, flattening message content, and turning OpenAI-style chat messages into steps.

Content is untrusted text and is kept exactly as the source has it: nothing here escapes,
strips or normalises strings (only ``None`` becomes ``""``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from ls_trajeval.core.trace import Step, Trace, TraceError, describe

from .base import ConvertWarning, stable_id

try:  # orjson is several times faster for the parse/dump round trip of tool arguments
    import orjson as _orjson
except ImportError:  # pragma: no cover - optional speed-up
    _orjson = None


def dumps(value: Any) -> str:
    """Readable JSON text (indented, non-ASCII kept)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, option=_orjson.OPT_INDENT_2).decode()
        except TypeError:  # ints beyond 64 bits, non-str keys: let json handle them
            pass
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def compact(value: Any) -> str:
    """One-line JSON for fallback ``other`` steps and metadata."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value).decode()
        except TypeError:
            pass
    return json.dumps(value, ensure_ascii=False, default=str)


def render_args(args: Any) -> str:
    """Tool arguments as readable text: JSON pretty-printed, a non-JSON string as it is."""
    if args is None:
        return ""
    if isinstance(args, str):
        s = args.strip()
        if not s or s[0] not in "{[":
            return args
        try:
            parsed = _orjson.loads(s) if _orjson is not None else json.loads(s)
        except ValueError:
            return args
        return dumps(parsed)
    return dumps(args)


def text(value: Any) -> str:
    """A field that should be text: strings as they are, None as "", anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return dumps(value)


def step(type_: str, content: Any, action_input: Any = None, **extra: Any) -> Step:
    """A Step with None-valued extras dropped (so provenance keys appear only where known)."""
    if None in extra.values():  # most calls have no None: skip rebuilding the dict (a hot path)
        extra = {k: v for k, v in extra.items() if v is not None}
    return Step(type_, content if content.__class__ is str else text(content), action_input, extra)


def flatten_parts(content: Any, text_keys: tuple[str, ...] = ("text",)) -> str:
    """Message content as one string: a string as is, a list of parts joined by newlines.

    Text parts give their text; any other part (image, audio, file, ...) is kept as one line of
    JSON so nothing is lost.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return text(content)
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
            continue
        if isinstance(part, dict):
            for k in text_keys:
                v = part.get(k)
                if isinstance(v, str):
                    out.append(v)
                    break
            else:
                out.append(compact(part))
            continue
        out.append(text(part))
    return "\n".join(out)


class StepList:
    """Steps in order, with each tool result moved right after its call.

    Parallel calls arrive as call A, call B, result A, result B; annotators judge a call by its
    result, so the trace shows A, result A, B, result B. A result whose call is unknown stays
    where it came (marked ``unpaired``).
    """

    def __init__(self) -> None:
        self._slots: list[list[Step]] = []
        self._calls: dict[str, list[Step]] = {}

    def add(self, s: Step) -> None:
        self._slots.append([s])

    def call(self, call_id: Any, s: Step) -> None:
        slot = [s]
        self._slots.append(slot)
        if call_id is not None and call_id != "":
            self._calls[str(call_id)] = slot
            s.extra.setdefault("tool_call_id", call_id)

    def result(self, call_id: Any, s: Step) -> bool:
        """Attach a result to its call; return False (and keep it in place) when the call is unknown."""
        if call_id is not None and call_id != "":
            s.extra.setdefault("tool_call_id", call_id)
        slot = self._calls.get(str(call_id)) if call_id is not None else None
        if slot is None:
            if call_id is not None:
                s.extra["unpaired"] = True
            self._slots.append([s])
            return False
        slot.append(s)
        return True

    def has_call(self, call_id: Any) -> bool:
        return call_id is not None and str(call_id) in self._calls

    def steps(self) -> list[Step]:
        return [s for slot in self._slots for s in slot]

    def __len__(self) -> int:
        return len(self._slots)


def finish(
    source: str | Path,
    line: int | None,
    trace_id: str,
    task: str,
    steps: list[Step],
    metadata: dict,
    field: str | None = None,
) -> Trace | TraceError:
    """A Trace, or a located error when the record produced no steps at all.

    ``line`` may be a record's position in a JSON list (``"[3]"``): the error then names it as its field path.
    """
    if not steps:
        if line.__class__ is str:
            line, field = None, _join_path(line, field)
        return TraceError(str(source), line, field, "no steps: the record holds nothing to annotate", trace_id)
    return Trace(str(trace_id), task or "", steps, {k: v for k, v in metadata.items() if v is not None})


def file_id(path: Path, index: Any) -> str:
    """The fallback trace id: stable for the same file name and record position."""
    return stable_id(path.name, index)


def _join_path(prefix: str, field: str | None) -> str:
    if not field:
        return prefix
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def in_list(index: int, items: Iterable) -> Iterator:
    """The output of the record at ``index`` of a JSON list: its errors' field paths start with ``[index]``."""
    at = f"[{index}]"
    for item in items:
        if isinstance(item, TraceError) and item.line is None and not (item.field or "").startswith(at):
            item = TraceError(item.source, None, _join_path(at, item.field), item.message, item.trace_id)
        yield item


class BadRecord(Exception):
    """Raised inside a record conversion to reject that record with a field path."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def expect(value: Any, kind: type | tuple, field: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = {dict: "an object", list: "a list", str: "a string"}
        want = names.get(kind, " or ".join(names.get(k, k.__name__) for k in kind) if isinstance(kind, tuple) else kind.__name__)
        raise BadRecord(field, f"expected {want}, got {describe(value)}")
    return value


def tool_call_parts(tc: Any, where: str, message: int | None = None, call: int | None = None) -> tuple[Any, str, Any]:
    """(id, name, arguments) of an OpenAI-style tool call; also accepts Inspect's flat shape.

    The location is ``where``, or ``where[message].tool_calls[call]`` when those are given (built
    only for an error: this runs once per tool call).
    """
    if tc.__class__ is not dict:
        expect(tc, dict, where if message is None else f"{where}[{message}].tool_calls[{call}]")
    fn = tc.get("function")
    if fn.__class__ is dict:
        name, args = fn.get("name"), fn.get("arguments")
    else:  # Inspect AI / smolagents variants: {"id", "function": "name", "arguments": {...}}
        name, args = (fn if isinstance(fn, str) else tc.get("name")), tc.get("arguments", tc.get("input"))
    if name is None:
        loc = where if message is None else f"{where}[{message}].tool_calls[{call}]"
        raise BadRecord(f"{loc}.function.name", "missing")
    return tc.get("id"), name if name.__class__ is str else text(name), args


def chat_messages_to_steps(
    messages: list,
    out: StepList,
    *,
    where: str = "messages",
    agent: str | None = None,
    warnings: list | None = None,
) -> str:
    """Append the steps of OpenAI Chat Completions-style messages; return the task (first user text).

    Roles: system/developer → system; user → message; assistant → thought (reasoning), message
    (text) and one action per tool call; tool/function → observation, or error when the message
    says so. Unknown roles become ``other`` steps with the message as JSON.
    """
    expect(messages, list, where)
    task = None
    last_legacy_call: list[Any] = []
    for i, m in enumerate(messages):
        if m.__class__ is not dict:
            expect(m, dict, f"{where}[{i}]")
        role = m.get("role")
        name = m.get("name") or agent
        meta = {"message_index": i}
        if m.get("id") is not None:
            meta["message_id"] = m.get("id")
        if role in ("system", "developer"):
            out.add(step("system", flatten_parts(m.get("content")), role=role, **meta))
        elif role == "user":
            content = flatten_parts(m.get("content"))
            if task is None:
                task = content
            out.add(step("message", content, role="user", name=m.get("name"), **meta))
        elif role == "assistant":
            reasoning = m.get("reasoning_content") or m.get("reasoning")
            if reasoning:
                out.add(step("thought", flatten_parts(reasoning), role="assistant", agent=name, **meta))
            content = m.get("content")
            if content is not None and not isinstance(content, (str, list, dict)):
                raise BadRecord(f"{where}[{i}].content", f"expected a string or a list of parts, got {describe(content)}")
            # Inspect AI and others keep reasoning as a content part
            if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "reasoning" for p in content):
                for p in content:
                    if isinstance(p, dict) and p.get("type") == "reasoning":
                        out.add(step("thought", text(p.get("reasoning") or p.get("summary")), role="assistant", agent=name, **meta))
                content = [p for p in content if not (isinstance(p, dict) and p.get("type") == "reasoning")]
            body = flatten_parts(content)
            calls = m.get("tool_calls") or []
            if calls.__class__ is not list:
                expect(calls, list, f"{where}[{i}].tool_calls")
            if body or not calls and not m.get("function_call"):
                out.add(step("message", body, role="assistant", agent=name, **meta))
            for j, tc in enumerate(calls):
                cid, tname, args = tool_call_parts(tc, where, i, j)
                out.call(cid, step("action", tname, render_args(args), agent=name, **meta))
            fc = m.get("function_call")
            if fc:
                expect(fc, dict, f"{where}[{i}].function_call")
                legacy_id = f"legacy-{i}"
                last_legacy_call.append(legacy_id)
                out.call(legacy_id, step("action", text(fc.get("name")), render_args(fc.get("arguments")), agent=name, **meta))
        elif role in ("tool", "function"):
            cid = m.get("tool_call_id")
            if cid is None and role == "function" and last_legacy_call:
                cid = last_legacy_call.pop(0)
            err = m.get("error")
            content = flatten_parts(m.get("content"))
            extra = dict(meta)
            if m.get("name") or m.get("function"):
                extra["tool_name"] = m.get("name") or m.get("function")
            if err:
                if isinstance(err, dict):
                    extra["error_type"] = err.get("type")
                    msg = text(err.get("message"))
                else:
                    msg = text(err)
                if content and content != msg:
                    extra["tool_output"] = content
                out.result(cid, step("error", msg or content, **extra))
            else:
                out.result(cid, step("observation", content, **extra))
        else:
            out.add(step("other", compact(m), role=role, **meta))
            if warnings is not None:
                warnings.append(f"{where}[{i}]: unknown role {role!r} kept as an 'other' step")
    return task or ""


def warn_all(source: Path, record: Any, messages: Iterable[str]) -> Iterator[ConvertWarning]:
    for msg in messages:
        yield ConvertWarning(str(source), None if record is None else str(record), msg)


def guarded(source: Path, line: int | None, fn, *args) -> Iterator:
    """Run one record's conversion; turn a BadRecord or an unexpected shape into a located error.

    A converter must never end in a traceback: whatever a record holds, the worst outcome is
    one TraceError for that record and the next record converts.
    """
    try:
        yield from fn(*args)
    except BadRecord as exc:
        yield TraceError(str(source), line, exc.field, exc.message)
    except (TypeError, KeyError, AttributeError, ValueError, IndexError) as exc:
        yield TraceError(str(source), line, None, f"unexpected record shape: {type(exc).__name__}: {exc}")


def anthropic_blocks_to_steps(
    role: str,
    content: Any,
    out: StepList,
    where: str,
    *,
    agent: str | None = None,
    meta: dict | None = None,
    result_meta: dict | None = None,
) -> str:
    """Append the steps of one Anthropic message (string or content blocks); return its user text.

    text → message; thinking → thought; redacted_thinking → thought (its opaque data kept in
    ``redacted_data``); tool_use / server_tool_use → action; tool_result and *_tool_result →
    observation, or error when ``is_error``; other blocks (image, document, ...) → ``other`` as JSON.
    """
    # Step extras are built here as dicts, once per message, rather than through step(**kwargs) once
    # per block: the same keys in the same order (role, agent, block keys, then meta), None dropped.
    base = {k: v for k, v in meta.items() if v is not None} if meta else {}
    said = {"role": role}
    if agent is not None and role != "user":
        said["agent"] = agent
    said.update(base)
    if content is None:
        content = ""
    if content.__class__ is str:
        out.add(Step("message", content, None, said))
        return content if role == "user" else ""
    if content.__class__ is not list:
        expect(content, list, f"{where}.content")
    tool = {"agent": agent} if agent is not None else {}
    user_text = []
    # the location string is built only when a block is bad: this loop runs once per block
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
            out.add(Step("message", t, None, dict(said)))
        elif bt == "tool_use" or bt == "server_tool_use" or bt == "mcp_tool_use":
            name = b.get("name")
            if name is None:
                raise BadRecord(f"{where}.content[{j}].name", "missing")
            extra = dict(tool)
            if bt != "tool_use":
                extra["block_type"] = bt
            extra.update(base)
            out.call(b.get("id"), Step("action", name if name.__class__ is str else text(name), render_args(b.get("input")), extra))
        elif bt == "tool_result" or isinstance(bt, str) and bt.endswith("_tool_result"):
            body = b.get("content")
            body_text = flatten_parts(body) if not isinstance(body, dict) else compact(body)
            is_err = bool(b.get("is_error"))
            if isinstance(body, dict) and isinstance(body.get("type"), str) and body["type"].endswith("_error"):
                is_err = True
            extra = {"block_type": bt} if bt != "tool_result" else {}
            extra.update(base)
            if result_meta:
                extra.update((k, v) for k, v in result_meta.items() if v is not None)
            out.result(b.get("tool_use_id"), Step("error" if is_err else "observation", body_text, None, extra))
        elif bt == "thinking":
            out.add(Step("thought", text(b.get("thinking")), None, {"role": role, **tool, **base}))
        elif bt == "redacted_thinking":
            extra = {"role": role, **tool}
            if b.get("data") is not None:
                extra["redacted_data"] = b["data"]
            extra.update(base)
            out.add(Step("thought", "[redacted thinking]", None, extra))
        else:
            extra = {"role": role}
            if bt is not None:
                extra["block_type"] = bt
            extra.update(base)
            out.add(Step("other", compact(b), None, extra))
    return "\n".join(user_text)
