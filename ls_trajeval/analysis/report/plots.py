"""The report's plots, as PNG bytes (:mod:`..figures`)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..figures import figure, png
from .aggregation import MAX_CURVE_STEPS, POSITION_GRID, ReportData


def _empty(ax, msg: str = "no data") -> None:
    ax.text(0.5, 0.5, msg, ha="center", va="center", transform=ax.transAxes, color="grey")


def plot_error_positions(d: ReportData) -> bytes:
    """Where in a trace errors occur: a histogram over the normalised position."""
    fig = figure()
    ax = fig.add_subplot()
    pos = d.errors["position"].to_numpy()
    if len(pos):
        ax.hist(pos, bins=20, range=(0, 1), edgecolor="black", alpha=0.75)
    else:
        _empty(ax, "no errors")
    ax.set_xlim(0, 1)
    ax.set_xlabel("position in trace (0 = first step, 1 = last step)")
    ax.set_ylabel("errors")
    ax.set_title("Where errors occur")
    return png(fig)


def plot_final_scores(d: ReportData) -> bytes:
    """The final scores, stacked by outcome."""
    fig = figure()
    ax = fig.add_subplot()
    t = d.traces
    if len(t):
        groups = [(o, t.loc[t["outcome"] == o, "final_score"].to_numpy()) for o in d.outcome_order]
        groups = [(o, g) for o, g in groups if len(g)]
        lo, hi = float(t["final_score"].min()), float(t["final_score"].max())
        bins = np.linspace(lo, hi if hi > lo else lo + 1, 21).tolist()
        ax.hist([g for _, g in groups], bins=bins, stacked=True, label=[str(o) for o, _ in groups], edgecolor="black")
        ax.legend(title=d.outcome_key)
    else:
        _empty(ax)
    ax.set_xlabel("final score")
    ax.set_ylabel("annotations")
    ax.set_title("Final-score distribution")
    return png(fig)


def plot_running_scores(d: ReportData, x: str = "position") -> bytes:
    """The running score along the trace (median and interquartile range) per outcome."""
    fig = figure(8, 4.5)
    ax = fig.add_subplot()
    t = d.traces
    curves = d.curves_pos if x == "position" else d.curves_step
    xs = POSITION_GRID if x == "position" else np.arange(MAX_CURVE_STEPS)
    drawn = False
    for o in d.outcome_order:
        mask = (t["outcome"] == o).to_numpy()
        if not mask.any():
            continue
        c = curves[mask]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns past the longest trace
            q = np.nanpercentile(c, [25, 50, 75], axis=0)
        keep = ~np.isnan(q[1])
        line, = ax.plot(xs[keep], q[1][keep], label=f"{o} (n={int(mask.sum())})")
        ax.fill_between(xs[keep], q[0][keep], q[2][keep], alpha=0.15, color=line.get_color(), step=None)
        drawn = True
    if drawn:
        ax.legend(title=f"{d.outcome_key}: median, IQR")
    else:
        _empty(ax)
    ax.set_xlabel("position in trace (0 = start, 1 = end)" if x == "position" else "step index")
    ax.set_ylabel("running score")
    ax.set_title("Running score across traces")
    return png(fig)


def plot_heatmap(d: ReportData, table: pd.DataFrame) -> bytes:
    """Errors by category and severity, from the ``category_by_severity`` table."""
    fig = figure(7, 0.5 + 0.45 * max(len(table), 3))
    ax = fig.add_subplot()
    if len(table) and table.shape[1] > 1:
        m = table.set_index("category")
        im = ax.imshow(m.to_numpy(), aspect="auto", cmap="Reds", vmin=0)
        ax.set_xticks(range(m.shape[1]), list(m.columns))
        ax.set_yticks(range(m.shape[0]), list(m.index))
        vmax = m.to_numpy().max() or 1
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                v = int(m.iat[i, j])
                ax.text(j, i, str(v), ha="center", va="center", color="white" if v > 0.6 * vmax else "black")
        fig.colorbar(im, ax=ax, label="errors")
    else:
        _empty(ax, "no errors with a severity")
    ax.set_title("Errors by category and severity")
    return png(fig)
