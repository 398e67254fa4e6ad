"""The report's tables, built from the aggregation (:class:`.ReportData`): errors by category, type, severity and
step type, score statistics, first errors, the failure modes; and the tables that compare groups, traces,
annotators and, with several annotators, their agreement. Plus how a figure reads in them (:func:`fmt`).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from ...core.labels import step_number
from .. import breakdown, causes
from ..correction import corrected_rates
from .aggregation import ReportData


def _share(counts: pd.Series) -> pd.Series:
    total = counts.sum()
    return counts / total if total else counts * 0.0


def _counts(errors: pd.DataFrame, col: str, order: list | None = None) -> pd.DataFrame:
    vc = errors[col].value_counts(dropna=True)
    vc = vc[vc > 0]
    df = pd.DataFrame({col: vc.index.astype(str), "count": vc.to_numpy()})
    if order is not None:
        rank = {k: i for i, k in enumerate(order)}
        df = df.sort_values(col, key=lambda c: c.map(lambda v: rank.get(v, len(rank))), ignore_index=True)
    else:
        df = df.sort_values(["count", col], ascending=[False, True], ignore_index=True)
    df["share"] = _share(df["count"])
    return df


def _score_stats(scores: pd.Series) -> dict:
    sc = scores.astype(float)
    n = len(sc)
    return {
        "n": n,
        "mean": sc.mean() if n else math.nan,
        "std": sc.std() if n > 1 else math.nan,
        "min": sc.min() if n else math.nan,
        "q25": sc.quantile(0.25) if n else math.nan,
        "median": sc.median() if n else math.nan,
        "q75": sc.quantile(0.75) if n else math.nan,
        "max": sc.max() if n else math.nan,
    }


def build_tables(d: ReportData, top: int = 10) -> dict:
    """The error tables by name (and ``_top``, the rows the HTML shows of the ranked ones)."""
    e, t = d.errors, d.traces
    tables: dict = {}
    tables["errors_by_category"] = _counts(e, "category")
    et = (e.groupby(["category", "error_type"], observed=True).size().rename("count").reset_index())
    et = et[et["count"] > 0].astype({"category": str, "error_type": str})
    et = et.sort_values(["count", "category", "error_type"], ascending=[False, True, True], ignore_index=True)
    et["share"] = _share(et["count"])
    tables["error_types"] = et
    sev = _counts(e, "severity", order=d.severity_order)
    weights = e.dropna(subset=["severity"]).groupby("severity", observed=True)["severity_weight"].first()
    sev["weight"] = sev["severity"].map(lambda k: weights.get(k, math.nan))
    tables["severity_distribution"] = sev
    rows = [{"group": "all", **_score_stats(t["final_score"])}]
    for o in d.outcome_order:
        rows.append({"group": f"{d.outcome_key}={o}", **_score_stats(t.loc[t["outcome"] == o, "final_score"])})
    tables["final_score_stats"] = pd.DataFrame(rows)
    fm = e.groupby(["category", "error_type"], observed=True).agg(
        count=("severity_weight", "size"), mean_severity_weight=("severity_weight", "mean")).reset_index()
    fm = fm[fm["count"] > 0].astype({"category": str, "error_type": str})
    fm["impact"] = fm["count"] * fm["mean_severity_weight"]
    tables["failure_modes_by_frequency"] = fm.sort_values(
        ["count", "impact", "category", "error_type"], ascending=[False, False, True, True], ignore_index=True)
    tables["failure_modes_by_impact"] = fm.sort_values(
        ["impact", "count", "category", "error_type"], ascending=[False, False, True, True],
        na_position="last", ignore_index=True)
    has = t["first_error_step"].notna()
    fe = t.loc[has, "first_error_step"].astype(int)
    pos = (fe / (t.loc[has, "n_steps"] - 1).clip(lower=1)).astype(float)
    n = len(t)
    tables["first_error_summary"] = pd.DataFrame([
        {"metric": "annotations", "value": n},
        {"metric": "annotations with an error", "value": int(has.sum())},
        {"metric": "share with an error", "value": (has.sum() / n) if n else math.nan},
        # as the UI numbers steps (#1 is step_index 0)
        {"metric": "mean first error step (#N)", "value": fe.mean() + 1 if len(fe) else math.nan},
        {"metric": "median first error step (#N)", "value": fe.median() + 1 if len(fe) else math.nan},
        {"metric": "mean first error position (0-1)", "value": pos.mean() if len(pos) else math.nan},
        {"metric": "median first error position (0-1)", "value": pos.median() if len(pos) else math.nan},
    ])
    dist = fe.value_counts().sort_index()
    fed = pd.DataFrame({"first_error_step": [step_number(int(i)) for i in dist.index],
                        "step_index": dist.index.astype(int), "count": dist.to_numpy()})
    fed["share"] = _share(fed["count"])
    tables["first_error_position"] = fed
    tables["errors_by_step_type"] = d.step_types
    cs = e.dropna(subset=["severity"])
    ct = pd.crosstab(cs["category"].astype(str), cs["severity"].astype(str)) if len(cs) else pd.DataFrame()
    if len(ct):
        ct = ct[[c for c in d.severity_order if c in ct.columns]]
    ct.index.name = "category"
    tables["category_by_severity"] = ct.reset_index() if len(ct) else pd.DataFrame({"category": []})
    tables["_top"] = top
    return tables


def comparison_tables(d: ReportData, *, task_link: Callable[[int, int], str] | None = None,
                      agreement=None, resamples: int = 2000, seed: int = 0, judge=None) -> dict:
    """The tables that compare: with a judge's measured errors (:class:`~..correction.JudgeErrors`) the error rates
    corrected for them, groups (with ``d.by``), traces worst first, annotators, the cause tables, and with an
    :class:`~..agreement.AgreementResult` the agreement and the adjudication list."""
    tables: dict = {}
    if judge is not None:
        tables["corrected_error_rates"] = corrected_rates(d.traces, d.errors, judge, d.by)
    if d.by is not None:
        tables["groups"], tables["group_error_rates"] = breakdown.group_tables(
            d.traces, d.errors, d.by, resamples=resamples, seed=seed)
    tables["traces_worst_first"] = breakdown.trace_table(d.traces, task_link, d.by)
    tables["annotators"] = breakdown.annotator_table(d.traces)
    tables.update(causes.cause_tables(d.causes, d.traces, d.errors, d.by, resamples=resamples, seed=seed))
    if agreement is not None and agreement.statistics:
        tables.update(_agreement_tables(agreement, d, task_link))
    return tables


def _agreement_tables(r, d: ReportData, task_link) -> dict:
    rows = []
    for key in ("correctness", "is_error", "error_category", "error_type", "severity"):
        b = r.statistics.get(key)
        if b:
            rows.append({"what": key, "units": b["units"],
                         "krippendorff_alpha": b.get("krippendorff_alpha", b.get("krippendorff_alpha_ordinal")),
                         "kappa": b.get("cohen_kappa", b.get("fleiss_kappa")),
                         "percent_agreement": b.get("percent_agreement")})
    fe = r.first_error
    within = f"within_{fe['k']}"
    first = pd.DataFrame([{"annotator_pairs": fe["pairs"], "exact": fe["exact"], within: fe[within],
                           "both_no_error": fe["both_no_error"],
                           "only_one_found_an_error": fe["only_one_found_an_error"]}])
    per = pd.DataFrame(r.per_annotator, columns=["annotator", "annotations", "steps_compared",
                                                 "agreement_with_majority", "kappa_with_majority", "error_rate",
                                                 "majority_error_rate"])
    where = d.traces.drop_duplicates("trace_id").set_index("trace_id")[["project_id", "task_id"]] if len(d.traces) \
        else pd.DataFrame(columns=["project_id", "task_id"])

    def link(tid: str):
        if task_link is None or tid not in where.index:
            return None
        pid, task = where.at[tid, "project_id"], where.at[tid, "task_id"]
        return None if pd.isna(pid) or pd.isna(task) else task_link(int(pid), int(task))

    adj = pd.DataFrame([{k: x[k] for k in ("trace_id", "disputedness", "steps_in_dispute", "correctness_disputes",
                                           "error_type_disputes", "severity_disputes", "first_errors")}
                        | {"link": link(x["trace_id"])} for x in r.disagreements],
                       columns=["trace_id", "disputedness", "steps_in_dispute", "correctness_disputes",
                                "error_type_disputes", "severity_disputes", "first_errors", "link"])
    return {"agreement": pd.DataFrame(rows, columns=["what", "units", "krippendorff_alpha", "kappa",
                                                     "percent_agreement"]),
            "first_error_agreement": first, "agreement_per_annotator": per, "adjudication": adj}


def fmt(v) -> str:
    """A cell as the report prints it: 3 decimals at most, thousands grouped from 10,000, "–" for nothing."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "–"
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(v):
            return str(v)
        text = f"{v:.3f}".rstrip("0").rstrip(".")
        return "0" if text == "-0" else text
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}" if abs(int(v)) >= 10000 else str(int(v))
    return str(v)


def with_intervals(df: pd.DataFrame) -> pd.DataFrame:
    """A figure and its ``_low``/``_high`` bounds as one column: "0.25 [0.1, 0.4]"."""
    out = pd.DataFrame(index=df.index)
    for c in df.columns:
        if c.endswith(("_low", "_high")) and c.rsplit("_", 1)[0] in df.columns:
            continue
        if f"{c}_low" in df.columns and f"{c}_high" in df.columns:
            out[c] = [f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]" if not pd.isna(v) else "–"
                      for v, lo, hi in zip(df[c], df[f"{c}_low"], df[f"{c}_high"])]
        else:
            out[c] = df[c]
    return out


def summary_facts(d: ReportData) -> list:
    """The report's headline figures, as (what, formatted value) pairs."""
    t, e = d.traces, d.errors
    facts: list[tuple[str, object]] = [
        ("annotations", len(t)),
        ("traces", int(t["trace_id"].nunique()) if len(t) else 0),
        ("annotators", d.annotators),
        ("steps", int(t["n_steps"].sum()) if len(t) else 0),
        ("errors", len(e)),
        ("mean final score", float(t["final_score"].mean()) if len(t) else math.nan),
        ("median final score", float(t["final_score"].median()) if len(t) else math.nan),
    ]
    if len(e):
        cat = e["category"].value_counts()
        facts.append(("most common category", f"{cat.index[0]} ({int(cat.iloc[0])})"))
    if d.score_mismatches:
        facts.append(("final_score in file differs from recomputed", d.score_mismatches))
    if d.errors_input:
        facts.append(("rejected lines", len(d.errors_input)))
    return [(k, fmt(v)) for k, v in facts]
