"""Langfuse trace exports (a trace with its ``observations``).

Mapping: observations in tree order (``parentObservationId``; siblings by ``startTime``).
GENERATION -> the model's output message (an output object of message keys without a role is one
too; reasoning -> thought; text -> thought when a tool follows, else message; requested tool calls
no TOOL observation executed -> action). TOOL -> action
(name, input) + observation (output), or error when level is ERROR. RETRIEVER -> action + documents.
SPAN / AGENT / CHAIN with children are containers (an ERROR level on them adds an error step after
their children); a childless SPAN with output is treated as a tool call (action + observation), a
childless one without output as ``other``. EVENT -> ``other`` step (or error at level ERROR).
EMBEDDING / EVALUATOR / GUARDRAIL -> ``other``. Level WARNING and statusMessage travel in step
metadata. Task: the trace input (string, messages, or a usual key) else the first user message.
"""
from __future__ import annotations

from typing import Any

from ls_trajeval.core.trace import describe

from .base import Converter, Sample
from .support.chat import task_from_input, unwrap_message, value_text
from .support.errors import BadRecord, expect
from .support.files import Origin, maybe_json, sample_objects, unwrapping
from .support.steps import default_id, dumps, finish, step
from .support.times import time_keys
from .support.trees import ToolEvent, assemble, llm_event_from_messages, tree_order

NAME = "langfuse"
_OBS_TYPES = {
    "GENERATION",
    "SPAN",
    "EVENT",
    "TOOL",
    "AGENT",
    "CHAIN",
    "RETRIEVER",
    "EMBEDDING",
    "EVALUATOR",
    "GUARDRAIL",
}


def _is_trace(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("observations"), list):
        return False
    obs = obj["observations"]
    return (
        not obs
        or any(isinstance(o, dict) and o.get("type") in _OBS_TYPES for o in obs[:20])
        or all(isinstance(o, str) for o in obs[:20])
    )


def _unwrap(val: Any):
    if isinstance(val, dict) and isinstance(val.get("data"), list) and not _is_trace(val):
        return val["data"]
    return None


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if isinstance(sample.first_json, dict) and _unwrap(sample.first_json):
        objs = sample.first_json["data"][:5]
    if not objs or not isinstance(objs[0], dict):
        return 0.0
    o = objs[0]
    if _is_trace(o):
        obs = o["observations"]
        if any(isinstance(x, dict) and ("parentObservationId" in x or "startTime" in x) for x in obs[:20]):
            return 0.95
        return 0.75 if obs else 0.5
    return 0.0


#: the keys of a chat message besides its role
_MESSAGE_KEYS = frozenset({"content", "tool_calls", "function_call", "refusal", "reasoning", "reasoning_content",
                           "thinking", "name", "annotations", "audio"})


def _messages(v: Any) -> list:
    v = maybe_json(v)
    if isinstance(v, list):
        return v
    if isinstance(v, dict):
        if isinstance(v.get("messages"), list):
            return v["messages"]
        if isinstance(v.get("choices"), list):  # a raw OpenAI response
            return [
                c.get("message") for c in v["choices"] if isinstance(c, dict) and isinstance(c.get("message"), dict)
            ]
        if unwrap_message(v) is not None:
            return [v]
        if "content" in v and v.keys() <= _MESSAGE_KEYS:  # the model's message written without its role
            return [{"role": "assistant", **v}]
        return [{"role": "assistant", "content": dumps(v)}]
    if v is None:
        return []
    return [{"role": "assistant", "content": value_text(v)}]


#: (metadata key, observation key) of the step metadata, in their order
_META_KEYS = (("timestamp", "startTime"), ("end_time", "endTime"))
_META_KEYS_AFTER_LEVEL = (("status_message", "statusMessage"), ("model", "model"))


def one(rec: Any, origin: Origin) -> list:
    if not isinstance(rec, dict):
        raise BadRecord(None, "expected a Langfuse trace object")
    obs = expect(rec.get("observations"), list, "observations")
    if obs and all(isinstance(o, str) for o in obs):
        raise BadRecord("observations", "holds observation ids only; export the trace with its observations expanded")
    has_kids = set()
    for i, o in enumerate(obs):
        if not isinstance(o, dict):
            raise BadRecord(f"observations[{i}]", f"expected an observation object, got {describe(o)}")
        t = o.get("type")
        if t is not None and not isinstance(t, str):
            raise BadRecord(f"observations[{i}].type", f"expected a string, got {describe(t)}")
        p = o.get("parentObservationId")
        if p is not None:
            has_kids.add(p)
    ordered = tree_order(obs, lambda o: o.get("id"), lambda o: o.get("parentObservationId"),
                         keys=time_keys([o.get("startTime") for o in obs]))
    events: list = []
    pending_errs: list[tuple[int, Any]] = []  # (depth, step) of failing containers, emitted after their subtree
    for o, depth in ordered:
        while pending_errs and pending_errs[-1][0] >= depth:
            events.append(pending_errs.pop()[1])
        get = o.get
        t = (get("type") or "SPAN").upper()
        level = get("level")
        oid = get("id")
        # a hot path: the metadata is built without its nulls (every step drops them), not rebuilt to drop them
        meta = {"observation_id": oid, "observation_type": t} if oid is not None else {"observation_type": t}
        v = get("name")
        if v is not None:
            meta["name"] = v
        meta["depth"] = depth
        for k, src in _META_KEYS:
            v = get(src)
            if v is not None:
                meta[k] = v
        if level is not None and level != "DEFAULT":
            meta["level"] = level
        for k, src in _META_KEYS_AFTER_LEVEL:
            v = get(src)
            if v is not None:
                meta[k] = v
        usage = get("usageDetails") or get("usage")
        if usage:
            meta["usage"] = usage
        is_err = level == "ERROR"
        leaf = oid not in has_kids
        out = get("output")
        if t == "GENERATION":
            if is_err and out is None:
                events.append(step("error", value_text(get("statusMessage")), None, dict(meta)))
            else:
                events.append(llm_event_from_messages(_messages(out), _messages(get("input")), **meta))
                if is_err:
                    events.append(step("error", value_text(get("statusMessage")), None, dict(meta)))
        elif t == "TOOL" or t == "RETRIEVER" or (t == "SPAN" and leaf and out is not None):
            if is_err and out is None:
                out = get("statusMessage")
            md = get("metadata")
            cid = (md.get("tool_call_id") or md.get("toolCallId")) if isinstance(md, dict) else None
            events.append(ToolEvent(str(get("name") or t.lower()), get("input"), out, is_error=is_err,
                                    call_id=str(cid) if cid else None, meta=meta))
        elif t == "EVENT" or leaf:
            body = {k: o[k] for k in ("input", "output", "metadata") if o.get(k) is not None}
            content = dumps(body) if body else value_text(o.get("name"))
            events.append(
                step(
                    "error" if is_err else "other",
                    content if not is_err else value_text(o.get("statusMessage") or content),
                    None,
                    dict(meta),
                )
            )
        else:
            if is_err:
                pending_errs.append(
                    (depth, step("error", value_text(o.get("statusMessage") or o.get("output")), None, dict(meta)))
                )
    while pending_errs:
        events.append(pending_errs.pop()[1])
    steps = assemble(events)
    task = task_from_input(rec.get("input"))
    if task is None:
        for o, _ in ordered:
            if o.get("type") == "GENERATION":
                task = task_from_input(_messages(o.get("input")))
                if task is not None:
                    break
    md = {}
    for k in (
        "name",
        "timestamp",
        "sessionId",
        "userId",
        "tags",
        "release",
        "version",
        "environment",
        "scores",
        "metadata",
        "totalCost",
        "latency",
    ):
        v = rec.get(k)
        if v is not None and (v or not isinstance(v, list) and not isinstance(v, dict)):  # not null, [] or {}
            md[k] = v
    if rec.get("output") is not None:
        md["final_output"] = rec["output"]
    tid = rec.get("id")
    if not steps and rec.get("output") is not None:
        steps = [step("message", value_text(rec["output"]), None, {"role": "assistant"})]
    return [finish(origin, str(tid) if tid not in (None, "") else default_id(origin), task, steps, md, "observations")]



CONVERTER = Converter(
    name=NAME,
    description="Langfuse trace exports (observations: GENERATION, SPAN, EVENT, TOOL, ...)",
    shapes='{"id", "input", "output", "observations": [{id, type, name, parentObservationId, startTime, input, '
           'output, level}]}; JSON, a list, {"data": [...]}, or JSONL',
    detect=detect,
    one=one,
    split=unwrapping(_unwrap),
)
