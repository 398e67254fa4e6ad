"""The OTLP/HTTP receiver: a Flask app on ``/v1/traces`` that spools what an agent's OpenTelemetry exporter sends,
served by waitress (a maintained, pure-Python WSGI server that runs in the importing process, so the receiver
and the importer live and die together).

Every refusal is a 4xx with a one-line reason in ``text/plain``: 401 without valid credentials (bearer token or
HTTP Basic), 413 past the body limit (before or after gzip), 415 for another media type or encoding, 400 for a
body that does not decode; a bug answers a bare 500, never a traceback. The spans of an accepted request are on
disk (:class:`~.spool.Spool`) before the 200 goes out.
"""
from __future__ import annotations

import base64
import hmac
import logging
from dataclasses import dataclass
from typing import Any

from .otlp import PayloadError, decode, inflate, response_body
from .spool import Spool

log = logging.getLogger(__name__)

#: what an OTLP exporter sends at most by default is far below this (512 spans a batch)
DEFAULT_MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True)
class Credentials:
    """What a request must present: a bearer token, or a Basic user and password, or nothing (``open``)."""

    token: str | None = None
    user: str | None = None
    password: str | None = None

    @property
    def open(self) -> bool:
        return not (self.token or self.user)

    def allows(self, header: str | None) -> bool:
        if self.open:
            return True
        given = (header or "").encode("latin-1", "replace")
        # constant time, so that the comparison does not tell how much of a guess was right
        ok = False
        if self.token:
            ok |= hmac.compare_digest(given, f"Bearer {self.token}".encode("latin-1", "replace"))
        if self.user:
            basic = "Basic " + base64.b64encode(f"{self.user}:{self.password or ''}".encode()).decode()
            ok |= hmac.compare_digest(given, basic.encode())
        return ok

    def challenge(self) -> str:
        return "Bearer" if self.token else 'Basic realm="ls-trajeval"'


def create_app(spool: Spool, credentials: Credentials = Credentials(), max_body: int = DEFAULT_MAX_BODY) -> Any:
    """The WSGI app over ``spool``."""
    from flask import Flask, Response, request
    from werkzeug.exceptions import HTTPException

    app = Flask("ls_trajeval.tracing.receiver")
    app.config["MAX_CONTENT_LENGTH"] = max_body
    stats = {"requests": 0, "spans": 0, "duplicates": 0, "late": 0, "refused": 0}
    app.config["LS_TRAJEVAL_STATS"] = stats

    def refuse(status: int, reason: str, headers: dict | None = None) -> Response:
        stats["refused"] += 1
        return Response(reason + "\n", status=status, mimetype="text/plain", headers=headers)

    @app.post("/v1/traces")
    def traces():
        if not credentials.allows(request.headers.get("Authorization")):
            return refuse(401, "missing or wrong credentials", {"WWW-Authenticate": credentials.challenge()})
        if request.content_length is not None and request.content_length > max_body:
            return refuse(413, f"the body is larger than {max_body} bytes")
        try:
            body = inflate(request.get_data(cache=False), request.headers.get("Content-Encoding"), max_body)
            spans = decode(body, request.content_type)
        except PayloadError as exc:
            return refuse(exc.status, str(exc))
        added = spool.add(spans)
        stats["requests"] += 1
        stats["spans"] += added.new
        stats["duplicates"] += added.duplicates
        stats["late"] += added.late
        payload, mimetype = response_body(request.content_type)
        return Response(payload, status=200, mimetype=mimetype)

    @app.get("/health")
    def health():
        return Response("ok\n", mimetype="text/plain")

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        return refuse(exc.code or 400, exc.description or exc.name)

    @app.errorhandler(Exception)
    def bug(exc: Exception):
        log.error("receiver error (%s)", type(exc).__name__)  # the kind only: a message can carry payload
        return Response("internal error\n", status=500, mimetype="text/plain")

    return app


class Server:
    """``app`` served by waitress on ``host``:``port`` (port 0: a free one, see :attr:`port`)."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 4318, threads: int = 4,
                 max_body: int = DEFAULT_MAX_BODY):
        from waitress.server import create_server

        # waitress refuses larger bodies itself (413) before the app reads a byte
        self._server = create_server(app, host=host, port=port, threads=threads, max_request_body_size=max_body,
                                     ident="ls-trajeval", clear_untrusted_proxy_headers=True)
        self.host = host
        self.port = self._server.effective_port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def run(self) -> None:
        """Serve until :meth:`close` (called from another thread); requests under way are finished first."""
        try:
            self._server.run()
        finally:
            self._server.task_dispatcher.shutdown(timeout=10)

    def close(self) -> None:
        """End :meth:`run`: the server's own loop closes every socket (closing them from here would race it), and
        with nothing left to watch the loop returns."""
        from waitress import wasyncore

        server = self._server
        try:
            server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map, ignore_all=True))
        except OSError:  # the loop has ended already and closed its trigger with everything else
            pass
