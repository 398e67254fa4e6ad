"""The click-latency benchmark (benchmarks/bench_clicks.py) measures what it says: its measuring function, run once
on a small workbench trace with the real ML backend connected, gives a positive finite time for every action, and
the marks, types and severities it clicked are in Label Studio's saved annotation afterwards. Not a timing assert:
a check of the instrument (issue 31)."""
from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results
from ls_trajeval.studio import client as studio

from .ui import logged_in

pytestmark = [pytest.mark.studio, pytest.mark.browser]

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_clicks.py"


def bench_clicks():
    spec = importlib.util.spec_from_file_location("bench_clicks", BENCH)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name)
    if module is None:  # registered before it runs, as an import does (its dataclass looks its module up)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


def test_every_action_is_timed_and_what_was_clicked_is_saved(label_studio, ls_client, browser):
    bench = bench_clicks()
    c = cfg.load(label_configs.path("trajectory_eval"))
    proc, url, log = bench.start_backend(1, 2, sys.executable, "--no-learning", "--url", label_studio.url,
                                         "--api-key", label_studio.credentials.token)
    try:
        pid, [(task_id, _)] = bench.project_for(ls_client, c, "workbench", 20, url)
        with logged_in(browser, label_studio) as a:
            got = bench.measure(a, "workbench", pid, task_id, 20, 3, bench.leaves_of(c),
                                log=lambda line: None, timeout_s=30)
    finally:
        bench.stop_backend(proc, log)
    assert sorted(got) == ["mark", "save", "severity", "type"]
    for what, times in got.items():
        assert len(times) == 3 and all(math.isfinite(t) and t > 0 for t in times), (what, times)

    # three steps spread over 20: int((k + 0.5) * 20 / 3) for k = 0, 1, 2; the first three types of the taxonomy
    annotations = studio.task_annotations(ls_client, task_id)
    assert len(annotations) == 1  # Submit once, then Update
    labels = results.decode(annotations[0]["result"], c, 20)
    wrong = {s.step_index: s for s in labels.steps if s.correctness == "incorrect"}
    assert sorted(wrong) == [3, 10, 16]
    assert [wrong[i].error_type for i in (3, 10, 16)] == ["logical_error", "incorrect_assumption",
                                                           "over_generalization"]
    assert all(wrong[i].severity in ("minor", "major", "critical") for i in (3, 10, 16))
    assert labels.whole_trace.get("overall_success") == "failure"
