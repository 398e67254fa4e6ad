"""The backend's WSGI application: label-studio-ml's manager and model protocol behind our middleware.

``label_studio_ml.api.init_app`` sets up its manager; ``/predict`` is handed to that manager (which calls
:class:`~ls_trajeval.ml.model.TrajevalModel`) without the Flask view around it, so the body is parsed
once and an error can never come back as the view's traceback-carrying 500.

What label-studio-ml 1.0.9 leaves open (facts sheet, "ML backends") is closed here:
- Basic auth on every endpoint when credentials are configured (``/health`` says only "UP" without them);
- ``/setup`` and ``/versions`` are answered here from the config loaded at start: no ``model_version``
  or project value from a request reaches the file system, and a ``../`` value is refused;
- ``/webhook`` goes to a bounded, deduplicating in-process queue instead of a forked process per event;
- error responses carry a short message and an id, never a traceback; nothing of a payload is logged.

Every worker process builds all of this from the config at start (:func:`create_app`), so any number
of workers answer alike.
"""
from __future__ import annotations

import base64
import gc
import hmac
import json
import logging
import os
import re
import tempfile
import uuid
from typing import Callable, Iterable

import orjson

from ..core.config import Config, load as load_config
from . import model as model_mod

log = logging.getLogger("ls_trajeval.ml")

ENV_CONFIG = "LS_TRAJEVAL_ML_CONFIG"
ENV_USER = "LS_TRAJEVAL_ML_USER"
ENV_PASSWORD = "LS_TRAJEVAL_ML_PASSWORD"
ENV_QUEUE_WORKERS = "LS_TRAJEVAL_ML_QUEUE_WORKERS"
#: a request body above this is refused (Label Studio sends tasks one at a time when a task opens)
MAX_BODY = 64 * 1024 * 1024
SAFE_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SAFE_PROJECT = re.compile(r"^\d{1,12}(\.\d{1,12})?$")
EVENTS_FOR_TASK = {"ANNOTATION_CREATED", "ANNOTATION_UPDATED"}
EVENTS_DELETED = {"ANNOTATIONS_DELETED", "ANNOTATION_DELETED"}


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


def _json(status: int, body: dict, start_response, extra: list | None = None) -> list[bytes]:
    payload = json.dumps(body).encode()
    reason = {200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
              405: "Method Not Allowed", 413: "Payload Too Large", 500: "Internal Server Error",
              503: "Service Unavailable"}.get(status, "Error")
    start_response(f"{status} {reason}", [("Content-Type", "application/json"),
                                          ("Content-Length", str(len(payload)))] + (extra or []))
    return [payload]


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

    def handle(self, payload: dict) -> int:
        action = payload.get("action")
        project = payload.get("project") if isinstance(payload.get("project"), dict) else {}
        project_id = project.get("id")
        if action in EVENTS_FOR_TASK:
            ann = payload.get("annotation") if isinstance(payload.get("annotation"), dict) else {}
            task = payload.get("task") if isinstance(payload.get("task"), dict) else {}
            task_id = task.get("id") or ann.get("task")
            project_id = project_id or task.get("project") or ann.get("project")
            if not isinstance(task_id, int) or not isinstance(project_id, int):
                raise BadRequest(400, "event without task or project id")
            if isinstance(ann.get("id"), int):
                self._remember(ann["id"], project_id, task_id)
            self.submit(("task", project_id, task_id))
            return 1
        if action in EVENTS_DELETED:
            anns = payload.get("annotations") or ([payload["annotation"]] if payload.get("annotation") else [])
            keys = set()
            for a in anns if isinstance(anns, list) else []:
                aid = a.get("id") if isinstance(a, dict) else a
                known = self.task_of.pop(int(aid), None) if isinstance(aid, int) else None
                if known:
                    keys.add(("task", *known))
                elif isinstance(project_id, int):
                    keys.add(("project", project_id))
            for key in keys:
                self.submit(key)
            return len(keys)
        return 0  # other actions (project updated, tasks created, ...) change no score


class Middleware:
    def __init__(self, flask_app, predictor: model_mod.Predictor, *, user: str | None, password: str | None,
                 events: Events | None, queue=None):
        self.flask_app = flask_app
        self.predictor = predictor
        self.events = events
        self.queue = queue
        self._auth = None
        if user:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            self._auth = f"Basic {token}".encode()

    def authorized(self, environ) -> bool:
        if self._auth is None:
            return True
        given = environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
        return hmac.compare_digest(given, self._auth)

    def _body(self, environ) -> dict:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise BadRequest(400, "bad Content-Length") from None
        if length > MAX_BODY:
            raise BadRequest(413, "request body too large")
        raw = environ["wsgi.input"].read(length) if length else b""
        try:
            data = orjson.loads(raw or b"{}")
        except (orjson.JSONDecodeError, UnicodeDecodeError):
            raise BadRequest(400, "the body is not JSON") from None
        if not isinstance(data, dict):
            raise BadRequest(400, "the body is not a JSON object")
        return data

    def __call__(self, environ, start_response) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            if path in ("/", "/health") and method == "GET":
                if not self.authorized(environ):
                    return _json(200, {"status": "UP"}, start_response)
                body = {"status": "UP", "model_version": self.predictor.version,
                        "detectors": [a.detector.name for a in self.predictor.active]}
                if self.queue is not None:
                    body["queue"] = self.queue.snapshot()
                return _json(200, body, start_response)
            if not self.authorized(environ):
                return _json(401, {"error": "authentication required"}, start_response,
                             [("WWW-Authenticate", 'Basic realm="ls-trajeval"')])
            if method != "POST":
                return _json(404 if path not in ("/predict", "/setup", "/webhook", "/versions") else 405,
                             {"error": "not found" if path not in ("/predict", "/setup", "/webhook", "/versions")
                              else "method not allowed"}, start_response)
            if path == "/setup":
                data = self._body(environ)
                safe_project(data.get("project"))
                safe_version(data.get("model_version"))
                return _json(200, {"model_version": self.predictor.version}, start_response)
            if path == "/versions":
                data = self._body(environ)
                safe_project(data.get("project"))
                return _json(200, {"versions": [self.predictor.version]}, start_response)
            if path == "/webhook":
                data = self._body(environ)
                if self.events is None:
                    return _json(503, {"error": "write-back is not configured (LABEL_STUDIO_URL / "
                                                "LABEL_STUDIO_API_KEY)"}, start_response)
                from .queue import QueueFull
                try:
                    n = self.events.handle(data)
                except QueueFull:
                    return _json(503, {"error": "busy, too many pending tasks"}, start_response)
                return _json(200, {"queued": n}, start_response)
            if path == "/predict":
                data = self._body(environ)
                safe_project(data.get("project"))
                if not isinstance(data.get("tasks"), list):
                    raise BadRequest(400, "'tasks' must be a list")
                token = model_mod.current_label_config.set(data.get("label_config") or "")
                try:
                    return self._predict(data, start_response)
                finally:
                    model_mod.current_label_config.reset(token)
            return _json(404, {"error": "not found"}, start_response)
        except BadRequest as exc:
            return _json(exc.status, {"error": exc.message}, start_response)
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error("request %s %s failed: %s (ref %s)", method, path, type(exc).__name__, ref)
            return _json(500, {"error": "internal error", "ref": ref}, start_response)

    def _predict(self, data: dict, start_response) -> Iterable[bytes]:
        """label-studio-ml's /predict, minus its Flask round trip: the body is parsed once (orjson) and
        handed to its manager, which calls the model; the answer has label-studio-ml's shape."""
        from label_studio_ml.model import LabelStudioMLManager

        params = data.get("params") if isinstance(data.get("params"), dict) else {}
        predictions, model = LabelStudioMLManager.predict(data["tasks"], data.get("project"), data.get("label_config"),
                                                          **params)
        payload = orjson.dumps({"results": predictions, "model_version": model.model_version})
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
        return [payload]


def _quiet_library_logs() -> None:
    # label-studio-ml logs request headers and bodies at DEBUG (tokens, task data): never let them through
    for name in ("label_studio_ml", "label_studio_ml.api", "label_studio_ml.model", "werkzeug", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)


def build(config: Config, *, user: str | None = None, password: str | None = None, client=None,
          queue_workers: int = 2, model_dir: str | None = None):
    """The WSGI app for ``config``; with a Label Studio ``client`` (or a function making one) it also
    processes webhooks."""
    os.environ.setdefault("LABEL_STUDIO_ML_BACKEND_V2", "true")
    _quiet_library_logs()
    from label_studio_ml import api as ml_api
    from label_studio_ml.model import LabelStudioMLManager, ModelWrapper

    predictor = model_mod.configure(config)
    model_dir = model_dir or tempfile.mkdtemp(prefix="ls-trajeval-ml-")
    flask_app = ml_api.init_app(model_class=model_mod.TrajevalModel, model_dir=model_dir)
    # state label-studio-ml would fill on /setup, filled here in every worker from the config instead
    LabelStudioMLManager._current_model = ModelWrapper(model=model_mod.TrajevalModel(), model_version=predictor.version)
    events = queue = None
    if client is not None:
        from . import writeback
        from .queue import WorkQueue

        made = {}

        def studio_client():
            # made on first use: a Label Studio that is down when the backend starts only delays write-back
            # (the queue retries), it does not stop the workers from booting
            if "c" not in made:
                made["c"] = client() if callable(client) else client
            return made["c"]

        def handle(key):
            if key[0] == "task":
                writeback.recompute(studio_client(), config, key[2])
            else:
                writeback.resync(studio_client(), config, key[1])

        queue = WorkQueue(handle, workers=queue_workers)
        events = Events(queue.submit)
    app = Middleware(flask_app, predictor, user=user, password=password, events=events, queue=queue)
    return app


def create_app():
    """Entry point for the WSGI server (``ls_trajeval.ml.app:create_app()``), configured from the environment."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    path = os.environ.get(ENV_CONFIG)
    if not path:
        raise SystemExit(f"{ENV_CONFIG} is not set: start the backend with `ls-trajeval ml serve --config ...`")
    config = load_config(path)
    client = None
    if os.environ.get("LABEL_STUDIO_URL") and os.environ.get("LABEL_STUDIO_API_KEY"):
        from ..studio import client as studio

        def client():
            return studio.connect(os.environ["LABEL_STUDIO_URL"], os.environ["LABEL_STUDIO_API_KEY"])
    else:
        log.warning("LABEL_STUDIO_URL / LABEL_STUDIO_API_KEY not set: predictions only, no score write-back")
    app = build(config, user=os.environ.get(ENV_USER) or None, password=os.environ.get(ENV_PASSWORD),
                client=client, queue_workers=int(os.environ.get(ENV_QUEUE_WORKERS) or 2))
    # Everything loaded so far lives as long as the worker. Left in the collector's oldest generation, it
    # made each full collection (every ~70 requests of 200 steps) a 25-40 ms pause: 1% of requests.
    gc.collect()
    gc.freeze()
    return app
