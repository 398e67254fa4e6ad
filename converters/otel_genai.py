"""OpenTelemetry GenAI spans in OTLP/JSON (``resourceSpans[].scopeSpans[].spans[]``).

Mapping: one trace per traceId; spans in tree order (parentSpanId; siblings by start time).
Model spans (``gen_ai.operation.name`` chat / text_completion / generate_content, or older spans
with ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes, whole ``gen_ai.prompt`` /
``gen_ai.completion`` values, or ``gen_ai.choice`` events) ->
the output message: reasoning parts -> thought, text -> thought when a tool call follows, else
message. ``execute_tool`` spans -> action (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``)
+ observation (``gen_ai.tool.call.result``), or error when the span status is ERROR / ``error.type``
is set. Tool calls a model requested that no execute_tool span ran become actions of their own,
followed by their result when a later model input carries a tool_call_response with that id.
``invoke_agent`` / ``create_agent`` spans are containers whose ``gen_ai.agent.name`` goes to the
metadata of the steps under them. Spans with no gen_ai attributes are counted in trace metadata
``skipped_spans`` (a failing one still adds an error step). Every step keeps span_id, name, model,
token usage and start time in its metadata.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import is_jsonl
from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Sample
from .support import files
from .support.chat import task_from_input, value_text
from .support.errors import BadRecord
from .support.files import Origin, maybe_json, records, sample_objects
from .support.steps import default_id, dumps, finish, step
from .support.trees import (
    SpansByTrace,
    ToolEvent,
    assemble,
    indexed,
    llm_event_from_messages,
    nest,
    otlp_requests,
    otlp_span_keys,
    otlp_spans,
    tree_order,
)

NAME = "otel_genai"
_CHAT_OPS = {"chat", "text_completion", "generate_content", "completion", "responses"}
_AGENT_OPS = {"invoke_agent", "create_agent"}


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if not objs or not any(otlp_requests(o) for o in objs[:1]):
        if not (isinstance(sample.first_json, list) and otlp_requests(sample.first_json)):
            return 0.0
        objs = [sample.first_json]
    keys = otlp_span_keys(objs)
    if any(k.startswith("openinference.") for k in keys):
        return 0.4
    if any(k.startswith("gen_ai.") or k.startswith("event:gen_ai.") for k in keys):
        return 0.95
    return 0.3


def _is_genai(sp: dict) -> bool:
    for k in sp["attrs"]:  # plain loops: this runs for every span, and a generator per call costs more than the test
        if k.startswith("gen_ai."):
            return True
    for e in sp["events"]:
        if str(e.get("name", "")).startswith("gen_ai."):
            return True
    return False


def _old_messages(attrs: dict, prefix: str) -> list:
    role = "assistant" if prefix.endswith("completion") else "user"
    whole = attrs.get(prefix)
    if whole is not None:  # the oldest form: the whole prompt / completion in one attribute
        whole = maybe_json(whole)
        if isinstance(whole, list) and all(isinstance(m, dict) for m in whole):
            return [dict(m, role=m.get("role", role)) for m in whole]
        return [{"role": role, "content": value_text(whole)}]
    out = []
    for g in indexed(attrs, prefix):
        m = nest(g)
        if "tool_calls" in m and isinstance(m["tool_calls"], list):
            m["tool_calls"] = [
                {"id": tc.get("id"), "function": {"name": tc.get("name"), "arguments": tc.get("arguments")}}
                for tc in m["tool_calls"]
                if isinstance(tc, dict)
            ]
        m.setdefault("role", "assistant" if prefix.endswith("completion") else "user")
        out.append(m)
    return out


def _event_messages(sp: dict) -> tuple[list, list]:
    """(input, output) messages from span events (gen_ai.user.message, gen_ai.choice, ...)."""
    ins, outs = [], []
    for ev in sp["events"]:
        name = str(ev.get("name") or "")
        a = ev["attrs"]
        body = maybe_json(a.get("gen_ai.event.content", a.get("content", a.get("body"))))
        if name == "gen_ai.choice":
            msg = maybe_json(a.get("message", body))
            if isinstance(msg, dict):
                msg = dict(msg)
                msg.setdefault("role", "assistant")
                if "message" in msg and isinstance(msg["message"], dict):
                    msg = dict(msg["message"], role=msg["message"].get("role", "assistant"))
                outs.append(msg)
            elif msg is not None:
                outs.append({"role": "assistant", "content": value_text(msg)})
        elif name.startswith("gen_ai.") and name.endswith(".message"):
            role = name[len("gen_ai."):-len(".message")]
            msg = body if isinstance(body, dict) else {"content": body}
            msg = dict(msg)
            msg.setdefault("role", a.get("role", role))
            if "id" in a and role == "tool":
                msg.setdefault("tool_call_id", a["id"])
            ins.append(msg)
    return ins, outs


def model_messages(sp: dict) -> tuple[list, list]:
    a = sp["attrs"]
    ins = maybe_json(a.get("gen_ai.input.messages"))
    outs = maybe_json(a.get("gen_ai.output.messages"))
    ins = ins if isinstance(ins, list) else ([{"role": "user", "content": ins}] if isinstance(ins, str) else [])
    outs = (
        outs if isinstance(outs, list) else ([{"role": "assistant", "content": outs}] if isinstance(outs, str) else [])
    )
    if not ins:
        ins = _old_messages(a, "gen_ai.prompt")
    if not outs:
        outs = _old_messages(a, "gen_ai.completion")
    if not ins or not outs:
        ei, eo = _event_messages(sp)
        ins = ins or ei
        outs = outs or eo
    return ins, outs


_USAGE = (("input_tokens", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
          ("output_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"))


def _usage(a: dict) -> dict | None:
    u = None
    for k, current, older in _USAGE:
        v = a.get(current)
        if not isinstance(v, (int, float)):
            v = a.get(older)
            if not isinstance(v, (int, float)):
                continue
        if u is None:
            u = {}
        u[k] = v
    return u


def _error_text(sp: dict) -> str:
    parts = [sp.get("status_message") or "", str(sp["attrs"].get("error.type") or "")]
    for ev in sp["events"]:
        if ev.get("name") == "exception":
            ea = ev["attrs"]
            parts.append(": ".join(str(x) for x in (ea.get("exception.type"), ea.get("exception.message")) if x))
            if ea.get("exception.stacktrace"):
                parts.append(str(ea["exception.stacktrace"]))
    return "\n".join(p for p in dict.fromkeys(parts) if p)


def trace_steps(spans: list) -> tuple[list, str | None, dict, dict]:
    """Steps, task and span counts of one trace, and its root span (the tree is ordered once for both)."""
    ordered = tree_order(spans, lambda s: s["span_id"], lambda s: s["parent_id"], keys=[s["start"] for s in spans])
    events: list = []
    skipped = 0
    agents: list[tuple[int, str]] = []  # (depth, agent name) stack
    task = None
    genai = 0
    for sp, depth in ordered:
        while agents and agents[-1][0] >= depth:
            agents.pop()
        a = sp["attrs"]
        op = a.get("gen_ai.operation.name")
        # a hot path: the metadata is built without its nulls (every step drops them), not rebuilt to drop them
        meta = {} if sp["span_id"] is None else {"span_id": sp["span_id"]}
        if sp["name"] is not None:
            meta["span_name"] = sp["name"]
        meta["depth"] = depth
        if sp["start_raw"] is not None:
            meta["timestamp"] = sp["start_raw"]
        if agents:
            meta["agent"] = agents[-1][1]
        v = a.get("gen_ai.response.model") or a.get("gen_ai.request.model")
        if v is not None:
            meta["model"] = v
        v = a.get("gen_ai.provider.name") or a.get("gen_ai.system")
        if v is not None:
            meta["provider"] = v
        usage = _usage(a)
        if usage is not None:
            meta["usage"] = usage
        failed = sp["status_code"] == "ERROR"
        if failed:
            meta["status"] = "ERROR"
        else:
            failed = a.get("error.type") is not None
        if not _is_genai(sp):
            skipped += 1
            if failed:
                events.append(step("error", _error_text(sp), None, dict(meta)))
            continue
        genai += 1
        if op in _AGENT_OPS:
            name = a.get("gen_ai.agent.name")
            if name:
                agents.append((depth, str(name)))
            ins, outs = model_messages(sp)
            if task is None and ins:
                task = task_from_input(ins)
            if failed:
                events.append(step("error", _error_text(sp), None, dict(meta)))
            continue
        if op == "execute_tool" or (op is None and "gen_ai.tool.name" in a):
            has_out = "gen_ai.tool.call.result" in a
            out = a.get("gen_ai.tool.call.result")
            if failed and out is None:
                out = _error_text(sp)
            events.append(
                ToolEvent(
                    str(a.get("gen_ai.tool.name") or sp["name"] or "tool"),
                    a.get("gen_ai.tool.call.arguments"),
                    out,
                    is_error=failed,
                    call_id=str(a["gen_ai.tool.call.id"]) if a.get("gen_ai.tool.call.id") else None,
                    meta={k: v for k, v in meta.items() if k != "usage"} if usage is not None else meta,
                    has_output=has_out or failed,
                )
            )
            continue
        ins, outs = model_messages(sp)
        if op in _CHAT_OPS or op is None or outs or ins:
            if task is None and ins:
                task = task_from_input(ins)
            v = a.get("gen_ai.response.finish_reasons")
            if v is not None:
                meta["finish_reasons"] = v
            if outs:
                events.append(llm_event_from_messages(outs, ins, **meta))
            if failed:
                events.append(step("error", _error_text(sp), None, dict(meta)))
            elif not outs:
                events.append(
                    step("other", dumps({k: v for k, v in a.items() if k.startswith("gen_ai.")}), None, dict(meta))
                )
            continue
        events.append(step("error" if failed else "other", _error_text(sp) if failed else dumps(a), None, dict(meta)))
    info = {"span_count": len(spans), "skipped_spans": skipped or None, "genai_spans": genai}
    return assemble(events), task, info, ordered[0][0]


def one(trace: tuple[Any, list], origin: Origin) -> list:
    """One trace's spans ``(trace id, spans)`` to its trace."""
    tid, spans = trace
    steps, task, info, root = trace_steps(spans)
    if not info["genai_spans"]:
        raise BadRecord(None, f"trace {tid} has no gen_ai spans")
    md = dict(info)
    md["service"] = next((s["service"] for s in spans if s.get("service")), None)
    md["root_span"] = root["name"]
    md["start_time"] = root["start_raw"]
    return [finish(origin, str(tid) if tid else default_id(origin), task, steps, md)]


def _big_export(path: Path) -> bool:
    """A single OTLP/JSON document too big to load whole (its spans are still grouped by trace id)."""
    try:
        if path.stat().st_size <= files.STREAM_ABOVE:
            return False
        head = files.read_head(path)
    except OSError:
        return False
    return head.lstrip().startswith("{") and '"resourceSpans"' in head


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """Each export request of a file, as ``(request, field prefix, index of its first entry)``: JSONL lines, a JSON
    document's requests, or, for a big single export, one resourceSpans entry at a time as its own request
    (ijson), so the raw text and the parsed document are never held whole: only the compact spans. A request's
    errors are located at its line; its traces come from its line, or its index in the document."""
    source = str(path)
    try:
        big = not is_jsonl(path) and _big_export(path)
    except (OSError, EOFError):
        big = False
    if big:
        for i, item in files.iter_items(path, "resourceSpans.item"):
            yield Origin(fmt, source, None, 0, place=""), item if isinstance(item, TraceError) else (
                {"resourceSpans": [item]}, "", i)
        return
    yield from records(path, fmt, _split)


def _split(val: Any, origin: Origin) -> list:
    """The export requests of a document or line (each one record; see :func:`_read`)."""
    reqs = otlp_requests(val)
    if reqs is None:
        return [(origin, TraceError(origin.source, origin.line, "resourceSpans",
                                    f"missing: expected an OTLP export object, got {describe(val)}"))]
    line = origin.line
    return [(Origin(origin.fmt, origin.source, line, None if line is not None else k, place=""),
             (req, f"[{k}]." if len(reqs) > 1 or isinstance(val, list) else "", 0)) for k, req in enumerate(reqs)]


class _Spans(SpansByTrace):
    """Every span of a file grouped by trace id (a trace's spans can come in several export batches)."""

    id_name = "traceId"

    def add(self, rec: tuple[Any, str, int], origin: Origin) -> None:
        req, where, first = rec
        self.take(otlp_spans(req, where, first), origin)


CONVERTER = Converter(
    name=NAME,
    description="OpenTelemetry GenAI spans in OTLP/JSON (gen_ai.* attributes, current and older conventions)",
    shapes='{"resourceSpans": [{"scopeSpans": [{"spans": [{traceId, spanId, parentSpanId, attributes: [{key, '
           'value}]}]}]}]}; JSON, a list of exports, or JSONL',
    detect=detect,
    one=one,
    read=_read,
    gather=_Spans,
)
