"""LangChain / LangSmith run trees (nested ``child_runs`` or flat runs linked by ``parent_run_id``).

Mapping: runs in tree order (siblings by ``dotted_order``, else ``start_time``). ``llm`` /
``chat_model`` runs -> the generated message: reasoning -> thought, text -> thought when a tool
call/run follows, else message; tool calls the model asked for are shown by the tool run that
executed them (matched by tool_call_id, else by name before the next model turn), and only calls
no run executed become actions of their own. ``tool`` runs -> action (name, inputs) + observation
(outputs) or error. ``retriever`` runs -> action (query) + observation (documents). ``chain`` runs
are containers: a failing chain adds an error step after its children unless one of them already
failed; a childless chain with outputs becomes an ``other`` step. ``prompt``/``parser``/
``embedding`` runs carry no agent step and are counted in trace metadata ``skipped_runs``.
JSONL lines holding a whole tree stream one by one; flat runs are grouped by trace at the end.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import Trace, TraceError, describe

from .base import Converter, Gather, Sample, Unit
from .support.chat import call_id, task_from_input, unwrap_message, value_text
from .support.errors import BadRecord, join_field
from .support.files import Origin, sample_objects
from .support.steps import default_id, dumps, finish, name_agents, step
from .support.times import time_key
from .support.trees import ToolEvent, assemble, llm_event_from_messages, tree_id

NAME = "langchain"
_RUN_TYPES = {"llm", "chain", "tool", "retriever", "prompt", "parser", "embedding", "chat_model"}


def _is_run(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("run_type") in _RUN_TYPES
        and ("inputs" in obj or "outputs" in obj or "child_runs" in obj)
    )


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if isinstance(sample.first_json, dict) and isinstance(sample.first_json.get("runs"), list):
        objs = sample.first_json["runs"][:5]
    if objs and _is_run(objs[0]):
        return 0.95
    return 0.0


_ID_KEYS = ("id", "parent_run_id", "trace_id")


def _flatten(run: dict, at: str, out: list, parent: Any = None, path: str = "") -> None:
    """``run`` and the runs under it into ``out``, flat (each child with its parent's id); ``at`` names the run
    in its document (the id of a run without one), ``path`` is its field path for errors, from the record."""
    if not isinstance(run, dict):
        raise BadRecord(path or None, f"expected a run object, got {describe(run)}")
    rt = run.get("run_type")
    if not isinstance(rt, str):
        raise BadRecord(
            join_field(path, "run_type"), "missing" if rt is None else f"expected a string, got {describe(rt)}"
        )
    kids = run.get("child_runs")
    if kids is not None and not isinstance(kids, list):
        raise BadRecord(join_field(path, "child_runs"), f"expected a list, got {describe(kids)}")
    for k in _ID_KEYS:
        v = run.get(k)
        if v is not None and not isinstance(v, str):  # a hot path: the location is built only to check an unusual id
            tree_id(v, join_field(path, k))
    node = dict(run)
    node.pop("child_runs", None)
    if parent is not None and node.get("parent_run_id") is None:
        node["parent_run_id"] = parent
    if node.get("id") is None:
        node["id"] = at
    out.append(node)
    if kids:
        nid = node["id"]
        for i, c in enumerate(kids):
            _flatten(c, f"{at}.child_runs[{i}]", out, nid, join_field(path, f"child_runs[{i}]") or "")


def _order_key(r: dict):
    d = r.get("dotted_order")
    if isinstance(d, str):
        return (0, d)
    t = time_key(r.get("start_time"))
    return (1, t) if t is not None else None


def _tokens(run: dict, outputs: Any) -> dict | None:
    usage = {}
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if isinstance(run.get(k), int):
            usage[k] = run[k]
    if isinstance(outputs, dict):
        lo = outputs.get("llm_output")
        if isinstance(lo, dict) and isinstance(lo.get("token_usage"), dict):
            usage.update(lo["token_usage"])
        if isinstance(outputs.get("usage_metadata"), dict):  # LangSmith's wrap_openai / wrapOpenAI runs
            usage.update(outputs["usage_metadata"])
    return usage or None


def _llm_outputs(outputs: Any) -> list:
    """The generated messages of an llm run, whatever the LangChain version wrote."""
    if outputs is None:
        return []
    if isinstance(outputs, dict):
        gens = outputs.get("generations")
        if isinstance(gens, list):
            msgs = []
            for g in gens:
                for gen in (g if isinstance(g, list) else [g]):
                    if not isinstance(gen, dict):
                        continue
                    if isinstance(gen.get("message"), dict):
                        msgs.append(gen["message"])
                    elif isinstance(gen.get("text"), str):
                        msgs.append({"role": "assistant", "content": gen["text"]})
            return msgs
        choices = outputs.get("choices")
        if isinstance(choices, list):  # a raw OpenAI completion (LangSmith's wrap_openai / wrapOpenAI runs)
            return [c["message"] for c in choices if isinstance(c, dict) and isinstance(c.get("message"), dict)]
        for k in ("output", "message", "messages"):
            if k in outputs:
                v = outputs[k]
                return v if isinstance(v, list) else [v]
        if unwrap_message(outputs) is not None:
            return [outputs]
        return [{"role": "assistant", "content": dumps(outputs)}]
    if isinstance(outputs, list):
        return outputs
    return [{"role": "assistant", "content": value_text(outputs)}]


def _llm_inputs(inputs: Any) -> list:
    if isinstance(inputs, dict):
        m = inputs.get("messages")
        if isinstance(m, list):
            return m[0] if m and isinstance(m[0], list) else m
        p = inputs.get("prompts")
        if isinstance(p, list):
            return [{"role": "user", "content": x} for x in p if isinstance(x, str)]
    return []


def _tool_output(outputs: Any) -> tuple[Any, str | None]:
    if isinstance(outputs, dict) and set(outputs) <= {"output", "outputs"}:
        outputs = outputs.get("output", outputs.get("outputs"))
    m = unwrap_message(outputs) if isinstance(outputs, dict) else None
    if m is not None and (m.get("role") in ("tool", "ToolMessage") or "tool_call_id" in m):
        return m.get("content"), m.get("tool_call_id")
    return outputs, None


def _tool_input(inputs: Any) -> tuple[Any, str | None]:
    cid = None
    if isinstance(inputs, dict):
        cid = inputs.get("tool_call_id")
        if set(inputs) - {"tool_call_id", "callbacks", "run_manager"} == {"input"}:
            inp = inputs["input"]
            if isinstance(inp, dict) and "args" in inp and "name" in inp:  # a ToolCall passed as input
                return inp["args"], inp.get("id") or cid
            return inp, cid
    return inputs, cid


def runs_trace(runs: list, origin: Origin) -> Trace:
    """One trace out of the flat runs of one trace (each with id, run_type, parent_run_id where it has a parent)."""
    by_id = {r["id"]: r for r in runs}
    children: dict[Any, list] = {}
    roots = []
    for r in runs:
        p = r.get("parent_run_id")
        if p is not None and p in by_id and p != r["id"]:
            children.setdefault(p, []).append(r)
        else:
            roots.append(r)

    def key(r):
        k = _order_key(r)
        return (k is None, k or (0, 0))

    events: list = []
    skipped: dict[str, int] = {}
    seen = set()
    named = False  # whether a LangGraph node names the agent of a run (else no step has an agent to name)

    def walk(r: dict, depth: int, agent: str | None) -> bool:
        """Emit r's subtree; True when something in it already reported a failure."""
        nonlocal named
        rid = r["id"]
        if rid in seen:
            return False
        seen.add(rid)
        rt = r["run_type"]
        # a hot path: the metadata is built without its nulls (every step drops them), not rebuilt to drop them
        meta: dict[str, Any] = {"run_id": str(rid)}
        get = r.get
        v = get("name")
        if v is not None:
            meta["run_name"] = v
        meta["run_type"] = rt
        meta["depth"] = depth
        v = get("start_time")
        if v is not None:
            meta["timestamp"] = v
        v = get("end_time")
        if v is not None:
            meta["end_time"] = v
        if agent:
            meta["agent"] = agent
            named = True
        err = get("error")
        kids = children.get(rid, ())
        if len(kids) > 1:
            kids = sorted(kids, key=key)
        failed = False
        if rt == "llm" or rt == "chat_model":
            outputs = get("outputs")
            extra = get("extra")
            if not isinstance(extra, dict):
                extra = {}
            ip = extra.get("invocation_params")
            if not isinstance(ip, dict):
                ip = {}
            md = extra.get("metadata")
            if not isinstance(md, dict):
                md = {}
            v = ip.get("model") or ip.get("model_name") or md.get("ls_model_name")
            if v is not None:
                meta["model"] = v
            v = _tokens(r, outputs)
            if v is not None:
                meta["usage"] = v
            ev = llm_event_from_messages(_llm_outputs(outputs), _llm_inputs(get("inputs")), **meta)
            if err:
                events.append(step("error", value_text(err), None, dict(meta)))
                failed = True
            elif outputs is not None:
                events.append(ev)
        elif rt == "tool" or rt == "retriever":
            inputs, outputs = get("inputs"), get("outputs")
            args, cid = _tool_input(inputs)
            if rt == "retriever" and isinstance(inputs, dict) and "query" in inputs:
                args = inputs["query"]
            out, ocid = _tool_output(outputs)
            if rt == "retriever" and isinstance(outputs, dict) and "documents" in outputs:
                out = outputs["documents"]
            events.append(ToolEvent(str(get("name") or rt), args, err if err else out, is_error=bool(err),
                                    call_id=call_id(cid or ocid), meta=meta))
            failed = bool(err)
        elif rt in ("prompt", "parser", "embedding"):
            skipped[rt] = skipped.get(rt, 0) + 1
            if err:
                events.append(step("error", value_text(err), None, dict(meta)))
                failed = True
        else:
            if rt == "chain" and isinstance(r.get("extra"), dict):
                md = r["extra"].get("metadata")
                if isinstance(md, dict) and isinstance(md.get("langgraph_node"), str):
                    agent = md["langgraph_node"]
            if not kids and r.get("outputs") is not None and depth > 0:
                events.append(
                    step("other", dumps({"inputs": r.get("inputs"), "outputs": r.get("outputs")}), None, dict(meta))
                )
        for c in kids:
            failed = walk(c, depth + 1, agent) or failed  # noqa: F821 (its own name: emptied once the trace is done)
        if err and not failed:
            events.append(step("error", value_text(err), None, dict(meta)))
            failed = True
        return failed

    for r in sorted(roots, key=key):
        walk(r, 0, None)
    for r in runs:  # runs in a parent cycle
        if r["id"] not in seen:
            walk(r, 0, None)
    # walk calls itself through its closure: a reference cycle that would keep this trace's runs and steps alive until
    # the collector finds it, which then walks them (langchain's 40 MB benchmark: 535,000 objects freed that way, a
    # seventh of the conversion's CPU time). Emptying the name's cell breaks the cycle: all is freed on return.
    del walk
    root = sorted(roots, key=key)[0] if roots else runs[0]
    steps = assemble(events)
    task = task_from_input(root.get("inputs"))
    if task is None:
        for r in runs:
            if r["run_type"] in ("llm", "chat_model"):
                task = task_from_input(_llm_inputs(r.get("inputs")))
                if task is not None:
                    break
    md = {}
    md.update(
        {
            "root_run_name": root.get("name"),
            "root_run_type": root.get("run_type"),
            "start_time": root.get("start_time"),
            "end_time": root.get("end_time"),
            "tags": root.get("tags") or None,
            "session_name": root.get("session_name"),
            "run_count": len(runs),
            "skipped_runs": skipped or None,
        }
    )
    out = root.get("outputs")
    if out is not None:
        md["final_output"] = out.get("output", out) if isinstance(out, dict) else out
    if root.get("error"):
        md["error"] = root["error"]
    tid = root.get("trace_id") or root.get("id")
    if tid is None or not str(tid).strip() or str(tid).startswith("["):
        tid = default_id(origin)
    if named:  # LangGraph's nodes (a pass over every step: only where a run has one)
        name_agents(steps)
    return finish(origin, str(tid), task, steps, md)


def one(runs: list, origin: Origin) -> list:
    """The flat runs of one trace (a run tree flattened, or the runs of one trace gathered) to its trace."""
    return [runs_trace(runs, origin)]


def _split(val: Any, origin: Origin) -> list:
    """The runs of a document or line: a JSONL line, a JSON run, each of a JSON list of runs or of ``{"runs": [...]}``.
    Their ``place`` is how they are named in the file (a run without an id is named so): ``[k]`` in a list, ``run``
    otherwise."""
    if origin.line is not None:
        origin.place = "" if isinstance(val, list) else "run"
        return [(origin, val)]
    recs = val.get("runs") if isinstance(val, dict) and isinstance(val.get("runs"), list) else val
    if isinstance(recs, dict):
        recs = [recs]
    if not isinstance(recs, list):
        return [
            (
                origin,
                TraceError(origin.source, None, None, f"expected a run object or a list of runs, got {describe(recs)}"),
            )
        ]
    return [(Origin(origin.fmt, origin.source, None, k if len(recs) > 1 or isinstance(val, list) else None, k,
                    None if isinstance(val, list) else "run"), r) for k, r in enumerate(recs)]


class _Runs(Gather):
    """A JSONL line holding a whole run tree is converted at once; other runs are gathered by trace (flat run lists
    come in any order) and converted at the end of the file."""

    def __init__(self, path: Path) -> None:
        self.pending: dict[Any, list] = {}  # flat runs by trace, in order of first appearance
        self.origins: dict[Any, Origin] = {}
        self.id_to_group: dict[Any, Any] = {}

    def add(self, rec: Any, origin: Origin) -> list:
        nodes: list = []
        _flatten(rec, origin.where, nodes)
        at = Origin(origin.fmt, origin.source, origin.line, origin.index, origin.ordinal)  # the run, named no more
        if origin.line is not None and rec.get("parent_run_id") is None and isinstance(rec.get("child_runs"), list) \
                and rec["child_runs"]:
            return [Unit(at, nodes, at=Origin(origin.fmt, origin.source, origin.line))]
        r = nodes[0]
        g = r.get("trace_id") or self.id_to_group.get(r.get("parent_run_id")) or r.get("parent_run_id") or r["id"]
        if g not in self.pending:
            self.pending[g] = []
            self.origins[g] = at
        self.pending[g].extend(nodes)
        for n in nodes:
            self.id_to_group[n["id"]] = g
        return []

    def end(self) -> Iterator[Unit]:
        for g, runs in self.pending.items():
            yield Unit(self.origins[g], runs)


CONVERTER = Converter(
    name=NAME,
    description="LangChain / LangSmith run trees (run_type, inputs, outputs, child_runs or parent_run_id)",
    shapes='{"run_type": "chain", "inputs", "outputs", "child_runs": [...]} as JSON/JSONL, or flat run lists linked '
           'by parent_run_id',
    detect=detect,
    one=one,
    split=_split,
    gather=_Runs,
)
