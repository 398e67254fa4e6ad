"""A real Arize Phoenix server for the tests: ``phoenix serve`` on loopback with its SQLite default.

``arize-phoenix`` cannot share the project's environment (it requires openai>=2, Label Studio 1.23.2 openai<2),
so it is installed from PyPI into a virtualenv of its own, once, under a cache directory this module controls
(``LS_TRAJEVAL_PHOENIX_VENV``, else ``<user cache>/ls-trajeval/phoenix-server-<version>``); a marker file written
after a complete install tells a finished venv from an interrupted one. The install took 2 min 7 s here, and
``phoenix serve`` is up in about 20 s; a cached venv costs nothing on later runs.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
from waiting import wait_for

from ls_trajeval.studio.localserver import free_port

VERSION = "20.26.1"
_MARK = ".ls-trajeval-complete"


def venv_dir() -> Path:
    given = os.environ.get("LS_TRAJEVAL_PHOENIX_VENV")
    if given:
        return Path(given)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ls-trajeval")) / f"phoenix-server-{VERSION}"


def ensure_venv() -> Path:
    """The venv's ``phoenix`` executable, installing the server first when the cache holds no complete venv."""
    venv = venv_dir()
    exe = venv / "bin" / "phoenix"
    if (venv / _MARK).is_file() and exe.is_file():
        return exe
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    # the base interpreter, not this venv's: the server's venv must not see the project's packages
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"arize-phoenix=={VERSION}"],
                   check=True, timeout=1800)
    (venv / _MARK).write_text(VERSION)
    return exe


class PhoenixServer:
    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> None:
        exe = ensure_venv()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        env.update(PHOENIX_WORKING_DIR=str(self.workdir), PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(self.port),
                   PHOENIX_GRPC_PORT=str(free_port()), PHOENIX_TELEMETRY_ENABLED="false")
        self.log = open(self.workdir / "phoenix.log", "wb")
        self.proc = subprocess.Popen([str(exe), "serve"], env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        if wait_for(self._healthy, timeout, interval=0.5):
            return
        self.stop()
        raise RuntimeError(f"phoenix serve did not answer on {self.url} within {timeout:.0f} s")

    def _healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"phoenix serve exited with {self.proc.returncode}: "
                               f"{(self.workdir / 'phoenix.log').read_text(errors='replace')[-2000:]}")
        try:
            return httpx.get(self.url + "/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        import signal

        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if getattr(self, "log", None) is not None:
            self.log.close()
