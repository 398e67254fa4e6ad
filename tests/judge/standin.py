"""A local OpenAI-compatible stand-in: ``POST /v1/chat/completions`` answered from recorded responses
(``tests/fixtures/judge/responses.json``), on Flask (the project's maintained web stack) in a thread, on a free port.

A request is matched to a script by the marker its messages carry (``judge-case:...``, in a trace's task); its
n-th request gets the script's n-th answer (the last repeats): a recorded completion, an HTTP error, or a completion
held back for a while. A request with no marker gets a generated answer: every step it asks about correct, with
``default_confidence``. The stand-in records every request, and how many were in flight at once; with ``hold``, a
request waits until that many are in flight (or ``hold_timeout`` passes), so concurrency shows without timing.
"""
from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from flask import Flask, Response, jsonify, request
from werkzeug.serving import make_server

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "judge" / "responses.json"
MODEL = "standin-judge-1"


class StandIn:
    def __init__(self, fixture: Path = FIXTURE, api_key: str | None = None):
        doc = json.loads(fixture.read_text(encoding="utf-8"))
        self.completions: dict = doc["completions"]
        self.scripts: dict = doc["scripts"]
        self.api_key = api_key
        self.requests: list[dict] = []  # {"marker", "body", "authorization"}
        self.in_flight = self.max_in_flight = 0
        #: the first ``hold`` requests wait until that many are in flight (or ``hold_timeout`` passes)
        self.hold: int | None = None
        self.hold_timeout = 30.0
        self._held = 0
        self._hold_open = False
        self.default_confidence = 0.8
        self.default_usage = (100, 20)
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._release = threading.Event()  # set at stop: nothing waits past the test
        self.app = self._app()
        self._server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, name="standin", daemon=True)

    def start(self) -> StandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        with self._changed:
            self._changed.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._counts.clear()
            self.in_flight = self.max_in_flight = self._held = 0
            self.hold, self._hold_open = None, False

    def requests_for(self, marker: str) -> list[dict]:
        return [r for r in self.requests if r["marker"] == marker]

    # ------------------------------------------------------------ answering
    def _marker(self, body: dict) -> str | None:
        text = "\n".join(m.get("content") or "" for m in body.get("messages") or [] if m.get("role") == "user")
        found = [k for k in self.scripts if k in text]
        return max(found, key=len) if found else None

    def _generated(self, body: dict) -> dict:
        asked = _asked_steps(body)
        content = json.dumps({"steps": [{"step": n, "correctness": "correct", "error_type": None, "severity": None,
                                         "rationale": "generated", "confidence": self.default_confidence}
                                        for n in asked]})
        p, c = self.default_usage
        return {"id": "chatcmpl-standin-generated", "object": "chat.completion", "created": 1733900000,
                "model": MODEL, "choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                                                                     "refusal": None},
                                             "logprobs": None, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}

    def _app(self) -> Flask:
        app = Flask("standin")

        @app.post("/v1/chat/completions")
        def chat() -> Response | tuple:
            auth = request.headers.get("Authorization")
            if self.api_key is not None and auth != f"Bearer {self.api_key}":
                return jsonify({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                          "param": None, "code": "invalid_api_key"}}), 401
            body = request.get_json(force=True)
            if body.get("model") != MODEL:
                return jsonify({"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                          "type": "invalid_request_error", "param": None,
                                          "code": "model_not_found"}}), 404
            marker = self._marker(body)
            with self._changed:
                self.requests.append({"marker": marker, "body": body, "authorization": auth})
                n = self._counts.get(marker or "", 0)
                self._counts[marker or ""] = n + 1
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                self._changed.notify_all()
                if self.hold is not None and self._held < self.hold:
                    self._held += 1
                    # open for good once reached: a released request may finish before the others wake up
                    self._hold_open = self._hold_open or self.in_flight >= self.hold
                    self._changed.wait_for(lambda: self._hold_open or self._release.is_set(),
                                           timeout=self.hold_timeout)
            try:
                if marker is None:
                    return jsonify(self._generated(body))
                script = self.scripts[marker]
                answer = script[min(n, len(script) - 1)]
                if isinstance(answer, dict) and "delay" in answer:
                    self._release.wait(answer["delay"])
                    answer = answer["then"]
                if isinstance(answer, dict):
                    return jsonify(answer["body"]), answer["status"], answer.get("headers", {})
                return jsonify(self.completions[answer])
            finally:
                with self._changed:
                    self.in_flight -= 1

        return app


def _asked_steps(body: dict) -> list[int]:
    """The step numbers a request asks about: the schema's enum, else the prompt's "Judge steps A to B"."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if schema:
        return list(schema["properties"]["steps"]["items"]["properties"]["step"]["enum"])
    text = "\n".join(m.get("content") or "" for m in body.get("messages") or [])
    first, last = map(int, re.search(r"Judge steps (\d+) to (\d+)", text).groups())
    return list(range(first, last + 1))
