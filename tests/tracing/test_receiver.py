"""The OTLP/HTTP receiver on its own (no Label Studio): what the real OpenTelemetry exporter sends is spooled once;
hostile payloads get a 4xx with a reason and change nothing."""
from __future__ import annotations

import base64
import gzip
import json

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ls_trajeval.tracing.otlp import export_request

from . import agent
from .conftest import TOKEN, Receiver, Tee

AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROTO = {**AUTH, "Content-Type": "application/x-protobuf"}
JSON = {**AUTH, "Content-Type": "application/json"}


def recorded(n: int):
    """``n`` agent runs through the real SDK, kept in memory (``.spans``) and their trace ids."""
    tee = Tee(InMemorySpanExporter())
    tp = agent.provider(tee)
    ids = agent.runs(tp, range(n))
    tp.force_flush()
    return tee, ids


def test_the_real_exporter_is_spooled_once(receiver):
    tee = Tee(OTLPSpanExporter(endpoint=receiver.url, headers=AUTH, compression=Compression.Gzip))
    tp = agent.provider(tee)
    ids = agent.runs(tp, range(3))
    tp.shutdown()
    assert tee.results and all(r is SpanExportResult.SUCCESS for r in tee.results)
    counts = receiver.spool.counts()
    # each run: agent, llm, tool, llm (tests/tracing/agent.py)
    assert counts["spans"] == 12 and counts["open"] == 3
    assert sorted(receiver.spool.ready(0, 1e9)) == sorted(ids)
    # the same spans again, as an exporter's retry or a duplicate delivery sends them: nothing new
    again = OTLPSpanExporter(endpoint=receiver.url, headers=AUTH)
    assert again.export(tee.spans) is SpanExportResult.SUCCESS
    assert receiver.spool.counts() == counts
    stats = receiver.app.config["LS_TRAJEVAL_STATS"]
    assert stats["spans"] == 12 and stats["duplicates"] == 12


def test_json_and_protobuf_give_the_same_spans(receiver, tmp_path):
    tee, ids = recorded(1)
    message = encode_spans(tee.spans)
    assert httpx.post(receiver.url, content=message.SerializeToString(), headers=PROTO).status_code == 200
    from google.protobuf import json_format

    # OTLP/JSON as its spec writes it: hex ids (protobuf's own JSON mapping would write base64)
    body = json_format.MessageToDict(message)
    for rs in body["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in sp:
                        sp[k] = base64.b64decode(sp[k]).hex()
    other = Receiver(tmp_path / "json.sqlite", token=TOKEN)
    try:
        r = httpx.post(other.url, content=json.dumps(body), headers=JSON)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        # spooled differently (protobuf is turned into OTLP/JSON only when its trace is imported), read back alike
        from_json = export_request(other.spool.spans(ids[0]))
        assert from_json == export_request(receiver.spool.spans(ids[0]))
        assert len(from_json["resourceSpans"]) == 4 and {e["scopeSpans"][0]["spans"][0]["traceId"]
                                                        for e in from_json["resourceSpans"]} == {ids[0]}
    finally:
        other.close()


def _bad_utf8_protobuf() -> bytes:
    tee, _ = recorded(1)
    raw = encode_spans(tee.spans).SerializeToString()
    assert raw.count(b"weather") >= 1
    return raw.replace(b"weather", b"weath\xff\xfe", 1)


def _bomb() -> bytes:
    return gzip.compress(b"\0" * (10 * 1024 * 1024))


def _huge() -> bytes:
    return b"\x0a" * (65 * 1024)


CASES = {
    "truncated protobuf": (lambda: encode_spans(recorded(2)[0].spans).SerializeToString()[:-7], PROTO, 400,
                           "not an OTLP ExportTraceServiceRequest"),
    "bad UTF-8 in a protobuf string": (_bad_utf8_protobuf, PROTO, 400, "not an OTLP"),
    "bad UTF-8 in JSON": (lambda: b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "\xff\xfe"}]}]}]}',
                          JSON, 400, "not JSON"),
    "wrong content type": (lambda: b"{}", {**AUTH, "Content-Type": "text/plain"}, 415, "unsupported Content-Type"),
    "no content type": (lambda: b"{}", AUTH, 415, "unsupported Content-Type"),
    # refused by waitress from its Content-Length, before a byte of it is read
    "huge body": (_huge, PROTO, 413, "65536"),
    "gzip bomb": (_bomb, {**PROTO, "Content-Encoding": "gzip"}, 413, "once decompressed"),
    "broken gzip": (lambda: gzip.compress(b"x" * 100)[:-12], {**PROTO, "Content-Encoding": "gzip"}, 400, "gzip"),
    "unknown encoding": (lambda: b"{}", {**JSON, "Content-Encoding": "br"}, 415, "Content-Encoding"),
    "not an export": (lambda: b"[1, 2]", JSON, 400, "expected an OTLP export object"),
    "base64 ids in JSON": (lambda: json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "AAECAwQFBgcICQoLDA0ODw==", "spanId": "AAECAwQFBgc="}]}]}]}).encode(), JSON, 400,
        "traceId: expected 32 hex digits"),
    "a span that is not an object": (lambda: b'{"resourceSpans": [{"scopeSpans": [{"spans": [7]}]}]}', JSON, 400,
                                     "spans[0]: expected an object"),
    "no credentials": (lambda: b"{}", {"Content-Type": "application/json"}, 401, "credentials"),
    "a wrong token": (lambda: b"{}", {"Content-Type": "application/json", "Authorization": "Bearer nope"}, 401,
                      "credentials"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_payloads_get_a_4xx_and_change_nothing(receiver, case):
    make, headers, status, reason = CASES[case]
    good = OTLPSpanExporter(endpoint=receiver.url, headers=AUTH)
    tee, _ = recorded(1)
    assert good.export(tee.spans) is SpanExportResult.SUCCESS
    before = receiver.spool.counts()
    r = httpx.post(receiver.url, content=make(), headers=headers)
    assert r.status_code == status, r.text
    assert reason in r.text and "Traceback" not in r.text and r.headers["content-type"].startswith("text/plain")
    assert receiver.spool.counts() == before
    if status == 401:
        assert r.headers["www-authenticate"] == "Bearer"


def test_basic_auth(tmp_path):
    r = Receiver(tmp_path / "basic.sqlite", user="otel", password="pw:with:colons")
    try:
        tee, ids = recorded(1)
        body = encode_spans(tee.spans).SerializeToString()
        ok = "Basic " + base64.b64encode(b"otel:pw:with:colons").decode()
        wrong = "Basic " + base64.b64encode(b"otel:pw").decode()
        assert httpx.post(r.url, content=body, headers={"Content-Type": "application/x-protobuf",
                                                        "Authorization": wrong}).status_code == 401
        assert r.spool.counts()["spans"] == 0
        assert httpx.post(r.url, content=body, headers={"Content-Type": "application/x-protobuf",
                                                        "Authorization": ok}).status_code == 200
        assert r.spool.ready(0, 1e9) == ids
    finally:
        r.close()


def test_a_trace_is_ready_after_its_root_and_the_settle_window(tmp_path):
    from ls_trajeval.tracing.otlp import decode
    from ls_trajeval.tracing.spool import Spool

    tee, (tid,) = recorded(1)
    spans = decode(encode_spans(tee.spans).SerializeToString(), "application/x-protobuf")
    root = [s for s in spans if s.root]
    children = [s for s in spans if not s.root]
    assert len(root) == 1 and len(children) == 3
    spool = Spool(tmp_path / "s.sqlite")
    spool.add(children, now=100.0)
    # no root yet: not ready after the settle window, only after the orphan window
    assert spool.ready(settle=5, orphan_after=60, now=110.0) == []
    assert spool.ready(settle=5, orphan_after=60, now=161.0) == [tid]
    spool.add(root, now=112.0)  # the root ends last (it is exported after its children)
    assert spool.ready(settle=5, orphan_after=60, now=116.0) == []
    assert spool.ready(settle=5, orphan_after=60, now=117.0) == [tid]
    spool.mark([tid], "imported")
    added = spool.add(children, now=120.0)
    assert (added.new, added.duplicates, added.late) == (0, 3, 0)
    spool.close()
