"""SWE-agent ``.traj`` files and mini-swe-agent trajectories.

SWE-agent: ``trajectory`` (thought / action / observation per turn, with ``response`` and ``state``)
is the source of steps (``steps`` of the same thought/action/observation objects is read alike: the
simplified form Potato accepts); when it is absent or empty, ``history`` is used (chat messages; actions from
``tool_calls`` in function-calling runs, else from the ``action`` field, the next user or tool
message being the observation). Demonstration messages (``is_demo``) are counted, not converted.
A shell-style action becomes an ``action`` step whose content is the command name and whose
``action_input`` is the whole command as written.

mini-swe-agent: ``{"messages", "info", "trajectory_format": "mini-swe-agent-1*"}``, or the bare list of
messages its 1.x text protocol saves. An assistant reply with exactly one fenced ``bash`` block runs it:
an action of the tool ``bash`` whose input is the command (the text before it is the thought); the next
user message is its observation (``<returncode>`` in the step's metadata). A reply with no block or
several ran nothing (mini-swe-agent answers it with a format error): a thought. Tool-calling runs
(2.x) use ``tool_calls``/``tool`` messages (``reasoning_content`` is a thought too); their closing
``exit`` message (the submission, or the error that ended the run) answers the call still waiting, else
is a message (an error when the run did not submit).

The task is the problem statement where the file has one (``replay_config``, or the ``ISSUE:``
part of the first instance message), else the first user message (for mini-swe-agent, the issue inside
its instance template: ``<pr_description>`` or ``Please solve this issue: …``).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import loads

from .base import Converter, Sample
from .support.chat import call_id, tool_call
from .support.errors import BadRecord, expect
from .support.files import Origin, records
from .support.steps import StepList, compact, default_id, finish, render_args, step, text

NAME = "swe_agent"

FENCE = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)\n?```", re.S)
#: mini-swe-agent's own action regex (``mswea_bash_command`` in its 2.x text mode)
MINI_FENCE = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)
ISSUE = re.compile(r"ISSUE:\s*\n(.*?)\n+\s*INSTRUCTIONS:", re.S)
MINI_ISSUE = re.compile(r"<pr_description>\s*\n(?:Consider the following PR description:\n)?(.*?)\n?</pr_description>"
                        r"|\APlease solve this issue: (.*?)\n\nYou can execute bash commands", re.S)
RETURNCODE = re.compile(r"\s*<returncode>(-?\d+)</returncode>")
MINI_ROLES = {"system", "user", "assistant"}


def detect(sample: Sample) -> float:
    doc = sample.first_json
    if isinstance(doc, dict):
        fmt = doc.get("trajectory_format")
        if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
            return 0.95
        if isinstance(doc.get("trajectory"), list) and ("history" in doc or "info" in doc or "environment" in doc):
            return 0.95
        if isinstance(doc.get("history"), list) and (
            sample.path.suffix == ".traj"
            or "info" in doc
            or any(isinstance(m, dict) and "message_type" in m for m in doc["history"][:5])
        ):
            return 0.9
        if (
            isinstance(doc.get("messages"), list)
            and isinstance(doc.get("info"), dict)
            and ("model_stats" in doc["info"] or "exit_status" in doc["info"])
        ):
            return 0.9
        if isinstance(doc.get("steps"), list) and isinstance(doc.get("info"), dict) and "exit_status" in doc["info"]:
            return 0.9
    elif _is_mini_list(doc):
        return 0.95
    elif doc is None and not sample.first_records and sample.path.suffix == ".traj":
        return 0.7 if '"trajectory"' in sample.head or '"history"' in sample.head else 0.0
    return 0.0


def _is_mini_list(doc: Any) -> bool:
    """mini-swe-agent's bare message list: chat messages, a fenced bash command in a reply and a
    command's ``<returncode>`` in a user message (among the first 50)."""
    if not (isinstance(doc, list) and doc and all(isinstance(m, dict) and m.get("role") in MINI_ROLES
                                                  and isinstance(m.get("content"), str) for m in doc[:50])):
        return False
    head = doc[:50]
    return (any(m["role"] == "assistant" and MINI_FENCE.search(m["content"]) for m in head)
            and any(m["role"] == "user" and RETURNCODE.match(m["content"]) for m in head))


def _cmd_name(cmd: str) -> str:
    parts = cmd.strip().split(None, 1)
    return parts[0] if parts else ""


def _problem(doc: dict) -> str | None:
    rc = doc.get("replay_config")
    if isinstance(rc, str):
        try:
            rc = loads(rc)
        except (ValueError, RecursionError):
            rc = None
    if isinstance(rc, dict):
        ps = rc.get("problem_statement")
        if isinstance(ps, dict) and isinstance(ps.get("text"), str):
            return ps["text"]
    for m in doc.get("history") or []:
        if isinstance(m, dict) and m.get("role") == "user" and not m.get("is_demo"):
            c = m.get("content")
            c = c if isinstance(c, str) else text(c)
            found = ISSUE.search(c)
            return found.group(1).strip("\n") if found else c
    return None


def _from_trajectory(doc: dict, out: StepList, key: str = "trajectory") -> None:
    hist = doc.get("history") or []
    if hist and isinstance(hist[0], dict) and hist[0].get("role") == "system":
        out.add(step("system", hist[0].get("content"), None, {"agent": hist[0].get("agent")}))
    for i, t in enumerate(doc[key]):
        w = f"{key}[{i}]"
        expect(t, dict, w)
        thought = t.get("thought")
        if thought is None and t.get("response") is not None:
            thought = t.get("response")
        if thought is not None and not isinstance(thought, str):
            raise BadRecord(f"{w}.thought", f"expected a string, got {type(thought).__name__}")
        meta = {"turn": i}
        if thought:
            out.add(step("thought", thought, None, dict(meta)))
        action = t.get("action")
        if action is not None and not isinstance(action, str):
            raise BadRecord(f"{w}.action", f"expected a string, got {type(action).__name__}")
        if action is not None:
            out.add(step("action", _cmd_name(action), action, {"execution_time": t.get("execution_time"), **meta}))
        if "observation" in t:
            out.add(step("observation", t.get("observation"), None, {"state": t.get("state"), **meta}))


def _from_history(history: list, out: StepList, where: str = "history", mini: bool = False) -> tuple[str | None, int]:
    """Steps from SWE-agent / mini-swe-agent (``mini``) chat history; return (first user text, demo count)."""
    demos = 0
    first_user = None
    pending: str | None = None
    waiting: tuple | None = None  # (key, call id) of the latest call still without its result
    for i, m in enumerate(history):
        w = f"{where}[{i}]"
        expect(m, dict, w)
        if m.get("is_demo"):
            demos += 1
            continue
        role = m.get("role")
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") if isinstance(p, dict) else text(p) for p in content)
        meta = {"message_index": i, "agent": m.get("agent"), "message_type": m.get("message_type")}
        rc = RETURNCODE.match(content) if role in ("user", "tool") and isinstance(content, str) else None
        if rc:
            meta["returncode"] = int(rc.group(1))
        if role == "system":
            out.add(step("system", content, None, dict(meta)))
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            expect(calls, list, f"{w}.tool_calls")
            thought = m.get("thought")
            action = m.get("action")
            if not calls and action is None and thought is None:
                found = list((MINI_FENCE if mini else FENCE).finditer(content or ""))
                if found and (len(found) == 1 or not mini):  # mini-swe-agent runs a reply's only block, else none
                    thought = (content or "")[: found[-1].start()].rstrip()
                    action = found[-1].group(1)
                else:
                    thought = content
            elif thought is None:
                thought = content
            reasoning = m.get("reasoning_content")
            if reasoning and isinstance(reasoning, str):
                out.add(step("thought", reasoning, None, {**meta, "reasoning": True}))
            if thought:
                out.add(step("thought", thought, None, dict(meta)))
            pending = None
            made = []
            for j, tc in enumerate(calls):
                c = tool_call(tc, f"{w}.tool_calls[{j}]")
                made.append(c.call_id)
                out.call(
                    c.call_id,
                    step(
                        "action",
                        c.name,
                        render_args(c.args),
                        {"command": action if len(calls) == 1 else None, **meta, "tool_call_id": c.call_id},
                    ),
                )
            if not calls and action is not None:
                pending = f"msg-{i}"
                out.call(pending, step("action", "bash" if mini else _cmd_name(action), action, {**meta}))
            waiting = (pending, None) if pending is not None else (made[-1], made[-1]) if made else None
        elif role == "tool":
            ids = m.get("tool_call_ids") or [m.get("tool_call_id")]
            cid = call_id(ids[0])
            out.result(cid, step("observation", content, None, {**meta, "tool_call_id": cid}))
            waiting = None
        elif role == "user":
            if pending is not None:
                out.result(pending, step("observation", content, None, dict(meta)))
                pending = waiting = None
            else:
                if first_user is None:
                    first_user = content
                out.add(step("message", content, None, {"role": "user", **meta}))
        elif role == "exit" and mini:  # the run's end: the submission, or the error that stopped it
            extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
            status = extra.get("exit_status")
            emeta = {"role": role, **meta, "exit_status": status}
            if waiting is not None and out.has_call(waiting[0]):  # the call the run ended on gets no tool message
                out.result(waiting[0], step("observation", content, None, {**emeta, "tool_call_id": waiting[1]}))
            else:
                out.add(step("message" if status in (None, "Submitted") else "error", content, None, emeta))
            pending = waiting = None
        else:
            out.add(step("other", compact(m), None, {"role": role, **meta}))
    return first_user, demos


def _mini_task(first_user: str | None) -> str | None:
    """The issue inside mini-swe-agent's instance template (its SWE-bench or default one), else the whole message."""
    found = MINI_ISSUE.search(first_user) if isinstance(first_user, str) else None
    return next(g for g in found.groups() if g is not None) if found else first_user


def one(doc: Any, origin: Origin) -> Iterator:
    if isinstance(doc, list):  # mini-swe-agent 1.x saved the bare messages
        doc = {"messages": doc, "trajectory_format": None}
    expect(doc, dict, "(top level)")
    out = StepList()
    meta: dict = {}
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    fmt = doc.get("trajectory_format")
    if (
        isinstance(fmt, str)
        and fmt.startswith("mini-swe-agent")
        or "messages" in doc
        and "trajectory" not in doc
        and "history" not in doc
    ):
        meta.update(variant="mini-swe-agent", trajectory_format=fmt)
        first_user, demos = _from_history(expect(doc.get("messages"), list, "messages"), out, "messages", mini=True)
        task = _mini_task(first_user)
    elif isinstance(doc.get("trajectory"), list) and doc["trajectory"]:
        meta.update(variant="trajectory", history_messages=len(doc.get("history") or []))
        _from_trajectory(doc, out)
        task, demos = (
            _problem(doc),
            sum(1 for m in doc.get("history") or [] if isinstance(m, dict) and m.get("is_demo")),
        )
    elif isinstance(doc.get("steps"), list) and doc["steps"] and "history" not in doc:
        meta.update(variant="steps")
        _from_trajectory(doc, out, "steps")
        task, demos = text(doc.get("problem_statement") or doc.get("task_description")), 0
    else:
        if doc.get("history") is None:
            raise BadRecord("trajectory", "missing (and no history to fall back to)")
        meta.update(variant="history")
        first_user, demos = _from_history(expect(doc["history"], list, "history"), out)
        task = _problem(doc) or first_user
    if demos:
        meta["demo_messages_skipped"] = demos
    for k in ("exit_status", "submission", "model_stats", "instance_id", "mini_version"):
        if info.get(k) is not None:
            meta[k] = info[k]
    if doc.get("environment") is not None:
        meta["environment"] = doc["environment"]
    tid = info.get("instance_id") or doc.get("instance_id")
    # a JSONL of trajectories without instance ids: each its own id (its line), not one per file name
    yield finish(origin, text(tid) if tid else default_id(origin), task or "", out.steps(), meta)


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """Each trajectory of a file; a bare list is one (mini-swe-agent's messages). .traj and .json files are one
    document each: no look for JSONL lines (one open per file matters on big run folders)."""
    return records(path, fmt, None, jsonl=False if path.suffix in (".traj", ".json") else None)


CONVERTER = Converter(
    name=NAME,
    description="SWE-agent .traj trajectories (trajectory or history, function calling) and mini-swe-agent",
    shapes='.traj {"trajectory": [{thought, action, observation}], "history", "info"}; {"messages", "info", '
           '"trajectory_format": "mini-swe-agent-1"}; '
    "mini-swe-agent's bare message list (```bash blocks, <returncode> outputs)",
    detect=detect,
    one=one,
    read=_read,
)
