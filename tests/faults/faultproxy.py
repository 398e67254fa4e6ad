"""An HTTP proxy on 127.0.0.1 in front of a real Label Studio that injects faults on a schedule.

Faults, chosen per request by ``plan(method, path, n)``:
- ``"503"`` / ``"502"`` / ``"500"``: answer that status without forwarding;
- ``"reset"``: read the request, then close the connection with no answer (never forwarded);
- ``"lost"``: forward the request, let Label Studio store it, then drop the answer (the client cannot know).
"""
from __future__ import annotations

import socket
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from ls_trajeval.studio.localserver import free_port

HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


class FaultProxy:
    def __init__(self, upstream: str, plan: Callable[[str, str, int], str | None]):
        self.upstream = upstream.rstrip("/")
        self.plan = plan
        self.port = free_port()
        self.counts: Counter = Counter()
        self.requests: Counter = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = (self.command, self.path.split("?")[0])
                with proxy._lock:
                    proxy.requests[key] += 1
                    fault = proxy.plan(self.command, self.path, proxy.requests[key])
                    if fault:
                        proxy.counts[fault] += 1
                if fault in ("500", "502", "503"):
                    payload = b'{"detail": "injected"}'
                    self.send_response(int(fault))
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault == "reset":
                    self._drop()
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                resp = httpx.request(self.command, proxy.upstream + self.path, headers=headers, content=body,
                                     timeout=300)
                if fault == "lost":
                    self._drop()
                    return
                self.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() not in HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(resp.content)))
                self.end_headers()
                self.wfile.write(resp.content)

            def _drop(self):
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
