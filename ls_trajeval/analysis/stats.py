"""Statistics from maintained libraries (statsmodels for Cohen's and Fleiss' kappa and the intervals of a proportion,
krippendorff for alpha, scipy for bootstrap intervals), as small functions over label arrays and count tables;
undefined values come back as NaN. Anything that compares raters or judges (``agreement``, ``align``) or puts an
interval on a figure (``align``, ``align --certify``, ``report --by``, the judges' audit) builds its tables and calls
these.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np
from scipy.stats import DegenerateDataWarning, bootstrap
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss_kappa


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two equal-length label arrays (any hashable labels)."""
    a = np.asarray(a)
    b = np.asarray(b)
    n = len(a)
    if n == 0:
        return math.nan
    labels, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    table = np.zeros((len(labels), len(labels)))
    np.add.at(table, (inv[:n], inv[n:]), 1)
    return cohen_kappa_table(table)


def cohen_kappa_table(table: np.ndarray) -> float:
    """Cohen's kappa from a square contingency table (rows rater 1, columns rater 2)."""
    t = np.asarray(table, dtype=float)
    if t.sum() == 0 or np.count_nonzero(t.sum(axis=0) + t.sum(axis=1)) < 2:
        # no ratings, or both raters used one and the same label throughout: agreement is perfect, kappa undefined
        return math.nan
    return float(cohens_kappa(t, return_results=False))


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa from a units x categories table of rating counts (same raters per unit)."""
    c = np.asarray(counts, dtype=float)
    if c.shape[0] == 0 or c.shape[1] < 1:
        return math.nan
    p = c.sum(axis=0) / c.sum()
    if (p ** 2).sum() >= 1.0:
        return math.nan  # one category throughout: chance agreement is 1
    return float(_fleiss_kappa(c, method="fleiss"))


def krippendorff_alpha(value_counts: np.ndarray, level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal",
                       value_domain=None) -> float:
    """Krippendorff's alpha from a units x values table of rating counts (units with <2 ratings ignored)."""
    vc = np.asarray(value_counts, dtype=float)
    if vc.ndim != 2 or vc.shape[0] == 0:
        return math.nan
    vc = vc[vc.sum(axis=1) >= 2]
    if vc.shape[0] == 0:
        return math.nan
    used = vc.sum(axis=0) > 0
    if used.sum() < 2:
        # a single value everywhere: observed and expected disagreement are both zero
        return math.nan
    if value_domain is None:
        vc = vc[:, used]
        value_domain = list(range(vc.shape[1]))
    try:
        return float(krippendorff.alpha(value_counts=vc, value_domain=value_domain, level_of_measurement=level))
    except (ValueError, ZeroDivisionError):
        return math.nan


def counts_table(matrix: np.ndarray, n_values: int) -> np.ndarray:
    """A units x raters matrix of value codes (-1 = not rated) as the units x values count table the functions
    above take."""
    units = np.repeat(np.arange(matrix.shape[0]), matrix.shape[1])
    vals = matrix.ravel()
    ok = vals >= 0
    out = np.zeros((matrix.shape[0], max(n_values, 1)))
    np.add.at(out, (units[ok], vals[ok]), 1)
    return out


#: the confidence level of every interval the analysis prints
LEVEL = 0.95


def bootstrap_intervals(counts: np.ndarray, figures, resamples: int = 2000, seed: int = 0,
                        level: float = LEVEL) -> tuple:
    """Percentile bootstrap intervals of figures computed from column sums, resampling the units (rows).

    ``counts`` is units x k (one row per trace: its steps, errors, matches, ...); ``figures(sums)`` maps sums of
    shape (..., k) to the figures, shape (m, ...). Units are resampled rather than steps because the steps of one
    trace are not independent. A figure undefined (NaN) on some resamples, such as a precision when a resample
    holds no predicted error, gets the interval of the resamples where it is defined; (NaN, NaN) when there are
    none, or no units, or ``resamples`` is 0; one unit's interval is its value. Returns (low, high), arrays of
    length m.
    """
    counts = np.asarray(counts, dtype=float)
    point = np.atleast_1d(np.asarray(figures(counts.sum(axis=0)), dtype=float))
    m = len(point)
    if len(counts) == 0 or resamples <= 0:
        return np.full(m, np.nan), np.full(m, np.nan)
    if len(counts) == 1:  # every resample is the one unit (scipy wants two)
        return point.copy(), point.copy()

    def statistic(rows, axis=-1):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(figures(counts[rows].sum(axis=-2)), dtype=float)

    # the distribution only: scipy's own percentile interval turns NaN as soon as one resample is undefined
    # resamples in batches of about a million cells (a batch holds its resampled rows)
    batch = max(1, 1_000_000 // counts.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)  # NaN resamples: handled below
        result = bootstrap((np.arange(len(counts)),), statistic, n_resamples=resamples, batch=batch, vectorized=True,
                           method="percentile", confidence_level=level, rng=np.random.default_rng(seed))
    dist = result.bootstrap_distribution.reshape(m, -1)
    tail = (1 - level) / 2 * 100
    low, high = np.full(m, np.nan), np.full(m, np.nan)
    for i, row in enumerate(dist):
        ok = row[np.isfinite(row)]
        if len(ok):
            low[i], high[i] = np.percentile(ok, [tail, 100 - tail])
    return low, high


def ratio(num, den) -> np.ndarray:
    """num / den, NaN where den is 0 (the figure is undefined there)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def ratio_covariance(y1, x1, y2, x2) -> float:
    """The covariance of two ratios Σy/Σx counted over the same independent units (rows: traces) whose parts
    (steps) need not be: the linearization estimator Σ e1·e2 / (Σx1 · Σx2), with e = y − (Σy/Σx)·x per unit.
    NaN when a ratio has no denominator. With one trial per unit it is the binomial variance p(1 − p)/n."""
    y1, x1, y2, x2 = (np.asarray(a, dtype=float) for a in (y1, x1, y2, x2))
    n1, n2 = x1.sum(), x2.sum()
    if len(x1) == 0 or n1 <= 0 or n2 <= 0:
        return math.nan
    e1, e2 = y1 - y1.sum() / n1 * x1, y2 - y2.sum() / n2 * x2
    return float((e1 * e2).sum() / (n1 * n2))


def ratio_variance(y, x) -> float:
    """The variance of the ratio Σy/Σx over independent units (see :func:`ratio_covariance`)."""
    return ratio_covariance(y, x, y, x)


#: the intervals of a proportion :func:`proportion_interval` computes (statsmodels' names in brackets)
INTERVAL_METHODS = {"wilson": "wilson", "clopper-pearson": "beta"}


@dataclass(frozen=True)
class Proportion:
    """A proportion with its interval; ``trials`` (steps, traces) are counted over ``units`` (traces), worth
    ``effective`` independent trials."""

    value: float
    low: float
    high: float
    successes: float
    trials: float
    units: int
    effective: float
    method: str

    def to_json(self) -> dict:
        def num(v: float) -> float | None:
            return round(float(v), 6) if math.isfinite(v) else None
        return {"value": num(self.value), "ci_low": num(self.low), "ci_high": num(self.high),
                "successes": num(self.successes), "trials": num(self.trials), "units": self.units,
                "effective_trials": num(self.effective), "interval": self.method}


def proportion_interval(y, x, method: str = "wilson", level: float = LEVEL) -> Proportion:
    """Σy/Σx over units (one row per trace: its successes and trials) and its ``level`` interval: Wilson's or
    Clopper–Pearson's (statsmodels), on the effective number of trials of Korn and Graubard (1998): the trials over
    the design effect, the ratio's linearization variance (:func:`ratio_variance`) over the binomial one, taken at
    least 1 (steps of one trace that err together are worth fewer than independent steps, never more). With one
    trial per unit the design effect is 1 and the interval is the textbook one."""
    from statsmodels.stats.proportion import proportion_confint

    y, x = np.asarray(y, dtype=float), np.asarray(x, dtype=float)
    successes, trials = float(y.sum()), float(x.sum())
    if trials <= 0:
        return Proportion(math.nan, math.nan, math.nan, successes, trials, len(x), 0.0, method)
    p = successes / trials
    binomial = p * (1 - p) / trials
    deff = max(1.0, ratio_variance(y, x) / binomial) if binomial > 0 else 1.0
    effective = trials / deff
    low, high = proportion_confint(p * effective, effective, alpha=1 - level, method=INTERVAL_METHODS[method])
    return Proportion(p, float(low), float(high), successes, trials, len(x), effective, method)
