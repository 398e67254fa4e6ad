"""Harbor ATIF (Agent Trajectory Interchange Format) trajectories.

Mapping: user step -> message, system step -> system, agent step -> thought (reasoning_content),
then its message (thought when it calls tools, else message), then per tool call an action followed
by the observation result whose ``source_call_id`` matches; results with no call id (or an id no call
has) follow as observations. ``metrics`` go to the step metadata of the turn's first step.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Converter, Sample
from .support.chat import call_id, value_text
from .support.errors import BadRecord, each_record, expect
from .support.files import Origin, sample_objects
from .support.steps import default_id, finish, render_args, step, step_metadata

NAME = "atif"


def _is_atif(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("schema_version"), str) and obj["schema_version"].upper().startswith("ATIF")


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if objs and _is_atif(objs[0]):
        return 0.98
    if objs and isinstance(objs[0], dict) and {"session_id", "agent", "steps"} <= set(objs[0]):
        steps = objs[0].get("steps")
        if isinstance(steps, list) and steps and isinstance(steps[0], dict) and "source" in steps[0] and "step_id" in steps[0]:
            return 0.8
    return 0.0


def _result_step(res: dict, w: str, rk: int, **meta) -> Any:
    if not isinstance(res, dict):
        raise BadRecord(f"{w}observation.results[{rk}]", f"expected an object, got {type(res).__name__}")
    content = res.get("content")
    refs = res.get("subagent_trajectory_ref")
    if content is None and refs:
        parts = []
        for r in refs if isinstance(refs, list) else [refs]:
            if isinstance(r, dict):
                parts.append(f"[subagent {r.get('session_id', '')}: {r.get('trajectory_path', '')}]".replace(": ]", "]"))
        content = "\n".join(parts)
    extra = {"subagent_trajectory_ref": refs} if refs else {}
    stype = "error" if res.get("is_error") else "observation"
    return step(stype, value_text(content), None, {"tool_call_id": call_id(res.get("source_call_id")), **extra, **meta})


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
        w = f"steps[{i}]."
        if not isinstance(s, dict):
            raise BadRecord(f"steps[{i}]", "expected a step object")
        src = s.get("source")
        if src.__class__ is not str:
            src = expect(src, str, f"{w}source")
        msg = s.get("message")
        msg = msg if msg.__class__ is str else value_text(expect(msg, (str, list), f"{w}message", optional=True))
        meta = {"step_id": s.get("step_id"), "source": src, "timestamp": s.get("timestamp")}
        if src == "agent":
            meta["agent"] = agent.get("name")
            meta["model"] = s.get("model_name") or default_model
        if isinstance(s.get("extra"), dict) and s["extra"]:
            meta["extra"] = s["extra"]
        turn = []
        calls = s.get("tool_calls")
        if calls.__class__ is not list:
            calls = expect(calls, list, f"{w}tool_calls", optional=True) or []
        if src == "user":
            turn.append(step("message", msg, None, {"role": "user", **meta}))
            if task is None:
                task = msg
        elif src == "system":
            turn.append(step("system", msg, None, dict(meta)))
        elif src == "agent":
            reasoning = s.get("reasoning_content")
            if reasoning is not None and reasoning.__class__ is not str:
                expect(reasoning, str, f"{w}reasoning_content")
            if reasoning:
                turn.append(step("thought", reasoning, None, {"reasoning": True, **meta}))
            if msg or not (reasoning or calls):
                turn.append(step("thought" if calls else "message", msg, None, {"role": "assistant", **meta}))
        else:
            turn.append(step("other", value_text(s), None, dict(meta)))
        obs = s.get("observation")
        if obs.__class__ is not dict:
            obs = expect(obs, dict, f"{w}observation", optional=True) or {}
        results = obs.get("results")
        if results.__class__ is not list:
            results = expect(results, list, f"{w}observation.results", optional=True) or []
        by_id: dict[str, list[int]] = {}
        for k, r in enumerate(results):
            if isinstance(r, dict) and r.get("source_call_id") is not None:
                by_id.setdefault(str(r["source_call_id"]), []).append(k)
        used = set()
        for k, tc in enumerate(calls):
            if not isinstance(tc, dict):
                raise BadRecord(f"{w}tool_calls[{k}]", "expected a tool call object")
            fname = tc.get("function_name")
            if not isinstance(fname, str):
                raise BadRecord(f"{w}tool_calls[{k}].function_name", "missing" if fname is None else "expected a string")
            cid = call_id(tc.get("tool_call_id"))
            turn.append(step("action", fname, render_args(tc.get("arguments")),
                             {"tool_call_id": cid, "step_id": s.get("step_id")}))
            for rk in by_id.get(str(cid), []) if cid is not None else []:
                if rk not in used:
                    used.add(rk)
                    turn.append(_result_step(results[rk], w, rk, tool_name=fname, step_id=s.get("step_id")))
        for rk, r in enumerate(results):
            if rk not in used:
                turn.append(_result_step(r, w, rk, step_id=s.get("step_id")))
        if not turn:
            turn.append(step("message", msg, None, dict(meta)))
        metrics = s.get("metrics")
        if isinstance(metrics, dict) and metrics:
            step_metadata(turn[0])["metrics"] = {k: v for k, v in metrics.items() if k not in ("prompt_token_ids", "completion_token_ids", "logprobs")}
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


def convert(path: Path):
    yield from each_record(path, NAME, one)


CONVERTER = Converter(
    name=NAME,
    description="Harbor ATIF trajectories (schema_version ATIF-v1.x)",
    shapes='{"schema_version": "ATIF-v1.x", "session_id", "agent", "steps": [{source, message, tool_calls, observation}]} as JSON, a JSON list or JSONL',
    detect=detect,
    convert=convert,
)
