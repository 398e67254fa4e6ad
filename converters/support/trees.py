"""Span and run trees (OpenTelemetry, OpenInference, Langfuse, LangChain): ordering a tree, decoding
OTLP/JSON attributes, and assembling model turns and tool runs into steps where every call is
followed by its result.

A span converter normalises its spans to plain dicts, orders them with :func:`tree_order`, turns
each into an :class:`LLMEvent` (a model turn), a :class:`ToolEvent` (a tool run) or a ready step,
and hands the list to :func:`assemble`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import Step, describe

from ..base import Gather, Unit
from .chat import ToolCall, content_text, message_parts, message_steps, norm_role, read_message, value_text
from .errors import BadRecord
from .files import Origin
from .steps import render_args, step, step_metadata
from .times import time_key

# ---------------------------------------------------------------- trees

def tree_order(
    nodes: list,
    get_id: Callable[[Any], Any],
    get_parent: Callable[[Any], Any],
    sort_key: Callable[[Any], Any] | None = None,
    *,
    keys: list | None = None,
) -> list[tuple[Any, int]]:
    """(node, depth) in depth-first order, siblings by sort key then input order.

    The sort keys come from ``sort_key`` (called once per node) or ready in ``keys`` (one per node, as
    :func:`.times.time_keys` makes them); None sorts last. A node whose parent is absent is a root;
    nodes caught in a parent cycle are appended as roots so none is lost.
    """
    if keys is None:  # each node's sort key once (it is a timestamp parse), not once per sort
        keys = [sort_key(n) for n in nodes] if sort_key is not None else [None] * len(nodes)
    # a hot path: one stable sort of every node; children gathered in that order come out sorted, with no
    # sort per parent (ties keep input order, as the index in the key did)
    if None in keys:
        keys = [(k is None, k if k is not None else 0) for k in keys]
    order = sorted(range(len(nodes)), key=keys.__getitem__)
    parents = [get_parent(n) for n in nodes]
    if parents.count(None) == len(parents):  # a flat list, the usual export: no ids to look up
        return [(nodes[i], 0) for i in order]
    ids = {}
    for i, n in enumerate(nodes):
        nid = get_id(n)
        if nid is not None and nid not in ids:
            ids[nid] = i
    children: dict[int, list[int]] = {}
    roots = []
    for i in order:
        pid = parents[i]
        if pid is not None and pid in ids and ids[pid] != i:
            children.setdefault(ids[pid], []).append(i)
        else:
            roots.append(i)
    if not children:
        return [(nodes[i], 0) for i in order]

    out: list[tuple[Any, int]] = []
    seen = set()

    def walk(start: int):
        stack = [(start, 0)]
        while stack:
            i, d = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            out.append((nodes[i], d))
            kids = children.get(i)
            if kids:
                d += 1
                for k in reversed(kids):
                    stack.append((k, d))

    for r in roots:
        walk(r)
    for i in range(len(nodes)):
        if i not in seen:
            walk(i)
    return out


def tree_id(value: Any, where: str | None) -> Any:
    """A run or span id as given, when it can key a tree (a string or a number), else a BadRecord."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise BadRecord(where, f"expected a string, got {describe(value)}")


# ---------------------------------------------------------------- OTLP/JSON

def otlp_value(v: Any) -> Any:
    """An OTLP/JSON AnyValue as a plain Python value."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "doubleValue" in v:
        return v["doubleValue"]
    if "arrayValue" in v:
        return [otlp_value(x) for x in (v["arrayValue"] or {}).get("values", []) or []]
    if "kvlistValue" in v:
        return otlp_attrs((v["kvlistValue"] or {}).get("values", []) or [], "", "kvlistValue")
    if "bytesValue" in v:
        return v["bytesValue"]
    return None if not v else v


def otlp_attrs(attrs: Any, where: str = "", field: str = "attributes") -> dict:
    """An OTLP attribute list as a dict; errors are located at ``where + field`` (built only then)."""
    if attrs is None:
        return {}
    if isinstance(attrs, dict):
        return attrs
    if not isinstance(attrs, list):
        raise BadRecord(where + field, f"expected a list of key/value pairs, got {describe(attrs)}")
    out = {}
    for i, kv in enumerate(attrs):
        key = kv.get("key") if kv.__class__ is dict else None
        if key.__class__ is not str:
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise BadRecord(f"{where}{field}[{i}]", "expected {key, value}")
            key = kv["key"]
        v = kv.get("value")
        # most attributes are strings: skip the general decoder for them
        out[key] = v["stringValue"] if v.__class__ is dict and "stringValue" in v else otlp_value(v)
    return out


def _status(st: Any) -> tuple[str, str | None]:
    if not isinstance(st, dict):
        return ("UNSET", None) if st is None else (str(st).upper().replace("STATUS_CODE_", ""), None)
    code = st.get("code", st.get("status_code"))
    if code in (2, "2") or (isinstance(code, str) and code.upper().endswith("ERROR")):
        c = "ERROR"
    elif code in (1, "1") or (isinstance(code, str) and code.upper().endswith("OK")):
        c = "OK"
    else:
        c = "UNSET"
    return c, st.get("message") or st.get("description")


def otlp_spans(req: Any, where: str = "", first: int = 0) -> list[dict]:
    """Normalised spans out of one OTLP/JSON export request ``{resourceSpans: [...]}``: dicts with
    trace_id, span_id, parent_id, name, start (ns, for ordering), start_raw (as written), attrs,
    events (name, attrs), status_code (OK/ERROR/UNSET), status_message and service.

    ``first`` is the index of its first resourceSpans entry in the file (for error locations when a
    big export is streamed one entry at a time).
    """
    if not isinstance(req, dict):
        raise BadRecord(where or None, f"expected an OTLP export object, got {describe(req)}")
    rss = req.get("resourceSpans")
    if not isinstance(rss, list):
        raise BadRecord(f"{where}resourceSpans", "missing" if rss is None else f"expected a list, got {describe(rss)}")
    out = []
    for i, rs in enumerate(rss, first):
        w = f"{where}resourceSpans[{i}]"
        if not isinstance(rs, dict):
            raise BadRecord(w, f"expected an object, got {describe(rs)}")
        res = otlp_attrs((rs.get("resource") or {}).get("attributes"), w, ".resource.attributes")
        for j, ss in enumerate(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []):
            sw = f"{w}.scopeSpans[{j}]"
            if not isinstance(ss, dict):
                raise BadRecord(sw, f"expected an object, got {describe(ss)}")
            spans = ss.get("spans") or []
            if not isinstance(spans, list):
                raise BadRecord(f"{sw}.spans", f"expected a list, got {describe(spans)}")
            for k, sp in enumerate(spans):
                spw = f"{sw}.spans[{k}]"
                if not isinstance(sp, dict):
                    raise BadRecord(spw, f"expected a span object, got {describe(sp)}")
                tid, sid, pid = sp.get("traceId"), sp.get("spanId"), sp.get("parentSpanId")
                if tid.__class__ is not str or sid.__class__ is not str or pid.__class__ is not str:  # rare: check them
                    for idk in ("traceId", "spanId", "parentSpanId"):  # ids group and link spans: an object cannot
                        if isinstance(sp.get(idk), (dict, list)):
                            raise BadRecord(f"{spw}.{idk}", f"expected a string, got {describe(sp[idk])}")
                st = sp.get("status")
                code, msg = ("UNSET", None) if st is None else _status(st)
                events = []
                evs = sp.get("events")
                if evs:
                    for e_i, ev in enumerate(evs):
                        if isinstance(ev, dict):
                            events.append(
                                {
                                    "name": ev.get("name"),
                                    "attrs": otlp_attrs(ev.get("attributes"), spw, f".events[{e_i}].attributes"),
                                }
                            )
                start = sp.get("startTimeUnixNano")
                out.append({
                    "trace_id": tid, "span_id": sid, "parent_id": pid or None,
                    "name": sp.get("name"), "start": time_key(start),
                    "start_raw": start, "attrs": otlp_attrs(sp.get("attributes"), spw, ".attributes"),
                    "events": events, "status_code": code, "status_message": msg, "service": res.get("service.name"),
                })
    return out


def otlp_requests(val: Any) -> list | None:
    """The OTLP/JSON export requests in a value: one export, a list of them, or ``{"batches": [...]}``; None if none."""
    if isinstance(val, dict) and "resourceSpans" in val:
        return [val]
    if isinstance(val, list) and val and all(isinstance(v, dict) and "resourceSpans" in v for v in val):
        return val
    if isinstance(val, dict) and isinstance(val.get("batches"), list):
        return val["batches"]
    return None


def otlp_span_keys(objs: list) -> set[str]:
    """The attribute keys (and ``event:`` + event names) of the spans in some exports, for detectors."""
    keys: set[str] = set()
    for o in objs:
        for req in otlp_requests(o) or []:
            for rs in req.get("resourceSpans") or []:
                for ss in (rs or {}).get("scopeSpans") or []:
                    for sp in (ss or {}).get("spans") or []:
                        if not isinstance(sp, dict):
                            continue
                        for a in sp.get("attributes") or []:
                            if isinstance(a, dict) and isinstance(a.get("key"), str):
                                keys.add(a["key"])
                        for ev in sp.get("events") or []:
                            if isinstance(ev, dict) and isinstance(ev.get("name"), str):
                                keys.add("event:" + ev["name"])
    return keys


def flat_attrs(attrs: dict, prefix: str = "") -> dict:
    """Nested attribute objects (Phoenix exports) as dotted keys, lists by index, like OTLP flattening."""
    out = {}
    for k, v in attrs.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flat_attrs(v, key + "."))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                out.update(flat_attrs(x, f"{key}.{i}."))
        else:
            out[key] = v
    return out


class SpansByTrace(Gather):
    """A file's spans (dicts with a ``trace_id``) grouped by trace, since a trace's spans can come in several
    records or export batches; each trace keeps the origin of the record its first span came in, and is converted
    at the end of the file (a :class:`Unit` of ``(trace id, spans)``), in the order its first span came."""

    #: how the format names a trace id, for the field its errors are located at
    id_name = "trace"

    def __init__(self, path: Path) -> None:
        self._spans: dict[Any, list] = {}
        self._first: dict[Any, Origin] = {}

    def take(self, spans: list, origin: Origin) -> None:
        """Spans of the record at ``origin``, into their traces."""
        for sp in spans:
            tid = sp["trace_id"]
            group = self._spans.get(tid)
            if group is None:
                group = self._spans[tid] = []
                self._first[tid] = origin
            group.append(sp)

    def end(self) -> Iterator[Unit]:
        for tid, spans in self._spans.items():
            origin = self._first[tid]
            yield Unit(origin, (tid, spans), f"{self.id_name} {tid}", Origin(origin.fmt, origin.source, origin.line))


def indexed(attrs: dict, prefix: str) -> list[dict]:
    """``prefix.N.rest`` keys gathered into a list of {rest: value} dicts ordered by N."""
    groups: dict[int, dict] = {}
    dotted = prefix + "."
    plen = len(dotted)
    for k, v in attrs.items():
        if not k.startswith(dotted):
            continue
        rest = k[plen:]
        n, _, tail = rest.partition(".")
        if not n.isdigit():
            continue
        groups.setdefault(int(n), {})[tail] = v
    return [groups[i] for i in sorted(groups)]


def nest(flat: dict) -> Any:
    """{"a.b": 1, "a.c.0.d": 2} -> {"a": {"b": 1, "c": [{"d": 2}]}}, for flattened message attributes (a list
    when every key is an index)."""
    root: dict = {}
    if not any("." in k or v.__class__ is dict for k, v in flat.items()):  # the usual {role, content}
        root.update(flat)
        return [root[k] for k in sorted(root, key=int)] if root and all(k.isdigit() for k in root) else root
    for k, v in flat.items():
        parts = k.split(".") if k else [k]
        cur = root
        for p in parts[:-1]:
            nxt = cur.get(p)
            if not isinstance(nxt, dict):
                nxt = {}
                cur[p] = nxt
            cur = nxt
        cur[parts[-1]] = v

    def lists(d):
        if isinstance(d, dict):
            d = {k: lists(v) for k, v in d.items()}
            if d and all(k.isdigit() for k in d):
                return [d[k] for k in sorted(d, key=int)]
        return d
    return lists(root)


# ---------------------------------------------------------------- model turns and tool runs -> steps

class LLMEvent:
    """One model turn; its text becomes a thought (if tools follow) or a message. ``meta`` holds the
    step metadata of its steps (a ``timestamp`` in it goes to the steps' top level)."""

    # a plain class with slots, not a dataclass: one is made per model turn, and a dataclass's
    # default factories made that twice as slow
    __slots__ = ("text", "reasoning", "tool_calls", "input_results", "meta", "extra_steps")

    def __init__(self, meta: dict | None = None) -> None:
        self.text = ""
        self.reasoning = ""
        self.tool_calls: list[ToolCall] = []
        #: tool results the model was given in its input, by call id (OTel/LangChain message histories)
        self.input_results: dict = {}
        self.meta = {} if meta is None else meta
        #: non-assistant messages of the output (rare), kept as extra steps
        self.extra_steps: list[Step] = []


class ToolEvent:
    """One tool run: an action, then its result (unless it has none)."""

    __slots__ = ("name", "args", "output", "is_error", "call_id", "meta", "has_output")

    def __init__(self, name: str, args: Any, output: Any, is_error: bool = False, call_id: str | None = None,
                 meta: dict | None = None, has_output: bool = True) -> None:
        self.name = name
        self.args = args
        self.output = output
        self.is_error = is_error
        self.call_id = call_id
        self.meta = {} if meta is None else meta
        self.has_output = has_output


_TOKENS = ("usage", "input_tokens", "output_tokens")


def assemble(events: list) -> list[Step]:
    """Turn LLM/tool events (and ready Steps) into ordered steps with every call followed by its result.

    A tool call the model asked for that a later tool span/run executes is shown once, by the tool
    span (it has the result); calls no span executed become action steps of their own, followed by
    the result when a later model input carries it.
    """
    # events are exactly these classes (nothing subclasses them): class tests, not isinstance, in these loops
    tools = [(i, e) for i, e in enumerate(events) if e.__class__ is ToolEvent]
    consumed: set[int] = set()
    unmatched: dict[int, list[ToolCall]] = {}
    # one backward pass: the index of the next model turn after each event, and whether the next
    # tool-or-model event after it is a tool (both were forward scans per turn: quadratic)
    n = len(events)
    next_llm = [n] * n
    tool_next = [False] * n
    nl, tk = n, False
    for i in range(n - 1, -1, -1):
        next_llm[i] = nl
        tool_next[i] = tk
        cls = events[i].__class__
        if cls is LLMEvent:
            nl, tk = i, False
        elif cls is ToolEvent:
            tk = True
    for i, e in enumerate(events):
        if e.__class__ is not LLMEvent or not e.tool_calls:
            continue
        nxt = next_llm[i]
        for tc in e.tool_calls:
            hit = None
            for j, t in tools:
                if j <= i or j in consumed:
                    continue
                if tc.call_id and t.call_id:
                    if tc.call_id == t.call_id:
                        hit = j
                        break
                elif t.name == tc.name and j < nxt:
                    # without ids, only a tool run before the model's next turn can be this call
                    hit = j
                    break
            if hit is None:
                unmatched.setdefault(i, []).append(tc)
                continue
            consumed.add(hit)
            if tc.call_id and not events[hit].call_id:
                events[hit].call_id = tc.call_id

    steps: list[Step] = []
    for i, e in enumerate(events):
        cls = e.__class__
        if cls is ToolEvent:
            cid = e.call_id
            meta = e.meta  # copied below, never changed: the nulls are dropped once for its two steps
            for v in meta.values():  # an identity test per value (as step(): no rich comparison with None)
                if v is None:
                    meta = {k: v for k, v in meta.items() if v is not None}
                    break
            if cid:
                steps.append(step("action", e.name, render_args(e.args), {"tool_call_id": cid, **meta}))
                if e.has_output or e.is_error:
                    steps.append(step("error" if e.is_error else "observation", value_text(e.output), None,
                                      {"tool_call_id": cid, "tool_name": e.name, **meta}))
            else:
                steps.append(step("action", e.name, render_args(e.args), dict(meta)))
                if e.has_output or e.is_error:
                    steps.append(step("error" if e.is_error else "observation", value_text(e.output), None,
                                      {"tool_name": e.name, **meta}))
        elif cls is LLMEvent:
            follows_tool = bool(e.tool_calls) or tool_next[i]
            meta = e.meta
            for v in meta.values():
                if v is None:
                    meta = {k: v for k, v in meta.items() if v is not None}
                    break
            if e.tool_calls:
                meta = dict(meta, tool_calls=[{"name": t.name, "id": t.call_id} if t.call_id else {"name": t.name}
                                              for t in e.tool_calls])
            emitted = False
            if e.reasoning:
                steps.append(step("thought", e.reasoning, None, {"reasoning": True, **meta}))
                emitted = True
            if e.text or not (emitted or e.tool_calls):
                steps.append(step("thought" if follows_tool else "message", e.text, None, dict(meta)))
                emitted = True
            steps.extend(e.extra_steps)
            for tc in unmatched.get(i, []):
                m = {k: v for k, v in e.meta.items() if k not in _TOKENS}
                steps.append(step("action", tc.name, render_args(tc.args), {"tool_call_id": tc.call_id, **m}))
                if not emitted and "tool_calls" in meta:
                    # the turn had no text: keep its provenance (tokens, model) on its first action
                    step_metadata(steps[-1]).update(
                        (k, v)
                        for k, v in meta.items()
                        if k != "tool_calls" and k != "timestamp" and v is not None and v != {}
                    )
                    emitted = True
                res = None
                for later in events[i + 1:]:
                    if isinstance(later, LLMEvent) and tc.call_id and tc.call_id in later.input_results:
                        res = later.input_results[tc.call_id]
                        break
                if res is not None:
                    val, is_err = res
                    steps.append(step("error" if is_err else "observation", value_text(val), None,
                                      {"tool_call_id": tc.call_id, "tool_name": tc.name}))
            if not emitted and e.tool_calls:
                # every call was executed by a tool span: the turn itself leaves a thought only for its
                # provenance, so tokens and model are not lost
                steps.append(step("thought", "", None, dict(meta)))
        elif isinstance(e, Step):
            steps.append(e)
    return steps


def llm_event_from_messages(out_msgs: list, in_msgs: list | None = None, **meta: Any) -> LLMEvent:
    """A model turn from its output messages; tool results in its input are kept for call pairing."""
    ev = LLMEvent(meta=meta)
    texts, reasons = [], []
    for raw in out_msgs:
        m = read_message(raw)
        if m is None:
            texts.append(content_text(raw))
            continue
        role = m.get("role")
        if role != "assistant":  # a hot path: the usual spelling needs no normalising
            role = norm_role(role)
        if role and role != "assistant":
            ev.extra_steps.extend(message_steps(m))
            continue
        body, reasoning, calls, _ = message_parts(m)
        if body:
            texts.append(body)
        if reasoning:
            reasons.append(reasoning)
        ev.tool_calls.extend(calls)
    ev.text = "\n".join(texts)
    ev.reasoning = "\n".join(reasons)
    for raw in in_msgs or []:
        m = read_message(raw)
        if m is None:
            continue
        role = m.get("role")
        if role != "user" and role != "system" and norm_role(role) == "tool" and m.get("tool_call_id"):
            ev.input_results[str(m["tool_call_id"])] = (content_text(m.get("content")), False)
        if m.get("content").__class__ is str and "parts" not in m:  # plain text: no tool results in it
            continue
        for cid, val, is_err in message_parts(m)[3]:
            if cid:
                ev.input_results[cid] = (val, is_err)
    return ev
