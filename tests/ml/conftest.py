"""A real backend process (``ls-trajeval ml serve`` on gunicorn) next to the session's real Label Studio;
fresh virtual environments with this project installed as a user would."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from commandline import PROGRAM
from waiting import wait_for

from ls_trajeval.studio.localserver import free_port

USER, PASSWORD = "ml-user", "s3cret-backend-pw"


class Backend:
    def __init__(self, config: str, log: Path, *, workers: int = 2, ls=None, auth: bool = True,
                 program: Sequence[str] = PROGRAM, cwd: Path | None = None):
        self.config, self.log_path, self.workers, self.ls, self.auth = config, log, workers, ls, auth
        self.program, self.cwd = list(program), cwd
        # learned judges of its own, never the user's data directory
        self.model_dir = log.with_suffix(".models")
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth_tuple(self):
        return (USER, PASSWORD) if self.auth else None

    def start(self, timeout: float = 60) -> Backend:
        env = clean_env(Path(self.program[0]).parent)
        if self.ls is not None:
            env.update(LABEL_STUDIO_URL=self.ls.url, LABEL_STUDIO_API_KEY=self.ls.credentials.token)
        if self.auth:
            env.update(LS_TRAJEVAL_ML_USER=USER, LS_TRAJEVAL_ML_PASSWORD=PASSWORD)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [*self.program, "ml", "serve", "--config", self.config, "--port", str(self.port),
             "--workers", str(self.workers), "--model-dir", str(self.model_dir)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.cwd)
        log.close()
        if wait_for(self._ready, timeout, interval=0.3):
            return self
        self.stop()
        raise RuntimeError("backend did not come up:\n" + self.log_path.read_text()[-3000:])

    def _ready(self) -> bool:
        """Every worker answers (tests count on any of them); an exited server is an error at once."""
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"backend exited {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
        try:
            r = httpx.get(self.url + "/health", auth=self.auth_tuple, timeout=2)
        except httpx.HTTPError:
            return False
        return r.status_code == 200 and "model_version" in r.json() and \
            (self.workers == 1 or self.log_path.read_text().count("Booting worker") >= self.workers)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


@pytest.fixture(scope="module")
def backend_factory(tmp_path_factory):
    started = []
    logs = tmp_path_factory.mktemp("backend-logs")

    def make(config: str, **kw) -> Backend:
        b = Backend(config, logs / f"backend-{len(started)}.log", **kw)
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


ROOT = Path(__file__).resolve().parents[2]


def fresh_venv(where: Path, *requirements: str) -> Path:
    """A new virtual environment with ``requirements`` installed by pip; ``.`` names this project, built from
    a clean copy of the checkout (the way a user's ``pip install`` gets it, and not from a ``build/`` left
    behind by an earlier build, which can hold modules that no longer exist). Returns its ``bin`` folder."""
    src = where / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                                "__pycache__", ".pytest_cache", ".hypothesis"))
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    bin_dir = where / "venv" / "bin"
    wanted = [str(src) + r[1:] if r.startswith(".") else r for r in requirements]
    r = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", *wanted], capture_output=True,
                       text=True, timeout=1500)
    if r.returncode:
        pytest.fail(f"pip install {' '.join(requirements)} failed:\n{r.stderr[-4000:]}")
    return bin_dir


def clean_env(bin_dir: Path, **extra: str) -> dict:
    """The environment for a program of that venv: none of ours (credentials, PYTHONPATH) leaks in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LABEL_STUDIO_", "LS_TRAJEVAL_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


@pytest.fixture(scope="session")
def ml_venv(tmp_path_factory) -> Path:
    """``pip install '.[ml]'`` alone into a fresh venv, once per session (a few minutes)."""
    return fresh_venv(tmp_path_factory.mktemp("ml-venv"), ".[ml]")
