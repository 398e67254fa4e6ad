"""Shipped taxonomy configs and their compiled Label Studio XML (installed as ``ls_trajeval.label_configs``)."""
from pathlib import Path

DIR = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """Path of a shipped config: ``path("trajectory_eval")`` or ``path("coding_agent.yaml")``."""
    p = DIR / name
    return p if p.suffix else p.with_suffix(".yaml")
