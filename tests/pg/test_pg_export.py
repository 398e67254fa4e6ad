"""The export reads the same files from Label Studio's export snapshot as page by page, on a PostgreSQL-backed
Label Studio (whose snapshots list tasks in no particular order): hostile text, two annotators in the shapes the
labeling UI saves, a skip, a draft, predictions, gold labels; and an API key that may not make snapshots (refused
by a proxy, as Label Studio Enterprise refuses a role without the export permission) gets the same file."""
from __future__ import annotations

import json
import random
import uuid

import httpx
import pytest
from click.testing import CliRunner
from faults.faultproxy import FaultProxy
from pg import tracegen
from studio.uishapes import NASTY, TRACES, ui_marks

from ls_trajeval import label_configs
from ls_trajeval.cli import main_group
from ls_trajeval.core import config as cfg
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.export import export_gold, export_predictions, export_project
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.studio import client as studio

pytestmark = pytest.mark.studio

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


@pytest.fixture(scope="module")
def project(pg_label_studio, pg_client):
    """40 generated traces and the hostile ones; annotator A on all, B on every third, A's skip on one, a draft by
    the API key's user on two, a judge's prediction on every other (task 5 has the skip alone). Returns the project
and how many of each."""
    pid = studio.create_project(pg_client, CONFIG, "transcript", "export: snapshot and pages")["id"]
    traces = [*TRACES, *tracegen.traces(40, seed=5)]
    assert import_traces(pg_client, pid, (parse_trace(t) for t in traces), CONFIG, progress=False).imported == 42
    run = uuid.uuid4().hex[:8]  # a kept test database ($LS_TRAJEVAL_TEST_PG_DIR) has the users of earlier runs
    a, b = (studio._dump(pg_client.users.create(email=f"{w}-{run}@example.com", username=f"{w}{run}"))["id"]
            for w in ("exp-a", "exp-b"))
    rng = random.Random(7)
    types = CONFIG.trajectory.types
    tasks = list(studio.iter_tasks(pg_client, pid))
    submitted = 0
    for i, task in enumerate(tasks):
        transcript = task["data"]["te_transcript"]

        def marks(n_steps: int = len(transcript)) -> dict:
            steps = rng.sample(range(n_steps), min(n_steps, rng.randint(0, 3)))
            return {s: (t.category, t.name, rng.choice(("minor", "major", "critical")), f"why {s} {NASTY}")
                    for s in steps for t in [rng.choice(types)]}
        if i == 5:
            studio.create_annotation(pg_client, task["id"], [], completed_by=a, was_cancelled=True)
        else:
            studio.create_annotation(pg_client, task["id"], ui_marks("transcript", transcript, marks()),
                                     completed_by=a, lead_time=round(rng.uniform(1, 99), 3))
            submitted += 1
        if i % 3 == 0:
            studio.create_annotation(pg_client, task["id"], ui_marks("transcript", transcript, marks(), "success"),
                                     completed_by=b, lead_time=12.5)
            submitted += 1
        if i % 2 == 0:
            studio.create_prediction(pg_client, task["id"], {"model_version": "judge-1", "score": 0.5,
                                                             "result": ui_marks("transcript", transcript, marks())})
        if i in (3, 4):  # a draft of the API key's own user (the SDK has no call for drafts)
            httpx.post(f"{pg_label_studio.url}/api/tasks/{task['id']}/drafts", json={"result": [], "lead_time": 1},
                       headers={"Authorization": f"Token {pg_label_studio.credentials.token}"}).raise_for_status()
    return {"id": pid, "tasks": len(tasks), "submitted": submitted}


@pytest.mark.parametrize("export", [export_project, export_predictions, export_gold])
def test_a_snapshot_and_pages_give_the_same_file(pg_client, project, tmp_path, export):
    snap = export(pg_client, project["id"], tmp_path / "snapshot.jsonl", source="snapshot")
    pages = export(pg_client, project["id"], tmp_path / "pages.jsonl", source="pages")
    assert (tmp_path / "snapshot.jsonl").read_bytes() == (tmp_path / "pages.jsonl").read_bytes()
    assert snap.warnings == pages.warnings
    if export is not export_gold:
        assert (snap.source, pages.source) == ("snapshot", "pages")
        assert (snap.written, snap.tasks, snap.cancelled, snap.drafts) == \
            (pages.written, pages.tasks, pages.cancelled, pages.drafts)
    records = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["task_id"] for r in records] == sorted(r["task_id"] for r in records)
    if export is export_project:
        assert (snap.written, snap.tasks, snap.cancelled, snap.drafts) == (project["submitted"], 42, 1, 2)
        rt1 = next(r for r in records if r["trace_id"] == "rt-1")
        assert rt1["task"] == TRACES[0]["task"] and rt1["metadata"] == TRACES[0]["metadata"]
    elif export is export_predictions:
        assert snap.written == 21 and {r["annotator"] for r in records} == {"judge-1"}
    else:
        assert snap.written == len(records) == 41  # every trace but the one with only a skip
    # the snapshot is gone from Label Studio once read
    assert not [e for e in pg_client.projects.exports.list(id=project["id"]) if (e.title or "").startswith("ls-")]


def test_the_command_reads_a_snapshot_or_where_refused_pages(pg_label_studio, pg_client, project, tmp_path):
    ls, pid = pg_label_studio, project["id"]
    direct = tmp_path / "direct.jsonl"
    r = CliRunner(env={"LABEL_STUDIO_URL": ls.url, "LABEL_STUDIO_API_KEY": ls.credentials.token}).invoke(
        main_group, ["export", "--project", str(pid), "-o", str(direct)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert f"wrote {project['submitted']} annotations of 42 tasks" in r.stdout

    def plan(method, path, n):
        return "403" if method == "POST" and path.startswith(f"/api/projects/{pid}/exports") else None

    refused = tmp_path / "refused.jsonl"
    with FaultProxy(ls.url, plan) as proxy:
        r2 = CliRunner(env={"LABEL_STUDIO_URL": proxy.url, "LABEL_STUDIO_API_KEY": ls.credentials.token}).invoke(
            main_group, ["export", "--project", str(pid), "-o", str(refused)], catch_exceptions=False)
    assert r2.exit_code == 0 and "warning" not in r2.output, r2.output  # a refusal is no news: pages are read
    assert proxy.counts["403"] == 1 and proxy.requests[("GET", "/api/tasks")] >= 1
    assert r2.stdout == r.stdout.replace(str(direct), str(refused))
    assert refused.read_bytes() == direct.read_bytes()
