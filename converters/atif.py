"""Harbor ATIF (Agent Trajectory Interchange Format) trajectories.

Mapping: user step -> message, system step -> system, agent step -> thought (reasoning_content),
then its message (thought when it calls tools, else message), then per tool call an action followed
by the observation result whose ``source_call_id`` matches; results with no call id (or an id no call
has) follow as observations. ``metrics`` go to the step metadata of the turn's first step.
"""
from __future__ import annotations

from typing import Any

from .base import Converter, Sample
from .support.chat import call_id, value_text
from .support.errors import BadRecord, expect
from .support.files import Origin, sample_objects
from .support.steps import default_id, finish, render_args, step, step_metadata

NAME = "atif"


def _is_atif(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("schema_version"), str)
        and obj["schema_version"].upper().startswith("ATIF")
    )


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if objs and _is_atif(objs[0]):
        return 0.98
    if objs and isinstance(objs[0], dict) and {"session_id", "agent", "steps"} <= set(objs[0]):
        steps = objs[0].get("steps")
        if (
            isinstance(steps, list)
            and steps
            and isinstance(steps[0], dict)
            and "source" in steps[0]
            and "step_id" in steps[0]
        ):
            return 0.8
    return 0.0


def _result_step(res: dict, i: int, rk: int, tool_name: str | None, step_id: Any) -> Any:
    """The step of result ``rk`` of step ``i``, ``tool_name`` the call it answers (None when unpaired)."""
    if not isinstance(res, dict):
        raise BadRecord(f"steps[{i}].observation.results[{rk}]", f"expected an object, got {type(res).__name__}")
    content = res.get("content")
    refs = res.get("subagent_trajectory_ref")
    if content is None and refs:
        parts = []
        for r in refs if isinstance(refs, list) else [refs]:
            if isinstance(r, dict):
                parts.append(
                    f"[subagent {r.get('session_id', '')}: {r.get('trajectory_path', '')}]".replace(": ]", "]")
                )
        content = "\n".join(parts)
    meta = {"tool_call_id": call_id(res.get("source_call_id"))}
    if refs:
        meta["subagent_trajectory_ref"] = refs
    if tool_name is not None:
        meta["tool_name"] = tool_name
    meta["step_id"] = step_id
    return step("error" if res.get("is_error") else "observation", value_text(content), None, meta)


def one(rec: Any, origin: Origin) -> list:
    if not isinstance(rec, dict):
        raise BadRecord(None, "expected an ATIF trajectory object")
    steps_raw = expect(rec.get("steps"), list, "steps")
    session = expect(rec.get("session_id"), (str, int), "session_id", optional=True)
    agent = expect(rec.get("agent"), dict, "agent", optional=True) or {}
    default_model = agent.get("model_name")
    steps = []
    task = None
    for i, s in enumerate(steps_raw):
        # a field's location is spelled out only when it is wrong: the usual types are tested first
        if not isinstance(s, dict):
            raise BadRecord(f"steps[{i}]", "expected a step object")
        get = s.get
        src = get("source")
        if not isinstance(src, str):
            src = expect(src, str, f"steps[{i}].source")
        msg = get("message")
        msg = (
            msg if isinstance(msg, str) else value_text(expect(msg, (str, list), f"steps[{i}].message", optional=True))
        )
        step_id = get("step_id")
        # only known values: no null for step() to filter out of each of the step's steps
        meta = {"source": src} if step_id is None else {"step_id": step_id, "source": src}
        ts = get("timestamp")
        if ts is not None:
            meta["timestamp"] = ts
        if src == "agent":
            name, model = agent.get("name"), get("model_name") or default_model
            if name is not None:
                meta["agent"] = name
            if model is not None:
                meta["model"] = model
        extra = get("extra")
        if extra and isinstance(extra, dict):
            meta["extra"] = extra
        turn = []
        calls = get("tool_calls")
        if not isinstance(calls, list):
            calls = expect(calls, list, f"steps[{i}].tool_calls", optional=True) or []
        if src == "user":
            turn.append(step("message", msg, None, {"role": "user", **meta}))
            if task is None:
                task = msg
        elif src == "system":
            turn.append(step("system", msg, None, dict(meta)))
        elif src == "agent":
            reasoning = get("reasoning_content")
            if reasoning is not None and not isinstance(reasoning, str):
                expect(reasoning, str, f"steps[{i}].reasoning_content")
            if reasoning:
                turn.append(step("thought", reasoning, None, {"reasoning": True, **meta}))
            if msg or not (reasoning or calls):
                turn.append(step("thought" if calls else "message", msg, None, {"role": "assistant", **meta}))
        else:
            turn.append(step("other", value_text(s), None, dict(meta)))
        obs = get("observation")
        if not isinstance(obs, dict):
            obs = expect(obs, dict, f"steps[{i}].observation", optional=True) or {}
        results = obs.get("results")
        if not isinstance(results, list):
            results = expect(results, list, f"steps[{i}].observation.results", optional=True) or []
        by_id: dict[str, list[int]] = {}
        for k, r in enumerate(results):
            if isinstance(r, dict) and r.get("source_call_id") is not None:
                by_id.setdefault(str(r["source_call_id"]), []).append(k)
        used = set()
        for k, tc in enumerate(calls):
            if not isinstance(tc, dict):
                raise BadRecord(f"steps[{i}].tool_calls[{k}]", "expected a tool call object")
            fname = tc.get("function_name")
            if not isinstance(fname, str):
                raise BadRecord(
                    f"steps[{i}].tool_calls[{k}].function_name", "missing" if fname is None else "expected a string"
                )
            cid = call_id(tc.get("tool_call_id"))
            turn.append(
                step("action", fname, render_args(tc.get("arguments")), {"tool_call_id": cid, "step_id": step_id})
            )
            if cid is not None and by_id:
                for rk in by_id.get(cid if isinstance(cid, str) else str(cid), ()):
                    if rk not in used:
                        used.add(rk)
                        turn.append(_result_step(results[rk], i, rk, fname, step_id))
        if len(used) < len(results):
            for rk, r in enumerate(results):
                if rk not in used:
                    turn.append(_result_step(r, i, rk, None, step_id))
        if not turn:
            turn.append(step("message", msg, None, dict(meta)))
        metrics = get("metrics")
        if isinstance(metrics, dict) and metrics:
            step_metadata(turn[0])["metrics"] = {
                k: v for k, v in metrics.items() if k not in ("prompt_token_ids", "completion_token_ids", "logprobs")
            }
        steps.extend(turn)
    md = {
        "schema_version": rec.get("schema_version"),
        "agent": agent or None,
        "notes": rec.get("notes"),
        "final_metrics": rec.get("final_metrics"),
        "extra": rec.get("extra") or None,
    }
    tid = str(session) if session not in (None, "") else default_id(origin)
    return [finish(origin, tid, task, steps, md, "steps")]



CONVERTER = Converter(
    name=NAME,
    description="Harbor ATIF trajectories (schema_version ATIF-v1.x)",
    shapes='{"schema_version": "ATIF-v1.x", "session_id", "agent", "steps": [{source, message, tool_calls, '
           'observation}]} as JSON, a JSON list or JSONL',
    detect=detect,
    one=one,
)
