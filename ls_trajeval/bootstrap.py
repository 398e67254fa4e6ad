"""Bootstrap intervals by resampling units (traces): one place for the resampling and the interval.

Figures here are ratios of sums over units (steps over traces, scores over annotations), so a resample is a
vector of multinomial weights over the units and a resampled figure is a function of ``weights @ counts``.
The interval is the percentile interval over the resamples where the figure is defined.
"""
from __future__ import annotations

import math

import numpy as np

LEVEL = 0.95


def resample_sums(counts: np.ndarray, resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """(resamples, k) sums of the (units, k) ``counts`` over bootstrap resamples of the units."""
    counts = np.asarray(counts, dtype=float)
    n = len(counts)
    if n == 0 or resamples <= 0:
        return np.zeros((0, counts.shape[1] if counts.ndim == 2 else 0))
    weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=resamples)
    return weights @ counts


def ratio(num, den) -> np.ndarray:
    """num / den, NaN where den is 0 (the figure is undefined there)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def interval(samples, level: float = LEVEL) -> tuple:
    """Percentile interval of the finite ``samples``; (nan, nan) when there are none."""
    s = np.asarray(samples, dtype=float)
    s = s[np.isfinite(s)]
    if not len(s):
        return math.nan, math.nan
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(s, [tail, 100 - tail])
    return float(lo), float(hi)
