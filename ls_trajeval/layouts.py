"""The two layouts by name (apart from :mod:`labelconfig`, which needs Jinja2 and the config model, so that
the CLI can offer them without importing either)."""
from __future__ import annotations

LAYOUTS = ("transcript", "paged")
#: Above this many steps the paged layout gets slow to open: benchmarks/bench_browser.py measured
#: ~0.15 s per step (loaded machine; 30.8 s at 200 steps, as slow as the naive Repeater), so 60 keeps it near 5 s idle.
PAGED_MAX_STEPS = 60


def layout_of(label_config: str) -> str:
    """Which layout a project's label config uses (for encoding predictions and checks)."""
    return "paged" if "<Repeater" in label_config else "transcript"
