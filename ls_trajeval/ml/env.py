"""The environment through which ``ls-trajeval ml serve`` hands its settings to the server's worker
processes (secrets never on the command line, where ``ps`` shows them), and its reading."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads the names below at start-up; the config model loads only in the server
    from ..core.config import Config

CONFIG = "LS_TRAJEVAL_ML_CONFIG"
USER = "LS_TRAJEVAL_ML_USER"
PASSWORD = "LS_TRAJEVAL_ML_PASSWORD"
QUEUE_WORKERS = "LS_TRAJEVAL_ML_QUEUE_WORKERS"


def config() -> Config:
    path = os.environ.get(CONFIG)
    if not path:
        raise RuntimeError(f"{CONFIG} is not set: start the backend with `ls-trajeval ml serve --config ...`, "
                         f"or set {CONFIG} to the YAML config")
    from ..core.config import load

    return load(path)
