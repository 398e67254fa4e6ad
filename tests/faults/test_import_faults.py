"""Faults during import on a real (PostgreSQL-backed) Label Studio: the server killed at a random batch,
lost answers, 5xx, connection resets, and batches Label Studio refuses. Checked by trace_id in the database."""
from __future__ import annotations

import json
import os
import random
import subprocess

import pytest
from commandline import argv, invoke, run
from faults.faultproxy import FaultProxy
from pg import tracegen
from waiting import wait_for

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.fields import META_TRACE_ID
from ls_trajeval.studio import client as studio

pytestmark = pytest.mark.studio

N, BATCH = 300, 20
CONFIG = cfg.load(label_configs.path("trajectory_eval"))


@pytest.fixture(scope="module")
def traces_file(tmp_path_factory):
    return tracegen.write(tmp_path_factory.mktemp("faults") / "traces.jsonl", N, seed=7)


def trace_id_counts(pg, project_id: int) -> dict[str, int]:
    rows = pg.psql(f"select data->>'trace_id', count(*) from task where project_id={project_id} group by 1")
    return {k: int(v) for k, v in (line.split("|") for line in rows.split())}


def task_count(pg, project_id: int) -> int:
    return int(pg.psql(f"select count(*) from task where project_id={project_id}"))


def assert_exactly_once(pg, project_id: int, n: int = N):
    counts = trace_id_counts(pg, project_id)
    assert sorted(counts) == [f"gen-{i:07d}" for i in range(n)]  # nothing lost
    assert {c for c in counts.values()} == {1}  # nothing duplicated


def import_cmd(path, project_id):
    return argv("import", path, "--project", project_id, "--quiet", "--batch-size", BATCH)


def cli_env(ls, **extra):
    return dict(os.environ, LABEL_STUDIO_URL=ls.url, LABEL_STUDIO_API_KEY=ls.credentials.token, **extra)


def kill_when(ls, pg, project_id, at_least: int, proc, timeout=120):
    """Kill Label Studio once the project holds ``at_least`` tasks; False if the import ended first."""
    wait_for(lambda: task_count(pg, project_id) >= at_least or proc.poll() is not None, timeout, interval=0.05)
    if task_count(pg, project_id) >= at_least and proc.poll() is None:
        ls.kill()
        return True
    return False


@pytest.mark.parametrize("seed", [1])
def test_killed_mid_import_then_restarted_and_rerun(pg_label_studio, pg_client, traces_file, seed):
    ls, pg = pg_label_studio, pg_label_studio.pg
    pid = studio.create_project(pg_client, CONFIG, "transcript", "faults: killed")["id"]
    at_batch = random.Random(seed).randint(3, N // BATCH - 4)
    # few retries: this run gives up while the server is down, as a user's would after a crash
    proc = subprocess.Popen(import_cmd(traces_file, pid), env=cli_env(ls, LS_TRAJEVAL_RETRIES="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert kill_when(ls, pg, pid, at_batch * BATCH, proc), "the import finished before the kill"
        out, err = proc.communicate(timeout=120)
    finally:
        ls.start()
    assert proc.returncode == 2, out + err
    assert "cannot reach Label Studio" in err
    partial = task_count(pg, pid)
    assert at_batch * BATCH <= partial < N
    rerun = run("import", traces_file, "--project", pid, "--quiet", "--batch-size", BATCH, env=cli_env(ls))
    assert rerun.returncode == 0, rerun.stderr
    assert f"imported {N - partial}, skipped {partial} (already there), rejected 0" in rerun.stdout
    assert_exactly_once(pg, pid)


def test_killed_and_restarted_while_the_import_waits(pg_label_studio, pg_client, traces_file):
    """The server comes back within the client's backoff: the same run carries on, nothing stored twice."""
    ls, pg = pg_label_studio, pg_label_studio.pg
    pid = studio.create_project(pg_client, CONFIG, "transcript", "faults: restarted")["id"]
    proc = subprocess.Popen(import_cmd(traces_file, pid), env=cli_env(ls, LS_TRAJEVAL_RETRIES="8"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert kill_when(ls, pg, pid, random.Random(2).randint(3, 10) * BATCH, proc)
    finally:
        ls.start()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    assert f"imported {N}, skipped 0 (already there), rejected 0" in out
    assert_exactly_once(pg, pid)


def test_lost_answers_5xx_and_resets_are_retried_without_duplicates(pg_label_studio, pg_client, traces_file):
    ls, pg = pg_label_studio, pg_label_studio.pg
    pid = studio.create_project(pg_client, CONFIG, "transcript", "faults: flaky network")["id"]
    # import requests: every 2nd answer is lost after Label Studio stored the batch, every 3rd a 503, ...
    schedule = {2: "lost", 3: "503", 5: "reset", 7: "502", 8: "lost", 11: "500", 13: "reset", 14: "lost"}

    def plan(method, path, n):
        if method == "POST" and path.startswith(f"/api/projects/{pid}/import"):
            return schedule.get(n)
        if method == "GET" and path.startswith("/api/tasks") and n % 4 == 0:
            return "503"  # listing the newest tasks is itself retried
        return None

    with FaultProxy(ls.url, plan) as proxy:
        r = invoke("import", traces_file, "--project", pid, "--quiet", "--batch-size", BATCH,
                   env={"LABEL_STUDIO_URL": proxy.url, "LABEL_STUDIO_API_KEY": ls.credentials.token})
    assert r.exit_code == 0, r.output
    assert set(proxy.counts) == {"lost", "503", "reset", "502", "500"}
    assert proxy.counts["lost"] == 3
    assert f"imported {N}, skipped 0 (already there), rejected 0" in r.stdout
    assert_exactly_once(pg, pid)


def test_a_refused_batch_is_split_and_only_the_bad_traces_are_reported(pg_label_studio, pg_client, tmp_path):
    ls, pg = pg_label_studio, pg_label_studio.pg
    rows = list(tracegen.traces(120, seed=3))
    bad = {17: "x\u0000y", 61: "\u0000", 118: "end\u0000"}  # PostgreSQL's jsonb cannot hold \u0000
    for i, text in bad.items():
        rows[i]["trace"][0]["content"] = text
    path = tmp_path / "some-bad.jsonl"
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    lines[90] = lines[90].replace('"content": "', '"content": "\\ud800', 1)  # a lone surrogate: not UTF-8
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    pid = studio.create_project(pg_client, CONFIG, "transcript", "faults: refused")["id"]
    r = invoke("import", path, "--project", pid, "--quiet", "--batch-size", 40,
               env={"LABEL_STUDIO_URL": ls.url, "LABEL_STUDIO_API_KEY": ls.credentials.token})
    assert r.exit_code == 1
    assert "imported 116, skipped 0 (already there), rejected 4" in r.stdout
    refused = sorted(x.split("'")[1] for x in r.stderr.splitlines() if x.startswith("rejected:"))
    assert refused == ["gen-0000017", "gen-0000061", "gen-0000090", "gen-0000118"]
    counts = trace_id_counts(pg, pid)
    assert len(counts) == 116 and set(counts.values()) == {1}
    assert not set(counts) & set(refused)


def test_label_studio_400_splits_down_to_the_invalid_tasks(pg_client, pg_label_studio):
    """Label Studio's own validation (400) on a mixed batch: the valid tasks go in, each invalid one is reported."""
    pid = studio.create_project(pg_client, CONFIG, "transcript", "faults: 400")["id"]
    good = [{"data": {"trace_id": f"ok-{i}", "task": "t", "te_transcript": [], "te_pages": [], "te_header": "",
                      "n_steps": 0, "running_score": 100}, "meta": {META_TRACE_ID: f"ok-{i}"}} for i in range(30)]
    invalid = [{"data": 5, "meta": {META_TRACE_ID: "bad-int"}},
               {"data": {"no_fields": True}, "meta": {META_TRACE_ID: "bad-missing"}}]
    batch = good[:10] + invalid[:1] + good[10:25] + invalid[1:] + good[25:]
    rejected = []
    created = studio.import_batch(pg_client, pid, batch, on_rejected=rejected.append)
    assert created == 30
    assert sorted(r.task["meta"][META_TRACE_ID] for r in rejected) == ["bad-int", "bad-missing"]
    assert all(r.message.startswith("HTTP 400") for r in rejected)
    assert task_count(pg_label_studio.pg, pid) == 30
