"""A local stand-in for Langfuse's public API that checks every request against Langfuse's published OpenAPI
document (tests/fixtures/langfuse, with its provenance) with openapi-core, and every answer it gives too, so that the
SDK is fed responses in Langfuse's own shapes. It keeps traces (given) and what it is sent (score configs, scores),
and records each request and each violation of the document."""
from __future__ import annotations

import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SPEC = Path(__file__).resolve().parents[1] / "fixtures" / "langfuse" / "openapi.yml"
_SPEC_CACHE: list = []


def spec():
    if not _SPEC_CACHE:
        from openapi_core import Config, OpenAPI

        # the document as published does not pass a strict OpenAPI 3.0 check of itself (one schema uses JSON
        # Schema's ``const``, PricingTierAttributeCondition, far from the endpoints used here): that check is off,
        # the checks of requests and answers against it are not
        _SPEC_CACHE.append(OpenAPI.from_file_path(str(SPEC), config=Config(spec_validator_cls=None)))
    return _SPEC_CACHE[0]


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def observation(trace_id: str, oid: str, type_: str, name: str, start: str, **kw: Any) -> dict:
    """An observation as Langfuse's ``ObservationsView`` has it (every required key)."""
    return {"id": oid, "traceId": trace_id, "type": type_, "name": name, "startTime": start, "endTime": start,
            "completionStartTime": None, "model": kw.pop("model", None), "modelParameters": {},
            "input": kw.pop("input", None), "version": None, "metadata": {}, "output": kw.pop("output", None),
            "usage": {"input": 0, "output": 0, "total": 0, "unit": None}, "level": kw.pop("level", "DEFAULT"),
            "statusMessage": kw.pop("statusMessage", None), "parentObservationId": kw.pop("parent", None),
            "promptId": None, "usageDetails": {}, "costDetails": {}, "environment": "default", "promptName": None,
            "promptVersion": None, "modelId": None, "inputPrice": None, "outputPrice": None, "totalPrice": None,
            "calculatedInputCost": None, "calculatedOutputCost": None, "calculatedTotalCost": None, "latency": None,
            "timeToFirstToken": None, **kw}


def trace(trace_id: str, timestamp: str, name: str, tags: list[str], observations: list[dict], **kw: Any) -> dict:
    return {"id": trace_id, "timestamp": timestamp, "name": name, "input": kw.pop("input", None),
            "output": kw.pop("output", None), "sessionId": None, "release": None, "version": None, "userId": None,
            "metadata": None, "tags": tags, "public": False, "environment": "default",
            "htmlPath": f"/project/p/traces/{trace_id}", "latency": 1.5, "totalCost": 0.0,
            "observations": observations, "scores": [], **kw}


class LangfuseStandIn:
    def __init__(self, traces: list[dict], public_key: str, secret_key: str):
        self.traces = {t["id"]: t for t in traces}
        self.auth = (public_key, secret_key)
        self.configs: dict[str, dict] = {}
        self.scores: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []
        self.violations: list[str] = []
        self.deleted: list[str] = []
        self.url = ""
        self.lock = threading.Lock()
        self.app = self._app()

    def start(self) -> str:
        """Serve on a free loopback port; returns (and keeps as ``url``) its address."""
        from waitress.server import create_server

        self.server = create_server(self.app, host="127.0.0.1", port=0, threads=2)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.effective_port}"
        return self.url

    def stop(self) -> None:
        from waitress import wasyncore

        self.server.trigger.pull_trigger(lambda: wasyncore.close_all(self.server._map, ignore_all=True))
        self.thread.join(10)
        self.server.task_dispatcher.shutdown(timeout=5)

    def posts(self, path: str) -> int:
        return sum(1 for m, p in self.requests if m == "POST" and p == path)

    def _app(self):
        from flask import Flask, jsonify, request
        from openapi_core.contrib.flask import FlaskOpenAPIRequest, FlaskOpenAPIResponse

        app = Flask("langfuse-stand-in")

        @app.before_request
        def check_request():
            self.requests.append((request.method, request.path))
            for err in spec().iter_request_errors(FlaskOpenAPIRequest(request)):
                self.violations.append(f"{request.method} {request.full_path}: {err} {getattr(err, '__cause__', '')}")
            auth = request.authorization
            if auth is None or (auth.username, auth.password) != self.auth:
                self.violations.append(f"{request.method} {request.path}: not the project's Basic credentials")

        @app.after_request
        def check_response(response):
            for err in spec().iter_response_errors(FlaskOpenAPIRequest(request), FlaskOpenAPIResponse(response)):
                self.violations.append(f"answer to {request.method} {request.path}: {err} "
                                       f"{getattr(err, '__cause__', '')}")
            return response

        def meta(page: int, limit: int, total: int) -> dict:
            return {"page": page, "limit": limit, "totalItems": total, "totalPages": max(1, -(-total // limit))}

        @app.get("/api/public/traces")
        def list_traces():
            page, limit = int(request.args.get("page", 1)), int(request.args.get("limit", 50))
            since = request.args.get("fromTimestamp")
            tags = request.args.getlist("tags")
            name = request.args.get("name")
            found = sorted((t for t in self.traces.values()
                            if (since is None or _time(t["timestamp"]) >= _time(since))
                            and all(tag in t["tags"] for tag in tags) and (name is None or t["name"] == name)),
                           key=lambda t: t["timestamp"])
            rows = [{**{k: v for k, v in t.items() if k not in ("observations", "scores")},
                     "observations": [o["id"] for o in t["observations"]], "scores": []}
                    for t in found[(page - 1) * limit: page * limit]]
            return jsonify({"data": rows, "meta": meta(page, limit, len(found))})

        # path variables named as the document names them: openapi-core reads them from Flask's view arguments
        @app.get("/api/public/traces/<traceId>")
        def get_trace(traceId):  # noqa: N803
            trace_id = traceId
            if trace_id not in self.traces:
                return jsonify({"message": "not found"}), 404
            return jsonify(self.traces[trace_id])

        @app.get("/api/public/score-configs")
        def list_configs():
            page, limit = int(request.args.get("page", 1)), int(request.args.get("limit", 50))
            rows = list(self.configs.values())
            return jsonify({"data": rows[(page - 1) * limit: page * limit], "meta": meta(page, limit, len(rows))})

        @app.post("/api/public/score-configs")
        def create_config():
            body = request.get_json()
            made = {"id": str(uuid.uuid4()), "name": body["name"], "createdAt": now(), "updatedAt": now(),
                    "projectId": "p", "dataType": body["dataType"], "isArchived": False,
                    "categories": body.get("categories"), "description": body.get("description")}
            with self.lock:
                self.configs[made["id"]] = made
            return jsonify(made)

        @app.post("/api/public/scores")
        def create_score():
            body = request.get_json()
            sid = body.get("id") or str(uuid.uuid4())
            with self.lock:
                self.scores[sid] = body  # Langfuse upserts by id
            return jsonify({"id": sid})

        @app.delete("/api/public/scores/<scoreId>")
        def delete_score(scoreId):  # noqa: N803
            score_id = scoreId
            with self.lock:
                self.scores.pop(score_id, None)
                self.deleted.append(score_id)
            return "", 204

        return app


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
