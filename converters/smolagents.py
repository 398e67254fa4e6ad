"""smolagents agent memory.

Accepted: the list of step dicts from ``agent.memory.get_full_steps()`` / ``get_succinct_steps()``
(a JSON list, ``{"steps": [...]}`` with optional ``system_prompt``/``task``, or JSONL of such
records, one trace each), and the chat messages of ``agent.write_memory_to_messages()`` (roles
``system``, ``user``, ``assistant``, ``tool-call``, ``tool-response``).

Steps: SystemPromptStep → system; TaskStep → message (and the task); PlanningStep → thought
(the plan); ActionStep → thought (``model_output``), one action per tool call (a CodeAgent's
``python_interpreter`` call carries the code; ``code_action`` alone becomes a ``code`` step), then
observation (``observations``) or error (``error``); FinalAnswerStep → message. A step dict of no
known kind becomes an ``other`` step.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ls_trajeval.core.trace import TraceError

from .base import Converter, Sample
from .support.chat import content_text, tool_call
from .support.errors import BadRecord, expect, guarded, warning
from .support.files import Origin, documents
from .support.steps import StepList, compact, finish, render_args, stable_id, step, text

NAME = "smolagents"

ACTION_KEYS = {"step_number", "model_output", "observations", "tool_calls"}
MSG_ROLES = {"system", "user", "assistant", "tool-call", "tool-response"}


def _kind(s: Any) -> str | None:
    if not isinstance(s, dict):
        return None
    if "system_prompt" in s and len(s) <= 2:
        return "system"
    if "task" in s and ("task_images" in s or len(s) <= 2):
        return "task"
    if "plan" in s and ("model_output_message" in s or "timing" in s or "facts" in s):
        return "planning"
    if len(ACTION_KEYS & s.keys()) >= 2:
        return "action"
    if "output" in s and len(s) == 1 or "final_answer" in s and len(s) == 1:
        return "final"
    if s.get("role") in MSG_ROLES and "content" in s:
        return "message"
    return None


def _steps_of(doc: Any) -> list | None:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for k in ("steps", "memory", "messages"):
            if isinstance(doc.get(k), list):
                return doc[k]
    return None


def _score(doc: Any) -> float:
    steps = _steps_of(doc)
    if not steps:
        return 0.0
    kinds = [_kind(s) for s in steps[:20]]
    if any(k in ("action", "planning", "task") for k in kinds) and all(kinds):
        return 0.9
    if kinds and all(k == "message" for k in kinds) and any(s.get("role") in ("tool-call", "tool-response") for s in steps[:20]):
        return 0.9
    return 0.0


def detect(sample: Sample) -> float:
    if sample.first_records:
        return min(_score(r) for r in sample.first_records[:5])
    return _score(sample.first_json) if sample.first_json is not None else 0.0


def _action(s: dict, out: StepList, w: str, meta: dict) -> None:
    mo = s.get("model_output")
    if mo:
        out.add(step("thought", content_text(mo), None, dict(meta)))
    calls = s.get("tool_calls") or []
    expect(calls, list, f"{w}.tool_calls")
    err = s.get("error")
    obs = s.get("observations")
    first_key = first_id = None  # the step's result answers its first call
    for j, tc in enumerate(calls):
        c = tool_call(tc, f"{w}.tool_calls[{j}]")
        key = c.call_id or f"{w}-{j}"
        if first_key is None:
            first_key, first_id = key, c.call_id
        if c.name == "python_interpreter" and isinstance(c.args, str):
            out.call(key, step("code", c.args, None,
                               {"language": "python", "tool_name": c.name, **meta, "tool_call_id": c.call_id}))
        else:
            out.call(key, step("action", c.name, render_args(c.args), {**meta, "tool_call_id": c.call_id}))
    if not calls and s.get("code_action"):
        first_key = f"{w}-code"
        out.call(first_key, step("code", s["code_action"], None, {"language": "python", **meta}))
    put = out.result if first_key else lambda _key, st: out.add(st)
    if obs is not None:
        put(first_key, step("observation", text(obs), None, {**meta, "tool_call_id": first_id}))
    if err:
        msg = text(err.get("message")) if isinstance(err, dict) else text(err)
        put(first_key, step("error", msg, None,
                            {"error_type": err.get("type") if isinstance(err, dict) else None, **meta, "tool_call_id": first_id}))


def _messages(msgs: list, out: StepList) -> str:
    task = None
    pending = None
    for i, m in enumerate(msgs):
        role = m.get("role")
        body = content_text(m.get("content"))
        meta = {"message_index": i}
        if role == "system":
            out.add(step("system", body, None, dict(meta)))
        elif role == "user":
            if task is None:
                task = body[len("New task:\n"):] if body.startswith("New task:\n") else body
            out.add(step("message", body, None, {"role": "user", **meta}))
        elif role == "assistant":
            out.add(step("thought", body, None, dict(meta)))
        elif role == "tool-call":
            pending = f"m{i}"
            out.call(pending, step("action", "tool-call", body, {**meta}))
        elif role == "tool-response":
            kind = "error" if body.lstrip().startswith(("Error:", "Call id:")) and "Error:" in body else "observation"
            out.result(pending, step(kind, body, None, dict(meta))) if pending else out.add(step(kind, body, None, dict(meta)))
            pending = None
    return task or ""


def _one(doc: Any, origin: Origin, index: int) -> Iterator:
    steps = _steps_of(doc)
    if steps is None:
        raise BadRecord("steps", "missing: expected a list of memory steps")
    out = StepList()
    task = None
    unknown = 0
    meta: dict = {}
    if isinstance(doc, dict):
        if doc.get("system_prompt"):
            out.add(step("system", text(doc["system_prompt"])))
        if isinstance(doc.get("task"), str):
            task = doc["task"]
        for k in ("agent_name", "model", "id"):
            if doc.get(k) is not None:
                meta[k] = doc[k]
    if steps and all(_kind(s) == "message" for s in steps):
        task = _messages(steps, out) or task
    else:
        usage = {"input_tokens": 0, "output_tokens": 0}
        for i, s in enumerate(steps):
            w = f"steps[{i}]"
            expect(s, dict, w)
            k = _kind(s)
            smeta = {"step_number": s.get("step_number"), "timing": s.get("timing") or None}
            tu = s.get("token_usage")
            if isinstance(tu, dict):
                for key in usage:
                    usage[key] += tu.get(key) or 0
            if k == "system":
                out.add(step("system", text(s["system_prompt"])))
            elif k == "task":
                task = task or text(s["task"])
                out.add(step("message", text(s["task"]), None, {"role": "user"}))
            elif k == "planning":
                out.add(step("thought", text(s.get("plan")), None, {"planning": True, **smeta}))
            elif k == "action":
                _action(s, out, w, smeta)
            elif k == "final":
                out.add(step("message", text(s.get("output", s.get("final_answer"))), None, {"final_answer": True}))
            else:
                unknown += 1
                out.add(step("other", compact(s)))
        if any(usage.values()):
            meta["usage"] = usage
    tid = doc.get("id") if isinstance(doc, dict) and doc.get("id") else stable_id(Path(origin.source).name, index)
    yield finish(origin, text(tid), task or "", out.steps(), meta)
    if unknown:
        yield warning(origin.source, origin.line, f"{unknown} memory step(s) of unknown kind kept as 'other' steps")


def convert(path: Path) -> Iterator:
    for i, (line, doc) in enumerate(documents(path)):
        if isinstance(doc, TraceError):
            yield doc
            continue
        origin = Origin(NAME, str(path), line)
        yield from guarded(origin, _one, doc, origin, i)


CONVERTER = Converter(
    name=NAME,
    description="smolagents memory steps (TaskStep, PlanningStep, ActionStep) or write_memory_to_messages output",
    shapes='JSON list of step dicts (get_full_steps); {"steps": [...]}; JSONL of those; messages with tool-call/tool-response roles',
    detect=detect,
    convert=convert,
)
