"""The report's cause tables: origin and propagated errors, and the root cause against the first error.

An error is an **origin** when no wrong step caused it, **propagated** when an earlier wrong step did (the record's
``role``; a record without cause links has only origins, see :func:`.trace_groups.roles`). Per annotation, the
**root cause** is the record's ``root_cause_step`` (:func:`.trace_groups.root_cause`) and the **first error** its
first wrong step; the tables say how often they differ and by how many steps (root cause minus first error).

:class:`CauseCollector` is fed the same records, in the same order, as the report's aggregator, so its arrays line
up with the report's per-error and per-annotation tables; :func:`cause_tables` reads both.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.records import AnnotationRecord
from .settings import AnalysisSettings
from .stats import LEVEL, bootstrap_intervals, ratio
from .trace_groups import first_error, roles, root_cause

TABLE_TITLES = {
    "errors_by_role": "Origin and propagated errors by category",
    "roles_by_group": "By {by}: origin and propagated errors, root cause against first error",
    "root_cause_vs_first_error": "Root cause against the first error",
    "root_cause_distance": "Root cause minus first error, in steps",
}
TABLE_NOTES = {
    "errors_by_role": "An origin error was caused by no wrong step; a propagated one by an earlier wrong step "
                      "(the annotators' cause links).",
    "roles_by_group": f"[low, high]: {LEVEL:.0%} percentile bootstrap interval, traces resampled within each group; "
                      "root_differs: share of the annotations with an error whose root cause is not their first error.",
    "root_cause_distance": "Per annotation with an error: how many steps after its first error its root cause is.",
}
#: per (group, trace) sums the group figures are ratios of
_UNIT_COLS = ("errors", "propagated", "with_error", "root_differs", "root_distance")


@dataclass
class CauseData:
    #: per error step of the report (its ``errors`` table's rows, in order): a propagated error
    propagated: np.ndarray
    #: per annotation (its ``traces`` table's rows): the root-cause step, -1 without one
    root: np.ndarray
    #: per annotation: the first error step, -1 without one
    first: np.ndarray


class CauseCollector:
    """Roles and root causes, one record at a time (a few bytes per error and per annotation)."""

    def __init__(self, settings: AnalysisSettings) -> None:
        self.s = settings
        self.propagated = array("b")
        self.root = array("i")
        self.first = array("i")

    def add(self, rec: AnnotationRecord) -> None:
        role = roles(rec, self.s)
        # rec.steps in order, wrong ones only: the order the report adds its error rows in
        self.propagated.extend(role[st.step_index] == "propagated" for st in rec.steps if st.step_index in role)
        root, first = root_cause(rec, self.s), first_error(rec, self.s)
        self.root.append(-1 if root is None else root)
        self.first.append(-1 if first is None else first)

    def finish(self) -> CauseData:
        def ints(a: array) -> np.ndarray:
            return np.frombuffer(a, np.int32).astype(np.int64) if len(a) else np.zeros(0, np.int64)

        propagated = np.frombuffer(self.propagated, np.int8).astype(bool) if len(self.propagated) else np.zeros(0, bool)
        return CauseData(propagated, ints(self.root), ints(self.first))


def _role_counts(errors: pd.DataFrame, propagated: np.ndarray) -> pd.DataFrame:
    e = pd.DataFrame({"category": errors["category"].astype(str).to_numpy(), "propagated": propagated})
    rows = [("(all)", e)] + [(c, g) for c, g in e.groupby("category", sort=True)]
    out = pd.DataFrame([{"category": c, "errors": len(g), "origin": int((~g["propagated"]).sum()),
                         "propagated": int(g["propagated"].sum())} for c, g in rows],
                       columns=["category", "errors", "origin", "propagated"])
    out["propagated_share"] = ratio(out["propagated"], out["errors"])
    return out


def _root_tables(root: np.ndarray, first: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    has = (root >= 0) & (first >= 0)
    dist = root[has] - first[has]
    differs = dist != 0
    n = int(has.sum())
    summary = pd.DataFrame([
        {"metric": "annotations with an error", "value": n},
        {"metric": "root cause is the first error", "value": int((~differs).sum())},
        {"metric": "root cause differs", "value": int(differs.sum())},
        {"metric": "share that differs", "value": float(differs.mean()) if n else np.nan},
        {"metric": "mean steps apart when they differ", "value": float(np.abs(dist[differs]).mean())
         if differs.any() else np.nan},
        {"metric": "most steps apart", "value": int(np.abs(dist).max()) if n else np.nan},
    ])
    values, counts = np.unique(dist, return_counts=True)
    distance = pd.DataFrame({"steps_after_first_error": values.astype(int), "annotations": counts.astype(int)})
    distance["share"] = ratio(distance["annotations"], n)
    return summary, distance


def _group_table(traces: pd.DataFrame, errors: pd.DataFrame, by: str, c: CauseData, resamples: int,
                 seed: int) -> pd.DataFrame:
    t = traces
    has = (c.root >= 0) & (c.first >= 0)
    per_row = pd.DataFrame({
        "group": t["group"].astype(str).to_numpy(), "trace_id": t["trace_id"].astype(str).to_numpy(),
        "errors": t["n_errors"].to_numpy(dtype=float),
        "propagated": np.bincount(errors["row"].to_numpy(), weights=c.propagated, minlength=len(t))
        if len(errors) else np.zeros(len(t)),
        "with_error": has.astype(float), "root_differs": (has & (c.root != c.first)).astype(float),
        "root_distance": np.where(has, np.abs(c.root - c.first), 0).astype(float)})
    units = per_row.groupby(["group", "trace_id"], sort=False).sum().reset_index()

    def figures(sums: np.ndarray) -> np.ndarray:
        errors, prop, with_error, differs, distance = (sums[..., i] for i in range(len(_UNIT_COLS)))
        return np.stack([ratio(prop, errors), ratio(differs, with_error), ratio(distance, differs)])

    names = ("propagated_share", "root_differs", "mean_steps_apart")
    rows = []
    for group, g in units.groupby("group", sort=False):
        counts = g[list(_UNIT_COLS)].to_numpy(dtype=float)
        total = counts.sum(axis=0)
        point = figures(total)
        low, high = bootstrap_intervals(counts, figures, resamples, seed)
        row = {by: group, "traces": len(g), "errors": int(total[0]), "origin": int(total[0] - total[1]),
               "propagated": int(total[1])}
        for i, name in enumerate(names):
            row.update({name: point[i], f"{name}_low": low[i], f"{name}_high": high[i]})
        rows.append(row)
    columns = [by, "traces", "errors", "origin", "propagated",
               *[f"{n}{s}" for n in names for s in ("", "_low", "_high")]]
    return pd.DataFrame(rows, columns=columns).sort_values(["errors", by], ascending=[False, True], ignore_index=True)


def cause_tables(c: CauseData | None, traces: pd.DataFrame, errors: pd.DataFrame, by: str | None, *,
                 resamples: int = 2000, seed: int = 0) -> dict:
    """``errors_by_role``, ``root_cause_vs_first_error`` and ``root_cause_distance``; with ``by`` also
    ``roles_by_group``, each figure with its bootstrap interval. ``traces`` and ``errors`` are the report's
    per-annotation and per-error tables, ``c`` what :class:`CauseCollector` gathered beside them."""
    if c is None:
        return {}
    tables = {"errors_by_role": _role_counts(errors, c.propagated)}
    tables["root_cause_vs_first_error"], tables["root_cause_distance"] = _root_tables(c.root, c.first)
    if by is not None:
        tables["roles_by_group"] = _group_table(traces, errors, by, c, resamples, seed)
    return tables


def has_causes(tables: dict) -> bool:
    """Whether the export says anything about causes: a propagated error, or a root cause apart from a first
    error (an export without cause links has neither, and the terminal summary leaves them out)."""
    roles_table = tables.get("errors_by_role")
    distance = tables.get("root_cause_distance")
    return bool((roles_table is not None and roles_table["propagated"].sum())
                or (distance is not None and (distance["steps_after_first_error"] != 0).any()))
