"""Error rates of labels that came from a judge, corrected for the judge's measured error (``report --judge-align``).

A judge that misses errors (sensitivity Se below 1) and invents some (specificity Sp below 1) reports an apparent
error rate p that is not the true one. Rogan and Gladen (1978): the true rate is (p + Sp − 1) / (Se + Sp − 1),
clipped to [0, 1]; undefined when Se + Sp ≤ 1 (a judge no better than chance). Se and Sp come from ``align``
of that judge against gold labels (its ``align.json``: ``per_trace_counts``), for the error flag (any error) and
for each category (the category against all others).

The interval is the delta method's: with J = Se + Sp − 1 and π the corrected rate,
Var(π) = [Var(p) + π² Var(Se) + (1 − π)² Var(Sp) − 2π(1 − π) Cov(Se, Sp)] / J², the 95% interval π ± 1.96 √Var
clipped to [0, 1]. Each variance is the linearization variance of a ratio over traces
(:func:`.stats.ratio_variance`: steps of one trace are not independent; with one step per trace it is the binomial
p(1 − p)/n); Se and Sp are counted on the same alignment traces, hence their covariance. p is taken independent of
Se and Sp: the report's labels and the alignment's are different data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from ..core.errors import UserError
from ..core.jsonfiles import TraceError, load_located
from .align import COUNT_COLUMNS, NO_CATEGORY
from .stats import LEVEL, ratio_covariance, ratio_variance

#: the row of the error flag (any error) in the corrected table
ANY_ERROR = "(any error)"
#: the report's name for an error without a category, and align's
_REPORT_NO_CATEGORY = "(none)"


@dataclass
class JudgeErrors:
    """A judge's errors per alignment trace, for the error flag and each category: rows of [tp, fp, fn, tn]."""

    source: str
    flag: np.ndarray
    categories: dict[str, np.ndarray]

    @property
    def traces(self) -> int:
        return len(self.flag)


def read_alignment(path: str | Path) -> JudgeErrors:
    """A judge's errors from an ``align.json`` (``align --out DIR``, or ``align --json > FILE``)."""
    source = str(path)
    doc = load_located(path)
    if isinstance(doc, TraceError):
        raise UserError(str(doc))
    counts = doc.get("per_trace_counts") if isinstance(doc, dict) else None
    if not isinstance(counts, dict) or not isinstance(counts.get("columns"), list) \
            or not isinstance(counts.get("rows"), list):
        raise UserError(f"{source}: per_trace_counts: missing; write the file with this version's `ls-trajeval align "
                        f"--out DIR` (DIR/align.json)")
    columns = counts["columns"]
    if columns[1:1 + len(COUNT_COLUMNS)] != list(COUNT_COLUMNS):
        raise UserError(f"{source}: per_trace_counts.columns: expected trace_id, {', '.join(COUNT_COLUMNS)} first")
    rows = []
    for i, row in enumerate(counts["rows"]):
        if not isinstance(row, list) or len(row) != len(columns) or \
                any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in row[1:]):
            raise UserError(f"{source}: per_trace_counts.rows[{i}]: expected {len(columns)} values, counts "
                            "non-negative integers")
        rows.append(row[1:])
    if not rows:
        raise UserError(f"{source}: per_trace_counts: no traces were paired in that alignment")
    a = np.asarray(rows, dtype=float)
    steps, tp, fp, fn, tn = (a[:, i] for i in range(len(COUNT_COLUMNS)))
    categories = {}
    for j in range(len(COUNT_COLUMNS), len(columns) - 1, 3):
        name = str(columns[1 + j]).split(":", 1)[-1]
        gold, pred, both = a[:, j], a[:, j + 1], a[:, j + 2]
        categories[name] = np.stack([both, pred - both, gold - both, steps - gold - pred + both], axis=1)
    return JudgeErrors(source, np.stack([tp, fp, fn, tn], axis=1), categories)


@dataclass(frozen=True)
class Corrected:
    apparent: float
    sensitivity: float
    specificity: float
    value: float
    low: float
    high: float


def rogan_gladen(errors, steps, judge: np.ndarray, level: float = LEVEL) -> Corrected:
    """The corrected error rate from the apparent one (``errors`` and ``steps`` per trace) and the judge's
    per-alignment-trace [tp, fp, fn, tn] (see the module docstring)."""
    errors, steps = np.asarray(errors, dtype=float), np.asarray(steps, dtype=float)
    tp, fp, fn, tn = (judge[:, i] for i in range(4))
    p = errors.sum() / steps.sum() if steps.sum() > 0 else math.nan
    se = tp.sum() / (tp + fn).sum() if (tp + fn).sum() > 0 else math.nan
    sp = tn.sum() / (tn + fp).sum() if (tn + fp).sum() > 0 else math.nan
    j = se + sp - 1
    if not (math.isfinite(p) and math.isfinite(j)) or j <= 0:
        return Corrected(p, se, sp, math.nan, math.nan, math.nan)
    pi = (p + sp - 1) / j
    se_var, sp_var = ratio_variance(tp, tp + fn), ratio_variance(tn, tn + fp)
    covariance = ratio_covariance(tp, tp + fn, tn, tn + fp)
    var = (ratio_variance(errors, steps) + pi ** 2 * se_var + (1 - pi) ** 2 * sp_var
           - 2 * pi * (1 - pi) * covariance) / j ** 2
    half = float(norm.ppf(0.5 + level / 2)) * math.sqrt(max(var, 0.0))

    def clip(x: float) -> float:
        return min(1.0, max(0.0, x))

    return Corrected(p, se, sp, clip(pi), clip(pi - half), clip(pi + half))


def corrected_rates(traces: pd.DataFrame, errors: pd.DataFrame, judge: JudgeErrors, by: str | None = None
                    ) -> pd.DataFrame:
    """The report's error rate (any error, then per category), apparent and corrected, overall and with ``by`` per
    group: ``traces`` and ``errors`` are the report's per-annotation and per-error tables. Annotation lines of one
    trace count together, as one unit."""
    categories = sorted({str(c) for c in errors["category"]}) if len(errors) else []
    lines = pd.DataFrame({"trace_id": traces["trace_id"].astype(str), "steps": traces["n_steps"].astype(float),
                          "errors": traces["n_errors"].astype(float),
                          "group": traces["group"].astype(str) if by is not None else ""})
    for c in categories:
        per_line = errors.loc[errors["category"].astype(str) == c, "row"].value_counts()
        lines[f"cat:{c}"] = per_line.reindex(range(len(traces)), fill_value=0).to_numpy(dtype=float)
    groups = [("", lines)] if by is None else [("", lines), *lines.groupby("group", sort=True)]
    rows = []
    for group, part in groups:
        units = part.groupby("trace_id", sort=False).sum(numeric_only=True)
        for what, column, counts in [(ANY_ERROR, "errors", judge.flag),
                                     *[(c, f"cat:{c}", judge.categories.get(
                                         NO_CATEGORY if c == _REPORT_NO_CATEGORY else c)) for c in categories]]:
            r = rogan_gladen(units[column], units["steps"], counts) if counts is not None else \
                Corrected(units[column].sum() / units["steps"].sum(), math.nan, math.nan, math.nan, math.nan, math.nan)
            row = {"what": what, "errors": int(units[column].sum()), "steps": int(units["steps"].sum()),
                   "apparent_rate": r.apparent, "sensitivity": r.sensitivity, "specificity": r.specificity,
                   "corrected_rate": r.value, "corrected_rate_low": r.low, "corrected_rate_high": r.high}
            rows.append({by: group or "(all)", **row} if by is not None else row)
    columns = ([by] if by is not None else []) + ["what", "errors", "steps", "apparent_rate", "sensitivity",
                                                  "specificity", "corrected_rate", "corrected_rate_low",
                                                  "corrected_rate_high"]
    return pd.DataFrame(rows, columns=columns)
