"""smolagents agent memory and benchmark output.

Accepted: the list of step dicts from ``agent.memory.get_full_steps()`` / ``get_succinct_steps()``
(a JSON list, ``{"steps": [...]}`` with optional ``system_prompt``/``task``, or JSONL of such
records, one trace each), the chat messages of ``agent.write_memory_to_messages()`` (roles
``system``, ``user``, ``assistant``, ``tool-call``, ``tool-response``), and the answers files of
smolagents' benchmark scripts: one JSONL record per question, ``question`` (the task; the
``original_question`` where the script added instructions to it), the answer and
``intermediate_steps``: message dicts (``examples/smolagents_benchmark``), or the Python ``repr()``
of each memory step (``ActionStep(tool_calls=[ToolCall(name=…, arguments=…, id=…)], …)``, the
GAIA runs of early 2025), read as the step dicts they print. Those files hold bare ``NaN`` (not
JSON, written by Python): read as null.

Steps: SystemPromptStep → system; TaskStep → message (and the task); PlanningStep → thought
(the plan); ActionStep → thought (``model_output``), one action per tool call (a CodeAgent's
``python_interpreter`` call carries the code; ``code_action`` alone becomes a ``code`` step), then
observation (``observations``) or error (``error``); FinalAnswerStep → message. A step dict of no
known kind becomes an ``other`` step. In messages, a ``tool-call`` message's ``Calling tools:`` list
gives one action per call, named by its tool with its arguments (``python_interpreter`` code as a
``code`` step), and the ``tool-response`` after it is the result of the call its ``Call id:`` names,
else of the message's first call.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import partial
from typing import Any

from .base import Converter, Sample
from .support.chat import call_id, content_text, tool_call
from .support.errors import BadRecord, expect, warning
from .support.files import Origin, records
from .support.steps import StepList, compact, finish, numbered_id, render_args, step, text

NAME = "smolagents"

ACTION_KEYS = {"step_number", "model_output", "observations", "tool_calls"}
MSG_ROLES = {"system", "user", "assistant", "tool-call", "tool-response"}
STEP_CLASSES = ("SystemPromptStep", "TaskStep", "ActionStep", "PlanningStep", "FinalAnswerStep")
STEP_REPR = re.compile(rf"(?:{'|'.join(STEP_CLASSES)})\(")
#: the opening of a benchmark record too big to sample whole: its steps printed or as messages
HEAD = re.compile(r'"intermediate_steps":\s*\[\s*(?:"(?:' + "|".join(STEP_CLASSES)
                  + r')\(|\{"role":\s*"(?:system|user)")')
#: in a printed step: string literals (kept whole) or an object printed as ``<…>`` (a PIL image, an enum member)
LITERAL_OR_OPAQUE = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|(<[^<>\n]*>)""")
CALLING = "Calling tools:\n"
CALL_ID = re.compile(r"Call id: *(\S+)\n")


# ---------------------------------------------------------------- printed memory steps

def _value(node: ast.AST) -> Any:
    """A parsed printed value as plain data; ``Name(a=1)`` as ``{"__class__": "Name", "a": 1}``
    (positional arguments under ``args``). Only read, never evaluated."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            key = "**" if k is None else _value(k)  # None: a ``**mapping`` entry
            out[key if isinstance(key, str) else text(key)] = _value(v)
        return out
    if isinstance(node, ast.Call):
        out = {"__class__": ast.unparse(node.func)}
        if node.args:
            out["args"] = [_value(a) for a in node.args]
        for kw in node.keywords:
            out[kw.arg or "**"] = _value(kw.value)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value  # type: ignore[operator]  # a negative number, as Python printed it
    return ast.unparse(node)  # a name (nan, a module constant) or anything else: as printed


def _printed(s: str) -> Any:
    """A printed (``repr``) value read as data; ValueError when it is not one."""
    quoted = LITERAL_OR_OPAQUE.sub(lambda m: repr(m.group(1)) if m.group(1) else m.group(0), s)
    try:
        return _value(ast.parse(quoted.strip(), mode="eval").body)
    except SyntaxError as exc:
        raise ValueError(f"not a printed value: {exc.msg} (column {exc.offset})") from None


def _error(e: Any) -> Any:
    """An error as printed (``AgentParsingError('…')``) in the step dicts' form ``{type, message}``."""
    if isinstance(e, dict) and "__class__" in e:
        args = e.get("args") or []
        return {"type": e["__class__"], "message": e.get("message", args[0] if len(args) == 1 else args)}
    return e


def _step_dict(s: str, where: str) -> dict:
    """A printed memory step as the dict ``get_full_steps()`` gives for it."""
    v = _printed(s)
    if not isinstance(v, dict) or v.get("__class__") not in STEP_CLASSES:
        raise BadRecord(where, f"expected a printed memory step ({', '.join(STEP_CLASSES)}), got {s[:40]!r}")
    kind = v.pop("__class__")
    if kind != "ActionStep":
        return v
    timing = {k: v.pop(k) for k in ("start_time", "end_time", "duration") if v.get(k) is not None}
    return {**v, "model_output": v.pop("llm_output", v.get("model_output")), "tool_calls": v.get("tool_calls") or [],
            "error": _error(v.get("error")), "timing": timing or v.get("timing")}


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
        for k in ("steps", "memory", "messages", "intermediate_steps"):
            if isinstance(doc.get(k), list):
                return doc[k]
    return None


def _is_answer(doc: Any) -> bool:
    """A benchmark answers record: the question and the agent's intermediate steps."""
    return (isinstance(doc, dict) and isinstance(doc.get("intermediate_steps"), list)
            and isinstance(doc.get("question", doc.get("original_question")), str))


def _score(doc: Any) -> float:
    steps = _steps_of(doc)
    if not steps:  # a question the agent failed on keeps no steps; the file's other records tell
        return 0.9 if _is_answer(doc) and steps == [] and ("agent_action_type" in doc or "agent_name" in doc) else 0.0
    if _is_answer(doc) and all(isinstance(s, str) and STEP_REPR.match(s) for s in steps[:20]):
        return 0.9
    kinds = [_kind(s) for s in steps[:20]]
    if any(k in ("action", "planning", "task") for k in kinds) and all(kinds):
        return 0.9
    if (
        kinds
        and all(k == "message" for k in kinds)
        and any(s.get("role") in ("tool-call", "tool-response") for s in steps[:20])
    ):
        return 0.9
    return 0.0


def detect(sample: Sample) -> float:
    if sample.first_records:
        return min(_score(r) for r in sample.first_records[:5])
    if sample.first_json is not None:
        return _score(sample.first_json)
    # a line too long for the sample, or holding NaN: the record's opening
    head = sample.head.lstrip()
    return 0.85 if head.startswith("{") and '"question"' in head and HEAD.search(head) else 0.0


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
        out.call(key, _call_step(c, meta))
    if not calls and s.get("code_action"):
        first_key = f"{w}-code"
        out.call(first_key, step("code", s["code_action"], None, {"language": "python", **meta}))
    put = out.result if first_key else lambda _key, st: out.add(st)
    if obs is not None:
        put(first_key, step("observation", text(obs), None, {**meta, "tool_call_id": first_id}))
    if err:
        msg = text(err.get("message")) if isinstance(err, dict) else text(err)
        put(
            first_key,
            step(
                "error",
                msg,
                None,
                {"error_type": err.get("type") if isinstance(err, dict) else None, **meta, "tool_call_id": first_id},
            ),
        )


def _call_step(c: Any, meta: dict) -> Any:
    """The step of one tool call: a CodeAgent's ``python_interpreter`` call is the code it runs."""
    if c.name == "python_interpreter" and isinstance(c.args, str):
        return step(
            "code", c.args, None, {"language": "python", "tool_name": c.name, **meta, "tool_call_id": c.call_id}
        )
    return step("action", c.name, render_args(c.args), {**meta, "tool_call_id": c.call_id})


def _calls_said(body: str, w: str) -> list | None:
    """The calls of a ``tool-call`` message (``Calling tools:`` and their printed list), None when unreadable."""
    if not body.startswith(CALLING):
        return None
    try:
        calls = _printed(body[len(CALLING):])
    except (ValueError, RecursionError):
        return None
    if not isinstance(calls, list):
        return None
    return [tool_call(tc, f"{w}.content.tool_calls[{j}]") for j, tc in enumerate(calls)]


def _messages(msgs: list, out: StepList, w: str = "steps") -> tuple[str, int]:
    """Steps of ``write_memory_to_messages()``; (the task, tool-call messages whose calls could not be read)."""
    task = None
    pending = None  # (pairing key, call id) of what the next tool-response answers: the latest message's first call
    unread = 0
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
            if body:  # a tool-calling model often says nothing besides its calls
                out.add(step("thought", body, None, dict(meta)))
        elif role == "tool-call":
            calls = _calls_said(body, f"{w}[{i}]")
            if calls is None:  # kept as written, still answered by the next response
                unread += 1
                pending = (f"m{i}", None)
                out.call(pending[0], step("action", "tool-call", body, dict(meta)))
                continue
            for j, c in enumerate(calls):
                key = c.call_id or f"m{i}-{j}"
                out.call(key, _call_step(c, dict(meta)))
                if j == 0:
                    pending = (key, c.call_id)
        elif role == "tool-response":
            said = CALL_ID.match(body)
            cid = said.group(1) if said else None
            rest = body[said.end():] if said else body
            kind = "error" if rest.lstrip().startswith("Error:") else "observation"
            if not out.has_call(cid) and pending:  # "Observation:" alone answers the latest call
                key, cid = pending
            else:
                key = cid
            s = step(kind, body, None, {**meta, "tool_call_id": call_id(cid)})
            out.result(key, s) if key else out.add(s)
            pending = None
    return task or "", unread


#: what a benchmark answers record tells about its run, kept in the trace's metadata
ANSWER_FACTS = ("model_id", "agent_action_type", "source", "prediction", "answer", "true_answer", "parsing_error",
                "iteration_limit_exceeded", "agent_error", "start_time", "end_time", "token_counts")


def one(doc: Any, origin: Origin) -> Iterator:
    steps = _steps_of(doc)
    if steps is None:
        raise BadRecord("steps", "missing: expected a list of memory steps")
    field = (
        next(k for k in ("steps", "memory", "messages", "intermediate_steps") if doc.get(k) is steps)
        if isinstance(doc, dict)
        else ""
    )
    out = StepList()
    task: str | None = None
    unknown = unread = 0
    meta: dict = {}
    answer = _is_answer(doc)
    if isinstance(doc, dict):
        if doc.get("system_prompt"):
            out.add(step("system", text(doc["system_prompt"])))
        if answer:  # the question as the benchmark has it, before the script's wrapping
            task = doc.get("original_question") if isinstance(doc.get("original_question"), str) else doc["question"]
            meta.update((k, doc[k]) for k in ANSWER_FACTS if doc.get(k) is not None)
            if doc.get("task") is not None:  # beside a question, GAIA's difficulty level (1, "2", ...)
                meta["level"] = doc["task"]
        elif isinstance(doc.get("task"), str):
            task = doc["task"]
        for k in ("agent_name", "model", "id"):
            if doc.get(k) is not None:
                meta[k] = doc[k]
    if steps and all(_kind(s) == "message" for s in steps):
        said, unread = _messages(steps, out, field or "(top level)")
        task = task if answer else said or task
    else:
        usage = {"input_tokens": 0, "output_tokens": 0}
        for i, s in enumerate(steps):
            w = f"{field}[{i}]" if field else f"[{i}]"
            if isinstance(s, str):  # a printed step (a benchmark's intermediate_steps)
                try:
                    s = _step_dict(s, w)
                except (ValueError, RecursionError, BadRecord):
                    unread += 1
                    out.add(step("other", s))
                    continue
            expect(s, dict, w)
            kind = _kind(s)
            smeta = {"step_number": s.get("step_number"), "timing": s.get("timing") or None}
            tu = s.get("token_usage")
            if isinstance(tu, dict):
                for key in usage:
                    usage[key] += tu.get(key) or 0
            if kind == "system":
                out.add(step("system", text(s["system_prompt"])))
            elif kind == "task":
                task = task or text(s["task"])
                out.add(step("message", text(s["task"]), None, {"role": "user"}))
            elif kind == "planning":
                out.add(step("thought", text(s.get("plan")), None, {"planning": True, **smeta}))
            elif kind == "action":
                _action(s, out, w, smeta)
            elif kind == "final":
                out.add(step("message", text(s.get("output", s.get("final_answer"))), None, {"final_answer": True}))
            else:
                unknown += 1
                out.add(step("other", compact(s)))
        if any(usage.values()):
            meta["usage"] = usage
    tid = doc.get("id") if isinstance(doc, dict) and doc.get("id") else numbered_id(origin)
    yield finish(origin, text(tid), task or "", out.steps(), meta)
    if unknown:
        yield warning(origin.source, origin.line, f"{unknown} memory step(s) of unknown kind kept as 'other' steps")
    if unread:
        yield warning(origin.source, origin.line, f"{unread} printed step(s) or tool-call message(s) could not be read "
                                                  "as smolagents wrote them: kept as written")


CONVERTER = Converter(
    name=NAME,
    description="smolagents memory steps (TaskStep, PlanningStep, ActionStep), write_memory_to_messages output, "
    "benchmark answers (intermediate_steps)",
    shapes='JSON list of step dicts (get_full_steps); {"steps": [...]}; JSONL of those; messages with '
           'tool-call/tool-response roles; '
    "JSONL {question, intermediate_steps: [printed steps or messages], ...}",
    detect=detect,
    one=one,
    # a JSON list is one memory (its steps); NaN in a benchmark's answers (a pandas cell) reads as null
    read=partial(records, split=None, nan_as_null=True),
)
