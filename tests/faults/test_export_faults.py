"""Export interrupted (the exporter killed, or Label Studio killed under it) and rerun gives the same file."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
from pathlib import Path

import pytest
from commandline import argv, run
from pg import tracegen
from waiting import wait_for

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.studio import client as studio

pytestmark = pytest.mark.studio

N = 300
CONFIG = cfg.load(label_configs.path("trajectory_eval"))


@pytest.fixture(scope="module")
def project(pg_client):
    pid = studio.create_project(pg_client, CONFIG, "transcript", "faults: export")["id"]
    items = (parse_trace(t, source="gen") for t in tracegen.traces(N, seed=11))
    assert import_traces(pg_client, pid, items, CONFIG, batch_size=200, progress=False).imported == N
    ids = [t["id"] for t in studio.iter_tasks(pg_client, pid, with_annotations=False, include="id", page_size=1000)]
    for task_id in ids[::10]:  # spread over every page, so the file grows while later pages load
        studio.create_annotation(pg_client, task_id, [
            {"id": "o", "from_name": "overall_success", "to_name": "te_task", "type": "choices",
             "value": {"choices": ["failure"]}}])
    return pid


def export_cmd(pid, out):
    return argv("export", "--project", pid, "-o", out)


def env(ls, **extra):
    return dict(os.environ, LABEL_STUDIO_URL=ls.url, LABEL_STUDIO_API_KEY=ls.credentials.token, **extra)


def wait_for_partial(directory: Path, proc, timeout=60) -> bool:
    """True once the exporter has started writing its temporary file (False if it ended first)."""
    def partial() -> bool:
        return any(p.stat().st_size > 0 for p in directory.glob(".out.jsonl.*"))

    wait_for(lambda: partial() or proc.poll() is not None, timeout, interval=0.02)
    return partial()


@pytest.fixture(scope="module")
def reference(pg_label_studio, project, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "out.jsonl"
    r = run("export", "--project", project, "-o", out, env=env(pg_label_studio))
    assert r.returncode == 0, r.stderr
    assert "wrote 30 annotations of 300 tasks" in r.stdout
    return out.read_bytes()


def test_exporter_killed_then_rerun_gives_the_same_file(pg_label_studio, project, reference, tmp_path):
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(export_cmd(project, out), env=env(pg_label_studio), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    assert wait_for_partial(tmp_path, proc), "the export ended before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert not out.exists()  # never a half-written file under the real name
    r = run("export", "--project", project, "-o", out, env=env(pg_label_studio))
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == hashlib.sha256(reference).hexdigest()


def test_label_studio_killed_during_export_then_rerun_gives_the_same_file(pg_label_studio, project, reference,
                                                                         tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"an earlier export\n")
    proc = subprocess.Popen(export_cmd(project, out), env=env(pg_label_studio, LS_TRAJEVAL_RETRIES="0"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for_partial(tmp_path, proc), "the export ended before it could be interrupted"
        pg_label_studio.kill()
        _, err = proc.communicate(timeout=120)
    finally:
        pg_label_studio.start()
    assert proc.returncode == 2 and "cannot reach Label Studio" in err, err
    assert out.read_bytes() == b"an earlier export\n"  # the old file stays whole
    assert not list(tmp_path.glob(".out.jsonl.*"))  # and the partial one is cleaned up
    r = run("export", "--project", project, "-o", out, env=env(pg_label_studio))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == reference
