"""Fixtures of the tracing tests: a real Phoenix (started once per session), the OTLP receiver in this process over a
spool of its own, and a tee exporter that keeps what the real OTLP exporter sent (to send it all again)."""
from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ls_trajeval.tracing.receiver import Credentials, Server, create_app
from ls_trajeval.tracing.spool import Spool

TOKEN = "s3cret-token"


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory):
    from .phoenixserver import PhoenixServer

    server = PhoenixServer(tmp_path_factory.mktemp("phoenix"))
    server.start()
    yield server
    server.stop()


class Receiver:
    """The receiver app on waitress in a thread of this process, over its own spool."""

    def __init__(self, path, max_body: int = 64 * 1024, **credentials):
        self.spool = Spool(path)
        self.app = create_app(self.spool, Credentials(**credentials), max_body)
        self.server = Server(self.app, port=0, max_body=max_body)
        self.url = self.server.url + "/v1/traces"
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.close()
        self.thread.join(10)
        self.spool.close()


@pytest.fixture
def receiver(tmp_path):
    r = Receiver(tmp_path / "spool.sqlite", token=TOKEN)
    yield r
    r.close()


class Tee(SpanExporter):
    """Exports through ``inner`` and keeps every span it was given."""

    def __init__(self, inner: SpanExporter):
        self.inner = inner
        self.spans: list[ReadableSpan] = []
        self.results: list[SpanExportResult] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        result = self.inner.export(spans)
        self.results.append(result)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

