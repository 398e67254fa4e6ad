"""SWE-bench prediction and instance records.

Mapping: task = problem_statement; steps: hints_text (if any) as a message, then the patch as a
``code`` step (model_patch for predictions; for instance records the gold ``patch`` and the
``test_patch``, each its own code step). An empty model_patch stays a code step with empty content
(the model gave no patch: that is what an annotator must see). trace_id = instance_id, with the model
name appended for predictions so several models' predictions for one instance stay apart.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common_b import Bad, Ctx, drive, finish_trace, mk_step, sample_objects, want
from .base import Converter, Sample

NAME = "swebench"
_META_KEYS = ("repo", "base_commit", "version", "created_at", "environment_setup_commit", "FAIL_TO_PASS",
              "PASS_TO_PASS", "resolved", "cost", "exit_status")


def _looks(obj: Any) -> float:
    if not isinstance(obj, dict) or not isinstance(obj.get("instance_id"), str):
        return 0.0
    if "model_patch" in obj:
        return 0.95
    if "patch" in obj and "problem_statement" in obj:
        return 0.9
    return 0.0


def _unwrap(val: Any):
    # predictions are also stored as {instance_id: prediction}
    if isinstance(val, dict) and val and "instance_id" not in val and all(isinstance(v, dict) and "model_patch" in v for v in val.values()):
        return [dict(v, instance_id=v.get("instance_id", k)) for k, v in val.items()]
    return None


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if not objs:
        return 0.0
    if isinstance(sample.first_json, dict) and _unwrap(sample.first_json):
        return 0.9
    return _looks(objs[0])


def one(rec: Any, ctx: Ctx) -> list:
    if not isinstance(rec, dict):
        raise Bad(None, "expected a SWE-bench record object")
    iid = want(rec, "instance_id", str, "", required=True)
    if not iid.strip():
        raise Bad("instance_id", "empty: it is the trace's id")
    model = want(rec, "model_name_or_path", str, "", default=None)
    problem = want(rec, "problem_statement", str, "", default="")
    steps = []
    hints = want(rec, "hints_text", str, "", default="")
    if hints:
        steps.append(mk_step("message", hints, role="hints"))
    if "model_patch" in rec:
        patch = want(rec, "model_patch", str, "", default="")
        steps.append(mk_step("code", patch, language="diff", patch_kind="model_patch", model=model, empty_patch=True if not patch else None))
    else:
        steps.append(mk_step("code", want(rec, "patch", str, "", default=""), language="diff", patch_kind="gold_patch"))
        tp = want(rec, "test_patch", str, "", default=None)
        if tp is not None:
            steps.append(mk_step("code", tp, language="diff", patch_kind="test_patch"))
    md = ctx.provenance(NAME)
    md["instance_id"] = iid
    md["model_name_or_path"] = model
    for k in _META_KEYS:
        if k in rec:
            md[k] = rec[k]
    tid = f"{iid}__{model}" if model else iid
    return [finish_trace(tid, problem, steps, md)]


def convert(path: Path):
    yield from drive(path, one, _unwrap)


CONVERTER = Converter(
    name=NAME,
    description="SWE-bench predictions (instance_id, model_patch) and instance records (patch, problem_statement)",
    shapes='{"instance_id", "model_name_or_path", "model_patch"} or {"instance_id", "problem_statement", "patch", "test_patch"}; JSONL, a JSON list, or {instance_id: prediction}',
    detect=detect,
    convert=convert,
)
