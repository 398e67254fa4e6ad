"""A real backend process (``ls-trajeval ml serve`` on gunicorn) next to the session's real Label Studio."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ls_trajeval.studio.localserver import free_port

USER, PASSWORD = "ml-user", "s3cret-backend-pw"


class Backend:
    def __init__(self, config: str, log: Path, *, workers: int = 2, ls=None, auth: bool = True):
        self.config, self.log_path, self.workers, self.ls, self.auth = config, log, workers, ls, auth
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth_tuple(self):
        return (USER, PASSWORD) if self.auth else None

    def start(self, timeout: float = 60) -> "Backend":
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LABEL_STUDIO_", "LS_TRAJEVAL_ML_"))}
        if self.ls is not None:
            env.update(LABEL_STUDIO_URL=self.ls.url, LABEL_STUDIO_API_KEY=self.ls.credentials.token)
        if self.auth:
            env.update(LS_TRAJEVAL_ML_USER=USER, LS_TRAJEVAL_ML_PASSWORD=PASSWORD)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ls_trajeval", "ml", "serve", "--config", self.config, "--port", str(self.port),
             "--workers", str(self.workers)], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"backend exited {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
            try:
                r = httpx.get(self.url + "/health", auth=self.auth_tuple, timeout=2)
                if r.status_code == 200 and "model_version" in r.json():
                    # every worker must be up before tests count on any of them
                    if self.workers == 1 or self.log_path.read_text().count("Booting worker") >= self.workers:
                        return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError("backend did not come up:\n" + self.log_path.read_text()[-3000:])

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


def wait_for(predicate, timeout: float = 15, interval: float = 0.3):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    return last


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
