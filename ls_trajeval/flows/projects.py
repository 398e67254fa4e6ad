"""Which taxonomy config a command works with: the one given (a YAML path or the name of a shipped config), else
the one embedded in the project's label config (every project ls-trajeval creates carries it)."""
from __future__ import annotations

from pathlib import Path

from .. import label_configs  # type: ignore[attr-defined]  # pyproject installs it here (package-dir); mypy reads the tree
from ..core.config import Config, ConfigError, load
from ..core.labelconfig import from_label_config

DEFAULT_CONFIG = "trajectory_eval"


def load_config(path: str | None = None) -> Config:
    """A config path, or the name of a shipped one (``trajectory_eval``, ``coding_agent``); None: the default."""
    target = Path(path) if path else label_configs.path(DEFAULT_CONFIG)
    if path and not target.exists() and label_configs.path(path).exists():
        target = label_configs.path(path)
    return load(target)


def project_config(project: dict, override: Config | None = None) -> Config:
    """``override`` when given, else the config embedded in ``project``'s label config (a project as Label Studio
    returns it); ConfigError when it has none."""
    if override is not None:
        return override
    source = f"project {project.get('id')}"
    embedded = from_label_config(project.get("label_config") or "", source=source)
    if embedded is None:
        raise ConfigError(source, ["not made by ls-trajeval (its label config has no embedded taxonomy): pass "
                                   "--config with the YAML config it was made from"])
    return embedded
