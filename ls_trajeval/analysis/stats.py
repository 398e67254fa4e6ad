"""Statistics from maintained libraries (statsmodels for Cohen's and Fleiss' kappa, krippendorff for alpha, scipy
for bootstrap intervals), as small functions over label arrays and count tables; undefined values come back as
NaN. Anything that compares raters or judges (``agreement``, ``align``) or puts an interval on a figure
(``align``, ``report --by``) builds its tables and calls these.
"""
from __future__ import annotations

import math
import warnings

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


def krippendorff_alpha(value_counts: np.ndarray, level: str = "nominal", value_domain=None) -> float:
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
