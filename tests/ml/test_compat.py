"""label-studio-ml's own server serving our model, for teams that run it: its own virtual environment with
``label-studio-ml==1.0.9`` (and the redis and rq it imports without declaring them) and this project without
extras, the backend made as its docs say (``label-studio-ml init --script ...``, ``label-studio-ml start``),
then Label Studio's calls with a real task from the session's Label Studio."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import httpx
import pytest
from waiting import wait_for

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.ml.app import build
from ls_trajeval.studio import client as studio
from ls_trajeval.studio.localserver import free_port

from .conftest import clean_env, fresh_venv
from .samples import FLAGGED_STEPS, PREDICTED_SCORE, TRACES, marks

pytestmark = pytest.mark.studio
CONFIG_PATH = label_configs.path("trajectory_eval")


@pytest.fixture(scope="module")
def lsml_venv(tmp_path_factory):
    return fresh_venv(tmp_path_factory.mktemp("label-studio-ml-venv"), "label-studio-ml==1.0.9", "redis", "rq", ".")


@pytest.fixture(scope="module")
def lsml_server(lsml_venv, tmp_path_factory):
    where = tmp_path_factory.mktemp("lsml-backend")
    (where / "model.py").write_text("from ls_trajeval.ml.compat import TrajevalLabelStudioModel  # noqa: F401\n")
    env = clean_env(lsml_venv, LS_TRAJEVAL_ML_CONFIG=str(CONFIG_PATH), LABEL_STUDIO_ML_BACKEND_V2="true")
    init = subprocess.run(["label-studio-ml", "init", "backend", "--script", "model.py:TrajevalLabelStudioModel"],
                          cwd=where, env=env, capture_output=True, text=True)
    assert init.returncode == 0, init.stdout + init.stderr
    port = free_port()
    log = where / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["label-studio-ml", "start", "backend", "--host", "127.0.0.1", "-p", str(port)],
                                cwd=where, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    def up() -> bool:
        if proc.poll() is not None:
            pytest.fail("label-studio-ml's server exited:\n" + log.read_text()[-3000:])
        try:
            return httpx.get(url + "/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        if not wait_for(up, 60, interval=0.3):
            pytest.fail("label-studio-ml's server did not come up:\n" + log.read_text()[-3000:])
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)


@pytest.fixture(scope="module")
def real_task(ls_client):
    c = cfg.load(CONFIG_PATH)
    project = studio.create_project(ls_client, c, "transcript", "label-studio-ml compat")
    import_traces(ls_client, project["id"], [parse_trace(TRACES[0])], c, progress=False)
    task = next(studio.iter_tasks(ls_client, project["id"]))
    project = studio.get_project(ls_client, project["id"])
    return project, task


def without_ids(results: list) -> list:
    """The predictions with each region id replaced by its order of first appearance."""
    seen: dict = {}
    return [{**p, "result": [{**x, "id": seen.setdefault(x["id"], len(seen))} for x in p["result"]]} for p in results]


def test_label_studio_mls_server_serves_our_model(lsml_server, real_task):
    project, task = real_task
    health = httpx.get(lsml_server + "/health", timeout=10).json()
    assert health["status"] == "UP"
    ls_project = f"{project['id']}.{int(time.time())}"
    setup = httpx.post(lsml_server + "/setup", timeout=30, json={
        "project": ls_project, "schema": project["label_config"], "hostname": "http://127.0.0.1:8080",
        "access_token": "token", "extra_params": {}})
    assert setup.status_code == 200, setup.text
    assert setup.json()["model_version"] == "INITIAL"  # label-studio-ml's own name for an untrained model

    body = {"tasks": [task], "project": ls_project, "label_config": project["label_config"],
            "params": {"login": None, "password": None, "context": None}}
    r = httpx.post(lsml_server + "/predict", json=body, timeout=60)
    assert r.status_code == 200, r.text
    (pred,) = r.json()["results"]
    marked = sorted({int(x["value"]["start"]) for x in pred["result"] if x["from_name"] == "error_localization"})
    assert marked == FLAGGED_STEPS and pred["score"] == PREDICTED_SCORE
    # the very answer our own server gives for the same request (region ids are drawn anew on every call)
    ours = build(cfg.load(CONFIG_PATH)).test_client().post("/predict", json=body).json
    assert without_ids(r.json()["results"]) == without_ids(ours["results"])

    # the editor's current regions: the live score
    regions = marks(task["data"]["te_transcript"], (1, "major"), (3, "critical"))
    live = httpx.post(lsml_server + "/predict", timeout=60,
                      json={**body, "params": {**body["params"], "context": {"result": regions}}}).json()["results"][0]
    assert live["score"] == 85 and live["result"][0]["value"]["text"][0].startswith("Running score now: 85 of 100")
