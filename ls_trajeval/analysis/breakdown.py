"""The report's answer to "which agent or model fails where": figures per group with bootstrap intervals, the traces
worst first, and the annotators side by side. Pure: it reads the report's per-annotation and per-error tables.

**Groups** (``report --by KEY``): the annotations are grouped by the value of a trace-metadata key or record field.
Per group: the error rate (error steps / steps) overall and per category, the mean final score, the share of
annotations with an error, and where the first error is (its position, 0 = first step and 1 = last, and its step as
the UI numbers it); each with a 95% percentile bootstrap interval. The resampled unit is a trace within its group
(all its annotations together), since the steps and annotations of one trace are not independent.

**Traces**: one row per trace, the lowest mean final score first, then the most errors.

**Annotators**: per annotator the errors marked per trace, the mean final score and the time per trace
(Label Studio's ``lead_time``, seconds from opening the task to submitting).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from ..core.labels import step_number
from .stats import LEVEL, bootstrap_intervals, ratio

#: the per-group figures, in the order of their columns
GROUP_FIGURES = ("error_rate", "mean_final_score", "share_with_error", "first_error_position", "first_error_step")


def _first_error_position(traces: pd.DataFrame) -> pd.Series:
    fe = traces["first_error_step"].astype("Float64")
    return (fe / (traces["n_steps"] - 1).clip(lower=1)).astype(float)


def _unit_counts(traces: pd.DataFrame, errors: pd.DataFrame, categories: list) -> pd.DataFrame:
    """Per (group, trace): the sums every group figure is a ratio of."""
    t = pd.DataFrame({
        "group": traces["group"].astype(str), "trace_id": traces["trace_id"].astype(str),
        "annotations": 1, "steps": traces["n_steps"].astype(float), "errors": traces["n_errors"].astype(float),
        "score": traces["final_score"].astype(float),
        "with_error": traces["first_error_step"].notna().astype(float),
        "fe_position": _first_error_position(traces).fillna(0.0),
        "fe_step": traces["first_error_step"].astype("Float64").fillna(0).astype(float),
    })
    if len(errors) and categories:
        per_cat = pd.crosstab(errors["row"], errors["category"].astype(str)).reindex(columns=categories, fill_value=0)
        per_cat = per_cat.reindex(range(len(traces)), fill_value=0)
        for c in categories:
            t[f"cat:{c}"] = per_cat[c].to_numpy(dtype=float)
    return t.groupby(["group", "trace_id"], observed=True, sort=False).sum().reset_index()


def _figures(n_cats: int) -> Callable:
    def figures(sums: np.ndarray) -> np.ndarray:
        a, steps, errors, score, with_err, pos, step = (sums[..., i] for i in range(7))
        out = [ratio(errors, steps), ratio(score, a), ratio(with_err, a), ratio(pos, with_err),
               ratio(step, with_err) + 1]  # the mean first error as the UI numbers steps
        out += [ratio(sums[..., 7 + j], steps) for j in range(n_cats)]
        return np.stack(out)
    return figures


def group_tables(traces: pd.DataFrame, errors: pd.DataFrame, by: str, *, resamples: int = 2000,
                 seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(figures per group, error rate per group and category), each figure with ``_low``/``_high`` bounds.

    ``traces`` is the report's per-annotation table with its ``group`` column; ``errors`` its per-error table.
    Groups are listed by their number of annotations, most first."""
    categories = sorted({str(c) for c in errors["category"]}) if len(errors) else []
    units = _unit_counts(traces, errors, categories)
    cols = ["annotations", "steps", "errors", "score", "with_error", "fe_position", "fe_step",
            *[f"cat:{c}" for c in categories]]
    figures = _figures(len(categories))
    rows, cat_rows = [], []
    for group, g in units.groupby("group", sort=False):
        counts = g[cols].to_numpy(dtype=float)
        total = counts.sum(axis=0)
        point = figures(total)
        low, high = bootstrap_intervals(counts, figures, resamples, seed)
        row = {by: group, "annotations": int(total[0]), "traces": len(g), "steps": int(total[1]),
               "errors": int(total[2])}
        for i, name in enumerate(GROUP_FIGURES):
            row.update({name: point[i], f"{name}_low": low[i], f"{name}_high": high[i]})
        rows.append(row)
        for j, c in enumerate(categories):
            i = len(GROUP_FIGURES) + j
            cat_rows.append({by: group, "category": c, "errors": int(total[7 + j]), "steps": int(total[1]),
                             "error_rate": point[i], "error_rate_low": low[i], "error_rate_high": high[i]})
    table = pd.DataFrame(rows, columns=[by, "annotations", "traces", "steps", "errors",
                                        *[f"{n}{s}" for n in GROUP_FIGURES for s in ("", "_low", "_high")]])
    table = table.sort_values(["annotations", by], ascending=[False, True], ignore_index=True)
    cats = pd.DataFrame(cat_rows, columns=[by, "category", "errors", "steps", "error_rate", "error_rate_low",
                                           "error_rate_high"])
    return table, cats


def trace_table(traces: pd.DataFrame, link: Callable[[int, int], str] | None = None,
                by: str | None = None) -> pd.DataFrame:
    """One row per trace, worst first: the lowest mean final score, then the most errors per annotation. First
    errors as the UI numbers steps, one per annotation; ``link(project_id, task_id)`` gives each row its task's
    address in Label Studio. With ``by``, a column of that name holds the trace's groups (several when the key is
    a field of the annotation, such as ``annotator``)."""
    has_group = by not in (None, "trace_id") and "group" in traces.columns
    rows = []
    for tid, t in traces.groupby("trace_id", observed=True, sort=False):
        firsts = [step_number(int(v)) if not pd.isna(v) else "none" for v in t["first_error_step"]]
        pid, task = t["project_id"].iloc[0], t["task_id"].iloc[0]
        row: dict[str, object] = {"trace_id": str(tid)}
        if has_group and by is not None:
            row[by] = ", ".join(sorted({str(g) for g in t["group"]}))
        row.update({"annotations": len(t), "mean_final_score": float(t["final_score"].mean()),
                    "min_final_score": float(t["final_score"].min()),
                    "errors_per_annotation": float(t["n_errors"].mean()),
                    "first_errors": ", ".join(firsts), "steps": int(t["n_steps"].max())})
        row["link"] = link(int(pid), int(task)) if link is not None and not pd.isna(pid) and not pd.isna(task) else None
        rows.append(row)
    columns = ["trace_id", *([by] if has_group else []), "annotations", "steps", "mean_final_score",
               "min_final_score", "errors_per_annotation", "first_errors", "link"]
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["mean_final_score", "errors_per_annotation", "trace_id"], ascending=[True, False, True],
                           ignore_index=True)


def annotator_table(traces: pd.DataFrame) -> pd.DataFrame:
    """Per annotator: annotations, traces, errors marked per trace, mean final score, and the seconds spent per
    trace (mean and median of ``lead_time`` over the annotations that have one)."""
    rows = []
    for who, t in traces.groupby("annotator", observed=True, sort=True):
        lead = t["lead_time"].dropna()
        rows.append({"annotator": str(who), "annotations": len(t), "traces": int(t["trace_id"].nunique()),
                     "errors_per_trace": float(t["n_errors"].mean()),
                     "mean_final_score": float(t["final_score"].mean()),
                     "seconds_per_trace": float(lead.mean()) if len(lead) else math.nan,
                     "median_seconds_per_trace": float(lead.median()) if len(lead) else math.nan,
                     "timed_annotations": len(lead)})
    return pd.DataFrame(rows, columns=["annotator", "annotations", "traces", "errors_per_trace", "mean_final_score",
                                       "seconds_per_trace", "median_seconds_per_trace", "timed_annotations"])


INTERVAL_NOTE = f"[low, high]: {LEVEL:.0%} percentile bootstrap interval, traces resampled within each group"
