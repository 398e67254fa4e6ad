"""Starting the backend process: what ``ls-trajeval ml serve`` runs, and what ``ls-trajeval demo`` starts beside
its Label Studio, through the same function.

The backend runs as a WSGI server process over ``ls_trajeval.ml.app:create_app()``, configured from the
environment; secrets (Basic auth, the Label Studio API key) reach its workers through the environment,
never its command line (visible in ``ps``).
"""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..core.config import Config
from ..core.errors import UserError
from . import env as ml_env
from .auth import basic_auth_header
from .detectors import build


class BackendError(UserError):
    """The backend cannot start: a missing extra, detectors that cannot work, half-given credentials."""


@dataclass(frozen=True)
class Backend:
    """How to run one backend: its config, address, workers, Basic auth, and the Label Studio it writes to."""

    config: Config
    host: str = "127.0.0.1"
    port: int = 9090
    workers: int = 1
    threads: int = 4
    user: str | None = None
    password: str | None = None
    studio_url: str | None = None  # with api_key: write scores back on annotation events
    api_key: str | None = None
    model_dir: str | None = None  # the learned judges' folder; None: rule detectors only

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def headers(self) -> dict:
        return basic_auth_header(self.user, self.password or "") if self.user else {}

    def check(self) -> None:
        """Refuse what cannot work before any worker starts, with the reason."""
        missing = [m for m in ("flask", "gunicorn", "sklearn") if importlib.util.find_spec(m) is None]
        if missing:
            raise BackendError(f"{' and '.join(missing)} not installed: pip install 'ls-trajeval[ml]'")
        if not Path(self.config.source).is_file():
            raise BackendError(f"the backend loads its config from a file; {self.config.source} is not one")
        try:
            build(self.config)  # detectors that cannot work fail here, with the config's key path
        except Exception as exc:  # a plugin detector's own error types included
            raise BackendError(str(exc)) from None
        if self.user and not self.password:
            raise BackendError("--basic-auth-user needs --basic-auth-password (or LS_TRAJEVAL_ML_PASSWORD)")
        if bool(self.studio_url) != bool(self.api_key):
            raise BackendError("score write-back needs both --url and --api-key (or neither, for predictions only)")

    def command(self) -> list[str]:
        return [sys.executable, "-m", "gunicorn", "--bind", f"{self.host}:{self.port}", "--workers",
                str(self.workers), "--worker-class", "gthread", "--threads", str(self.threads), "--timeout", "120",
                "--graceful-timeout", "10", "--no-control-socket", "--log-level", "info",
                "ls_trajeval.ml.app:create_app()"]

    def environment(self) -> dict:
        env = dict(os.environ)
        env[ml_env.CONFIG] = str(Path(self.config.source).resolve())
        for key, value in ((ml_env.USER, self.user), (ml_env.PASSWORD, self.password),
                           ("LABEL_STUDIO_URL", self.studio_url), ("LABEL_STUDIO_API_KEY", self.api_key),
                           (ml_env.MODEL_DIR, str(Path(self.model_dir).resolve()) if self.model_dir else None)):
            if value:
                env[key] = value
            else:
                env.pop(key, None)
        return env

    def describe(self) -> str:
        return (f"ML backend on {self.url} ({self.workers} workers x {self.threads} threads, "
                f"auth {'on' if self.user else 'off'}, write-back {'on' if self.studio_url else 'off'}, "
                f"learning {'in ' + self.model_dir if self.model_dir else 'off'})")

    def start(self, *, log=None, own_session: bool = False) -> subprocess.Popen:
        """Check, then start the server process (its output to ``log``, a file, or inherited when None).
        ``own_session``: out of the terminal's process group, so that Ctrl-C reaches only its starter."""
        self.check()
        return subprocess.Popen(self.command(), env=self.environment(), stdout=log, stderr=subprocess.STDOUT
                                if log is not None else None, start_new_session=own_session)

    def wait_ready(self, proc: subprocess.Popen, timeout: float = 60) -> str:
        """Until ``/health`` answers with the model version (which it gives only to authenticated callers)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise BackendError(f"the ML backend exited with {proc.returncode}")
            try:
                r = httpx.get(self.url + "/health", headers=self.headers, timeout=2)
                if r.status_code == 200 and r.json().get("model_version"):
                    return r.json()["model_version"]
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.3)
        raise BackendError(f"the ML backend did not answer on {self.url} within {timeout:.0f} s")


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Stop a backend started with ``own_session`` (its whole process group: the server and its workers)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)
