"""Claude Code session transcripts (``~/.claude/projects/*/<session>.jsonl``, and the sub-agent files
``<session>/subagents/agent-<id>.jsonl`` of Claude Code 2.x).

One trace per session (``sessionId``). Records are ordered by the ``parentUuid`` tree, not by file
order. Claude Code writes one record per content block of a model response (all sharing
``message.id``), chained by ``parentUuid``, and each ``tool_result`` record hangs off its own
``tool_use`` record while the conversation goes on from the last result written: parallel tool
calls are forks of the tree. ``progress`` / ``attachment`` records are links of the tree, no steps: a
record hanging off one hangs off the message record above it. The trace keeps the path from the root
to the latest leaf (the last record in the file with none below it) and, hanging off it, every record
of the same turn: the further blocks of the same response (same ``message.id``) and the results of
its calls. Any other fork is an abandoned branch (a retried response, an edited prompt): left out,
counted in ``metadata.abandoned_branches`` / ``abandoned_records`` and a warning. A record whose
``parentUuid`` is null, not a string or unknown (session start, ``/clear``, compaction, a sub-agent's
links into its parent session) continues the record before it in the file.

Sidechains (``isSidechain: true``, the sub-agents run by the Task tool) are not mixed into the main
trace: each sub-agent becomes its own trace ``<sessionId>/sidechain/<agent>`` with
``metadata.parent_session`` and ``parent_trace`` (the main trace's id, its session's): ``<agent>`` is its
``agentId`` (2.x, also the name of its file), else (1.x, sub-agents inline in the main file) the uuid of the
sub-agent's first record. Its turns' actor is ``subagent``, its prompt's the main ``agent``'s. The main trace
counts them in ``metadata.sidechain_traces``; a Task call and its result name the sub-agent's trace in
``metadata.subagent_trace`` where the result says which (``toolUseResult.agentId``).

The task is the user's first prompt; a slash command is the command line as typed (``/name args``),
or, without arguments, the prompt it expands to. Interruptions, local-command output and injected
(``isMeta``) records are not the task.

A record that cannot be converted is rejected on its own (file:line: field: reason); the rest of
its session converts. ``summary`` and ``file-history-snapshot`` records (and other non-message kinds)
are not steps: summaries go to ``metadata.summaries``, the rest are counted in
``metadata.other_records``.
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Gather, Sample, Unit
from .support.chat import anthropic_blocks
from .support.errors import BadRecord, guarded, warning
from .support.files import Origin, records
from .support.steps import AGENT_TYPES, FOLDED, StepBatch, StepList, actor, finish, step, text

NAME = "claude_code"

MESSAGE_TYPES = {"user", "assistant", "system"}

_COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
#: user text Claude Code writes itself (Esc, local commands): never the task
_NOT_PROMPT = ("<local-command", "Caveat:", "[Request interrupted")


def detect(sample: Sample) -> float:
    recs = [r for r in sample.first_records if isinstance(r, dict)]
    if not recs:
        return 0.0
    hits = sum(1 for r in recs if "sessionId" in r and ("parentUuid" in r or "uuid" in r))
    summ = sum(
        1
        for r in recs
        if r.get("type") in ("summary", "file-history-snapshot")
        and ("leafUuid" in r or "snapshot" in r or "messageId" in r)
    )
    if hits and hits + summ >= len(recs) * 0.8:
        return 0.95
    if summ == len(recs):
        return 0.6
    return 0.0


# ---------------------------------------------------------------- the parentUuid tree

def _blocks(r: dict) -> list:
    msg = r.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return content if isinstance(content, list) else []


def _response_id(r: dict):
    """The ``message.id`` of an assistant record (the model response its block belongs to), else None."""
    msg = r.get("message")
    return msg.get("id") if r.get("type") == "assistant" and isinstance(msg, dict) else None


def _is_result(r: dict) -> bool:
    """Whether a record carries tool results (Claude Code writes them as user records)."""
    return r.get("type") == "user" and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in _blocks(r))


def _response_above(i: int, records: list[dict], parent: list[int | None]):
    """The model response record ``i`` belongs to: the ``message.id`` of the nearest assistant record
    at or above it."""
    j: int | None = i
    while j is not None:
        rid = _response_id(records[j])
        if rid is not None:
            return rid
        j = parent[j]
    return None


def _above_links(uuid, links: dict):
    """The record a ``parentUuid`` names, through any link records (``links``: their uuid -> their parent)."""
    walked: dict = {}  # ordered, and a cycle is found in O(1)
    while isinstance(uuid, str) and uuid in links:
        if uuid in walked:  # links naming each other name no record
            uuid = None
            break
        walked[uuid] = None
        uuid = links[uuid]
    for k in walked:  # the next record hanging off the same links finds its parent in one step
        links[k] = uuid
    return uuid


def _parents(records: list[dict], links: dict) -> list[int | None]:
    """Each record's parent index: its ``parentUuid`` (through link records), else the record before
    it; cycles broken."""
    by_uuid = {r["uuid"]: i for i, r in enumerate(records)}  # unique: convert keeps a uuid's first record only
    parent: list[int | None] = []
    guessed: list[bool] = []
    ahead = False  # a parent written after its child: only then can the links form a cycle
    for i, r in enumerate(records):
        pu = r.get("parentUuid")
        if isinstance(pu, str) and pu in links:
            pu = _above_links(pu, links)
        p = by_uuid.get(pu) if isinstance(pu, str) else None  # a non-string parent is an unknown one
        if p is None or p == i:
            guessed.append(True)
            p = i - 1 if i > 0 else None  # continue the previous record (see module doc)
        else:
            guessed.append(False)
            if p > i:
                ahead = True
        parent.append(p)
    state = [0] * len(records) if ahead else []  # 0 not seen, 1 on the walk up from the current record, 2 done
    for i in range(len(state)):
        walk = []
        j: int | None = i
        while j is not None and state[j] == 0:
            state[j] = 1
            walk.append(j)
            j = parent[j]
        if j is not None and state[j] == 1:  # the walk came back to itself: a cycle, cut at a guessed link
            cycle = walk[walk.index(j):]
            parent[next((k for k in cycle if guessed[k]), j)] = None
        for k in walk:
            state[k] = 2
    return parent


def _order(records: list[dict], links: dict) -> tuple[list[dict], int, int]:
    """(the kept records in conversation order, abandoned branches, records on them)."""
    n = len(records)
    parent = _parents(records, links)
    children: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(parent):
        if p is not None:
            children[p].append(i)
    leaf = next(i for i in range(n - 1, -1, -1) if not children[i])
    path_child: dict[int, int] = {}
    i = leaf
    up = parent[i]
    while up is not None:
        path_child[up] = i
        i, up = up, parent[up]
    root = i
    kept: list[dict] = []
    branches = lost = 0
    stack = [root]
    while stack:  # depth first; at each fork the same turn's side records first, the path last
        i = stack.pop()
        kept.append(records[i])
        on = path_child.get(i)
        if on is not None:
            stack.append(on)
        if len(children[i]) == (0 if on is None else 1):
            continue  # no fork here
        response = _response_above(i, records, parent)
        for c in reversed(children[i]):
            if c == on:
                continue
            # a side of the same turn: a further block of the same response, or a tool result (Claude Code
            # hangs each off its own call; a retried or edited turn never starts with one)
            if _is_result(records[c]) or response is not None and _response_id(records[c]) == response:
                stack.append(c)
            else:
                branches += 1
                lost += _subtree_size(c, children)
    for r in range(n):  # a record cut from a cycle starts a tree of its own, off the kept one
        if parent[r] is None and r != root:
            branches += 1
            lost += _subtree_size(r, children)
    return kept, branches, lost


def _subtree_size(top: int, children: list[list[int]]) -> int:
    count, todo = 0, [top]
    while todo:
        count += 1
        todo += children[todo.pop()]
    return count


# ---------------------------------------------------------------- steps

def _record(r: dict, out: StepBatch) -> str:
    """One message record's steps into ``out``; its user text."""
    msg = r.get("message")
    meta = {"uuid": r.get("uuid"), "timestamp": r.get("timestamp"), "source_line": r["_line"]}
    if r.get("isMeta"):
        meta["is_meta"] = True
    kind = r.get("type")
    if kind == "system":
        out.add(
            step(
                "system",
                text(
                    r.get("content")
                    if r.get("content") is not None
                    else msg.get("content")
                    if isinstance(msg, dict)
                    else msg
                ),
                None,
                {"subtype": r.get("subtype"), "level": r.get("level"), **meta},
            )
        )
        return ""
    if not isinstance(msg, dict):
        raise BadRecord("message", f"expected an object, got {describe(msg)}")
    role: Any = msg.get("role") or kind  # as written (any JSON): compared and copied into the steps as is
    result_meta: dict[str, Any] | None = None
    tur = r.get("toolUseResult")
    if tur is not None:
        # the UI-side copy of the result: kept when it adds something the model-facing text lacks
        if isinstance(tur, str):
            result_meta = {"tool_use_result": tur}
        elif isinstance(tur, dict):
            result_meta = {"tool_use_result_keys": sorted(tur)}
            agent = tur.get("agentId")
            if isinstance(agent, str) and agent:  # a Task's result: the trace of the sub-agent it ran (2.x: its file)
                result_meta["subagent_trace"] = f"{r['sessionId']}/sidechain/{agent}"
    if role == "assistant":
        if isinstance(msg.get("usage"), dict):
            meta["usage"] = msg["usage"]
        if msg.get("id") is not None:
            meta["message_id"] = msg["id"]
    said = anthropic_blocks(role, msg.get("content"), out, "message", agent=msg.get("model"), meta=meta,
                            result_meta=result_meta)
    return said if role == "user" else ""


def _command_task(said: str) -> str | None:
    """A slash command's line as typed (``/name args``); "" for one without arguments."""
    name = _COMMAND.search(said)
    if name is None:
        return None
    found = _ARGS.search(said)
    args = found.group(1).strip() if found else ""
    return f"{name.group(1)} {args}" if args else ""


#: where a session ran, as its records say (the first record that says so, in conversation order)
_PLACE_KEYS = ("cwd", "version", "gitBranch")


def _steps(records: list[dict], source: str, tid: str, errors: list) -> tuple[StepList, str, dict, dict, bool]:
    """The steps of a session's kept records, its task, its models, usage and place (:data:`_PLACE_KEYS`), and
    whether a result names a sub-agent (``toolUseResult.agentId``); the located errors of the records left out go to
    ``errors``. What it finds of the records it finds as they pass: no second pass over them."""
    out = StepList()
    subagents = False
    place: dict[str, Any] = {}
    task = None
    expands = False  # the last prompt was a slash command without arguments: its expansion says what it asks
    usage: Counter[str] = Counter()
    models = []
    batch = StepBatch()
    for r in records:
        if len(place) < 3 and ("cwd" in r or "version" in r or "gitBranch" in r):
            for k in _PLACE_KEYS:
                if k not in place and r.get(k):
                    place[k] = r[k]
        try:
            said = _record(r, batch)
        except Exception:  # noqa: BLE001 - the record alone is rejected, located and worded by guarded
            batch.discard()  # (run again under it: a record fails the same way twice; no cost on good records)
            failed = guarded(Origin(NAME, source, r["_line"]), _record, r, batch)
            batch.discard()
            errors += [dataclasses.replace(e, trace_id=tid) for e in failed if isinstance(e, TraceError)]
            continue
        if r.get("isMeta"):  # context Claude Code injected (a command's expansion, a reminder): the harness's
            for s in batch.pending():
                if s.type == "message":
                    s["actor"] = actor("system")
                    s["render"] = FOLDED
        batch.commit(out)
        if "toolUseResult" in r and not subagents:
            tur = r["toolUseResult"]
            subagents = isinstance(tur, dict) and "agentId" in tur
        if r.get("type") == "assistant":
            msg = r["message"]
            model = msg.get("model")
            if model and model not in models:
                models.append(model)
            u = msg.get("usage")
            if isinstance(u, dict):
                for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
                    if isinstance(u.get(k), int):
                        usage[k] += u[k]
        if task is not None or not said.strip():
            continue
        if r.get("isMeta"):
            if expands:
                task = said
            continue
        expands = False
        lead = said.lstrip()
        if lead.startswith(_NOT_PROMPT):
            continue
        command = _command_task(said) if lead.startswith("<command-") else None
        if command == "":
            expands = True
        else:
            task = command if command is not None else said
    stats = {"models": models or None, "usage": dict(usage) or None}
    return out, task or "", stats, place, subagents


def one(session: tuple[str, list[dict], dict, dict], origin: Origin) -> Iterator:
    """One session's records (or one sub-agent's) to its trace, after the located errors of the records left out
    of it; a warning for the abandoned branches left out."""
    tid, records, links, meta = session
    kept, branches, lost = _order(records, links)
    errors: list = []
    # a session that cannot be converted at all is one located error carrying the session's trace id
    made = guarded(origin, _session_trace, origin, tid, kept, records, branches, lost, meta, errors)
    yield from errors
    for item in made:
        yield dataclasses.replace(item, trace_id=tid) if isinstance(item, TraceError) else item
    if branches:
        yield warning(
            origin.source,
            tid,
            f"{branches} abandoned branch(es) (a retried or edited turn) left out: {lost} "
            "record(s) (metadata.abandoned_branches, abandoned_records)",
        )


def _session_trace(origin: Origin, tid: str, kept: list[dict], records: list[dict], branches: int, lost: int,
                   meta: dict, errors: list) -> list:
    out, task, stats, place, subagents = _steps(kept, origin.source, tid, errors)
    meta = {**meta, **{k: v for k, v in stats.items() if v}}
    first = next((r for r in kept if r.get("timestamp")), None)
    last = next((r for r in reversed(kept) if r.get("timestamp")), None)
    meta.update(
        {
            "records": len(records),
            "abandoned_branches": branches,
            "abandoned_records": lost,
            "started_at": first and first.get("timestamp"),
            "ended_at": last and last.get("timestamp"),
        }
    )
    for k in _PLACE_KEYS:
        if k in place:
            meta[k] = place[k]
    steps = out.steps()
    if meta.get("sidechain"):
        _as_subagent(steps)
    elif subagents:
        _link_subagents(steps)
    return [finish(origin, tid, task, steps, meta)]


def _as_subagent(steps: list) -> None:
    """A sidechain's turns are the sub-agent's; its prompts are the main agent's (the Task call's prompt)."""
    for s in steps:
        was = s.get("actor")
        if was is None:
            if s.type in AGENT_TYPES:
                s["actor"] = actor("subagent")
        elif was["kind"] == "agent":
            s["actor"] = actor("subagent", was.get("name"))
        elif was["kind"] == "user":
            s["actor"] = actor("agent")


def _link_subagents(steps: list) -> None:
    """The Task call whose result names a sub-agent's trace names it too (the result follows its call)."""
    for call, result in zip(steps, steps[1:]):
        trace = result.get("metadata", {}).get("subagent_trace")
        if trace is not None and call.type == "action" \
                and call.get("metadata", {}).get("tool_call_id") == result["metadata"].get("tool_call_id"):
            call.setdefault("metadata", {})["subagent_trace"] = trace


def _sidechains(records: list[dict], links: dict) -> dict[str, list[dict]]:
    """A session's sidechain records by sub-agent: its ``agentId``, else (1.x) its first record's uuid."""
    by_agent: dict[str, list[dict]] = {}
    inline = {r["uuid"]: r for r in records if not r.get("agentId")}
    first: dict[str, Any] = {}  # uuid -> the uuid of its sub-agent's first record, found once per record
    for r in records:
        agent = r.get("agentId")
        if not agent:
            walk: dict[str, None] = {}  # the uuids walked up (a dict: ordered, and a cycle is found in O(1))
            top = r
            while top["uuid"] not in first and top["uuid"] not in walk:
                up = inline.get(_above_links(top.get("parentUuid"), links))
                if up is None:
                    break
                walk[top["uuid"]] = None
                top = up
            agent = first.get(top["uuid"], top["uuid"])
            first.update(dict.fromkeys(walk, agent))
            first.setdefault(top["uuid"], agent)
        by_agent.setdefault(str(agent), []).append(r)
    return by_agent


class _Sessions(Gather):
    """A file's records by session (a session is ordered by its parentUuid chain, and one file may hold several):
    each session's main thread and each of its sub-agents' sidechains converted at the end of the file."""

    def __init__(self, path: Path) -> None:
        self.source = str(path)
        self.sessions: dict[str, list[dict]] = {}
        self.links: dict = {}  # the uuid of each progress / attachment record -> its parentUuid
        self.summaries: list[dict] = []
        self.other: Counter = Counter()
        self.seen: set = set()

    def add(self, rec: Any, origin: Origin) -> None:
        if not isinstance(rec, dict):
            raise BadRecord(None, f"expected a JSON object, got {type(rec).__name__}")
        kind = rec.get("type")
        if kind is not None and not isinstance(kind, str):
            raise BadRecord("type", f"expected a string, got {describe(kind)}")
        if kind == "summary":
            self.summaries.append(rec)
            return
        uuid = rec.get("uuid")
        sid = rec.get("sessionId")
        if kind not in MESSAGE_TYPES:
            self.other[str(kind)] += 1
            if isinstance(uuid, str) and uuid:  # progress, attachment: no step, but a call or prompt may hang off it
                self.links.setdefault(uuid, rec.get("parentUuid"))
            return
        if not isinstance(uuid, str) or not uuid:
            raise BadRecord("uuid", "missing" if uuid is None else f"expected a string, got {type(uuid).__name__}")
        if uuid in self.seen:  # a record re-written (resumed session): the first copy stands
            self.other["duplicate uuid"] += 1
            return
        self.seen.add(uuid)
        if not isinstance(sid, str) or not sid:
            raise BadRecord("sessionId", "missing" if sid is None else f"expected a string, got {type(sid).__name__}")
        rec["_line"] = origin.line
        self.sessions.setdefault(sid, []).append(rec)

    def end(self) -> Iterator:
        sessions, other, links = self.sessions, self.other, self.links
        if not sessions:
            if self.summaries or other:
                yield TraceError(
                    self.source,
                    None,
                    None,
                    f"no user/assistant records (only "
                    f"{sum(other.values()) + len(self.summaries)} summary/snapshot records)",
                )
            return
        origin = Origin(NAME, self.source)
        leaf_owner = {r["uuid"]: sid for sid, recs in sessions.items() for r in recs}
        for sid, recs in sessions.items():
            main = [r for r in recs if not r.get("isSidechain")]
            side = _sidechains([r for r in recs if r.get("isSidechain")], links)
            mine = [s.get("summary") for s in self.summaries if leaf_owner.get(
                s.get("leafUuid") if isinstance(s.get("leafUuid"), str) else None) == sid or len(sessions) == 1]
            base = {"session_id": sid}
            meta: dict[str, Any] = dict(base)
            if mine:
                meta["summaries"] = mine
            if other:
                meta["other_records"] = dict(other)
            if side:
                meta["sidechain_traces"] = len(side)
                meta["sidechain_records"] = sum(len(v) for v in side.values())
            if main:
                yield Unit(origin, (sid, main, links, meta))
            for agent, srecs in side.items():
                yield Unit(origin, (f"{sid}/sidechain/{agent}", srecs, links,
                                    {**base, "parent_session": sid, "parent_trace": sid, "agent_id": agent,
                                     "sidechain": True}))


CONVERTER = Converter(
    name=NAME,
    description="Claude Code session JSONL (parentUuid tree, parallel tool calls, branches, sidechains and "
                "sub-agent files)",
    shapes="JSONL of {type: user|assistant|system|progress|summary, uuid, parentUuid, sessionId, message, ...}",
    detect=detect,
    one=one,
    read=partial(records, split=None, jsonl=True, moving=True),  # _Sessions.add keeps a record's line alone
    gather=_Sessions,
)
