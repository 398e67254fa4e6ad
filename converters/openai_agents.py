"""OpenAI Agents SDK traces: what its exporter sends to ``/v1/traces/ingest`` (``{"data": [item, ...]}``),
a JSON list of those items, or JSONL with one item or one such body per line.

An item is a trace header ``{"object": "trace", id, workflow_name, group_id, metadata}`` or a span
``{"object": "trace.span", id, trace_id, parent_id, started_at, ended_at, span_data: {type, ...}, error}``.
The exporter sends batches: one body can hold spans of several traces, and a trace's header and spans
can sit in different bodies. So spans are grouped by ``trace_id`` over the whole file (several bodies
of one run, one per line, convert together); a header whose trace has no span in the file is a
warning, a trace without its header converts with ``trace_header_missing``.

Steps, in tree order (siblings by ``started_at``: items come in end order, children first):
``agent`` -> a system step (the agent's name, tools, handoffs, output type; the SDK records no
instructions), and its name is the ``agent`` of the steps under it; ``generation`` (Chat Completions /
LiteLLM models) -> the model's output message (text, reasoning, tool calls), its first user input
message the task; ``response`` (Responses API) -> an ``other`` step holding the response id, as the
trace holds nothing else of that model call; ``function`` -> action (name, input) + observation
(output), or error when the span failed; ``handoff`` -> an action ``handoff`` with from/to agent;
``guardrail``, ``mcp_tools``, speech and childless ``custom`` spans -> ``other`` with their data;
``custom`` task/turn spans with children are containers. A failed span that is no tool run adds an
error step after its subtree unless a step inside already failed.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Gather, Sample, Unit
from .support.chat import task_from_input, value_text
from .support.errors import BadRecord, expect, join_field, warning
from .support.files import Origin, sample_objects
from .support.steps import dumps, finish, step
from .support.times import time_key
from .support.trees import ToolEvent, assemble, llm_event_from_messages, tree_order

NAME = "openai_agents"
_OPENING = re.compile(r'\s*(\{\s*"data"\s*:\s*\[\s*)?\{\s*"object"\s*:\s*"trace(\.span)?"\s*,\s*"id"\s*:')


def _items_of(val: Any) -> list | None:
    """The trace items of one document or line: an ingest body's ``data``, a list of items, or one item."""
    if isinstance(val, dict):
        if isinstance(val.get("data"), list) and "object" not in val:
            return val["data"]
        if val.get("object") in ("trace", "trace.span"):
            return [val]
        return None
    if isinstance(val, list):
        return val
    return None


def _is_item(o: Any) -> bool:
    if not isinstance(o, dict):
        return False
    if o.get("object") == "trace.span":
        return isinstance(o.get("span_data"), dict) and "trace_id" in o
    return o.get("object") == "trace" and str(o.get("id", "")).startswith("trace_") and "workflow_name" in o


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    for o in objs:
        items = _items_of(o)
        if items and any(_is_item(x) for x in items[:20]):
            return 0.95
    # a body (or a JSONL line) too big to be sampled whole: the SDK writes "object" first in every item
    return 0.9 if not objs and _OPENING.match(sample.head) else 0.0


def _span(item: dict, where: str) -> dict:
    """A span's fields checked where the tree and the steps need them."""
    sid = expect(item.get("id"), str, join_field(where, "id"))
    expect(item.get("trace_id"), str, join_field(where, "trace_id"))
    expect(item.get("parent_id"), str, join_field(where, "parent_id"), optional=True)
    data = expect(item.get("span_data"), dict, join_field(where, "span_data"))
    expect(data.get("type"), str, join_field(where, "span_data.type"))
    err = item.get("error")
    if err is not None and not isinstance(err, (dict, str)):
        raise BadRecord(join_field(where, "error"), f"expected an object, got {describe(err)}")
    return {"id": sid, "parent_id": item.get("parent_id"), "start": time_key(item.get("started_at")),
            "started_at": item.get("started_at"), "ended_at": item.get("ended_at"), "data": data, "error": err}


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        msg = value_text(err.get("message"))
        return f"{msg}\n{dumps(err['data'])}".strip() if err.get("data") else msg
    return value_text(err)


def _rest(data: dict, *drop: str) -> dict:
    return {k: v for k, v in data.items() if k != "type" and k not in drop and v is not None}


def trace_steps(spans: list) -> tuple[list, str | None, dict]:
    ordered = tree_order(spans, lambda s: s["id"], lambda s: s["parent_id"], lambda s: s["start"])
    parents = {s["parent_id"] for s in spans if s["parent_id"] is not None}
    events: list = []
    agents: list[tuple[int, str]] = []
    pending: list[tuple[int, Any, int]] = []  # (depth, error step of a failed container, events index at its start)
    task = None

    def close(depth: int) -> None:
        while pending and pending[-1][0] >= depth:
            _, err, start = pending.pop()
            if not any(getattr(e, "type", None) == "error" or getattr(e, "is_error", False) for e in events[start:]):
                events.append(err)

    for sp, depth in ordered:
        close(depth)
        while agents and agents[-1][0] >= depth:
            agents.pop()
        d = sp["data"]
        kind = d["type"]
        meta = {"span_id": sp["id"], "span_type": kind, "depth": depth, "timestamp": sp["started_at"],
                "ended_at": sp["ended_at"], "agent": agents[-1][1] if agents else None}
        err = sp["error"]
        if kind == "agent":
            name = value_text(d.get("name"))
            agents.append((depth, name))
            meta["agent"] = name
            events.append(step("system", dumps(_rest(d)), None, meta))
        elif kind == "generation":
            ins = d.get("input") if isinstance(d.get("input"), list) else None
            outs = d.get("output")
            if task is None and ins:
                task = task_from_input(ins)
            meta.update(model=d.get("model"), usage=d.get("usage") or None, model_config=d.get("model_config") or None)
            if isinstance(outs, list) and outs:
                events.append(llm_event_from_messages(outs, ins, **meta))
            elif outs is not None:
                events.append(step("message", value_text(outs), None, meta))
            elif err is None:
                events.append(step("message", "", None, meta))
        elif kind == "response":
            rid = d.get("response_id")
            meta.update(_rest(d, "response_id"), response_id=rid)
            events.append(step("other", f"[model response {rid}: its input and output are not in the trace]"
                               if rid else "[model response: its input and output are not in the trace]", None, meta))
        elif kind == "function":
            if d.get("mcp_data") is not None:
                meta["mcp_data"] = d["mcp_data"]
            out = d.get("output")
            if err is not None:
                out = _error_text(err) if out is None else f"{value_text(out)}\n{_error_text(err)}"
            events.append(
                ToolEvent(
                    value_text(d.get("name")) or "function",
                    d.get("input"),
                    out,
                    is_error=err is not None,
                    meta=meta,
                    has_output=out is not None,
                )
            )
            continue
        elif kind == "handoff":
            meta.update(from_agent=d.get("from_agent"), to_agent=d.get("to_agent"))
            events.append(
                step(
                    "action", "handoff", dumps({"from_agent": d.get("from_agent"), "to_agent": d.get("to_agent")}), meta
                )
            )
        elif kind == "guardrail":
            meta["triggered"] = d.get("triggered")
            events.append(step("other", dumps(_rest(d)), None, meta))
        elif sp["id"] in parents:  # custom task/turn spans (SDK 0.14), any other span with children
            data = d.get("data") if isinstance(d.get("data"), dict) else {}
            if data.get("agent_name"):
                agents.append((depth, value_text(data["agent_name"])))
        else:  # mcp_tools, speech, transcription, a custom span of its own
            events.append(step("other", dumps(_rest(d)), None, meta))
        if err is not None:
            failed = step("error", _error_text(err), None, {k: v for k, v in meta.items() if k != "usage"})
            if sp["id"] in parents:
                pending.append((depth, failed, len(events)))
            else:
                events.append(failed)
    close(-1)
    ids = {s["id"] for s in spans}
    info = {
        "span_count": len(spans),
        "root_spans": sum(1 for s in spans if s["parent_id"] is None) or None,
        "missing_parents": sorted({s["parent_id"] for s in spans if s["parent_id"] and s["parent_id"] not in ids})
        or None,
        "agents": list(
            dict.fromkeys(
                s["data"].get("name") for s in spans if s["data"]["type"] == "agent" and s["data"].get("name")
            )
        )
        or None,
    }
    return assemble(events), task, info


def one(trace: tuple[str, list, dict | None], origin: Origin) -> list:
    """One trace's spans (and its header, None when the file has none) to its trace."""
    tid, spans, header = trace
    steps, task, info = trace_steps(spans)
    md: dict = {}
    if header is None:
        md["trace_header_missing"] = True
    else:
        md.update(workflow_name=header.get("workflow_name"), group_id=header.get("group_id"),
                  trace_metadata=header.get("metadata") or None)
    md.update(info)
    return [finish(origin, tid, task, steps, md)]


def _split(val: Any, origin: Origin) -> list:
    """The trace items of a document or line, each with its place in it: ``(item, "data[3]")``."""
    items = _items_of(val)
    if items is None:
        return [
            (
                origin,
                TraceError(
                    origin.source,
                    origin.line,
                    None,
                    f'expected an Agents SDK trace export {{"data": [...]}} or a trace item, got {describe(val)}',
                ),
            )
        ]
    prefix = "data" if isinstance(val, dict) and "data" in val and "object" not in val else ""
    return [
        (origin, (item, f"{prefix}[{k}]" if not isinstance(val, dict) or prefix else ""))
        for k, item in enumerate(items)
    ]


class _Traces(Gather):
    """Trace headers and spans gathered by trace id (a trace's spans come in several export batches); each trace
    converted at the end of the file, in the order its first item came."""

    def __init__(self, path: Path) -> None:
        self.source = str(path)
        self.spans: dict[str, list] = {}
        self.headers: dict[str, dict] = {}
        self.first: dict[str, Origin] = {}

    def add(self, rec: tuple[Any, str], origin: Origin) -> None:
        item, where = rec
        kind = item.get("object") if isinstance(item, dict) else None
        if kind == "trace":
            tid = item.get("id")
            if not isinstance(tid, str) or not tid:
                raise BadRecord(join_field(where, "id"), "expected a trace id string")
            self.headers[tid] = item
        elif kind == "trace.span":
            span = _span(item, where)
            tid = item["trace_id"]
            self.spans.setdefault(tid, []).append(span)
        else:
            raise BadRecord(
                join_field(where, "object"),
                f'expected "trace" or "trace.span", got {describe(kind) if kind is not None else describe(item)}',
            )
        self.first.setdefault(tid, origin)

    def end(self) -> Iterator:
        for tid, origin in self.first.items():
            if tid not in self.spans:
                yield warning(
                    self.source,
                    f"trace {tid}",
                    "trace header without spans in this file (the SDK exports in "
                    "batches: put the bodies of one run in one JSONL file, one per line)",
                )
                continue
            yield Unit(origin, (tid, self.spans[tid], self.headers.get(tid)), field=f"trace {tid}")


CONVERTER = Converter(
    name=NAME,
    description="OpenAI Agents SDK traces: /v1/traces/ingest bodies (trace headers and spans: agent, generation, "
                "response, function, handoff, guardrail, custom)",
    shapes='{"data": [{"object": "trace", "id", "workflow_name"} | {"object": "trace.span", "id", "trace_id", '
           '"parent_id", "started_at", "span_data": {"type", ...}, "error"}]} (JSON, or JSONL of bodies or items)',
    detect=detect,
    one=one,
    split=_split,
    gather=_Traces,
)
