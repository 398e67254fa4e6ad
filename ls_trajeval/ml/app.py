"""The backend's WSGI application: a Flask app answering the protocol Label Studio 1.23.2 speaks to an ML
backend (``/health``, ``/setup``, ``/predict``, ``/webhook``, ``/versions``), served by gunicorn.

Why Flask (3.x): it is what HumanSignal's own label-studio-ml 2.x server is built on (routes plus a
``before_request`` Basic-auth check, as here), so anyone who knows that server reads this one; its
``errorhandler``, ``MAX_CONTENT_LENGTH`` and test client give the limits, the JSON error bodies and the
in-process tests declaratively. It stays WSGI for gunicorn's worker processes. A bare Werkzeug app would
save only itsdangerous and blinker (unused here: no sessions, no signals) at the price of hand-written
dispatch; Starlette would need an ASGI server or an adapter.

What label-studio-ml 1.0.9's server left open (facts sheet, "ML backends") stays closed:
- Basic auth on every endpoint when credentials are configured (``/health`` says only "UP" without them);
- ``/setup`` and ``/versions`` are answered from the config loaded at start: no ``model_version`` or
  project value from a request reaches the file system, and a ``../`` value is refused;
- ``/webhook`` goes to a bounded, deduplicating in-process queue instead of a forked process per event;
- error responses carry a short message and an id, never a traceback; nothing of a payload is logged.

Every worker process builds all of this from the config at start (:func:`create_app`), so any number
of workers answer alike.
"""
from __future__ import annotations

import gc
import logging
import os
import re
import time
import uuid
from collections.abc import Callable

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from ..core.config import Config
from ..core.layouts import layout_of
from ..core.windows import window_of
from ..studio import client as studio
from . import env, training, writeback
from .auth import BasicAuth
from .connect import follow_version
from .model import Predictor, TrajevalModel
from .queue import QueueFull, WorkQueue

log = logging.getLogger("ls_trajeval.ml")

#: a request body above this is refused (Label Studio sends tasks one at a time when a task opens)
MAX_BODY = 64 * 1024 * 1024
SAFE_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SAFE_PROJECT = training.PROJECT_UID
EVENTS_FOR_TASK = {"ANNOTATION_CREATED", "ANNOTATION_UPDATED"}
EVENTS_DELETED = {"ANNOTATIONS_DELETED", "ANNOTATION_DELETED"}
#: the error bodies of the HTTP errors Flask raises itself (routing, limits)
HTTP_ERRORS: dict[int | None, str] = {404: "not found", 405: "method not allowed", 413: "request body too large"}


class BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def safe_version(value) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str) or ".." in value or not SAFE_VERSION.match(value):
        raise BadRequest(400, "invalid model_version")
    return value


def safe_project(value) -> str | None:
    if value in (None, ""):
        return None
    if isinstance(value, bool) or not SAFE_PROJECT.match(str(value)):
        raise BadRequest(400, "invalid project")
    return str(value)


def _json(status: int, body: dict, headers: dict | None = None) -> Response:
    return Response(orjson.dumps(body), status=status, headers=headers, mimetype="application/json")


def _body() -> dict:
    """The request's JSON object. Flask refuses a body over ``MAX_CONTENT_LENGTH`` (413) before reading it."""
    length = request.headers.get("Content-Length")
    if length is not None and not length.strip().isdigit():
        raise BadRequest(400, "bad Content-Length")
    raw = request.get_data(cache=False)
    try:
        data = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError:
        raise BadRequest(400, "the body is not JSON") from None
    if not isinstance(data, dict):
        raise BadRequest(400, "the body is not a JSON object")
    return data


class Events:
    """Webhook payloads → queue keys. Deleted annotations carry only their ids, so the task of an
    annotation seen before is remembered; an unknown one makes the whole project recompute."""

    def __init__(self, submit: Callable, max_known: int = 200_000):
        self.submit = submit
        self.task_of: dict[int, tuple[int, int]] = {}
        self.max_known = max_known

    def _remember(self, ann_id, project_id, task_id) -> None:
        if len(self.task_of) >= self.max_known:
            self.task_of.pop(next(iter(self.task_of)))
        self.task_of[int(ann_id)] = (project_id, task_id)

    def handle(self, payload: dict) -> dict:
        """Submit the keys ``payload`` calls for; returns each with what ``submit`` returned for it."""
        action = payload.get("action")
        project: dict = payload["project"] if isinstance(payload.get("project"), dict) else {}
        project_id = project.get("id")
        if action in EVENTS_FOR_TASK:
            ann: dict = payload["annotation"] if isinstance(payload.get("annotation"), dict) else {}
            task: dict = payload["task"] if isinstance(payload.get("task"), dict) else {}
            task_id = task.get("id") or ann.get("task")
            project_id = project_id or task.get("project") or ann.get("project")
            if not isinstance(task_id, int) or not isinstance(project_id, int):
                raise BadRequest(400, "event without task or project id")
            if isinstance(ann.get("id"), int):
                self._remember(ann["id"], project_id, task_id)
            key = ("task", project_id, task_id)
            return {key: self.submit(key)}
        if action in EVENTS_DELETED:
            anns = payload.get("annotations") or ([payload["annotation"]] if payload.get("annotation") else [])
            keys: set[tuple] = set()
            for a in anns if isinstance(anns, list) else []:
                aid = a.get("id") if isinstance(a, dict) else a
                known = self.task_of.pop(int(aid), None) if isinstance(aid, int) else None
                if known:
                    keys.add(("task", *known))
                elif isinstance(project_id, int):
                    keys.add(("project", project_id))
            return {key: self.submit(key) for key in keys}
        return {}  # other actions (project updated, tasks created, ...) change no score


def _quiet_library_logs() -> None:
    # httpx logs every write-back request; werkzeug logs requests when it serves: neither needs to be seen
    for name in ("werkzeug", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _lazy(client):
    """The Label Studio client, made on first use: a Label Studio that is down when the backend starts only delays
    write-back and training (the queues retry), it does not stop the workers from booting."""
    made = {}

    def studio_client():
        if "c" not in made:
            made["c"] = client() if callable(client) else client
        return made["c"]

    return studio_client


def _write_back(config: Config, studio_client, queue_workers: int):
    """The webhook side: events → a queue whose workers recompute tasks in Label Studio."""
    def handle(key):
        if key[0] == "task":
            writeback.recompute(studio_client(), config, key[2])
        else:
            writeback.resync(studio_client(), config, key[1])

    queue = WorkQueue(handle, workers=queue_workers)
    return Events(queue.submit), queue


def _trainer(predictor: Predictor, model_dir: str, studio_client):
    """The learned judges in ``model_dir`` and their trainer; with Label Studio it reads a project's labels on
    events and ``START_TRAINING``, and moves the project to each new judge's version."""
    judges = training.Judges(model_dir, predictor.version, predictor.config, predictor.active)
    fetch = after = None
    if studio_client is not None:
        def fetch(project_id):
            return studio.iter_tasks(studio_client(), project_id, only_annotated=True)

        def after(project_id, status):
            follow_version(studio_client(), project_id, predictor.version, status["version"])

    return judges, training.Trainer(judges, fetch, after)


def live_scored_window(event: dict) -> bool:
    """Whether a webhook ``event`` is about a window task of a long trace (:mod:`~ls_trajeval.core.windows`) in a
    workbench (transcript layout) project, which shows a live score: its save is answered without waiting for the
    score's write-back."""
    task, project = event.get("task"), event.get("project")
    return (isinstance(task, dict) and isinstance(task.get("data"), dict) and window_of(task["data"]) is not None
            and isinstance(project, dict) and isinstance(project.get("label_config"), str)
            and layout_of(project["label_config"]) == "transcript")


def build(config: Config, *, user: str | None = None, password: str | None = None, client=None,
          queue_workers: int = 2, webhook_wait: float = env.WEBHOOK_WAIT_DEFAULT, model_dir: str | None = None
          ) -> Flask:
    """The WSGI app for ``config``; with a Label Studio ``client`` (or a function making one) it also
    processes webhooks, answering an annotation's event once its task is recomputed or after ``webhook_wait``
    seconds, whichever comes first. With a ``model_dir`` it learns a judge per project from its labels (the
    train action and annotation events) and suggests with it once there are enough."""
    _quiet_library_logs()
    predictor = Predictor(config)
    model = TrajevalModel(predictor)
    auth = BasicAuth(user, password)
    studio_client = _lazy(client) if client is not None else None
    events, queue = _write_back(config, studio_client, queue_workers) if studio_client else (None, None)
    judges, trainer = _trainer(predictor, model_dir, studio_client) if model_dir else (None, None)

    def project_of(data: dict) -> str | None:
        return training.project_uid(safe_project(data.get("project")))

    def version_for(uid: str | None) -> str:
        return judges.version(uid) if judges is not None else predictor.version

    app = Flask(__name__)
    app.config.update(MAX_CONTENT_LENGTH=MAX_BODY, PROVIDE_AUTOMATIC_OPTIONS=False)
    # what a test or an operator may want to look at: the queue's counters, the model in use
    app.extensions["ls_trajeval"] = {"predictor": predictor, "model": model, "events": events, "queue": queue,
                                     "judges": judges, "trainer": trainer}

    @app.before_request
    def require_auth():
        # every path but /health, known or not, so an unauthenticated caller learns nothing of the routes
        if request.endpoint != "health" and not auth.allows(request.headers.get("Authorization")):
            return _json(401, {"error": "authentication required"},
                         {"WWW-Authenticate": 'Basic realm="ls-trajeval"'})
        return None

    @app.get("/", endpoint="health")
    @app.get("/health", endpoint="health")
    def health():
        if not auth.allows(request.headers.get("Authorization")):
            return _json(200, {"status": "UP"})
        body = {"status": "UP", "model_version": predictor.version,
                "detectors": [a.detector.name for a in predictor.active]}
        if queue is not None:
            body["queue"] = queue.snapshot()
        if judges is not None:
            body["learned"] = judges.status()
        return _json(200, body)

    @app.post("/setup")
    def setup():
        data = _body()
        uid = project_of(data)
        safe_version(data.get("model_version"))
        return _json(200, {"model_version": version_for(uid)})

    @app.post("/versions")
    def versions():
        uid = project_of(_body())
        return _json(200, {"versions": list(dict.fromkeys([predictor.version, version_for(uid)]))})

    @app.post("/train")
    def train():
        # Label Studio's train action without its webhook flag: the annotated tasks come in the body
        data = _body()
        uid = project_of(data)
        tasks = data.get("annotations")
        if trainer is None:
            return _json(503, {"error": "learning is off (no model dir)"})
        if uid is None or not isinstance(tasks, list):
            raise BadRequest(400, "'project' and 'annotations' (a list of tasks) are required")
        trainer.request(uid, tasks)
        return _json(200, {"training": uid})

    @app.post("/webhook")
    def webhook():
        data = _body()
        uid = training.project_uid(data.get("project")) if trainer is not None else None
        if data.get("action") == "START_TRAINING":  # the train action, as Label Studio 1.23 sends it
            if uid is None or trainer is None or not trainer.request(uid):
                return _json(503, {"error": "training needs a model dir and Label Studio (LABEL_STUDIO_URL / "
                                            "LABEL_STUDIO_API_KEY)"})
            return _json(200, {"training": uid})
        if events is None or queue is None:  # both set, or neither
            return _json(503, {"error": "write-back is not configured (LABEL_STUDIO_URL / LABEL_STUDIO_API_KEY)"})
        try:
            tickets = events.handle(data)
        except QueueFull:
            return _json(503, {"error": "busy, too many pending tasks"})
        if tickets and uid is not None and trainer is not None:
            trainer.request(uid)  # the labels changed: learn again, in the background
        # Label Studio sends the event inside the save request, after the annotation is stored, and the editor
        # reloads the task when that request answers: waiting for the task's recomputation (bounded: Label
        # Studio gives up after 1 s) makes the reload show the new score. A project resync is never waited for,
        # nor a window of a long trace in the workbench: its live score shows the score while the annotator marks,
        # and a save there is what an annotator of a long trace waits for most (docs/annotating.md, "Every click")
        deadline = time.monotonic() + (0.0 if live_scored_window(data) else webhook_wait)
        written = [queue.wait(key, ticket, deadline - time.monotonic())
                   for key, ticket in tickets.items() if key[0] == "task"]
        return _json(200, {"queued": len(tickets), "written": sum(written)})

    @app.post("/predict")
    def predict():
        data = _body()
        uid = project_of(data)
        if not isinstance(data.get("tasks"), list):
            raise BadRequest(400, "'tasks' must be a list")
        params: dict = data["params"] if isinstance(data.get("params"), dict) else {}
        judge = judges.judge(uid) if judges is not None else None
        results = model.predict(data["tasks"], label_config=data.get("label_config") or "",
                                context=params.get("context"), judge=judge)
        return _json(200, {"results": results, "model_version": judge.version if judge else predictor.version})

    @app.errorhandler(BadRequest)
    def bad_request(exc: BadRequest):
        return _json(exc.status, {"error": exc.message})

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        allowed = getattr(exc, "valid_methods", None)  # a 405 says which methods the path takes
        return _json(exc.code or 500, {"error": HTTP_ERRORS.get(exc.code, (exc.name or "error").lower())},
                     {"Allow": ", ".join(allowed)} if allowed else None)

    @app.errorhandler(Exception)
    def crash(exc: Exception):
        # the kind of failure and a reference, never the message or a traceback: both can carry payload
        ref = uuid.uuid4().hex[:8]
        log.error("request %s %s failed: %s (ref %s)", request.method, request.path, type(exc).__name__, ref)
        return _json(500, {"error": "internal error", "ref": ref})

    return app


def create_app() -> Flask:
    """Entry point for the WSGI server (``ls_trajeval.ml.app:create_app()``), configured from the environment."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = env.config()
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None
    client = None
    if os.environ.get("LABEL_STUDIO_URL") and os.environ.get("LABEL_STUDIO_API_KEY"):
        def connect():
            return studio.connect(os.environ["LABEL_STUDIO_URL"], os.environ["LABEL_STUDIO_API_KEY"])

        client = connect
    else:
        log.warning("LABEL_STUDIO_URL / LABEL_STUDIO_API_KEY not set: predictions only, no score write-back")
    app = build(config, user=os.environ.get(env.USER) or None, password=os.environ.get(env.PASSWORD),
                client=client, queue_workers=int(os.environ.get(env.QUEUE_WORKERS) or 2),
                webhook_wait=env.webhook_wait(), model_dir=os.environ.get(env.MODEL_DIR) or None)
    # Everything loaded so far lives as long as the worker. Left in the collector's oldest generation, it
    # made each full collection (every ~70 requests of 200 steps) a 25-40 ms pause: 1% of requests.
    gc.collect()
    gc.freeze()
    return app
