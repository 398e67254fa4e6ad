"""OTLP/HTTP trace export requests (protobuf or JSON, optionally gzip) as the spans of OTLP/JSON, the shape the
OTel GenAI and OpenInference converters read.

A request is decoded whole or refused whole with a :class:`PayloadError` that carries the HTTP status and the
reason: a receiver that spools half a request would make the exporter's retry of the other half a duplicate.
Protobuf is decoded by the official ``opentelemetry-proto`` classes (which refuse truncated messages and strings
that are not UTF-8) and spooled as protobuf; when its trace is imported it becomes OTLP/JSON through protobuf's own
``json_format``, the ids turned into the lower-case hex that OTLP/JSON uses (protobuf's JSON mapping gives base64).
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
#: the first byte of a spooled span: what follows is a protobuf ResourceSpans, or an OTLP/JSON envelope
_PROTO, _JSON = b"P", b"J"
_HEX_ID = {"traceId": re.compile(r"[0-9a-f]{32}"), "spanId": re.compile(r"[0-9a-f]{16}")}


class PayloadError(ValueError):
    """A request the receiver refuses: ``status`` is the HTTP status to answer, the message the reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class SpooledSpan:
    """One span as the spool keeps it: its ids, whether it is a root, and its body with the resource and scope it
    came with: a protobuf ResourceSpans of that one span, or the OTLP/JSON envelope ``{"resource", "scope", "span"}``
    (each marked by its first byte; :func:`export_request` reads both)."""

    trace_id: str
    span_id: str
    root: bool
    body: bytes


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def inflate(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The request body without its ``Content-Encoding`` (identity or gzip), refused past ``limit`` bytes once
    decompressed (a small gzip bomb must not become gigabytes in memory)."""
    enc = (encoding or "identity").strip().lower()
    if enc == "identity":
        return body
    if enc != "gzip":
        raise PayloadError(415, f"unsupported Content-Encoding {encoding!r}: send gzip or none")
    d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(body, limit + 1)
    except zlib.error as exc:
        raise PayloadError(400, f"the gzip body cannot be decompressed: {exc}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise PayloadError(413, f"the body is larger than {limit} bytes once decompressed")
    if not d.eof:
        raise PayloadError(400, "the gzip body is truncated")
    return out


def decode(body: bytes, content_type: str | None) -> list[SpooledSpan]:
    """Every span of one export request, or a PayloadError (415 for a media type that is neither protobuf nor
    JSON, 400 for a body that does not decode or a span without valid ids)."""
    kind = media_type(content_type)
    if kind == PROTOBUF:
        return _protobuf_spans(body)
    if kind == JSON:
        return _spans(_from_json(body))
    raise PayloadError(415, f"unsupported Content-Type {content_type!r}: send {PROTOBUF} or {JSON}")


def _protobuf_spans(body: bytes) -> list[SpooledSpan]:
    """A protobuf request's spans, each kept as protobuf (a ResourceSpans holding its resource, its scope and that
    one span): turning them into OTLP/JSON is most of the work, so it waits until a trace is imported."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

    try:
        message = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise PayloadError(400, f"not an OTLP ExportTraceServiceRequest: {exc}") from None
    out = []
    for i, rs in enumerate(message.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            for k, span in enumerate(ss.spans):
                at = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                for name, value, width in (("traceId", span.trace_id, 16), ("spanId", span.span_id, 8)):
                    if len(value) != width or not value.strip(b"\0"):
                        raise PayloadError(400, f"{at}.{name}: expected {width} bytes, not all zero, got "
                                                f"{len(value)}")
                if len(span.parent_span_id) not in (0, 8):
                    raise PayloadError(400, f"{at}.parentSpanId: expected 8 bytes, got {len(span.parent_span_id)}")
                one = ResourceSpans(resource=rs.resource, schema_url=rs.schema_url)
                holder = one.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url)
                holder.spans.append(span)
                out.append(SpooledSpan(span.trace_id.hex(), span.span_id.hex(), not span.parent_span_id.strip(b"\0"),
                                       _PROTO + one.SerializeToString()))
    return out


def _resource_spans_json(raw: bytes) -> dict:
    """A spooled protobuf ResourceSpans as OTLP/JSON (protobuf's own ``json_format``, ids turned into hex)."""
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

    entry = json_format.MessageToDict(ResourceSpans.FromString(raw))
    for ss in entry.get("scopeSpans", ()):
        for span in ss.get("spans", ()):
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in span:
                    span[key] = _b64_hex(span[key])
            for link in span.get("links", ()):
                for key in ("traceId", "spanId"):
                    if key in link:
                        link[key] = _b64_hex(link[key])
    return entry


def _b64_hex(value: str) -> str:
    import base64

    return base64.b64decode(value).hex()


def _from_json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise PayloadError(400, f"not JSON: {exc}") from None


def _spans(request: Any) -> list[SpooledSpan]:
    if not isinstance(request, dict) or not isinstance(request.get("resourceSpans", []), list):
        raise PayloadError(400, "expected an OTLP export object {\"resourceSpans\": [...]}")
    out = []
    for i, rs in enumerate(request.get("resourceSpans", [])):
        where = f"resourceSpans[{i}]"
        _expect(rs, dict, where)
        resource = rs.get("resource") or {}
        _expect(resource, dict, f"{where}.resource")
        scope_spans = rs.get("scopeSpans", rs.get("instrumentationLibrarySpans")) or []
        _expect(scope_spans, list, f"{where}.scopeSpans")
        for j, ss in enumerate(scope_spans):
            _expect(ss, dict, f"{where}.scopeSpans[{j}]")
            scope = ss.get("scope", ss.get("instrumentationLibrary")) or {}
            spans = ss.get("spans") or []
            _expect(spans, list, f"{where}.scopeSpans[{j}].spans")
            for k, span in enumerate(spans):
                at = f"{where}.scopeSpans[{j}].spans[{k}]"
                _expect(span, dict, at)
                ids = {}
                for key, pattern in _HEX_ID.items():
                    value = span.get(key)
                    if not isinstance(value, str) or not pattern.fullmatch(value.lower()) or not value.strip("0"):
                        raise PayloadError(400, f"{at}.{key}: expected {_width(key)} hex digits "
                                                f"(not all zero), got {_shown(value)}")
                    ids[key] = span[key] = value.lower()
                parent = span.get("parentSpanId") or None
                if parent is not None:
                    if not isinstance(parent, str) or not _HEX_ID["spanId"].fullmatch(parent.lower()):
                        raise PayloadError(400, f"{at}.parentSpanId: expected 16 hex digits, got {_shown(parent)}")
                    span["parentSpanId"] = parent.lower()
                try:
                    body = _JSON + orjson.dumps({"resource": resource, "scope": scope, "span": span})
                except TypeError as exc:  # a lone surrogate in a JSON string: it has no UTF-8
                    raise PayloadError(400, f"{at}: {exc}") from None
                out.append(SpooledSpan(ids["traceId"], ids["spanId"], parent is None, body))
    return out


def _width(key: str) -> int:
    return 32 if key == "traceId" else 16


def _expect(value: Any, kind: type, where: str) -> None:
    if not isinstance(value, kind):
        raise PayloadError(400, f"{where}: expected {'an object' if kind is dict else 'a list'}, got {_shown(value)}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def export_request(bodies: list[bytes]) -> dict:
    """The spooled spans of one trace as one OTLP/JSON export request (one resourceSpans entry per span, each with
    the resource and scope it came with), the file the converters read."""
    entries = []
    for raw in bodies:
        if raw[:1] == _PROTO:
            entries.append(_resource_spans_json(raw[1:]))
        else:
            env = orjson.loads(raw[1:])
            entries.append({"resource": env["resource"],
                            "scopeSpans": [{"scope": env["scope"], "spans": [env["span"]]}]})
    return {"resourceSpans": entries}


def response_body(content_type: str | None) -> tuple[bytes, str]:
    """The success answer in the request's own encoding: an empty ExportTraceServiceResponse (no partial success:
    a request is taken whole or refused whole)."""
    if media_type(content_type) == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        return ExportTraceServiceResponse().SerializeToString(), PROTOBUF
    return b"{}", JSON
