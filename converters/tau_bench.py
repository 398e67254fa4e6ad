"""tau-bench and tau2-bench results.

Accepted shapes:

- tau-bench results (``run.py`` output): a JSON list of ``{task_id, reward, info, traj, trial}``, one
  trace per record. ``traj`` is the agent's OpenAI chat history (system policy, the simulated user's
  turns, assistant turns with ``tool_calls``, ``tool`` results). Its recorded call ids repeat within
  one trajectory: a result answers the earliest call of its id still waiting for one. A tool's
  failure comes back as content starting ``Error:`` (how tau-bench's tools report an exception): an
  error step. A record whose run failed before the first turn (``traj`` empty, ``info.error``) is
  rejected with that error.
- tau2-bench results: ``{timestamp, info, tasks, simulations}``, one trace per simulation. Messages
  carry ``turn_idx``; calls are flat ``{id, name, arguments, requestor}``; a ``tool`` message's own
  ``id`` is the id of the call it answers; the simulated user calls tools too (its calls are actions
  with role ``user``).

The task is the first user message (the simulated user's opening request). The simulator's hidden
instruction (``info.task.instruction``; tau2's ``tasks[].user_scenario``) stays in metadata with the
reward and the rest of ``info``.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import load_located, open_bytes
from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Sample
from .support.chat import call_id, content_text, openai_messages, tool_call
from .support.errors import BadRecord, expect, warning
from .support.files import STREAM_ABOVE, Origin, first_item, iter_items
from .support.steps import StepList, default_id, finish, render_args, step

NAME = "tau_bench"

RECORD_KEYS = {"task_id", "reward", "info", "traj"}
#: the start of a results file too big for the detectors' sample to hold whole
_BIG_V1 = re.compile(r'^\s*\[\s*\{\s*"task_id":\s*\d+,\s*"reward":')
_BIG_TAU2 = re.compile(r'^\s*\{\s*"timestamp":[^{]*"info":\s*\{\s*"git_commit":')
#: tau2's file-level info that is the same text for every simulation (the domain policy, tool schemas)
_BULKY = {"policy", "tool_defs", "global_simulation_guidelines"}


# ---------------------------------------------------------------- detection

def _is_v1(rec: Any) -> bool:
    return isinstance(rec, dict) and RECORD_KEYS <= rec.keys() and isinstance(rec.get("traj"), list)


def _is_tau2(doc: Any) -> bool:
    sims = doc.get("simulations") if isinstance(doc, dict) else None
    return (isinstance(sims, list) and ("tasks" in doc or "info" in doc)
            and all(isinstance(s, dict) and "messages" in s and "task_id" in s for s in sims[:5]))


def detect(sample: Sample) -> float:
    doc = sample.first_json
    if doc is None:
        if sample.first_records:
            return 0.0
        return 0.9 if _BIG_V1.match(sample.head) or _BIG_TAU2.match(sample.head) else 0.0
    if isinstance(doc, list) and doc and all(_is_v1(r) for r in doc[:5]):
        return 0.95
    return 0.95 if _is_tau2(doc) else 0.0


# ---------------------------------------------------------------- tau-bench

def _v1(rec: Any, origin: Origin) -> list:
    if not isinstance(rec, dict):
        expect(rec, dict, None)
    traj = expect(rec.get("traj"), list, "traj")
    info = rec.get("info")
    if not traj:
        err = info.get("error") if isinstance(info, dict) else None
        raise BadRecord("traj", f"empty: the run failed before its first turn ({err})" if err else "empty")
    out = StepList()
    notes: list = []
    task = openai_messages(traj, out, where="traj", warnings=notes)
    steps = out.steps()
    for s in steps:  # tau-bench's tools answer an exception with "Error: ..."
        if s.type == "observation" and s.content.startswith("Error:"):
            s.type = "error"
    meta = {"task_id": rec.get("task_id"), "trial": rec.get("trial"), "reward": rec.get("reward"), "info": info}
    tid = default_id(origin)
    return [finish(origin, tid, task, steps, meta, field="traj"), *(warning(origin.source, tid, n) for n in notes)]


# ---------------------------------------------------------------- tau2-bench

def _tau2_steps(messages: list, out: StepList) -> str:
    """Steps of one simulation's messages; returns the task (the user's first words)."""
    task = ""
    for i, m in enumerate(messages):
        w = f"messages[{i}]"
        if not isinstance(m, dict):
            expect(m, dict, w)
        role = m.get("role")
        meta = {"role": role, "turn_idx": m.get("turn_idx"), "timestamp": m.get("timestamp")}
        if role == "tool":
            cid = call_id(m.get("id"))
            out.result(
                cid,
                step(
                    "error" if m.get("error") is True else "observation",
                    content_text(m.get("content")),
                    None,
                    {**meta, "tool_call_id": cid, "requestor": m.get("requestor")},
                ),
            )
            continue
        if role not in ("assistant", "user", "system"):
            raise BadRecord(f"{w}.role", f"expected assistant, user, system or tool, got {role!r}")
        body = content_text(m.get("content"))
        calls = expect(m.get("tool_calls"), list, f"{w}.tool_calls", optional=True) or []
        if role == "system":
            out.add(step("system", body, None, meta))
            continue
        if body or not calls:
            out.add(step("message", body, None, {**meta, "cost": m.get("cost"), "usage": m.get("usage")}))
            if role == "user" and body and not task:
                task = body
        for j, tc in enumerate(calls):
            c = tool_call(tc, f"{w}.tool_calls[{j}]")
            out.call(c.call_id, step("action", c.name, render_args(c.args),
                                     {**meta, "tool_call_id": c.call_id, "requestor": tc.get("requestor")}))
    return task


def _simulation(sim: Any, origin: Origin) -> list:
    run, tasks = origin.document
    if not isinstance(sim, dict):
        expect(sim, dict, None)
    messages = expect(sim.get("messages"), list, "messages")
    out = StepList()
    task = _tau2_steps(messages, out)
    reward_info = sim.get("reward_info")
    meta = {k: sim.get(k) for k in ("task_id", "trial", "termination_reason", "start_time", "end_time", "duration",
                                     "agent_cost", "user_cost", "seed")}
    meta["reward"] = reward_info.get("reward") if isinstance(reward_info, dict) else None
    meta["reward_info"] = reward_info
    meta["info"] = run or None
    meta["task_definition"] = tasks.get(str(sim.get("task_id")))
    sid = sim.get("id")
    # a simulation without an id: its place in the file (simulations[3]) tells it from the others
    tid = sid if isinstance(sid, str) and sid else default_id(origin, origin.place)
    return [finish(origin, tid, task, out.steps(), meta, field="messages")]


def one(rec: Any, origin: Origin) -> list:
    """A tau-bench record, or a tau2-bench simulation (``origin.document``: the run's info and tasks)."""
    return _v1(rec, origin) if origin.document is None else _simulation(rec, origin)


def _run_info(info: Any) -> dict:
    """The file's ``info`` without the texts every simulation shares (policy, tool schemas, guidelines)."""
    if not isinstance(info, dict):
        return {}

    def lean(v: Any) -> Any:
        return {k: lean(x) for k, x in v.items() if k not in _BULKY and x is not None} if isinstance(v, dict) else v

    return lean(info)


def _tasks(tasks: Any) -> dict:
    return {str(t.get("id")): t for t in tasks if isinstance(t, dict)} if isinstance(tasks, list) else {}


# ---------------------------------------------------------------- files

def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """Each record of a tau-bench results list (with its index), or each simulation of a tau2-bench results file
    (``simulations[i]``, with the run's info and tasks); a file too big to parse whole is streamed with ijson."""
    source = str(path)
    if path.suffix != ".gz" and path.stat().st_size > STREAM_ABOVE:
        with open_bytes(path) as fh:
            v1 = fh.read(1) == b"["  # results files are written by json.dump: no leading space
        if v1:
            for i, rec in iter_items(path, "item"):
                yield Origin(fmt, source, None, i, i), rec
        else:
            yield from _simulations(path, fmt, first_item(path, "info"), first_item(path, "tasks"),
                                    iter_items(path, "simulations.item"))
        return
    doc = load_located(path)
    if isinstance(doc, TraceError):
        yield Origin(fmt, source), doc
    elif isinstance(doc, list):
        for i, rec in enumerate(doc):
            yield Origin(fmt, source, None, i, i), rec
    elif not isinstance(doc, dict) or not isinstance(doc.get("simulations"), list):
        got = describe(doc.get("simulations")) if isinstance(doc, dict) else describe(doc)
        yield (
            Origin(fmt, source),
            TraceError(
                source,
                None,
                "simulations",
                f"expected tau-bench records (a list) or tau2 {{simulations: [...]}}, got {got}",
            ),
        )
    else:
        yield from _simulations(path, fmt, doc.get("info"), doc.get("tasks"), enumerate(doc["simulations"]))


def _simulations(
    path: Path, fmt: str, info: Any, tasks: Any, sims: Iterator[tuple[int, Any]]
) -> Iterator[tuple[Origin, Any]]:
    run = (
        _run_info(None if isinstance(info, TraceError) else info),
        _tasks(None if isinstance(tasks, TraceError) else tasks),
    )
    for i, sim in sims:
        yield Origin(fmt, str(path), place=f"simulations[{i}]", document=run), sim


CONVERTER = Converter(
    name=NAME,
    description="tau-bench results ({task_id, reward, info, traj, trial}) and tau2-bench results (simulations with "
                "messages)",
    shapes="JSON list of {task_id, reward, info, traj: [chat messages], trial}; "
    "{timestamp, info, tasks, simulations: [{id, task_id, messages: [{role, content, tool_calls, turn_idx}], "
    "reward_info}]}",
    detect=detect,
    one=one,
    read=_read,
)
