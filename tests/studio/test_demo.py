"""`ls-trajeval demo` on the embedded default: a real Label Studio and the ML backend, set up once and reused."""
import json
import re
import socket
import stat

import pytest
from commandline import run

from ls_trajeval.core.trace import Trace, read_traces
from ls_trajeval.flows.demo import BACKEND_STATE, sample_traces
from ls_trajeval.studio import client as studio
from ls_trajeval.studio.localserver import STATE_FILE

pytestmark = pytest.mark.studio


def run_demo(data_dir):
    proc = run("demo", "--no-wait", "--data-dir", data_dir, "--port", 0, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_demo_sets_up_once_and_reuses_instance_project_and_backend(tmp_path):
    n_samples = sum(isinstance(t, Trace) for t in read_traces(sample_traces()))
    first = run_demo(tmp_path / "ls")
    assert re.search(r"created project (\d+)", first)
    assert f"sample traces: imported {n_samples}, already there 0" in first
    url = re.search(r"Label Studio:\s+(http://127\.0\.0\.1:(\d+))/projects/(\d+)/data", first)
    assert url, first
    assert f"annotate:      {url.group(1)}/projects/{url.group(3)}/data?labeling=1" in first
    assert re.search(r"log in as:\s+admin@example.com", first) and re.search(r"password:\s+\S+", first)
    assert "ls-trajeval export --project" in first and "LABEL_STUDIO_API_KEY=" in first
    # the ML backend: on loopback, with Basic-auth credentials generated once, kept unreadable to others
    ml = re.search(r"ML backend:\s+(http://127\.0\.0\.1:(\d+))", first)
    assert ml and "registered ML backend" in first, first
    state_file = tmp_path / "ls" / BACKEND_STATE
    state = json.loads(state_file.read_text())
    assert state["user"] and len(state["password"]) >= 24 and state["port"] == int(ml.group(2))
    assert stat.S_IMODE(state_file.stat().st_mode) == 0o600
    assert state["password"] not in first  # never printed: the `ml connect` line for one's own project reads it
    assert f"ls-trajeval ml connect --project ID --backend-url {ml.group(1)} --basic-auth-user {state['user']} " \
           f"--basic-auth-password \"$(python3 -c " in first and f"{state_file} password)\"" in first

    second = run_demo(tmp_path / "ls")
    assert f"reusing project {url.group(3)}" in second
    assert f"sample traces: imported 0, already there {n_samples}" in second
    assert "ML backend connected: as before" in second, second  # same address and credentials: nothing to change
    assert json.loads(state_file.read_text()) == state
    # stopped cleanly: nothing listens on either port any more
    assert closed(int(url.group(2))) and closed(state["port"])

    # what the project was left with: one backend (Basic auth), one authenticated webhook, one prediction per
    # sample (the rerun retrieved them again without copies); checked against a third, plain server start
    from ls_trajeval.studio.localserver import LocalLabelStudio

    token = json.loads((tmp_path / "ls" / STATE_FILE).read_text())["token"]
    with LocalLabelStudio(tmp_path / "ls") as server:
        client = studio.connect(server.url, token)
        pid = int(url.group(3))
        backends = studio.ml_backends(client, pid)
        assert [(b["url"], b["auth_method"], b["basic_auth_user"], b["is_interactive"]) for b in backends] == [
            (ml.group(1), "BASIC_AUTH", state["user"], True)]
        hooks = studio.webhooks(client, pid)
        assert [h["url"] for h in hooks] == [ml.group(1) + "/webhook"]
        assert hooks[0]["headers"]["Authorization"].startswith("Basic ")
        tasks = list(studio.iter_tasks(client, pid))
        assert len(tasks) == n_samples and all(t["total_predictions"] == 1 for t in tasks)
