"""Figures as PNG bytes: matplotlib's object API on an Agg canvas of their own (no pyplot state, no backend switch),
for the report's plots and align's confusion matrix."""
from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def figure(w: float = 8, h: float = 4) -> Figure:
    """A figure of ``w`` x ``h`` inches on its own Agg canvas."""
    fig = Figure(figsize=(w, h), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    """A figure as PNG bytes."""
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    return buf.getvalue()
