"""Multi-agent transcripts: Who&When failure-attribution records and generic agent-named message lists.

Who&When mapping is one step per ``history`` entry, in order (step i is history[i], so the
record's 0-based ``mistake_step`` indexes the steps directly; it is kept as an int in metadata).
Step type from the role/name: "X (thought)" -> thought; "X (-> Y)" -> message to Y; a terminal /
computer / executor agent -> observation; a human/user without an agent name -> message (role
user); system -> system; anything else -> message. The agent name goes to step metadata.

Generic shape ``{"messages"|"chat_history": [{agent|name|source|sender, content, role?}]}``
(AutoGen / CrewAI style): the same role rules, plus OpenAI-style ``tool_calls`` and AutoGen
ToolCallRequestEvent/ToolCallExecutionEvent items -> action / observation (or error) steps.
"""
from __future__ import annotations

import re
from typing import Any

from .base import Converter, Sample
from .support.chat import call_id, message_parts, norm_role, tool_calls_of, value_text
from .support.errors import BadRecord
from .support.files import Origin, sample_objects
from .support.steps import StepList, agent_actor, default_id, finish, name_agents, render_args, role_actor, step

NAME = "multi_agent"
_WW_KEYS = ("mistake_agent", "mistake_step", "mistake_reason", "ground_truth", "question")
_LIST_KEYS = ("messages", "chat_history", "conversation", "history")
_AGENT_KEYS = ("agent", "name", "source", "sender", "speaker", "agent_name")
#: AutoGen's event messages whose steps carry the message's agent, index, time and usage as they are
_EVENT_TYPES = frozenset({"ToolCallRequestEvent", "ToolCallExecutionEvent", "ThoughtEvent"})
_TERMINAL = re.compile(r"terminal|computer|executor|code_?exec|interpreter|shell|environment|sandbox", re.I)
_ROLE_ANNOT = re.compile(r"^(.*?)\s*\(([^()]*)\)\s*$")
_ROLES = {"user", "assistant", "system", "tool", "human", "ai", "function", "model", "developer"}
_AUTOGEN_TYPES = {"TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage",
                  "ThoughtEvent", "HandoffMessage", "StopMessage", "MultiModalMessage", "UserInputRequestedEvent"}


def _is_who_when(obj: Any) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("history"), list)
            and sum(k in obj for k in _WW_KEYS) >= 2)


def _agent_of(m: dict) -> str | None:
    for k in _AGENT_KEYS:
        if k in m:
            v = m[k]
            if v and isinstance(v, str):
                return v
    return None


def _generic_list(obj: Any) -> list | None:
    if not isinstance(obj, dict):
        return None
    for k in _LIST_KEYS:
        v = obj.get(k)
        if isinstance(v, list) and v and all(isinstance(m, dict) for m in v[:50]):
            return v
    return None


def _generic_score(obj: Any) -> float:
    msgs = _generic_list(obj)
    if msgs is None:
        return 0.0
    # SWE-agent .traj histories also carry an "agent" key, but with one agent and SWE-agent's own keys
    if isinstance(obj, dict) and ("trajectory" in obj or "info" in obj):
        return 0.0
    if any(m.get("type") in _AUTOGEN_TYPES and "source" in m for m in msgs[:50]):
        return 0.9
    # the messages' text is read from "content": a list without it (Potato's {speaker, text} turns) is not ours
    if not any("content" in m for m in msgs[:50]):
        return 0.0
    names = {a for m in msgs[:200] if (a := _agent_of(m)) and a.lower() not in _ROLES}
    if len(names) >= 2:
        return 0.75
    # messages addressed from one agent to another (AutoGen's sender/receiver): two parties are enough, even
    # when one is named for its role ("user_proxy" and "assistant")
    parties = {p for m in msgs[:200] for k in ("sender", "receiver") if isinstance(p := m.get(k), str) and p}
    if len(parties) >= 2 and all(isinstance(m.get("sender"), str) for m in msgs[:50]):
        return 0.75
    return 0.0


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if not objs:
        return 0.0
    if _is_who_when(objs[0]):
        return 0.97
    return _generic_score(objs[0])


_CLASSIFIED: dict = {}


def _classify(role: str, name: str | None) -> tuple[str, dict]:
    """(step type, metadata) for one transcript entry from its role label and agent name."""
    # a transcript repeats a few (role, name) pairs thousands of times: classify each pair once
    hit = _CLASSIFIED.get((role, name))
    if hit is None:
        if len(_CLASSIFIED) > 4096:
            _CLASSIFIED.clear()
        hit = _CLASSIFIED[(role, name)] = _classify_new(role, name)
    return hit[0], dict(hit[1])


_LISTED: dict = {}


def _entry(role: str, agent: str | None) -> tuple[str, dict, dict | None, dict | None, dict | None]:
    """(step type, metadata, the actor of its text as a message, as a thought, the actor of its calls) of a message
    list entry by its role and agent: the actors :func:`step` and ``name_agents`` would give its steps, found once
    per pair (a transcript repeats a few thousands of times; a lookup per step and a pass naming the agents cost the
    benchmark's multi_agent case a twentieth of its conversion, benchmarks/converter_instructions.py)."""
    hit = _LISTED.get((role, agent))
    if hit is None:
        if len(_LISTED) > 4096:
            _LISTED.clear()
        stype, meta = _classify_new(role or (agent or ""), agent if role else None)
        if agent:
            meta["agent"] = agent
        name = meta.get("agent")
        by = agent_actor(name) if name else None  # an agent's step: its agent's, unless its role names another
        hit = _LISTED[(role, agent)] = (stype, meta, role_actor(meta.get("role")) or by, by,
                                        agent_actor(agent) if agent else None)
    return hit[0], dict(hit[1]), hit[2], hit[3], hit[4]


def _classify_new(role: str, name: str | None) -> tuple[str, dict]:
    meta: dict = {}
    agent, annot = name, None
    m = _ROLE_ANNOT.match(role or "")
    if m:
        annot = m.group(2).strip()
        if not agent:
            agent = m.group(1).strip() or None
    elif not agent and role and role not in _ROLES:
        # Who&When hand-crafted records put the agent in the role ("WebSurfer", "Assistant")
        agent = role
    if role:
        meta["role"] = role
    if agent:
        meta["agent"] = agent
    r = norm_role(role)
    if annot:
        meta["annotation"] = annot
        low = annot.lower()
        if low.startswith("thought") or low in ("plan", "planning", "reflection"):
            return "thought", meta
        if low.startswith("->"):
            meta["recipient"] = annot[2:].strip()
            return "message", meta
        return "message", meta
    if r == "system":
        return "system", meta
    if r == "tool":
        return "observation", meta
    if agent and _TERMINAL.search(agent):
        return "observation", meta
    if r == "user" and not name:
        return "message", meta
    return "message", meta


def _who_when(rec: dict, origin: Origin) -> list:
    hist = rec["history"]
    steps = []
    for i, h in enumerate(hist):
        if not isinstance(h, dict):
            raise BadRecord(f"history[{i}]", "expected an object with content and role")
        content = h.get("content")
        if content is not None and not isinstance(content, (str, list, dict)):
            raise BadRecord(f"history[{i}].content", f"expected a string, got {type(content).__name__}")
        role = h.get("role")
        if role is not None and not isinstance(role, str):
            raise BadRecord(f"history[{i}].role", "expected a string")
        name = h.get("name") if isinstance(h.get("name"), str) else None
        stype, meta = _classify(role or "", name)
        meta["history_index"] = i
        steps.append(step(stype, value_text(content), None, dict(meta)))
    md: dict = {"benchmark": "who_and_when"}
    raw_ms = rec.get("mistake_step")
    if raw_ms is not None and raw_ms != "":
        try:
            ms = int(str(raw_ms).strip()) if not isinstance(raw_ms, bool) else None
        except ValueError:
            ms = None
        if ms is None:
            raise BadRecord("mistake_step", f"expected an integer index into history, got {raw_ms!r}")
        if not 0 <= ms < len(hist):
            raise BadRecord("mistake_step", f"index {ms} is outside history (0..{len(hist) - 1})")
        md["mistake_step"] = ms
    for k in ("mistake_agent", "mistake_reason", "ground_truth", "question", "question_ID", "level", "is_corrected"):
        if k in rec:
            md[k] = rec[k]
    for k, v in rec.items():
        if k not in md and k not in ("history", "mistake_step") and not isinstance(v, (list, dict)):
            md.setdefault("extra", {})[k] = v
    task = rec.get("question") if isinstance(rec.get("question"), str) else None
    if task is None and hist and isinstance(hist[0], dict):
        task = value_text(hist[0].get("content"))
    tid = rec.get("trace_id") or rec.get("id") or default_id(origin)
    name_agents(steps)
    return [finish(origin, str(tid), task, steps, md, "history")]


def function_result(out: StepList, r: dict, meta: dict) -> None:
    """An AutoGen function execution result ``{call_id, content, name, is_error}``, paired with its call."""
    cid = call_id(r.get("call_id"))
    out.result(cid, step("error" if r.get("is_error") else "observation", value_text(r.get("content")), None,
                         {"tool_call_id": cid, "tool_name": r.get("name"), **meta}))


def message_list_trace(rec: dict, origin: Origin) -> list:
    """An agent-named message list (AutoGen, CrewAI, a team's thread) as one trace; autogen reuses it."""
    key = next(k for k in _LIST_KEYS if isinstance(rec.get(k), list))
    out = StepList()
    task = next((rec[k] for k in ("task", "question", "goal", "query", "input") if isinstance(rec.get(k), str)), None)
    first_user = None
    for i, m in enumerate(rec[key]):
        # once per message: error locations are spelled out only when raised, and the class tests are plain
        # (isinstance here costs the benchmark's multi_agent case 1.5% more instructions,
        # benchmarks/converter_instructions.py)
        if m.__class__ is not dict:
            raise BadRecord(f"{key}[{i}]", "expected a message object")
        get = m.get
        agent = _agent_of(m)
        role = get("role")
        if role.__class__ is not str:
            role = ""
        ts = get("timestamp") or get("created_at")
        usage = get("models_usage") or get("usage")
        mtype = get("type")
        content = get("content")
        if mtype.__class__ is str and mtype in _EVENT_TYPES:
            base = {"agent": agent, "index": i, "timestamp": ts, "usage": usage}
        if mtype == "ToolCallRequestEvent" and isinstance(content, list):
            for k, c in enumerate(content):
                if not isinstance(c, dict):
                    raise BadRecord(f"{key}[{i}].content[{k}]", "expected a function call object")
                cid = call_id(c.get("id"))
                act = step("action", str(c.get("name", "")), render_args(c.get("arguments")),
                           {"tool_call_id": cid, **base})
                out.call(cid, act)
                if agent:  # after StepList's render hint, as name_agents would (the keys' order)
                    act["actor"] = agent_actor(agent)
            continue
        if mtype == "ToolCallExecutionEvent" and isinstance(content, list):
            for k, c in enumerate(content):
                if not isinstance(c, dict):
                    raise BadRecord(f"{key}[{i}].content[{k}]", "expected a function result object")
                function_result(out, c, base)
            continue
        if content is not None and not isinstance(content, (str, list, dict)):
            raise BadRecord(f"{key}[{i}].content", f"expected a string, got {type(content).__name__}")
        if mtype == "ThoughtEvent":
            out.add(step("thought", value_text(content), None, {**base}, agent_actor(agent) if agent else None))
            continue
        stype, meta, as_message, as_thought, calls_by = _entry(role, agent)
        meta["index"] = i
        if ts is not None:
            meta["timestamp"] = ts
        if usage is not None:
            meta["usage"] = usage
        cid = call_id(get("tool_call_id"))
        if cid is not None:
            meta["tool_call_id"] = cid
        if mtype:
            meta["message_type"] = mtype
        if isinstance(content, (str, list)) or content is None:
            text, reasoning, calls, _ = message_parts(m)  # calls: tool_calls and tool-use parts alike
        else:
            text, reasoning, calls = value_text(content), "", tool_calls_of(m)
        if reasoning:
            out.add(step("thought", reasoning, None, dict(meta), as_thought))
        if text or not calls:
            if stype == "message":
                said = step("thought", text, None, dict(meta), as_thought) if calls else \
                    step("message", text, None, dict(meta), as_message)
            else:
                said = step(stype, text, None, dict(meta), as_thought if stype == "thought" else None)
            if cid is not None and said.type in ("observation", "error"):
                out.result(cid, said)
            else:
                out.add(said)
        for tc in calls:
            act = step("action", tc.name, render_args(tc.args), {"tool_call_id": tc.call_id, "agent": agent})
            out.call(tc.call_id, act)
            if calls_by is not None:  # after StepList's render hint, as name_agents would (the keys' order)
                act["actor"] = calls_by
        if first_user is None and task is None and norm_role(role or agent or "") == "user":
            first_user = text
    if task is None:
        task = first_user
    md: dict[str, Any] = {}
    for k, v in rec.items():
        if k != key and k not in ("task",) and not isinstance(v, list):
            md.setdefault("extra", {})[k] = v
    steps = out.steps()
    md["agents"] = list(dict.fromkeys(a for s in steps if (a := s.get("metadata", {}).get("agent"))))
    tid = rec.get("trace_id") or rec.get("id") or rec.get("session_id") or default_id(origin)
    return [finish(origin, str(tid), task, steps, md, key)]


def one(rec: Any, origin: Origin) -> list:
    if not isinstance(rec, dict):
        raise BadRecord(None, "expected a transcript object")
    if "history" in rec and not isinstance(rec["history"], list) and sum(k in rec for k in _WW_KEYS) >= 2:
        raise BadRecord("history", f"expected a list of messages, got {type(rec['history']).__name__}")
    if _is_who_when(rec):
        return _who_when(rec, origin)
    if _generic_list(rec) is not None:
        return message_list_trace(rec, origin)
    for k in _LIST_KEYS:
        if k in rec:
            raise BadRecord(k, f"expected a non-empty list of message objects, got {type(rec[k]).__name__}")
    raise BadRecord(None, "no history or messages list")



CONVERTER = Converter(
    name=NAME,
    description="Multi-agent transcripts: Who&When records (history, mistake_step) and agent-named message lists "
                "(AutoGen, CrewAI)",
    shapes='{"history": [{content, role, name?}], "question", "mistake_agent", "mistake_step", ...} or {"messages": '
           '[{agent|name|source, content}]}',
    detect=detect,
    one=one,
)
