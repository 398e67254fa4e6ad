"""Export interrupted (the exporter killed, Label Studio killed under it, the snapshot's download cut) leaves the target
as it was, and a rerun gives the same file; both ways of reading a project: Label Studio's export snapshot, and page
by page (a proxy refusing the snapshot as Label Studio Enterprise refuses a role without the export permission)."""
from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
from faults.faultproxy import FaultProxy
from pg import tracegen

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.studio import client as studio

pytestmark = pytest.mark.studio

N = 300
CONFIG = cfg.load(label_configs.path("trajectory_eval"))
SOURCES = ("snapshot", "pages")


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
    return [sys.executable, "-m", "ls_trajeval", "export", "--project", str(pid), "-o", str(out)]


def env(url, ls, **extra):
    return dict(os.environ, LABEL_STUDIO_URL=url, LABEL_STUDIO_API_KEY=ls.credentials.token, **extra)


def refusing(pid, then=None):
    """A proxy plan: the snapshot refused with a 403 (``source`` pages), or ``then`` for its download."""
    def plan(method, path, n):
        if method == "POST" and path.startswith(f"/api/projects/{pid}/exports"):
            return "403" if then is None else None
        if then and method == "GET" and re.match(rf"/api/projects/{pid}/exports/\d+/download", path):
            return then
        return None
    return plan


def wait_for(condition, proc, timeout=60) -> bool:
    """True once ``condition()`` holds while ``proc`` still runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if condition():
            return True
        time.sleep(0.02)
    return False


def writing(directory: Path):
    """The exporter has started writing its temporary file."""
    return lambda: any(p.stat().st_size > 0 for p in directory.glob(".out.jsonl.*"))


@pytest.fixture(scope="module")
def reference(pg_label_studio, project, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "out.jsonl"
    r = subprocess.run(export_cmd(project, out), env=env(pg_label_studio.url, pg_label_studio), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "wrote 30 annotations of 300 tasks" in r.stdout and "warning" not in r.stderr
    return out.read_bytes()


@pytest.mark.parametrize("source", SOURCES)
def test_exporter_killed_then_rerun_gives_the_same_file(pg_label_studio, project, reference, tmp_path, source):
    ls, out = pg_label_studio, tmp_path / "out.jsonl"
    # killed while the snapshot downloads (slowed by the proxy), or while the pages' records are written
    with FaultProxy(ls.url, refusing(project, then="slow" if source == "snapshot" else None)) as proxy:
        proc = subprocess.Popen(export_cmd(project, out), env=env(proxy.url, ls), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        busy = proxy.slow_started.is_set if source == "snapshot" else writing(tmp_path)
        assert wait_for(busy, proc), "the export ended before it could be interrupted"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert not out.exists()  # never a half-written file under the real name
    r = subprocess.run(export_cmd(project, out), env=env(ls.url, ls), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == hashlib.sha256(reference).hexdigest()


@pytest.mark.parametrize("source", SOURCES)
def test_label_studio_killed_during_export_then_rerun_gives_the_same_file(pg_label_studio, project, reference,
                                                                         tmp_path, source):
    ls, out = pg_label_studio, tmp_path / "out.jsonl"
    out.write_bytes(b"an earlier export\n")
    if source == "snapshot":  # killed while it makes the snapshot
        busy = lambda: ls.pg.psql(f"select count(*) from data_export_export where project_id={project} "  # noqa: E731
                                  "and status='in_progress'").strip() != "0"
    else:
        busy = writing(tmp_path)
    with FaultProxy(ls.url, refusing(project)) if source == "pages" else nullcontext() as proxy:
        proc = subprocess.Popen(export_cmd(project, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env(proxy.url if proxy else ls.url, ls, LS_TRAJEVAL_RETRIES="0"))
        try:
            assert wait_for(busy, proc), "the export ended before it could be interrupted"
            ls.kill()
            _, err = proc.communicate(timeout=120)
        finally:
            ls.start()
    assert proc.returncode == 2 and "cannot reach Label Studio" in err, err
    assert out.read_bytes() == b"an earlier export\n"  # the old file stays whole
    assert not list(tmp_path.glob(".out.jsonl.*"))  # and no partial one is left
    r = subprocess.run(export_cmd(project, out), env=env(ls.url, ls), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == reference


def test_a_snapshot_download_cut_short_is_read_page_by_page_instead(pg_label_studio, pg_client, project, reference,
                                                                   tmp_path):
    ls, out = pg_label_studio, tmp_path / "out.jsonl"
    before = {e.id for e in pg_client.projects.exports.list(id=project)}  # a killed exporter's may be there
    with FaultProxy(ls.url, refusing(project, then="cut")) as proxy:
        r = subprocess.run(export_cmd(project, out), env=env(proxy.url, ls), capture_output=True, text=True,
                           timeout=300)
    assert r.returncode == 0, r.stderr
    assert proxy.counts["cut"] == 1
    assert "warning: read page by page instead: downloading the export snapshot was cut" in r.stderr
    assert out.read_bytes() == reference
    # the snapshot it could not read is deleted all the same
    assert {e.id for e in pg_client.projects.exports.list(id=project)} <= before
