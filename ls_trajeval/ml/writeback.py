"""A task's score fields, recomputed from Label Studio's current annotations of that task.

Recomputing from the current state (not from an event's payload) makes the result independent of
event order and replays: whatever arrives, the last recomputation sees every annotation there is.
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from statistics import fmean

from ..core import results, scoring
from ..core.config import Config
from ..core.fields import SCORE_KEPT, SCORE_STATUS, first_error_column
from ..core.fields import initial_scores as initial_fields
from ..core.fields import n_steps as _n_steps
from ..core.windows import window_of
from ..studio import client as studio

log = logging.getLogger(__name__)

MAX_ROUNDS = 5


def _live(annotations: Iterable[Mapping]) -> list[Mapping]:
    return [a for a in annotations if not a.get("was_cancelled")]


def _order(a: Mapping) -> tuple:
    return (str(a.get("updated_at") or a.get("created_at") or ""), int(a.get("id") or 0))


def fingerprint(annotations: Iterable[Mapping]) -> str:
    parts = sorted(f"{a.get('id')}@{a.get('updated_at')}" for a in _live(annotations))
    return hashlib.sha1("|".join(parts).encode()).hexdigest()


def task_fields(config: Config, data: Mapping, annotations: Iterable[Mapping]) -> dict:
    """Latest annotation's score, errors, first error, worst severity and score after each step; the mean over
    annotations."""
    anns = sorted(_live(annotations), key=_order)
    n = _n_steps(data)
    window = window_of(data)
    first = window.start if window else 0
    if not anns:
        return {**initial_fields(config, n), SCORE_STATUS: SCORE_KEPT}
    summaries = {}
    for a in anns:
        labels = results.decode(a.get("result") or [], config, n)
        summaries[str(a.get("id"))] = scoring.summarize(labels.steps, config.trajectory)
    latest = summaries[str(anns[-1].get("id"))]
    return {
        "running_score": latest.final,
        "n_errors": latest.n_errors,
        # as the UI numbers it: a window task's steps keep their numbers in the whole trace
        "first_error_step": first_error_column(None if latest.first_error_step is None
                                               else latest.first_error_step + first),
        "worst_severity": latest.worst_severity or "",
        "score_mean": round(fmean(s.final for s in summaries.values()), 4),
        "te_scores": {k: s.final for k, s in summaries.items()},
        "te_curve": list(latest.curve),
        SCORE_STATUS: SCORE_KEPT,
    }


def recompute(client, config: Config, task_id: int) -> dict:
    """Write the task's score fields; repeat while annotations change under us (another worker, an edit)."""
    fields: dict = {}
    for _ in range(MAX_ROUNDS):
        task = studio.get_task(client, task_id)
        anns = studio.task_annotations(client, task_id)
        before = fingerprint(anns)
        data = task.get("data") or {}
        fields = task_fields(config, data, anns)
        after = None
        if any(data.get(k) != v for k, v in fields.items()):
            # the updated task comes back with all its annotations: read after the write, as the check needs.
            # One request fewer counts: the webhook waits for this (Label Studio gives it 1 s)
            after = studio.update_task_data(client, task_id, fields, data).get("annotations")
        if fingerprint(studio.task_annotations(client, task_id) if after is None else after) == before:
            return fields
    return fields


def resync(client, config: Config, project_id: int, only_task_ids: set[int] | None = None) -> dict:
    """Recompute every task of a project (or those listed); returns counts."""
    counts = {"tasks": 0, "updated": 0}
    for task in studio.iter_tasks(client, project_id, page_size=100):
        if only_task_ids is not None and task["id"] not in only_task_ids:
            continue
        counts["tasks"] += 1
        data = task.get("data") or {}
        fields = task_fields(config, data, task.get("annotations") or [])
        if any(data.get(k) != v for k, v in fields.items()):
            recompute(client, config, task["id"])
            counts["updated"] += 1
    return counts
