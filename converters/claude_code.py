"""Claude Code session transcripts (``~/.claude/projects/*/<session>.jsonl``).

One trace per session (``sessionId``). Records are ordered by the ``parentUuid`` chain, not by file
order: the trace follows the path from the root to the latest leaf (the last message record in
the file that has no child), so a conversation that was rewound or retried shows the branch the
user kept. Records on abandoned branches are counted in ``metadata.abandoned_records`` and a
warning. A record whose ``parentUuid`` is null, not a string or unknown (session start, ``/clear``, compaction,
transcripts written without parents) continues the record before it in the file.

Sidechains (``isSidechain: true``, the sub-agents run by the Task tool) are not mixed into the
main trace: each sub-agent (``agentId``, else all sidechain records of the session together)
becomes its own trace, ``<sessionId>/sidechain/<agent>``, with ``metadata.parent_session``; the
main trace counts them in ``metadata.sidechain_traces``.

``summary`` and ``file-history-snapshot`` records (and other non-message kinds) are not steps:
summaries go to ``metadata.summaries``, the rest are counted in ``metadata.other_records``.
"""
from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterator

from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Sample
from .support.chat import anthropic_blocks
from .support.errors import BadRecord, guarded, warning
from .support.files import Origin, iter_records
from .support.steps import StepList, finish, step, text

NAME = "claude_code"

MESSAGE_TYPES = {"user", "assistant", "system"}


def detect(sample: Sample) -> float:
    recs = [r for r in sample.first_records if isinstance(r, dict)]
    if not recs:
        return 0.0
    hits = sum(1 for r in recs if "sessionId" in r and ("parentUuid" in r or "uuid" in r))
    summ = sum(1 for r in recs if r.get("type") in ("summary", "file-history-snapshot") and ("leafUuid" in r or "snapshot" in r or "messageId" in r))
    if hits and hits + summ >= len(recs) * 0.8:
        return 0.95
    if summ == len(recs):
        return 0.6
    return 0.0


def _order(records: list[dict]) -> tuple[list[dict], int]:
    """(the records on the kept branch in order, the number of records left on other branches)."""
    if not records:
        return [], 0
    by_uuid: dict[str, int] = {}
    for i, r in enumerate(records):
        by_uuid.setdefault(r["uuid"], i)
    parent: list[int | None] = []
    children: defaultdict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        pu = r.get("parentUuid")
        p = by_uuid.get(pu) if pu.__class__ is str and pu else None  # a non-string parent is an unknown one
        if p is None or p == i:
            p = i - 1 if i > 0 else None  # continue the previous record (see module doc)
        parent.append(p)
        if p is not None:
            children[p].append(i)
    leaves = [i for i in range(len(records)) if not children.get(i)]
    leaf = leaves[-1] if leaves else len(records) - 1  # no leaf only in a parent cycle
    chain = []
    seen = set()
    i: int | None = leaf
    while i is not None and i not in seen:
        seen.add(i)
        chain.append(i)
        i = parent[i]
    chain.reverse()
    return [records[i] for i in chain], len(records) - len(chain)


def _steps(records: list[dict], source: str) -> tuple[StepList, str, dict]:
    out = StepList()
    task = None
    usage = Counter()
    models = []
    for r in records:
        msg = r.get("message")
        line = r["_line"]
        meta = {"uuid": r.get("uuid"), "timestamp": r.get("timestamp"), "source_line": line}
        if r.get("isMeta"):
            meta["is_meta"] = True
        kind = r.get("type")
        if kind == "system":
            out.add(step("system", text(r.get("content") if r.get("content") is not None else msg.get("content") if isinstance(msg, dict) else msg), None,
                         {"subtype": r.get("subtype"), "level": r.get("level"), **meta}))
            continue
        if not isinstance(msg, dict):
            raise BadRecord(f"line {line}: message", f"expected an object, got {type(msg).__name__}")
        role = msg.get("role") or kind
        result_meta = None
        tur = r.get("toolUseResult")
        if tur is not None:
            # the UI-side copy of the result: kept when it adds something the model-facing text lacks
            if isinstance(tur, str):
                result_meta = {"tool_use_result": tur}
            elif isinstance(tur, dict):
                result_meta = {"tool_use_result_keys": sorted(tur)}
        if role == "assistant":
            model = msg.get("model")
            if model and model not in models:
                models.append(model)
            u = msg.get("usage")
            if isinstance(u, dict):
                for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
                    if isinstance(u.get(k), int):
                        usage[k] += u[k]
                meta["usage"] = u
            if msg.get("id") is not None:
                meta["message_id"] = msg["id"]
        try:
            said = anthropic_blocks(role, msg.get("content"), out, "message", agent=msg.get("model"), meta=meta,
                                    result_meta=result_meta)
        except BadRecord as exc:
            raise BadRecord(f"line {line}: {exc.field}", exc.message) from None
        if task is None and role == "user" and said.strip() and not r.get("isMeta") and not said.lstrip().startswith(("<command-", "<local-command", "Caveat:")):
            task = said
    stats = {"models": models or None, "usage": dict(usage) or None}
    return out, task or "", stats


def _trace(path: Path, tid: str, records: list[dict], meta: dict) -> Iterator:
    kept, abandoned = _order(records)
    # a session that cannot be converted is one located error carrying the session's trace id
    for item in guarded(Origin(NAME, str(path)), _session_trace, path, tid, kept, len(records), abandoned, meta):
        yield dataclasses.replace(item, trace_id=tid) if isinstance(item, TraceError) else item
    if abandoned:
        yield warning(str(path), tid, f"{abandoned} record(s) on abandoned branches left out (metadata.abandoned_records)")


def _session_trace(path: Path, tid: str, kept: list[dict], total: int, abandoned: int, meta: dict) -> list:
    out, task, stats = _steps(kept, str(path))
    meta = {**meta, **{k: v for k, v in stats.items() if v}}
    first = next((r for r in kept if r.get("timestamp")), None)
    last = next((r for r in reversed(kept) if r.get("timestamp")), None)
    meta.update(
        {
            "records": total,
            "abandoned_records": abandoned,
            "started_at": first and first.get("timestamp"),
            "ended_at": last and last.get("timestamp"),
        }
    )
    for k in ("cwd", "version", "gitBranch"):
        v = next((r.get(k) for r in kept if r.get(k)), None)
        if v is not None:
            meta[k] = v
    return [finish(Origin(NAME, str(path)), tid, task, out.steps(), meta)]


def convert(path: Path) -> Iterator:
    sessions: dict[str, list[dict]] = {}
    summaries: list[dict] = []
    other: Counter = Counter()
    seen: set = set()
    for n, rec in iter_records(path):
        if isinstance(rec, TraceError):
            yield rec
            continue
        if not isinstance(rec, dict):
            yield TraceError(str(path), n, None, f"expected a JSON object, got {type(rec).__name__}")
            continue
        kind = rec.get("type")
        if kind is not None and kind.__class__ is not str:
            yield TraceError(str(path), n, "type", f"expected a string, got {describe(kind)}")
            continue
        if kind == "summary":
            summaries.append(rec)
            continue
        if kind not in MESSAGE_TYPES:
            other[str(kind)] += 1
            continue
        uuid = rec.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            yield TraceError(str(path), n, "uuid", "missing" if uuid is None else f"expected a string, got {type(uuid).__name__}")
            continue
        if uuid in seen:  # a record re-written (resumed session): the first copy stands
            other["duplicate uuid"] += 1
            continue
        seen.add(uuid)
        sid = rec.get("sessionId")
        if not isinstance(sid, str) or not sid:
            yield TraceError(str(path), n, "sessionId", "missing" if sid is None else f"expected a string, got {type(sid).__name__}")
            continue
        rec["_line"] = n
        sessions.setdefault(sid, []).append(rec)
    if not sessions:
        if summaries or other:
            yield TraceError(str(path), None, None, f"no user/assistant records (only {sum(other.values()) + len(summaries)} summary/snapshot records)")
        return
    leaf_owner = {r["uuid"]: sid for sid, recs in sessions.items() for r in recs}
    for sid, recs in sessions.items():
        main = [r for r in recs if not r.get("isSidechain")]
        side: dict[str, list[dict]] = {}
        for r in recs:
            if r.get("isSidechain"):
                side.setdefault(str(r.get("agentId") or "sidechain"), []).append(r)
        mine = [s.get("summary") for s in summaries if leaf_owner.get(s.get("leafUuid") if isinstance(s.get("leafUuid"), str) else None) == sid or len(sessions) == 1]
        base = {"session_id": sid}
        meta = dict(base)
        if mine:
            meta["summaries"] = mine
        if other:
            meta["other_records"] = dict(other)
        if side:
            meta["sidechain_traces"] = len(side)
            meta["sidechain_records"] = sum(len(v) for v in side.values())
        if main:
            yield from _trace(path, sid, main, meta)
        for agent, srecs in side.items():
            yield from _trace(path, f"{sid}/sidechain/{agent}", srecs, {**base, "parent_session": sid, "agent_id": agent, "sidechain": True})


CONVERTER = Converter(
    name=NAME,
    description="Claude Code session JSONL (parentUuid chain, branches, sidechains, tool_use/tool_result)",
    shapes="JSONL of {type: user|assistant|system|summary, uuid, parentUuid, sessionId, message, ...}",
    detect=detect,
    convert=convert,
)
