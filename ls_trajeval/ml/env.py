"""The environment through which ``ls-trajeval ml serve`` hands its settings to the server's worker
processes (secrets never on the command line, where ``ps`` shows them), and its reading."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads the names below at start-up; the config model loads only in the server
    from ..core.config import Config

CONFIG = "LS_TRAJEVAL_ML_CONFIG"
USER = "LS_TRAJEVAL_ML_USER"
PASSWORD = "LS_TRAJEVAL_ML_PASSWORD"
QUEUE_WORKERS = "LS_TRAJEVAL_ML_QUEUE_WORKERS"
WEBHOOK_WAIT = "LS_TRAJEVAL_ML_WEBHOOK_WAIT"
#: where the learned judges are kept (one folder per project); unset: no learning, rule detectors only
MODEL_DIR = "LS_TRAJEVAL_ML_MODEL_DIR"
#: seconds a webhook waits for its task's recomputation: under Label Studio's own 1 s webhook timeout
WEBHOOK_WAIT_DEFAULT = 0.8


def config() -> Config:
    path = os.environ.get(CONFIG)
    if not path:
        raise RuntimeError(f"{CONFIG} is not set: start the backend with `ls-trajeval ml serve --config ...`, "
                         f"or set {CONFIG} to the YAML config")
    # here, not at the top: `ls-trajeval --help` loads this module (for the names above), and the commands that do
    # not serve start without the config model (tests/unit/test_cli.py); only the server's workers read the config
    from ..core.config import load

    return load(path)


def webhook_wait() -> float:
    value = os.environ.get(WEBHOOK_WAIT)
    if not value:
        return WEBHOOK_WAIT_DEFAULT
    try:
        seconds = float(value)
    except ValueError:
        raise SystemExit(f"{WEBHOOK_WAIT}={value!r}: expected seconds (0 answers webhooks at once)") from None
    if not 0 <= seconds <= 60:
        raise SystemExit(f"{WEBHOOK_WAIT}={value!r}: expected seconds between 0 and 60")
    return seconds


def default_model_dir() -> str:
    """Where ``ml serve`` keeps learned judges unless told otherwise: the user's data directory."""
    import platformdirs

    return str(Path(platformdirs.user_data_dir("ls-trajeval")) / "ml-models")
