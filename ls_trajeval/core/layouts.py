"""The two layouts by name (apart from :mod:`labelconfig`, which needs Jinja2 and the config model, so that
the CLI can offer them without importing either)."""
from __future__ import annotations

LAYOUTS = ("transcript", "paged")
#: Above this many steps the paged layout gets slow to open: Label Studio builds every step's controls when a
#: task opens (benchmarks/bench_browser.py, idle 2-core machine: 3.8-4.8 s at 200 steps, 12-21 s at 1000).
PAGED_MAX_STEPS = 200


def layout_of(label_config: str) -> str:
    """Which layout a project's label config uses (for encoding predictions and checks)."""
    return "paged" if "<Repeater" in label_config else "transcript"
