"""`ls-trajeval demo` is the whole product: the samples open with the backend's suggested steps and a live score
that follows the annotator, with nothing to switch on; the `ml connect` line it prints connects its backend to a
project of one's own, run as printed; Ctrl-C stops Label Studio and the backend."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from commandline import argv, invoke
from waiting import wait_for

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.flows.demo import sample_traces
from ls_trajeval.studio import client as studio

from .ui import Annotator

pytestmark = pytest.mark.browser

CONFIG = cfg.load(label_configs.path("trajectory_eval"))  # the demo's default config


def wait_for_line(proc: subprocess.Popen, pattern: str, out: list, timeout: float = 600) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        out.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"demo never printed {pattern!r}:\n{''.join(out)}")


def closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_demo_samples_open_with_suggestions_and_a_live_score_and_ctrl_c_stops_both(browser, tmp_path):
    # a child of this process, as from a terminal: Ctrl-C is SIGINT to it (a shell's `&` would ignore SIGINT)
    proc = subprocess.Popen(argv("demo", "--data-dir", tmp_path / "ls", "--port", 0), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out: list[str] = []
    try:
        studio_url = wait_for_line(proc, r"Label Studio:\s+(http://127\.0\.0\.1:(\d+))/projects/(\d+)/data", out)
        password = wait_for_line(proc, r"password:\s+(\S+)", out).group(1)
        backend = wait_for_line(proc, r"ML backend:\s+http://127\.0\.0\.1:(\d+)", out)
        studio_env = wait_for_line(proc, r"export (LABEL_STUDIO_URL=\S+) (LABEL_STUDIO_API_KEY=\S+)", out)
        connect = wait_for_line(proc, r"^\s+(ls-trajeval ml connect --project ID .*)$", out).group(1)
        wait_for_line(proc, r"Ctrl-C stops Label Studio and the ML backend", out)
        # a project of one's own has no backend until the printed line, with its id, connects the demo's
        env = dict(os.environ, **dict(kv.split("=", 1) for kv in studio_env.groups()),
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        made = invoke("import", sample_traces(), "--create", "my own project", "--quiet", env=env)
        own = int(re.search(r"project (\d+): imported", made.output).group(1))
        assert studio.ml_backends(studio.connect(env["LABEL_STUDIO_URL"], env["LABEL_STUDIO_API_KEY"]), own) == []
        ran = subprocess.run(["bash", "-c", connect.replace("--project ID", f"--project {own}")], env=env,
                             capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0 and "registered ML backend" in ran.stdout, ran.stdout + ran.stderr
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(30_000)
        a = Annotator(ctx.new_page(), studio_url.group(1))
        a.login("admin@example.com", password)
        pid = int(studio_url.group(3))
        # the label stream, task after task, until a sample the backend found wrong steps in
        a.open(pid, None)
        for _ in range(15):
            if a.main.locator(".htx-highlight").count():
                break
            shown = a.page.evaluate("() => Htx.task && Htx.task.id")
            a.page.locator("button", has_text=re.compile("^Skip$")).click()
            # the stream's next task loaded (or none left)
            a.page.wait_for_function("old => window.Htx && !Htx.isLoading && (Htx.noTask || (Htx.task && "
                                     "Htx.task.id !== old && !!Htx.annotationStore.selected))", arg=shown)
        suggested = a.main.locator(".htx-highlight")
        assert suggested.count() > 0, "no sample opened with suggested steps"
        # the live score came with the suggestions: the score, then one line per suggested step
        marked = {h.evaluate("e => e.closest('[data-testid^=\"phrase:\"]').dataset.testid")
                  for h in suggested.element_handles()}
        first = a.live_score().splitlines()
        m = re.fullmatch(r"Running score now: ([\d.]+) of 100", first[0])
        assert m and len(first) == 1 + len(marked), first
        before = float(m.group(1))
        # mark one more step, give it a severity: the score follows, with nothing switched on
        free = next(i for i in range(40) if a.phrase(i).count() and not a.phrase(i).locator(".htx-highlight").count())
        a.mark_step(free)
        a.choose_severity("Critical")
        want = f"Running score now: {max(before + CONFIG.trajectory.severity_by_name('critical').weight, 0):g} of 100"
        assert wait_for(lambda: want in a.live_score(), 15), a.live_score()
        assert a.page.evaluate("() => Htx.autoAnnotation") is False
        ctx.close()
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        rest, _ = proc.communicate(timeout=120)
        out.append(rest)
    text = "".join(out)
    assert proc.returncode == 0, text
    assert "stopping the ML backend" in text and "stopping Label Studio" in text
    assert closed(int(studio_url.group(2))) and closed(int(backend.group(1)))
