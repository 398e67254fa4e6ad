"""The backend for real: a gunicorn process with 2 workers and Basic auth next to a real Label Studio.

Connect → predictions when tasks are retrieved (no duplicates) → annotations through the API → the
task's score fields within seconds (the webhook passed authentication) → backend down, events lost →
``resync`` restores them → a 1,000-event burst converges to the recomputed scores.
"""
from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from commandline import invoke
from waiting import wait_for

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.ml import writeback
from ls_trajeval.studio import client as studio

from .conftest import PASSWORD, USER
from .samples import FLAGGED_STEPS, PREDICTED_SCORE, TRACES, marks

pytestmark = pytest.mark.studio
CONFIG = str(label_configs.path("trajectory_eval"))


@pytest.fixture(scope="module")
def setup(label_studio, ls_client, backend_factory):
    c = cfg.load(CONFIG)
    project = studio.create_project(ls_client, c, "transcript", "ml backend test")
    items = [parse_trace(t) for t in TRACES]
    import_traces(ls_client, project["id"], items, c, progress=False)
    tasks = {t["data"]["trace_id"]: t for t in studio.iter_tasks(ls_client, project["id"])}
    backend = backend_factory(CONFIG, ls=label_studio, workers=2).start()
    return {"config": c, "project": project["id"], "tasks": tasks, "backend": backend}


def studio_env(ls) -> dict:
    """The CLI's environment for the server ``ls`` (other tests here point it at a dead address)."""
    return {"LABEL_STUDIO_URL": ls.url, "LABEL_STUDIO_API_KEY": ls.credentials.token}


@pytest.fixture(scope="module")
def connected(setup, label_studio):
    b = setup["backend"]
    r = invoke("ml", "connect", "--project", setup["project"], "--backend-url", b.url,
                "--basic-auth-user", USER, "--basic-auth-password", PASSWORD, env=studio_env(label_studio))
    assert r.exit_code == 0, r.output
    setup["connect_output"] = r.output
    return setup


def fields(ls_client, task_id):
    return studio.get_task(ls_client, task_id)["data"]


def test_imported_tasks_are_seeded(setup):
    data = next(iter(setup["tasks"].values()))["data"]
    assert (data["running_score"], data["n_errors"], data["score_mean"]) == (100, 0, 100)
    assert "first_error_step" in data and data["worst_severity"] == ""


def test_connect_prints_changes_and_is_idempotent(connected, label_studio, ls_client):
    out = connected["connect_output"]
    assert "registered ML backend" in out and "webhook" in out and "titled" in out
    # --url is Label Studio's, as in every other command: the environment's dead address is not used
    again = invoke("ml", "connect", "--project", connected["project"], "--backend-url", connected["backend"].url,
                   "--url", label_studio.url, "--basic-auth-user", USER, "--basic-auth-password", PASSWORD,
                   env={**studio_env(label_studio), "LABEL_STUDIO_URL": "http://127.0.0.1:9"})
    assert again.exit_code == 0 and "nothing to change" in again.output, again.output
    backends = list(ls_client.ml.list(project=connected["project"]))
    assert len(backends) == 1 and backends[0].is_interactive
    hooks = studio.webhooks(ls_client, connected["project"])
    mine = [h for h in hooks if h["url"].endswith("/webhook")]
    assert len(mine) == 1 and mine[0]["headers"]["Authorization"].startswith("Basic ")
    project = studio.get_project(ls_client, connected["project"])
    assert project["model_version"].startswith("ls-trajeval-") and project["evaluate_predictions_automatically"]


def test_retrieve_predictions_twice_gives_one_per_task(connected, ls_client):
    # opening a task (the labeling stream's next task; the SDK has no call for it) predicts it once
    http = ls_client._client_wrapper.httpx_client
    opened = [http.request(f"api/projects/{connected['project']}/next", method="GET").json()["id"] for _ in range(2)]
    for task_id in opened:
        assert len(studio.task_predictions(ls_client, task_id)) == 1
    for _ in range(2):
        studio.retrieve_predictions(ls_client, connected["project"])
    version = studio.get_project(ls_client, connected["project"])["model_version"]
    for task in connected["tasks"].values():
        preds = studio.task_predictions(ls_client, task["id"])
        assert len(preds) == 1 and preds[0]["model_version"] == version
        result = preds[0]["result"]
        marked = sorted({int(r["value"]["start"]) for r in result if r["from_name"] == "error_localization"})
        assert marked == FLAGGED_STEPS  # the failed pytest, the success claim, finishing after a failure
        assert preds[0]["score"] == PREDICTED_SCORE
        assert any("rule tool_error" in r["value"]["text"][0] for r in result if r["type"] == "textarea")
    # the Data Manager's prediction score column is filled from them
    listed = next(t for t in studio.iter_tasks(ls_client, connected["project"]))
    assert listed.get("predictions_score") == PREDICTED_SCORE


def test_annotation_events_arrive_with_auth_and_set_the_score(connected, ls_client):
    task = connected["tasks"]["ml-0"]
    tr = task["data"]["te_transcript"]
    ann = studio.create_annotation(ls_client, task["id"], marks(tr, (1, "major"), (3, "critical")))
    got = wait_for(lambda: (d := fields(ls_client, task["id"]))["running_score"] == 85 and d)
    assert got, fields(ls_client, task["id"])
    # steps 1 and 3 marked: the first error is #2 as the UI numbers steps (the export keeps step_index 1)
    assert (got["n_errors"], got["first_error_step"], got["worst_severity"], got["score_mean"]) == \
        (2, 2, "critical", 85)
    assert got["trace"] == TRACES[0]["trace"] and got["task"] == TRACES[0]["task"]  # data merged, not replaced
    ls_client.annotations.update(id=ann["id"], result=marks(tr, (1, "minor")))
    assert wait_for(lambda: fields(ls_client, task["id"])["running_score"] == 99)
    # a second annotator: latest and mean
    studio.create_annotation(ls_client, task["id"], marks(tr, (0, "major"), (2, "major")))
    got = wait_for(lambda: (d := fields(ls_client, task["id"]))["running_score"] == 90 and d)
    assert got and got["score_mean"] == 94.5 and sorted(got["te_scores"].values()) == [90, 99]
    ls_client.annotations.delete(id=ann["id"])
    got = wait_for(lambda: (d := fields(ls_client, task["id"]))["score_mean"] == 90 and d)
    assert got and list(got["te_scores"].values()) == [90]


def test_every_endpoint_needs_auth_and_leaks_nothing(connected, label_studio):
    b = connected["backend"]
    assert httpx.get(b.url + "/health").json() == {"status": "UP"}  # no model_dir, no version
    for path in ("/predict", "/setup", "/webhook", "/versions", "/train"):
        r = httpx.post(b.url + path, json={})
        assert r.status_code == 401, path
    auth = b.auth_tuple
    r = httpx.post(b.url + "/setup", json={"project": "1.1", "model_version": "../../etc"}, auth=auth)
    assert r.status_code == 400 and r.json() == {"error": "invalid model_version"}
    r = httpx.post(b.url + "/versions", json={"project": "../x"}, auth=auth)
    assert r.status_code == 400
    r = httpx.post(b.url + "/predict", content=b"{not json", auth=auth)
    assert r.status_code == 400 and "Traceback" not in r.text
    r = httpx.post(b.url + "/predict", json={"tasks": [{"id": 1, "data": {"trace": 5}}]}, auth=auth)
    assert r.status_code == 200 and r.json()["results"][0]["result"] == []
    log = b.log_path.read_text()
    assert PASSWORD not in log and connected["tasks"]["ml-1"]["data"]["task"] not in log
    assert label_studio.credentials.token not in log
    assert "Traceback" not in log


def test_concurrent_predictions_on_two_workers(connected):
    b = connected["backend"]
    task = connected["tasks"]["ml-2"]
    # a label config without Repeater means the transcript layout
    body = {"tasks": [{"id": task["id"], "data": task["data"]}], "project": f"{connected['project']}.1",
            "label_config": "<View/>"}
    with httpx.Client(auth=b.auth_tuple, timeout=30) as client:
        def one(_):
            r = client.post(b.url + "/predict", json=body)
            return r.status_code, r.json()["results"][0]["score"]
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(one, range(160)))
    assert answers == [(200, PREDICTED_SCORE)] * 160
    assert "Booting worker" in b.log_path.read_text() and b.workers == 2


def test_backend_down_then_resync_restores(connected, label_studio, ls_client):
    b = connected["backend"]
    task = connected["tasks"]["ml-3"]
    b.kill()
    studio.create_annotation(ls_client, task["id"], marks(task["data"]["te_transcript"], (4, "critical")))
    assert fields(ls_client, task["id"])["running_score"] == 100  # the event was lost
    b.start()
    r = invoke("ml", "resync", "--project", connected["project"], env=studio_env(label_studio))
    assert r.exit_code == 0, r.output
    assert re.search(r"6 tasks checked, [1-9]\d* updated", r.output)
    d = fields(ls_client, task["id"])
    assert (d["running_score"], d["n_errors"], d["first_error_step"]) == (90, 1, 5)  # step_index 4 is #5
    again = invoke("ml", "resync", "--project", connected["project"], env=studio_env(label_studio))
    assert "0 updated" in again.output


def test_burst_of_1000_events_converges(connected, ls_client):
    b = connected["backend"]
    c = connected["config"]
    tasks = [connected["tasks"][f"ml-{i}"] for i in (4, 5)]
    anns = []
    for t in tasks:
        tr = t["data"]["te_transcript"]
        anns.append((t, studio.create_annotation(ls_client, t["id"], marks(tr, (0, "minor")))))
    # change them after the fact, so stale events would write stale scores if replayed naively
    for t, a in anns:
        ls_client.annotations.update(id=a["id"],
                                     result=marks(t["data"]["te_transcript"], (0, "critical"), (2, "major")))
    events = []
    for i in range(1000):
        t, a = anns[i % 2]
        events.append({"action": "ANNOTATION_UPDATED" if i % 3 else "ANNOTATION_CREATED",
                       "annotation": {"id": a["id"], "task": t["id"]}, "task": {"id": t["id"]},
                       "project": {"id": connected["project"]}})
    errors = []
    with httpx.Client(auth=b.auth_tuple, timeout=30) as client:
        def send(ev):
            r = client.post(b.url + "/webhook", json=ev)
            if r.status_code != 200:
                errors.append(r.status_code)
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(send, events))
    assert errors == []
    # no process per event: the backend's session still holds serve + gunicorn master + its 2 workers
    procs = subprocess.run(["ps", "-o", "pid=", "-s", str(b.proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(procs) <= 2 + b.workers, procs

    def settled():
        for t, _ in anns:
            current = studio.get_task(ls_client, t["id"])
            expect = writeback.task_fields(c, current["data"], studio.task_annotations(ls_client, t["id"]))
            if any(current["data"].get(k) != v for k, v in expect.items()):
                return False
        return True

    assert wait_for(settled, timeout=20)
    assert [fields(ls_client, t["id"])["running_score"] for t, _ in anns] == [85, 85]


def test_connect_without_webhook_leaves_the_scores_to_resync(setup, label_studio, ls_client):
    # a project of its own: the module's project keeps its webhook for the tests above
    c, b = setup["config"], setup["backend"]
    project = studio.create_project(ls_client, c, "transcript", "ml backend without webhook")["id"]
    import_traces(ls_client, project, [parse_trace(TRACES[0])], c, progress=False)
    task = next(studio.iter_tasks(ls_client, project))
    hook = b.url + "/webhook"
    args = ("ml", "connect", "--project", project, "--backend-url", b.url, "--basic-auth-user", USER,
            "--basic-auth-password", PASSWORD)
    assert invoke(*args, env=studio_env(label_studio)).exit_code == 0
    assert len(studio.webhooks_to(ls_client, project, hook)) == 1
    off = invoke(*args, "--no-webhook", env=studio_env(label_studio))
    assert off.exit_code == 0 and "removed webhook" in off.output and f"ml resync --project {project}" in off.output
    assert studio.webhooks_to(ls_client, project, hook) == []
    again = invoke(*args, "--no-webhook", env=studio_env(label_studio))
    assert again.exit_code == 0 and "nothing to change" in again.output, again.output
    # predictions and the live score stay: the backend is still the project's, interactive
    backends = studio.ml_backends(ls_client, project)
    assert len(backends) == 1 and backends[0]["is_interactive"]
    studio.create_annotation(ls_client, task["id"], marks(task["data"]["te_transcript"], (1, "major"), (3, "critical")))
    assert fields(ls_client, task["id"])["running_score"] == 100  # no event was sent
    r = invoke("ml", "resync", "--project", project, env=studio_env(label_studio))
    assert r.exit_code == 0 and "1 tasks checked, 1 updated" in r.output, r.output
    d = fields(ls_client, task["id"])
    assert (d["running_score"], d["n_errors"], d["first_error_step"]) == (85, 2, 2)


def test_serve_refuses_a_config_that_cannot_work(tmp_path):
    raw = cfg.load(CONFIG).to_dict()
    raw["ml_backend"] = {"detectors": {"loop": {"window": "six"}, "nope": True}}
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps(raw))
    r = invoke("ml", "serve", "--config", bad, "--port", "1")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "ml_backend.detectors.loop.window: expected int" in r.output
    assert "ml_backend.detectors.nope: unknown detector" in r.output
