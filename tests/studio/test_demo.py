"""`ls-trajeval demo` on the embedded default: a real Label Studio, set up once and reused."""
import re
import socket
import subprocess
import sys

import pytest

from ls_trajeval.core.trace import Trace, read_traces
from ls_trajeval.flows.demo import sample_traces

pytestmark = pytest.mark.studio


def run_demo(data_dir):
    proc = subprocess.run([sys.executable, "-m", "ls_trajeval", "demo", "--no-wait", "--data-dir", str(data_dir),
                           "--port", "0"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_demo_sets_up_once_and_reuses_instance_and_project(tmp_path):
    n_samples = sum(isinstance(t, Trace) for t in read_traces(sample_traces()))
    first = run_demo(tmp_path / "ls")
    assert re.search(r"created project (\d+)", first)
    assert f"sample traces: imported {n_samples}, already there 0" in first
    url = re.search(r"Label Studio:\s+(http://127\.0\.0\.1:(\d+))/projects/(\d+)/data", first)
    assert url, first
    assert f"annotate:      {url.group(1)}/projects/{url.group(3)}/data?labeling=1" in first
    assert re.search(r"log in as:\s+admin@example.com", first) and re.search(r"password:\s+\S+", first)
    assert "ls-trajeval export --project" in first and "LABEL_STUDIO_API_KEY=" in first
    second = run_demo(tmp_path / "ls")
    assert f"reusing project {url.group(3)}" in second
    assert f"sample traces: imported 0, already there {n_samples}" in second
    # stopped cleanly: nothing listens on the port any more
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", int(url.group(2)))) != 0
