"""SWE-bench prediction and instance records.

Mapping: task = problem_statement; steps: hints_text (if any) as a message, then the patch as a
``code`` step (model_patch for predictions; for instance records the gold ``patch`` and the
``test_patch``, each its own code step). An empty model_patch stays a code step with empty content
(the model gave no patch: that is what an annotator must see). trace_id = instance_id, with the model
name appended for predictions so several models' predictions for one instance stay apart.
"""
from __future__ import annotations

from typing import Any

from .base import Converter, Sample
from .support.errors import BadRecord, expect
from .support.files import Origin, sample_objects, unwrapping
from .support.steps import finish, step

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
    if (
        isinstance(val, dict)
        and val
        and "instance_id" not in val
        and all(isinstance(v, dict) and "model_patch" in v for v in val.values())
    ):
        return [dict(v, instance_id=v.get("instance_id", k)) for k, v in val.items()]
    return None


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if not objs:
        return 0.0
    if isinstance(sample.first_json, dict) and _unwrap(sample.first_json):
        return 0.9
    return _looks(objs[0])


def one(rec: Any, origin: Origin) -> list:
    if not isinstance(rec, dict):
        raise BadRecord(None, "expected a SWE-bench record object")
    iid = expect(rec.get("instance_id"), str, "instance_id")
    if not iid.strip():
        raise BadRecord("instance_id", "empty: it is the trace's id")
    model = expect(rec.get("model_name_or_path"), str, "model_name_or_path", optional=True)
    problem = expect(rec.get("problem_statement"), str, "problem_statement", optional=True) or ""
    steps = []
    hints = expect(rec.get("hints_text"), str, "hints_text", optional=True)
    if hints:
        steps.append(step("message", hints, None, {"role": "hints"}))
    if "model_patch" in rec:
        patch = expect(rec.get("model_patch"), str, "model_patch", optional=True) or ""
        steps.append(
            step(
                "code",
                patch,
                None,
                {
                    "language": "diff",
                    "patch_kind": "model_patch",
                    "model": model,
                    "empty_patch": True if not patch else None,
                },
            )
        )
    else:
        steps.append(step("code", expect(rec.get("patch"), str, "patch", optional=True) or "", None,
                          {"language": "diff", "patch_kind": "gold_patch"}))
        tp = expect(rec.get("test_patch"), str, "test_patch", optional=True)
        if tp is not None:
            steps.append(step("code", tp, None, {"language": "diff", "patch_kind": "test_patch"}))
    md = {"instance_id": iid}
    md["model_name_or_path"] = model
    for k in _META_KEYS:
        if k in rec:
            md[k] = rec[k]
    tid = f"{iid}__{model}" if model else iid
    return [finish(origin, tid, problem, steps, md)]



CONVERTER = Converter(
    name=NAME,
    description="SWE-bench predictions (instance_id, model_patch) and instance records (patch, problem_statement)",
    shapes='{"instance_id", "model_name_or_path", "model_patch"} or {"instance_id", "problem_statement", "patch", '
           '"test_patch"}; JSONL, a JSON list, or {instance_id: prediction}',
    detect=detect,
    one=one,
    split=unwrapping(_unwrap),
)
