"""LangSmith run payloads: what the SDKs send to ``/runs/batch`` (``{"post": [run, ...], "patch": [run, ...]}``)
and run-operation JSONL (one create line ``{id, name, run_type, start_time, inputs, trace_id, dotted_order, ...}``
and one update line ``{id, end_time, outputs, error}`` per run, as ``list_runs`` dumps are written).

A run is its create merged with its updates: by ``id``, else (the JS SDK's single-run ``PATCH /runs/{id}``
body holds no id) by ``dotted_order``; an update whose run is not in the file is a warning. A run's
parent is its ``parent_run_id``, else the run named by the second-to-last segment of its
``dotted_order`` (``<time>Z<run id>`` segments, root first). Runs are grouped by ``trace_id`` over the
whole file and each trace is read as a LangChain run tree (see :mod:`.langchain`): llm runs -> the
model's messages (streamed ``new_token`` events are not steps), tool runs -> action + observation,
chains -> containers, parser/prompt runs counted.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Gather, Sample, Unit
from .langchain import one
from .support.errors import BadRecord, expect, join_field, warning
from .support.files import Origin, sample_objects
from .support.trees import tree_id

NAME = "langsmith"
_OPENING = re.compile(r'\s*\{\s*"(post|patch)"\s*:\s*\[\s*\{')
_UPDATE_KEYS = ("end_time", "outputs", "error")


def _is_create_op(o: Any) -> bool:
    """A run as created, not yet ended: a dotted_order and no outputs or end time (a whole run has them)."""
    return (isinstance(o, dict) and isinstance(o.get("run_type"), str) and isinstance(o.get("dotted_order"), str)
            and not any(k in o for k in _UPDATE_KEYS) and "child_runs" not in o)


def _is_update_op(o: Any) -> bool:
    return isinstance(o, dict) and "run_type" not in o and "id" in o and any(k in o for k in _UPDATE_KEYS)


def _is_body(o: Any) -> bool:
    """A /runs/batch body: {"post": [...], "patch": [...]} (either may be missing) holding run objects."""
    if not isinstance(o, dict) or not {"post", "patch"} & set(o) or not set(o) <= {"post", "patch", "session_name"}:
        return False
    post, patch = o.get("post") or [], o.get("patch") or []
    if not isinstance(post, list) or not isinstance(patch, list):
        return False
    ops = post[:3] + patch[:3]
    return bool(ops) and all(isinstance(r, dict) and ("dotted_order" in r or "run_type" in r or "id" in r) for r in ops)


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if any(_is_body(o) for o in objs):
        return 1.0
    if sample.first_records and any(_is_create_op(o) or _is_update_op(o) for o in sample.first_records[:10]):
        return 1.0  # above langchain's claim on the create lines: the update lines are no runs it reads
    return 0.9 if not objs and _OPENING.match(sample.head) else 0.0  # a body too big to be sampled whole


def parent_from_dotted(dotted: Any) -> str | None:
    """The parent run's id named by a dotted_order (``<YYYYmmddTHHMMSSffffff>Z<id>`` segments, root first)."""
    if not isinstance(dotted, str):
        return None
    segs = dotted.split(".")
    if len(segs) < 2:
        return None
    _, z, rid = segs[-2].partition("Z")
    return rid if z and rid else None


class _Runs:
    """Runs merged from their create and update operations, in the order they were created."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.runs: dict[Any, dict] = {}
        self.origin: dict[Any, Origin] = {}
        self.by_dotted: dict[str, Any] = {}
        self.updates: list[tuple[dict, Origin, str]] = []

    def create(self, r: Any, origin: Origin, where: str) -> None:
        expect(r, dict, where or None)
        rid = tree_id(r.get("id"), join_field(where, "id"))
        expect(r.get("run_type"), str, join_field(where, "run_type"))
        if rid is None:
            raise BadRecord(join_field(where, "id"), "missing")
        for k in ("parent_run_id", "trace_id"):
            tree_id(r.get(k), join_field(where, k))
        expect(r.get("dotted_order"), str, join_field(where, "dotted_order"), optional=True)
        run = self.runs.get(rid)
        if run is None:
            self.runs[rid] = dict(r)
            self.origin[rid] = origin
        else:  # created twice (a retried batch): the later values win
            run.update(r)
        if isinstance(r.get("dotted_order"), str):
            self.by_dotted[r["dotted_order"]] = rid

    def update(self, r: Any, origin: Origin, where: str) -> None:
        expect(r, dict, where or None)
        for k in ("id", "parent_run_id", "trace_id"):
            tree_id(r.get(k), join_field(where, k))
        expect(r.get("dotted_order"), str, join_field(where, "dotted_order"), optional=True)
        self.updates.append((r, origin, where))

    def merged(self) -> Iterator:
        """Apply the updates (they may come before their creates in a file); warnings for lost ones."""
        for r, origin, where in self.updates:
            rid = r.get("id")
            dotted = r.get("dotted_order")
            if rid is None and isinstance(dotted, str):
                rid = self.by_dotted.get(dotted)
            run = self.runs.get(rid)
            if run is None:
                yield warning(self.source, origin.line if origin.line is not None else where,
                              f"run update {_op_name(r)}: its run was not created in this file; left out")
                continue
            for k, v in r.items():
                if k == "inputs" and run.get("inputs"):
                    continue  # the create's inputs are the run's; an update repeats or empties them
                if v is None and run.get(k) is not None:
                    continue
                run[k] = v
        for run in self.runs.values():
            if run.get("parent_run_id") is None:
                run["parent_run_id"] = parent_from_dotted(run.get("dotted_order"))
            if run.get("trace_id") is None:
                d = run.get("dotted_order")
                run["trace_id"] = d.split(".", 1)[0].partition("Z")[2] if isinstance(d, str) and "Z" in d else None


def _op_name(r: dict) -> str:
    return str(r.get("id") or r.get("dotted_order") or describe(r))


def _split(val: Any, origin: Origin) -> list:
    """The run operations of a document or line, as ``("post" | "patch", run, its place in the body)``: the runs of
    a ``/runs/batch`` body (``post[k]``), or a create or update line (``""``)."""
    if isinstance(val, dict) and ("post" in val or "patch" in val):
        out: list = []
        for key in ("post", "patch"):
            ops = val.get(key) or []
            if not isinstance(ops, list):
                out.append(
                    (
                        origin,
                        TraceError(origin.source, origin.line, key, f"expected a list of runs, got {describe(ops)}"),
                    )
                )
                continue
            out += [(origin, (key, r, f"{key}[{k}]")) for k, r in enumerate(ops)]
        return out
    if isinstance(val, dict):
        return [(origin, ("patch" if _is_update_op(val) else "post", val, ""))]
    return [(origin, TraceError(origin.source, origin.line, None,
                                f"expected a run operation or a {{\"post\", \"patch\"}} body, got {describe(val)}"))]


class _Gather(Gather):
    """The file's run operations merged into runs, grouped by trace at the end of the file."""

    def __init__(self, path: Path) -> None:
        self.runs = _Runs(str(path))

    def add(self, op: tuple[str, Any, str], origin: Origin) -> None:
        key, r, where = op
        (self.runs.create if key == "post" else self.runs.update)(r, origin, where)

    def end(self) -> Iterator:
        runs = self.runs
        yield from runs.merged()
        groups: dict[Any, list] = {}
        for rid, run in runs.runs.items():
            groups.setdefault(run.get("trace_id") or rid, []).append(run)
        for tid, group in groups.items():
            yield Unit(runs.origin[group[0]["id"]], group, field=f"trace {tid}")


CONVERTER = Converter(
    name=NAME,
    description="LangSmith run payloads: /runs/batch bodies ({post, patch}) and run-operation JSONL (create and "
                "update lines)",
    shapes='{"post": [{id, run_type, start_time, inputs, trace_id, dotted_order}], "patch": [{id, end_time, '
           'outputs, error}]} '
    "(JSON or JSONL of bodies), or JSONL of create / update lines",
    detect=detect,
    one=one,  # a trace's runs, as LangChain's
    split=_split,
    gather=_Gather,
)
