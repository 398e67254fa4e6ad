"""The backend's Flask app in process, through Flask's test client: every route, every auth case, every
error path. (The same app as a real gunicorn process beside a real Label Studio: test_backend_studio.py.)"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.ml.app import MAX_BODY, build
from ls_trajeval.ml.auth import basic_auth_header
from ls_trajeval.studio import client as studio

from .conftest import PASSWORD, USER
from .samples import FLAGGED_STEPS, PREDICTED_SCORE, TRACES, marks

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
AUTH = basic_auth_header(USER, PASSWORD)
#: what Label Studio may send that is not the right credentials
WRONG = {"missing": {}, "wrong password": basic_auth_header(USER, "guess"),
         "wrong user": basic_auth_header("x", PASSWORD),
         "not basic": {"Authorization": f"Bearer {PASSWORD}"}, "not base64": {"Authorization": "Basic !!!"}}
ROUTES = ["/setup", "/predict", "/webhook", "/versions"]
#: every detector of the shipped config, in the order it names them (label_configs/trajectory_eval.yaml)
DETECTORS = ["tool_error", "loop", "ignored_observation", "premature_termination", "destructive_command",
             "empty_observation"]
SECRET_TEXT = "SECRET-TASK-TEXT-4711"


@pytest.fixture(scope="module")
def client():
    return build(CONFIG, user=USER, password=PASSWORD).test_client()


@pytest.fixture(scope="module")
def open_client():
    return build(CONFIG).test_client()


def task(i=0, text=None):
    t = dict(TRACES[i], task=text) if text else TRACES[i]
    return {"id": 10 + i, "data": task_data(parse_trace(t), CONFIG), "annotations": [], "predictions": []}


def predict_body(layout="transcript", **extra):
    """What Label Studio 1.23.2 posts when a task opens (facts sheet, "ML backends")."""
    return {"tasks": [task()], "project": "3.1717171717", "label_config": labelconfig.generate(CONFIG, layout),
            "params": {"login": None, "password": None, "context": None}, **extra}


# ------------------------------------------------------------------ auth
def test_health_says_only_up_without_the_right_credentials(client):
    for path in ("/health", "/"):
        for name, headers in WRONG.items():
            r = client.get(path, headers=headers)
            assert (r.status_code, r.json) == (200, {"status": "UP"}), (path, name)
        r = client.get(path, headers=AUTH)
        assert r.status_code == 200 and r.json["detectors"] == DETECTORS
        assert r.json["model_version"].startswith("ls-trajeval-") and "queue" not in r.json  # no write-back here


@pytest.mark.parametrize("path", ROUTES + ["/train", "/no-such-path", "/health/../predict"])
@pytest.mark.parametrize("case", sorted(WRONG))
def test_every_other_path_refuses_wrong_credentials(client, path, case):
    r = client.post(path, json={}, headers=WRONG[case])
    assert r.status_code == 401 and r.json == {"error": "authentication required"}
    assert r.headers["WWW-Authenticate"] == 'Basic realm="ls-trajeval"'


@pytest.mark.parametrize("path", ROUTES)
def test_the_right_credentials_pass(client, path):
    r = client.post(path, json=predict_body() if path == "/predict" else {}, headers=AUTH)
    assert r.status_code == (503 if path == "/webhook" else 200), r.json  # 503: this app has no write-back


def test_without_configured_credentials_everything_is_open(open_client):
    r = open_client.get("/health")
    assert r.json["detectors"] == DETECTORS
    assert open_client.post("/predict", json=predict_body()).status_code == 200
    assert open_client.post("/setup", json={}).status_code == 200
    # a header sent anyway changes nothing
    assert open_client.post("/versions", json={}, headers=WRONG["wrong password"]).status_code == 200


def test_unknown_paths_and_wrong_methods(client):
    # label-studio-ml's training-job status: not a route here (training is a queue of the backend's own)
    assert (client.post("/job_status", json={}, headers=AUTH).status_code,
            client.post("/job_status", headers=AUTH).json) == (404, {"error": "not found"})
    for method in ("get", "put", "delete", "options"):
        r = getattr(client, method)("/predict", headers=AUTH)
        assert (r.status_code, r.json, r.headers["Allow"]) == (405, {"error": "method not allowed"}, "POST"), method
    r = client.post("/health", headers=AUTH)
    assert r.status_code == 405 and set(r.headers["Allow"].split(", ")) == {"GET", "HEAD"}


# ------------------------------------------------------------------ setup, versions
def test_setup_answers_from_the_config_and_refuses_unsafe_values(client):
    version = client.get("/health", headers=AUTH).json["model_version"]
    body = {"project": "3.1717171717", "schema": labelconfig.generate(CONFIG, "transcript"), "hostname": "http://ls",
            "access_token": "a-token", "extra_params": {}}
    assert client.post("/setup", json=body, headers=AUTH).json == {"model_version": version}
    assert (client.post("/setup", json={**body, "model_version": version}, headers=AUTH).json
            == {"model_version": version})
    for bad in ("../../etc", "..", "a/b", "/etc/passwd", "x" * 200, 5, ["v1"]):
        r = client.post("/setup", json={**body, "model_version": bad}, headers=AUTH)
        assert (r.status_code, r.json) == (400, {"error": "invalid model_version"}), bad
    for bad in ("../x", "1/../2", "3.4.5", True, {"id": 3}):
        r = client.post("/setup", json={**body, "project": bad}, headers=AUTH)
        assert (r.status_code, r.json) == (400, {"error": "invalid project"}), bad


def test_versions(client):
    version = client.get("/health", headers=AUTH).json["model_version"]
    assert client.post("/versions", json={"project": "3.1717171717"}, headers=AUTH).json == {"versions": [version]}
    r = client.post("/versions", json={"project": "../x"}, headers=AUTH)
    assert (r.status_code, r.json) == (400, {"error": "invalid project"})


# ------------------------------------------------------------------ predict
def test_predict_marks_the_suspect_steps_in_the_transcript_layout(client):
    r = client.post("/predict", json=predict_body(), headers=AUTH)
    assert r.status_code == 200 and r.mimetype == "application/json"
    (pred,) = r.json["results"]
    assert r.json["model_version"] == pred["model_version"] == client.get("/health", headers=AUTH).json["model_version"]
    marked = sorted({int(x["value"]["start"]) for x in pred["result"] if x["from_name"] == "error_localization"})
    assert marked == FLAGGED_STEPS and pred["score"] == PREDICTED_SCORE
    # the workbench's label config has the suggestion label: each mark is a suggestion to accept or reject, and the
    # live score it opens with is the annotator's (nothing decided yet), each suggestion listed with its cost
    assert {(tuple(x["value"]["paragraphlabels"]), x["correctness"]) for x in pred["result"]
            if x["from_name"] == "error_localization"} == {(("suggested",), "incorrect")}
    (live,) = [x for x in pred["result"] if x["from_name"] == "error_localization_live_score"]
    lines = live["value"]["text"][0].splitlines()
    assert lines[0] == "Running score now: 100 of 100" and len(lines) == 1 + len(FLAGGED_STEPS)
    assert all(": suggested, \u2212" in line for line in lines[1:])
    # a label config from before the suggestion label gets the marks' own labels
    before = predict_body(label_config=(Path(__file__).parents[1] / "fixtures" / "transcript_before_workbench.xml")
                          .read_text(encoding="utf-8"))
    (old,) = client.post("/predict", json=before, headers=AUTH).json["results"]
    assert {tuple(x["value"]["paragraphlabels"]) for x in old["result"] if x["from_name"] == "error_localization"} \
        == {("incorrect",)}


def test_predict_in_the_paged_layout(client):
    (pred,) = client.post("/predict", json=predict_body("paged"), headers=AUTH).json["results"]
    flagged = sorted(int(x["from_name"].rsplit("_", 1)[1]) for x in pred["result"]
                     if x["from_name"].startswith("error_localization_severity_"))
    assert flagged == FLAGGED_STEPS and pred["score"] == PREDICTED_SCORE


def test_predict_with_the_editors_regions_gives_the_live_score(client):
    tr = task()["data"]["te_transcript"]
    body = predict_body(params={"context": {"result": marks(tr, (1, "major"), (3, "critical"))}})
    (pred,) = client.post("/predict", json=body, headers=AUTH).json["results"]
    assert pred["score"] == 100 - 5 - 10
    assert pred["result"][0]["from_name"] == "error_localization_live_score"
    assert pred["result"][0]["value"]["text"][0].splitlines() == [
        "Running score now: 85 of 100", "#2 \u00b7 Action: \u22125 (Major) \u00b7 Logical Error",
        "#4 \u00b7 Thought: \u221210 (Critical) \u00b7 Logical Error"]
    # the paged layout has no live box: nothing to fill
    paged = predict_body("paged", params=body["params"])
    assert client.post("/predict", json=paged, headers=AUTH).json["results"][0]["result"] == []


def test_a_task_that_cannot_be_read_costs_only_itself(client):
    body = predict_body(tasks=[{"id": 1, "data": {"trace": 5}}, "not a task", task(1)])
    r = client.post("/predict", json=body, headers=AUTH)
    assert r.status_code == 200
    first, second, third = r.json["results"]
    assert first["result"] == [] and second == {"result": [], "score": None, "model_version": r.json["model_version"]}
    assert third["score"] == PREDICTED_SCORE


@pytest.mark.parametrize("body, message", [
    (b"{not json", "the body is not JSON"),
    (b"\xff\xfe", "the body is not JSON"),
    (b"[1, 2]", "the body is not a JSON object"),
    (b'"tasks"', "the body is not a JSON object"),
    (b'{"tasks": {"id": 1}}', "'tasks' must be a list"),
    (b"{}", "'tasks' must be a list"),
    (b'{"tasks": [], "project": "../../x"}', "invalid project"),
])
def test_predict_bad_requests(client, body, message):
    r = client.post("/predict", data=body, content_type="application/json", headers=AUTH)
    assert (r.status_code, r.json) == (400, {"error": message})


def test_a_bad_content_length_is_refused(client):
    r = client.post("/predict", data=b"{}", headers=AUTH, environ_overrides={"CONTENT_LENGTH": "12abc"})
    assert (r.status_code, r.json) == (400, {"error": "bad Content-Length"})


def test_an_oversized_body_is_refused_unread(client):
    r = client.post("/predict", data=b" " * (MAX_BODY + 1), content_type="application/json", headers=AUTH)
    assert (r.status_code, r.json) == (413, {"error": "request body too large"})
    # just under the limit is read (and is then only not JSON)
    r = client.post("/predict", data=b"{" + b" " * (MAX_BODY - 2) + b"x", content_type="application/json",
                    headers=AUTH)
    assert (r.status_code, r.json) == (400, {"error": "the body is not JSON"})


def test_model_errors_are_a_clean_500_and_log_no_payload(caplog):
    app = build(CONFIG, user=USER, password=PASSWORD)
    c = app.test_client()
    with caplog.at_level(logging.DEBUG):
        # a label config that is no string breaks the model itself, not one task
        r = c.post("/predict", json=predict_body(label_config=5), headers=AUTH)
        assert r.status_code == 500 and set(r.json) == {"error", "ref"} and r.json["error"] == "internal error"
        assert f"TypeError (ref {r.json['ref']})" in caplog.text

        def explode(tasks, **kw):
            raise RuntimeError(f"cannot handle {tasks[0]['data']['task']} with {PASSWORD}")

        app.extensions["ls_trajeval"]["model"].predict = explode
        r = c.post("/predict", json=predict_body(tasks=[task(text=SECRET_TEXT)]), headers=AUTH)
        assert r.status_code == 500 and r.mimetype == "application/json"
        assert SECRET_TEXT not in r.get_data(as_text=True) and "Traceback" not in r.get_data(as_text=True)
        assert f"RuntimeError (ref {r.json['ref']})" in caplog.text
        c.post("/setup", json={"project": "3.1", "access_token": "a-token-" + SECRET_TEXT}, headers=AUTH)
    assert SECRET_TEXT not in caplog.text and PASSWORD not in caplog.text and "Traceback" not in caplog.text
    assert not any(rec.exc_info for rec in caplog.records)


# ------------------------------------------------------------------ webhook
def test_webhook_without_write_back_configured(client):
    r = client.post("/webhook", json={"action": "ANNOTATION_CREATED"}, headers=AUTH)
    assert r.status_code == 503 and "LABEL_STUDIO_URL" in r.json["error"]
    assert client.post("/webhook", data=b"{x", headers=AUTH).status_code == 400


def test_webhook_waits_for_its_task_within_the_bound_and_never_for_a_project():
    """Label Studio unreachable at first (its client blocks), then refusing: the webhook's wait is bounded, a
    project's recompute is never waited for, and a failed recompute ends the wait (the queue retries it)."""
    reachable = threading.Event()

    def studio_client():
        reachable.wait(10)
        raise ConnectionError("Label Studio is down")

    task_event = {"action": "ANNOTATION_CREATED", "annotation": {"id": 1, "task": 7}, "project": {"id": 3}}
    unknown_deletion = {"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 99}], "project": {"id": 3}}
    bounded = build(CONFIG, client=studio_client, webhook_wait=0.3).test_client()
    t0 = time.monotonic()
    assert bounded.post("/webhook", json=task_event).json == {"queued": 1, "written": 0}
    assert 0.3 <= time.monotonic() - t0 < 2
    patient = build(CONFIG, client=studio_client, webhook_wait=5).test_client()
    t0 = time.monotonic()
    assert patient.post("/webhook", json=unknown_deletion).json == {"queued": 1, "written": 0}  # ("project", 3)
    assert time.monotonic() - t0 < 1  # no wait at all, though this app would wait 5 s for a task
    reachable.set()
    t0 = time.monotonic()
    assert patient.post("/webhook", json=task_event).json == {"queued": 1, "written": 0}
    assert time.monotonic() - t0 < 3  # the failure ended the wait
    assert patient.get("/health").json["queue"]["retried"] >= 1


def test_webhook_answers_a_workbench_window_at_once_and_waits_for_the_rest():
    """A save of a long trace's window in the workbench is answered without waiting for the write-back (its live
    score shows the score); the same window in a paged project, and a whole trace's task, wait as before."""
    from ls_trajeval.core import labelconfig
    from ls_trajeval.core.windows import plan

    answers = threading.Event()  # set at the end: until then Label Studio is slow, and a wait runs to its bound

    def studio_client():
        answers.wait(10)
        raise ConnectionError("slow")

    window = {"te_window": plan(250, 100)[1].to_json()}
    workbench, paged = (labelconfig.generate(CONFIG, layout) for layout in ("transcript", "paged"))
    app = build(CONFIG, client=studio_client, webhook_wait=0.5).test_client()

    def answered_in(task_data, label_config, task_id):
        event = {"action": "ANNOTATION_CREATED", "annotation": {"id": task_id, "task": task_id},
                 "task": {"id": task_id, "data": task_data}, "project": {"id": 3, "label_config": label_config}}
        t0 = time.monotonic()
        assert app.post("/webhook", json=event).json == {"queued": 1, "written": 0}
        return time.monotonic() - t0

    assert answered_in(window, workbench, 1) < 0.4
    assert answered_in(window, paged, 2) >= 0.5
    assert answered_in({"n_steps": 3}, workbench, 3) >= 0.5
    answers.set()


@pytest.mark.studio
def test_webhook_queues_events_and_writes_the_score_back(ls_client):
    project = studio.create_project(ls_client, CONFIG, "transcript", "ml app in process")
    import_traces(ls_client, project["id"], [parse_trace(TRACES[0])], CONFIG, progress=False)
    t = next(studio.iter_tasks(ls_client, project["id"]))
    ann = studio.create_annotation(ls_client, t["id"], marks(t["data"]["te_transcript"], (1, "major"), (3, "critical")))
    app = build(CONFIG, user=USER, password=PASSWORD, client=ls_client)
    c = app.test_client()
    event = {"action": "ANNOTATION_CREATED", "annotation": {"id": ann["id"], "task": t["id"]}, "task": {"id": t["id"]},
             "project": {"id": project["id"]}}
    assert c.post("/webhook", json=event, headers=WRONG["missing"]).status_code == 401
    r = c.post("/webhook", json=event, headers=AUTH)
    # it answers once the task is recomputed: the score is there as soon as the answer is
    assert (r.status_code, r.json) == (200, {"queued": 1, "written": 1})
    assert studio.get_task(ls_client, t["id"])["data"]["running_score"] == 85
    queue = c.get("/health", headers=AUTH).json["queue"]
    assert queue["submitted"] == 1 and queue["pending"] == 0
    # events that change no score, and events without the ids the queue needs
    assert c.post("/webhook", json={"action": "PROJECT_UPDATED", "project": {"id": 1}}, headers=AUTH).json == \
        {"queued": 0, "written": 0}
    r = c.post("/webhook", json={"action": "ANNOTATION_UPDATED", "annotation": {}}, headers=AUTH)
    assert (r.status_code, r.json) == (400, {"error": "event without task or project id"})
    # a full queue says so instead of dropping the event silently (another task: one already pending or
    # running is never refused, it only runs again)
    app.extensions["ls_trajeval"]["queue"].max_pending = 0
    other = {**event, "task": {"id": t["id"] + 10**6}, "annotation": {"id": ann["id"] + 10**6}}
    r = c.post("/webhook", json=other, headers=AUTH)
    assert (r.status_code, r.json) == (503, {"error": "busy, too many pending tasks"})
