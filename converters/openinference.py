"""OpenInference spans: Arize Phoenix exports, TRAIL-style span trees, OTLP with OpenInference attributes.

Mapping: one trace per trace id. Steps come from the spans under the outermost AGENT span(s) (the
whole trace when there is none), in tree order (siblings by start time); spans outside it are
counted in metadata ``outside_agent_spans``. LLM -> the output message (``llm.output_messages``,
else ``output.value``): reasoning -> thought, text -> thought when a tool follows, else message;
requested tool calls no TOOL span ran -> actions. TOOL -> action (``tool.name``; input.value, else
``tool.parameters``) + observation (output.value), or error when the status is ERROR. RETRIEVER ->
action + observation (documents). Nested AGENT and CHAIN spans are containers: an AGENT's name goes
to the metadata of steps under it; a failing container adds an error step after its subtree
unless a step inside already failed; a childless CHAIN with a value becomes ``other``.
EMBEDDING / RERANKER / GUARDRAIL / EVALUATOR / PROMPT / UNKNOWN -> ``other``. Each step keeps
span_id and span kind, so TRAIL labels (``errors: [{category, location: span_id, ...}]`` in the
record or a ``<name>.labels.json`` / ``<name>_labels.json`` / ``<name>.annotations.json`` sidecar)
are kept unchanged in trace metadata ``errors`` with ``error_steps`` mapping each location to step
indices.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import load_located
from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Sample
from .support.chat import task_from_input, value_text
from .support.errors import BadRecord, warning
from .support.files import Origin, elements, maybe_json, sample_objects
from .support.steps import default_id, dumps, finish, step
from .support.times import time_key
from .support.trees import (
    SpansByTrace,
    ToolEvent,
    assemble,
    flat_attrs,
    indexed,
    llm_event_from_messages,
    nest,
    otlp_requests,
    otlp_span_keys,
    otlp_spans,
    tree_id,
    tree_order,
)

NAME = "openinference"
_KIND = "openinference.span.kind"
_OTHER_KINDS = {"EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR", "PROMPT", "UNKNOWN"}


def _is_phoenix_span(o: Any) -> bool:
    return (isinstance(o, dict) and isinstance(o.get("context"), dict) and "span_id" in o["context"]
            and ("span_kind" in o or isinstance(o.get("attributes"), dict)))


def _is_df_span(o: Any) -> bool:
    return (
        isinstance(o, dict)
        and "context.span_id" in o
        and any(k.startswith("attributes.") or k == "span_kind" for k in o)
    )


def _is_trail(o: Any) -> bool:
    if not isinstance(o, dict) or not isinstance(o.get("spans"), list):
        return False
    sp = o["spans"][:1]
    return bool(sp) and isinstance(sp[0], dict) and ("span_attributes" in sp[0] or "child_spans" in sp[0])


def _is_labels(o: Any) -> bool:
    """A TRAIL labels file: read together with its trace (the sidecar), alone it holds no steps."""
    errs = o.get("errors") if isinstance(o, dict) else None
    return (isinstance(errs, list) and "spans" not in o and "history" not in o
            and all(isinstance(e, dict) and "location" in e and "category" in e for e in errs[:20]))


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if not objs:
        return 0.0
    o = objs[0]
    if _is_labels(o) and o.get("errors"):
        # claimed so a directory import does not stop at it; convert() reports it as a sidecar
        return 0.6
    if _is_trail(o):
        return 0.95
    if _is_phoenix_span(o) or _is_df_span(o):
        attrs = o.get("attributes") if isinstance(o.get("attributes"), dict) else {}
        if o.get("span_kind") or _KIND in flat_attrs(attrs) or any(k.startswith("attributes.openinference") for k in o):
            return 0.95
        return 0.6
    if isinstance(o, dict) and isinstance(o.get("spans"), list) and o["spans"] and _is_phoenix_span(o["spans"][0]):
        return 0.9
    if otlp_requests(o) or (isinstance(sample.first_json, list) and otlp_requests(sample.first_json)):
        keys = otlp_span_keys([o] if otlp_requests(o) else [sample.first_json])
        if any(k.startswith("openinference.") for k in keys):
            return 0.95
    return 0.0


# ------------------------------------------------------------ normalising the three shapes

def _status(code: Any) -> str:
    s = str(code or "").upper()
    return "ERROR" if s.endswith("ERROR") or s == "2" else ("OK" if s.endswith("OK") or s == "1" else "UNSET")


def _phoenix(o: dict, where: str) -> dict:
    if _is_df_span(o):
        attrs: Any = {k[len("attributes."):]: v for k, v in o.items() if k.startswith("attributes.")}
        ctx = {"trace_id": o.get("context.trace_id"), "span_id": o.get("context.span_id")}
    else:
        attrs = o.get("attributes")
        if attrs is None:
            attrs = {}
        if isinstance(attrs, str):
            attrs = maybe_json(attrs)
        if not isinstance(attrs, dict):
            raise BadRecord(f"{where}attributes", f"expected an object, got {describe(attrs)}")
        ctx = o.get("context") or {}
        if not isinstance(ctx, dict):
            raise BadRecord(f"{where}context", f"expected an object, got {describe(ctx)}")
    attrs = flat_attrs(attrs)
    if o.get("span_kind") and _KIND not in attrs:
        attrs[_KIND] = o["span_kind"]
    events = []
    for ev in o.get("events") or []:
        if isinstance(ev, dict):
            events.append(
                {
                    "name": ev.get("name"),
                    "attrs": flat_attrs(ev.get("attributes") or {}) if isinstance(ev.get("attributes"), dict) else {},
                }
            )
    return {"trace_id": tree_id(ctx.get("trace_id"), f"{where}context.trace_id"),
            "span_id": tree_id(ctx.get("span_id"), f"{where}context.span_id"),
            "parent_id": tree_id(o.get("parent_id") or o.get("parent_span_id"), f"{where}parent_id"),
            "name": o.get("name"), "start": time_key(o.get("start_time")), "start_raw": o.get("start_time"),
            "attrs": attrs, "events": events, "status_code": _status(o.get("status_code")),
            "status_message": o.get("status_message") or None}


def _trail(spans: list, where: str, out: list, parent: Any = None, trace_id: Any = None) -> None:
    for i, sp in enumerate(spans):
        w = f"{where}[{i}]"
        if not isinstance(sp, dict):
            raise BadRecord(w, f"expected a span object, got {describe(sp)}")
        attrs = sp.get("span_attributes", sp.get("attributes")) or {}
        if isinstance(attrs, str):
            attrs = maybe_json(attrs)
        if not isinstance(attrs, dict):
            raise BadRecord(f"{w}.span_attributes", f"expected an object, got {describe(attrs)}")
        kids = sp.get("child_spans") or []
        if not isinstance(kids, list):
            raise BadRecord(f"{w}.child_spans", f"expected a list, got {describe(kids)}")
        events = []
        for ev in sp.get("events") or []:
            if isinstance(ev, dict):
                events.append(
                    {"name": ev.get("Name", ev.get("name")), "attrs": ev.get("Attributes", ev.get("attributes")) or {}}
                )
        sid = tree_id(sp.get("span_id"), f"{w}.span_id")
        node = {
            "trace_id": tree_id(sp.get("trace_id", trace_id), f"{w}.trace_id"),
            "span_id": sid if sid is not None else w,
            "parent_id": tree_id(sp.get("parent_span_id"), f"{w}.parent_span_id") or parent,
            "name": sp.get("span_name", sp.get("name")),
            "start": time_key(sp.get("timestamp", sp.get("start_time"))),
            "start_raw": sp.get("timestamp", sp.get("start_time")),
            "attrs": flat_attrs(attrs),
            "events": events,
            "status_code": _status(sp.get("status_code")),
            "status_message": sp.get("status_message") or None,
        }
        out.append(node)
        _trail(kids, f"{w}.child_spans", out, node["span_id"], trace_id)


# ------------------------------------------------------------ spans -> steps

def _oi_messages(attrs: dict, prefix: str) -> list:
    out = []
    for g in indexed(attrs, prefix):
        m = nest(g)
        m = m.get("message", m) if isinstance(m, dict) else m
        if not isinstance(m, dict):
            continue
        m = dict(m)
        if m.get("content") is None and isinstance(m.get("contents"), list):
            m["content"] = [c.get("message_content", c) for c in m["contents"] if isinstance(c, dict)]
        if isinstance(m.get("tool_calls"), list):
            m["tool_calls"] = [tc.get("tool_call", tc) for tc in m["tool_calls"] if isinstance(tc, dict)]
        out.append(m)
    return out


def _value_messages(v: Any) -> list:
    v = maybe_json(v)
    if v is None:
        return []
    if isinstance(v, dict) and isinstance(v.get("choices"), list):
        return [c.get("message") for c in v["choices"] if isinstance(c, dict) and isinstance(c.get("message"), dict)]
    if isinstance(v, dict) and isinstance(v.get("messages"), list):
        return v["messages"]
    if isinstance(v, dict) and "role" in v:
        return [v]
    return [{"role": "assistant", "content": v if isinstance(v, str) else dumps(v)}]


def _error_text(sp: dict) -> str:
    parts = [sp.get("status_message") or ""]
    for ev in sp["events"]:
        if str(ev.get("name") or "").lower() == "exception":
            a = ev["attrs"]
            parts.append(": ".join(str(x) for x in (a.get("exception.type"), a.get("exception.message")) if x))
            if a.get("exception.stacktrace"):
                parts.append(str(a["exception.stacktrace"]))
    return "\n".join(p for p in dict.fromkeys(parts) if p)


def _kind(sp: dict) -> str:
    return str(sp["attrs"].get(_KIND) or "UNKNOWN").upper()


def trace_steps(spans: list) -> tuple[list, str | None, dict]:
    ordered = tree_order(spans, lambda s: s["span_id"], lambda s: s["parent_id"], lambda s: s["start"])
    # keep only the subtrees of the outermost AGENT spans, when there are any
    keep = []
    agent_depth = None
    outside = 0
    has_agent = any(_kind(s) == "AGENT" for s in spans)
    for sp, d in ordered:
        if agent_depth is not None and d <= agent_depth:
            agent_depth = None
        if agent_depth is None and has_agent:
            if _kind(sp) == "AGENT":
                agent_depth = d
                keep.append((sp, d, True))
            else:
                outside += 1
            continue
        keep.append((sp, d, False))
    events: list = []
    pending: list[tuple[int, Any, int]] = []  # (depth, error step, events index at start)
    agents: list[tuple[int, str]] = []
    task = None
    root_agent = None
    has_children = {s["parent_id"] for s in spans if s["parent_id"] is not None}

    def close(depth: int):
        while pending and pending[-1][0] >= depth:
            d, step, start = pending.pop()
            if not any(getattr(e, "type", None) == "error" or getattr(e, "is_error", False) for e in events[start:]):
                events.append(step)

    for sp, depth, is_root_agent in keep:
        close(depth)
        while agents and agents[-1][0] >= depth:
            agents.pop()
        a = sp["attrs"]
        kind = _kind(sp)
        failed = sp["status_code"] == "ERROR"
        meta = {"span_id": sp["span_id"], "span_name": sp["name"], "span_kind": kind, "depth": depth,
                "timestamp": sp["start_raw"], "agent": agents[-1][1] if agents else None}
        if is_root_agent:
            root_agent = root_agent or sp
            if task is None:
                task = task_from_input(a.get("input.value"))
            if sp["name"]:
                agents.append((depth, str(a.get("agent.name") or sp["name"])))
            if failed:
                pending.append((depth, step("error", _error_text(sp), None, dict(meta)), len(events)))
            continue
        if kind == "LLM":
            meta["model"] = a.get("llm.model_name")
            usage = {
                k: a[f"llm.token_count.{k}"] for k in ("prompt", "completion", "total") if f"llm.token_count.{k}" in a
            }
            meta["usage"] = usage or None
            outs = _oi_messages(a, "llm.output_messages") or _value_messages(a.get("output.value"))
            ins = _oi_messages(a, "llm.input_messages")
            if task is None and ins:
                task = task_from_input(ins)
            if outs:
                events.append(llm_event_from_messages(outs, ins, **meta))
            if failed:
                events.append(step("error", _error_text(sp), None, dict(meta)))
            elif not outs:
                events.append(step("message", "", None, dict(meta)))
        elif kind in ("TOOL", "RETRIEVER"):
            args = a.get("input.value")
            if args is None:
                args = a.get("tool.parameters")
            elif a.get("tool.parameters") is not None:
                meta["tool_parameters"] = a.get("tool.parameters")
            out = a.get("output.value")
            if kind == "RETRIEVER" and out is None:
                docs = [nest(g).get("document", nest(g)) for g in indexed(a, "retrieval.documents")]
                out = dumps(docs) if docs else None
            has_out = out is not None
            if failed:
                err = _error_text(sp)
                out = err if out is None else f"{value_text(out)}\n{err}".strip()
            cid = a.get("tool_call.id") or a.get("tool.call_id")
            events.append(ToolEvent(str(a.get("tool.name") or sp["name"] or kind.lower()), args, out, is_error=failed,
                                    call_id=str(cid) if cid else None, meta=meta, has_output=has_out or failed))
        elif kind in ("AGENT", "CHAIN") and sp["span_id"] in has_children:
            if kind == "AGENT":
                agents.append((depth, str(a.get("agent.name") or sp["name"])))
            if failed:
                pending.append((depth, step("error", _error_text(sp), None, dict(meta)), len(events)))
        else:
            body = {k: a[k] for k in ("input.value", "output.value") if a.get(k) is not None}
            if failed:
                events.append(step("error", _error_text(sp) or dumps(body), None, dict(meta)))
            elif body or kind in _OTHER_KINDS:
                events.append(step("other", dumps(body) if body else dumps(a), None, dict(meta)))
    close(-1)
    if task is None and ordered:
        task = task_from_input(ordered[0][0]["attrs"].get("input.value"))
    info = {"span_count": len(spans), "outside_agent_spans": outside or None,
            "agent_span": root_agent["name"] if root_agent else None}
    return assemble(events), task, info


def _labels_for(path: Path, rec: dict) -> dict | None:
    for k in ("errors", "labels", "annotations"):
        v = rec.get(k)
        if isinstance(v, list):
            return {"errors": v, **({"scores": rec["scores"]} if "scores" in rec else {})}
        if isinstance(v, dict) and isinstance(v.get("errors"), list):
            return v
    stem = path.name.split(".")[0]
    for cand in (f"{stem}.labels.json", f"{stem}_labels.json", f"{stem}.annotations.json"):
        p = path.with_name(cand)
        if p.is_file() and p != path:
            v = load_located(p)
            if isinstance(v, TraceError):
                return {"labels_error": f"unreadable labels file {p.name}"}
            if isinstance(v, dict):
                v = dict(v)
                v["labels_file"] = p.name
                return v
            if isinstance(v, list):
                return {"errors": v, "labels_file": p.name}
    return None


def one(rec: Any, origin: Origin) -> list:
    """A trace's spans ``(trace id, spans)``, or a TRAIL record (its span tree and labels)."""
    if isinstance(rec, tuple):
        tid, spans = rec
        return _build(tid, spans, origin)
    return _trail_trace(rec, origin)


def _build(tid: Any, spans: list, origin: Origin, labels: dict | None = None, extra: dict | None = None) -> list:
    steps, task, info = trace_steps(spans)
    md = dict(info)
    if extra:
        md.update(extra)
    if labels:
        for k, v in labels.items():
            if k != "trace_id":
                md[k] = v
        if isinstance(labels.get("errors"), list):
            where: dict = {}
            for i, s in enumerate(steps):
                sid = s.get("metadata", {}).get("span_id")
                if sid is not None:
                    where.setdefault(str(sid), []).append(i)
            md["error_steps"] = {str(e.get("location")): where.get(str(e.get("location")), [])
                                 for e in labels["errors"] if isinstance(e, dict) and e.get("location") is not None}
    return [finish(origin, str(tid) if tid not in (None, "") else default_id(origin), task, steps, md)]


def _split(val: Any, origin: Origin) -> list | None:
    """The span records of a document or line: an OTLP export's requests as ``(request, field prefix)``, a JSON
    list's elements (Phoenix spans, ``{"spans": [...]}`` records, TRAIL records); a TRAIL labels file is a warning."""
    reqs = otlp_requests(val)
    if reqs:
        return [(origin, (req, f"[{k}]." if isinstance(val, list) else "")) for k, req in enumerate(reqs)]
    if _is_labels(val):
        return [(origin, warning(origin.source, origin.line, "TRAIL labels file: no steps of its own; it is read with "
                                                             "the trace it sits beside"))]
    return elements(val, origin) if isinstance(val, list) else None


class _Spans(SpansByTrace):
    """Spans by trace; a TRAIL record (its spans a tree of their own) is converted as it comes."""

    def add(self, rec: Any, origin: Origin) -> list:
        if isinstance(rec, tuple):
            req, prefix = rec
            got: list = []
            try:
                got.extend(otlp_spans(req, prefix))
            finally:  # the spans read before a bad one are kept, beside its error
                self.take(got, origin)
        elif _is_trail(rec) or (isinstance(rec, dict) and "spans" in rec and not isinstance(rec["spans"], list)):
            return _trail_trace(rec, origin)
        elif isinstance(rec, dict) and isinstance(rec.get("spans"), list):
            got = []
            try:
                got.extend(_phoenix(s, f"spans[{i}].") for i, s in enumerate(rec["spans"]))
            finally:
                self.take(got, origin)
        else:
            self.take([_phoenix(_span_object(rec), "")], origin)
        return []


def _span_object(rec: Any) -> dict:
    if not isinstance(rec, dict):
        raise BadRecord(None, f"expected a span object, got {describe(rec)}")
    return rec


def _trail_trace(rec: dict, origin: Origin) -> list:
    """A TRAIL record: its span tree, with the labels it carries or a sidecar file beside it holds."""
    if not isinstance(rec.get("spans"), list):
        raise BadRecord("spans", f"expected a list of spans, got {describe(rec.get('spans'))}")
    spans: list = []
    _trail(rec["spans"], "spans", spans, None, rec.get("trace_id"))
    tid = rec.get("trace_id") or next((s["trace_id"] for s in spans if s["trace_id"]), None)
    extra = {k: rec[k] for k in ("source", "benchmark", "task_id") if k in rec}
    return _build(tid, spans, origin, _labels_for(Path(origin.source), rec), extra)


CONVERTER = Converter(
    name=NAME,
    description="OpenInference spans: Arize Phoenix exports, TRAIL span trees (child_spans), OTLP with "
                "openinference.span.kind",
    shapes="Phoenix spans [{name, context: {trace_id, span_id}, parent_id, span_kind, attributes}] (JSON/JSONL), "
    'TRAIL {"trace_id", "spans": [{span_id, span_attributes, child_spans}]}, or OTLP/JSON',
    detect=detect,
    one=one,
    split=_split,
    gather=_Spans,
)
