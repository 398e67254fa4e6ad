"""Harbor ATIF (Agent Trajectory Interchange Format) trajectories.

Mapping: user step -> message, system step -> system, agent step -> thought (reasoning_content),
then its message (thought when it calls tools, else message), then per tool call an action followed
by the observation result whose ``source_call_id`` matches; results with no call id (or an id no call
has) follow as observations. ``metrics`` go to the step metadata of the turn's first step.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common_b import Bad, Ctx, args_text, drive, finish_trace, mk_step, sample_objects, step_meta, text_of, want
from .base import Converter, Sample

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


def _result_step(res: dict, where: str, **meta) -> Any:
    if not isinstance(res, dict):
        raise Bad(where, f"expected an object, got {type(res).__name__}")
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
    return mk_step(stype, text_of(content), tool_call_id=res.get("source_call_id"), **extra, **meta)


def one(rec: Any, ctx: Ctx) -> list:
    if not isinstance(rec, dict):
        raise Bad(None, "expected an ATIF trajectory object")
    steps_raw = want(rec, "steps", list, "", required=True)
    session = want(rec, "session_id", (str, int), "", default=None)
    agent = want(rec, "agent", dict, "", default={})
    default_model = agent.get("model_name")
    steps = []
    task = None
    for i, s in enumerate(steps_raw):
        w = f"steps[{i}]."
        if not isinstance(s, dict):
            raise Bad(f"steps[{i}]", "expected a step object")
        src = want(s, "source", str, w, required=True)
        msg = want(s, "message", (str, list), w, default="")
        msg = text_of(msg)
        meta = {"step_id": s.get("step_id"), "source": src, "timestamp": s.get("timestamp")}
        if src == "agent":
            meta["agent"] = agent.get("name")
            meta["model"] = s.get("model_name") or default_model
        if isinstance(s.get("extra"), dict) and s["extra"]:
            meta["extra"] = s["extra"]
        turn = []
        calls = want(s, "tool_calls", list, w, default=[])
        if src == "user":
            turn.append(mk_step("message", msg, role="user", **meta))
            if task is None:
                task = msg
        elif src == "system":
            turn.append(mk_step("system", msg, **meta))
        elif src == "agent":
            reasoning = want(s, "reasoning_content", str, w, default="")
            if reasoning:
                turn.append(mk_step("thought", reasoning, reasoning=True, **meta))
            if msg or not (reasoning or calls):
                turn.append(mk_step("thought" if calls else "message", msg, role="assistant", **meta))
        else:
            turn.append(mk_step("other", text_of(s), **meta))
        obs = want(s, "observation", dict, w, default={})
        results = want(obs, "results", list, w + "observation.", default=[])
        by_id: dict[str, list[int]] = {}
        for k, r in enumerate(results):
            if isinstance(r, dict) and r.get("source_call_id") is not None:
                by_id.setdefault(str(r["source_call_id"]), []).append(k)
        used = set()
        for k, tc in enumerate(calls):
            cw = f"{w}tool_calls[{k}]"
            if not isinstance(tc, dict):
                raise Bad(cw, "expected a tool call object")
            fname = tc.get("function_name")
            if not isinstance(fname, str):
                raise Bad(cw + ".function_name", "missing" if fname is None else "expected a string")
            cid = tc.get("tool_call_id")
            turn.append(mk_step("action", fname, args_text(tc.get("arguments")), tool_call_id=cid, step_id=s.get("step_id")))
            for rk in by_id.get(str(cid), []) if cid is not None else []:
                if rk not in used:
                    used.add(rk)
                    turn.append(_result_step(results[rk], f"{w}observation.results[{rk}]", tool_name=fname, step_id=s.get("step_id")))
        for rk, r in enumerate(results):
            if rk not in used:
                turn.append(_result_step(r, f"{w}observation.results[{rk}]", step_id=s.get("step_id")))
        if not turn:
            turn.append(mk_step("message", msg, **meta))
        metrics = s.get("metrics")
        if isinstance(metrics, dict) and metrics:
            step_meta(turn[0])["metrics"] = {k: v for k, v in metrics.items() if k not in ("prompt_token_ids", "completion_token_ids", "logprobs")}
        steps.extend(turn)
    md = ctx.provenance(NAME)
    md.update({
        "schema_version": rec.get("schema_version"),
        "agent": agent or None,
        "notes": rec.get("notes"),
        "final_metrics": rec.get("final_metrics"),
        "extra": rec.get("extra") or None,
    })
    tid = str(session) if session not in (None, "") else ctx.default_id()
    return [finish_trace(tid, task, steps, md, "steps")]


def convert(path: Path):
    yield from drive(path, one)


CONVERTER = Converter(
    name=NAME,
    description="Harbor ATIF trajectories (schema_version ATIF-v1.x)",
    shapes='{"schema_version": "ATIF-v1.x", "session_id", "agent", "steps": [{source, message, tool_calls, observation}]} as JSON, a JSON list or JSONL',
    detect=detect,
    convert=convert,
)
