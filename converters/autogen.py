"""AutoGen saved state: autogen-core model contexts (``BufferedChatCompletionContext.save_state()`` and
other ``{"messages": [LLMMessage, ...]}`` dumps, an ``AssistantAgentState``'s ``llm_context``) and AgentChat
team states (``await team.save_state()``: ``{"type": "TeamState", "agent_states": {...}}``).

Model context (``type`` per message): ``SystemMessage`` -> system; ``UserMessage`` -> user message (the
first is the task; kept each time it appears, as the context held it); ``AssistantMessage`` -> its
``thought`` as a thought, text as a message, or one action per ``FunctionCall`` (id, name, JSON
arguments); ``FunctionExecutionResultMessage`` -> one observation (error when ``is_error``) per result,
right after its call by ``call_id``. The speaking agent (``source``) is each step's ``agent``, so a
handoff (an ordinary ``transfer_to_…`` call) shows as the agent changing.

Team state: each group-chat manager's ``message_thread`` (what ``TaskResult.messages`` holds) is one
trace, read as an AgentChat transcript by :mod:`.multi_agent`; the agents' own ``llm_context`` repeats
the same run and is used only when the state holds no thread.
"""
from __future__ import annotations

from typing import Any

from ls_trajeval.core.trace import describe

from .base import Converter, Sample
from .multi_agent import function_result, message_list_trace
from .support.chat import call_id, content_text, value_text
from .support.errors import BadRecord, expect
from .support.files import Origin, sample_objects
from .support.steps import StepList, default_id, finish, name_agents, render_args, step

NAME = "autogen"
_CORE_TYPES = frozenset({"SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage"})


def _core_messages(o: Any) -> list | None:
    """The LLMMessage list of a model-context dump or an agent state; None when it is neither."""
    if isinstance(o, dict):
        ctx = o.get("llm_context") if o.get("type") == "AssistantAgentState" else o
        msgs = ctx.get("messages") if isinstance(ctx, dict) else None
        if (
            isinstance(msgs, list)
            and msgs
            and all(isinstance(m, dict) and m.get("type") in _CORE_TYPES for m in msgs[:20])
        ):
            return msgs
    return None


def _is_team_state(o: Any) -> bool:
    return isinstance(o, dict) and o.get("type") == "TeamState" and isinstance(o.get("agent_states"), dict)


def detect(sample: Sample) -> float:
    objs = sample_objects(sample, 1)
    if objs and (_is_team_state(objs[0]) or _core_messages(objs[0]) is not None):
        return 0.95
    return 0.0


def context_steps(msgs: list, where: str) -> tuple[list, str | None]:
    out = StepList()
    task = None
    for i, m in enumerate(msgs):
        w = f"{where}[{i}]"
        expect(m, dict, w)
        kind = m.get("type")
        meta = {"agent": m.get("source"), "message_index": i, "message_type": kind}
        content = m.get("content")
        if kind == "SystemMessage":
            out.add(step("system", content_text(content), None, meta))
        elif kind == "UserMessage":
            text = content_text(content)
            if task is None:
                task = text
            out.add(step("message", text, None, {"role": "user", **meta}))
        elif kind == "AssistantMessage":
            if m.get("thought"):
                out.add(step("thought", value_text(m["thought"]), None, {"role": "assistant", **meta}))
            if isinstance(content, list):
                for k, c in enumerate(content):
                    expect(c, dict, f"{w}.content[{k}]")
                    cid = call_id(c.get("id"))
                    name = expect(c.get("name"), str, f"{w}.content[{k}].name")
                    out.call(cid, step("action", name, render_args(c.get("arguments")), {"tool_call_id": cid, **meta}))
            else:
                out.add(step("message", content_text(content), None, {"role": "assistant", **meta}))
        elif kind == "FunctionExecutionResultMessage":
            for k, r in enumerate(expect(content, list, f"{w}.content")):
                function_result(out, expect(r, dict, f"{w}.content[{k}]"), meta)
        else:
            raise BadRecord(f"{w}.type", "expected one of " + ", ".join(sorted(_CORE_TYPES)) + ", got "
                            + (repr(kind) if isinstance(kind, str) else describe(kind)))
    return out.steps(), task


def _context_trace(msgs: list, origin: Origin, where: str, name: str | None = None) -> list:
    steps, task = context_steps(msgs, where)
    name_agents(steps)
    agents = list(dict.fromkeys(a for m in msgs if isinstance(m, dict) and isinstance(a := m.get("source"), str)))
    return [finish(origin, default_id(origin, name) if name else default_id(origin), task, steps,
                   {"agents": agents or None, "agent_state": name}, where)]


def _team(state: dict, origin: Origin) -> list:
    out = []
    threads = {k: v["message_thread"] for k, v in state["agent_states"].items()
               if isinstance(v, dict) and isinstance(v.get("message_thread"), list) and v["message_thread"]}
    for key, thread in threads.items():
        tr = message_list_trace({"messages": thread, "id": default_id(origin, key)}, origin)
        for t in tr:
            t.metadata.update(team_id=state.get("team_id"), manager=key)
            t.metadata.pop("extra", None)  # only the id given above
        out += tr
    if not threads:
        for key, st in state["agent_states"].items():
            msgs = _core_messages((st or {}).get("agent_state")) if isinstance(st, dict) else None
            if msgs is not None:
                out += _context_trace(msgs, origin, f"agent_states.{key}.agent_state.llm_context.messages", key)
    if not out:
        raise BadRecord("agent_states", "no message thread and no agent context holds any message")
    return out


def one(rec: Any, origin: Origin) -> list:
    if _is_team_state(rec):
        return _team(rec, origin)
    msgs = _core_messages(rec)
    if msgs is None and isinstance(rec, dict) and isinstance(rec.get("messages"), list):
        msgs = rec["messages"]  # forced --format: each message is checked, a bad one named
    if msgs is None:
        raise BadRecord(
            None, f'expected an AutoGen TeamState or a {{"messages": [...]}} model context, got {describe(rec)}'
        )
    where = "llm_context.messages" if rec.get("type") == "AssistantAgentState" else "messages"
    return _context_trace(msgs, origin, where)



CONVERTER = Converter(
    name=NAME,
    description="AutoGen saved state: autogen-core model contexts ({messages: [UserMessage, AssistantMessage, "
    "FunctionExecutionResultMessage, ...]}) and AgentChat TeamState (the team's message thread)",
    shapes='{"messages": [{"type": "UserMessage" | "AssistantMessage" | "FunctionExecutionResultMessage" | '
           '"SystemMessage", '
    '"content", "source"}]} or {"type": "TeamState", "agent_states": {...}}',
    detect=detect,
    one=one,
)
