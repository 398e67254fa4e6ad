"""``ls-trajeval ingest otlp`` end to end: an agent instrumented with the real OpenTelemetry SDK exports through the
real OTLP/HTTP exporter to the receiver, a separate process that imports into the session's real Label Studio. The
receiver is killed (SIGKILL) mid-stream, with spans spooled but not yet imported and the agent still exporting,
and started again; then every batch is sent again as a duplicate delivery. Every trace must be imported exactly
once, none lost, each step keeping the id of its span."""
from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import threading

import httpx
import pytest
from commandline import argv
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from waiting import wait_for

from ls_trajeval.core.trace import Trace, parse_trace
from ls_trajeval.flows.projects import load_config
from ls_trajeval.studio import client as studio
from ls_trajeval.studio.localserver import free_port

from . import agent
from .conftest import TOKEN, Tee

pytestmark = pytest.mark.studio
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class IngestProcess:
    def __init__(self, project: int, spool, port: int, env: dict, log):
        self.cmd = argv("ingest", "otlp", "--project", project, "--port", port, "--spool", spool, "--settle", "1.5",
                        "--orphan-after", "120")
        self.env = {**env, "LS_TRAJEVAL_OTLP_TOKEN": TOKEN}
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        assert wait_for(self._up, 60), "the receiver did not come up"

    def _up(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, "the receiver exited"
        try:
            return httpx.get(self.url + "/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)


def spool_counts(path) -> dict:
    """The spool's open and imported traces and its late spans, read beside the running receiver."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        states = dict(db.execute("SELECT state, count(*) FROM traces GROUP BY state").fetchall())
        late = db.execute("SELECT coalesce(sum(late_spans), 0) FROM traces").fetchone()[0]
    return {"open": states.get("open", 0), "imported": states.get("imported", 0), "late_spans": late}


def test_killed_restarted_and_resent_imports_every_trace_once(ls_client, label_studio, tmp_path):
    config = load_config(None)
    project = studio.create_project(ls_client, config, "transcript", "otlp ingest")["id"]
    env = {**os.environ, "LABEL_STUDIO_URL": label_studio.url, "LABEL_STUDIO_API_KEY": label_studio.credentials.token}
    port = free_port()
    log = open(tmp_path / "ingest.log", "wb")
    receiver = IngestProcess(project, tmp_path / "spool.sqlite", port, env, log)
    receiver.start()

    def tasks() -> dict:
        return {t["data"]["trace_id"]: t for t in studio.iter_tasks(ls_client, project)}

    tee = Tee(OTLPSpanExporter(endpoint=receiver.url + "/v1/traces", headers=AUTH, timeout=30))
    tp = agent.provider(tee, max_export_batch_size=8, schedule_delay_millis=100)
    try:
        first = agent.runs(tp, range(0, 6))
        assert tp.force_flush(30_000)
        assert wait_for(lambda: len(tasks()) == 6, 90), "the first traces were not imported"
        # the spool marks them once the import call returns, a moment after Label Studio shows them
        assert wait_for(lambda: spool_counts(tmp_path / "spool.sqlite")["imported"] == 6, 30)
        # spooled, not yet imported (the settle window has not passed): killed now, they must survive the kill
        second = agent.runs(tp, range(6, 12))
        assert tp.force_flush(30_000)
        receiver.kill()
        # the agent goes on exporting while the receiver is down; the exporter retries until it is back
        restart = threading.Timer(2.0, receiver.start)
        restart.start()
        third = agent.runs(tp, range(12, 18))
        assert tp.force_flush(60_000)
        restart.join()
        assert all(r is SpanExportResult.SUCCESS for r in tee.results), tee.results
        ids = first + second + third
        assert wait_for(lambda: len(tasks()) >= 18, 120), f"{len(tasks())} of 18 traces imported"
        assert wait_for(lambda: spool_counts(tmp_path / "spool.sqlite")["imported"] == 18, 60)
        # every batch again, as a duplicate delivery
        again = OTLPSpanExporter(endpoint=receiver.url + "/v1/traces", headers=AUTH)
        for i in range(0, len(tee.spans), 8):
            assert again.export(tee.spans[i:i + 8]) is SpanExportResult.SUCCESS
        # every duplicate was answered once the spool held it: a span it had already, of a trace already imported,
        # which no duplicate opens again, so the receiver has nothing left to import
        assert spool_counts(tmp_path / "spool.sqlite") == {"open": 0, "imported": 18, "late_spans": 0}
        assert receiver.stop() == 0
    finally:
        tp.shutdown()
        if receiver.proc is not None and receiver.proc.poll() is None:
            receiver.kill()
        log.close()
    held = tasks()
    assert sorted(held) == sorted(ids) and len(held) == 18
    assert len(list(studio.iter_tasks(ls_client, project))) == 18
    spans_by_trace: dict = {}
    for span in tee.spans:
        tid = format(span.context.trace_id, "032x")
        spans_by_trace.setdefault(tid, set()).add(format(span.context.span_id, "016x"))
    for tid, task in held.items():
        trace = parse_trace(task["data"], source="task")
        assert isinstance(trace, Trace), trace
        # thought (llm), action and observation (tool), message (llm): tests/tracing/agent.py
        assert [s.type for s in trace.steps] == ["thought", "action", "observation", "message"]
        links = [s["metadata"]["span_id"] for s in trace.steps]
        assert set(links) <= spans_by_trace[tid] and links[1] == links[2] and len(set(links)) == 3
        assert agent.NASTY in trace.steps[3].content
    output = (tmp_path / "ingest.log").read_text()
    assert "Traceback" not in output
    # the restarted receiver found the killed one's spooled traces still open, and imported them
    starts = re.findall(r"spool .*?: (\d+) open, (\d+) imported traces", output)
    assert len(starts) == 2 and int(starts[1][0]) > 0 and int(starts[1][1]) >= 6, output
