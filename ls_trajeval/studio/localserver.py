"""Start and stop an embedded Label Studio (SQLite, a data dir of its own) for the demo and the tests.

Needs the ``server`` extra (``pip install 'ls-trajeval[server]'``). A data dir is initialised once
(migrations take about a minute) and reused afterwards; the admin user and its API token are kept
in ``ls-trajeval.json`` inside it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..core.errors import UserError
from ..core.jsonfiles import TraceError, atomic_output, load_located

STATE_FILE = "ls-trajeval.json"


class ServerError(UserError):
    """The local Label Studio could not be set up or started."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(data_dir: Path, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.update({
        "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
        # the demo's and tests' own token is a legacy one: simplest to hand to a user and to scripts
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        # an ML backend next to a local Label Studio listens on loopback, which SSRF protection refuses
        "LABEL_STUDIO_SSRF_PROTECTION_ENABLED": "false",
        "LABEL_STUDIO_ML_BLOCK_LOCAL_IP": "false",
        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "false",
        "SENTRY_DSN": "",
        "FRONTEND_SENTRY_DSN": "",
        "COLLECT_ANALYTICS": "false",
        "LABEL_STUDIO_COLLECT_ANALYTICS": "false",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra or {})
    return env


def _label_studio_cmd() -> list[str]:
    # the server runs in a process of its own: finding its package is enough (the ``server`` extra brings it)
    if importlib.util.find_spec("label_studio") is None:
        raise ServerError("the Label Studio server is not installed: pip install 'ls-trajeval[server]'")
    return [sys.executable, "-m", "label_studio.server"]


@dataclass
class Credentials:
    email: str
    password: str
    token: str


def init_args(creds: Credentials) -> list[str]:
    """``label-studio init``'s arguments for ``creds``. Each value is joined to its option (``--password=...``): a
    generated password starts with "-" once in 64, and argparse takes a separate "-..." for an option."""
    return ["init", f"--username={creds.email}", f"--password={creds.password}", f"--user-token={creds.token}",
            "--no-browser", "--quiet", "--enable-legacy-api-token"]


def ensure_initialized(data_dir: Path, email: str = "admin@example.com", log=None,
                       extra_env: dict | None = None) -> Credentials:
    """Initialise ``data_dir`` once (user, token, migrations); afterwards just read the credentials back."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    state = data_dir / STATE_FILE
    if state.exists():
        saved = load_located(state)
        if isinstance(saved, TraceError):
            raise ServerError(f"{saved} (delete {data_dir} to initialise Label Studio afresh)")
        return Credentials(**saved)
    creds = Credentials(email, secrets.token_urlsafe(12), secrets.token_hex(20))
    cmd = _label_studio_cmd() + init_args(creds)
    if log:
        log(f"initialising Label Studio in {data_dir} (first run only, about a minute)...")
    proc = subprocess.run(cmd, env=server_env(data_dir, extra_env), capture_output=True, text=True,
                          cwd=data_dir, timeout=900)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise ServerError(f"label-studio init failed (exit {proc.returncode}):\n{tail}")
    with atomic_output(state) as fh:
        fh.write(json.dumps(creds.__dict__))
    state.chmod(0o600)
    return creds


class LocalLabelStudio:
    """A Label Studio process on 127.0.0.1; use as a context manager or call start()/stop()."""

    def __init__(self, data_dir: str | Path, port: int | None = None, email: str = "admin@example.com",
                 extra_env: dict | None = None, log=None):
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.email = email
        self.extra_env = extra_env or {}
        self.log = log
        self.proc: subprocess.Popen | None = None
        self.credentials: Credentials | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180) -> LocalLabelStudio:
        self.credentials = ensure_initialized(self.data_dir, self.email, self.log, self.extra_env)
        logfile = open(self.data_dir / "server.log", "ab")
        self.proc = subprocess.Popen(
            # --internal-host is the bind address (the default is 0.0.0.0); --host only names the public URL
            _label_studio_cmd() + ["start", "--no-browser", "--internal-host", "127.0.0.1", "--host", self.url,
                                   "--port", str(self.port)],
            env=server_env(self.data_dir, self.extra_env), stdout=logfile, stderr=subprocess.STDOUT,
            cwd=self.data_dir, start_new_session=True)
        logfile.close()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServerError(f"Label Studio exited with {self.proc.returncode}; "
                                  f"see {self.data_dir / 'server.log'}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise ServerError(f"Label Studio did not answer on {self.url} within {timeout:.0f} s")

    def stop(self, timeout: float = 20) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(5)

    def kill(self) -> None:
        """Kill the server hard (for crash tests)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def __enter__(self) -> LocalLabelStudio:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
