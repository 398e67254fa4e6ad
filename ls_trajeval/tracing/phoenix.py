"""Arize Phoenix, through its maintained REST client (``arize-phoenix-client``, the ``[phoenix]`` extra): traces and
their spans in, span and trace annotations out.

Write-back: a step's verdict becomes a span annotation on the step's span, a trace's a trace annotation, each with
``annotator_kind`` HUMAN and the verdict's identifier, so that writing it again replaces it (Phoenix keeps one
annotation per name, target and identifier). A withdrawn verdict is deleted by its name and identifier (unique per
verdict), through Phoenix's own delete endpoint.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import httpx

from .verdict import HUMAN, DeliveryError, Verdict

#: annotations per request (Phoenix takes a list; a few hundred keep a request well under a second)
BATCH = 500
T = TypeVar("T")


class Phoenix:
    """A Phoenix server's project. ``api_key`` is sent as a bearer token (Phoenix with authentication on)."""

    name = "phoenix"

    def __init__(self, url: str, project: str = "default", api_key: str | None = None, timeout: float = 60):
        from phoenix.client import Client

        self.url = url.rstrip("/")
        self.project = project
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        self.client = Client(http_client=self.http)
        self.requests = 0

    @property
    def destination(self) -> str:
        """What the write-back ledger keys deliveries by."""
        return f"phoenix {self.url} project {self.project}"

    def close(self) -> None:
        self.http.close()

    # ------------------------------------------------------------ in
    def traces(self, start: datetime | None, end: datetime | None, limit: int) -> list[Any]:
        """Traces that started in [start, end), oldest first (id, trace_id, start_time, end_time)."""
        return self._call(partial(self.client.traces.get_traces, project_identifier=self.project, start_time=start,
                                  end_time=end, sort="start_time", order="asc", limit=limit), pages=limit // 100 + 1)

    def spans(self, trace_ids: Sequence[str]) -> list[Any]:
        """Every span of these traces, in Phoenix's span shape (``context.span_id``, ``parent_id``, ...), which the
        OpenInference converter reads."""
        out: list[Any] = []
        for chunk in _chunks(list(trace_ids), 20):
            out.extend(self._call(partial(self.client.spans.get_spans, project_identifier=self.project,
                                          trace_ids=chunk, limit=1_000_000)))
        return out

    # ------------------------------------------------------------ out
    def send(self, verdicts: Sequence[Verdict]) -> None:
        """Write verdicts (a batch at a time); DeliveryError when a request fails."""
        spans = [v for v in verdicts if v.span_id is not None]
        traces = [v for v in verdicts if v.span_id is None]
        for chunk in _chunks(spans, BATCH):
            self._call(partial(self.client.spans.log_span_annotations,
                               span_annotations=[_annotation(v, "span_id", v.span_id) for v in chunk], sync=True))
        for chunk in _chunks(traces, BATCH):
            self._call(partial(self.client.traces.log_trace_annotations,
                               trace_annotations=[_annotation(v, "trace_id", v.trace_id) for v in chunk], sync=True))

    def withdraw(self, verdicts: Sequence[Verdict]) -> None:
        """Delete earlier verdicts (their identifier is theirs alone, so the unbounded sweep removes just them)."""
        for v in verdicts:
            kind = "span_annotations" if v.span_id is not None else "trace_annotations"
            self._call(partial(self._request, "DELETE", f"/v1/projects/{self.project}/{kind}",
                               params={"name": v.name, "identifier": v.identifier, "delete_all": "true"}))

    def span_annotations(self, span_ids: Sequence[str]) -> list[Any]:
        """The annotations on these spans, as Phoenix's client reads them."""
        return self._call(partial(self.client.spans.get_span_annotations, span_ids=list(span_ids),
                                  project_identifier=self.project))

    def trace_annotations(self, trace_ids: Sequence[str]) -> list[Any]:
        out: list[Any] = []
        for chunk in _chunks(list(trace_ids), 100):
            r = self._call(partial(self._request, "GET", f"/v1/projects/{self.project}/trace_annotations",
                                   params={"trace_ids": chunk, "limit": 1000}))
            out.extend(r.json()["data"])
        return out

    # ------------------------------------------------------------ plumbing
    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response = self.http.request(method, url, **kwargs)
        response.raise_for_status()
        return response

    def _call(self, fn: Callable[[], Any], pages: int = 1) -> Any:
        self.requests += pages
        try:
            return fn()
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            raise DeliveryError(f"Phoenix answered {status}: {exc.response.text[:300]}",
                                retry=status == 429 or status >= 500) from None
        except httpx.HTTPError as exc:
            raise DeliveryError(f"Phoenix at {self.url} did not answer: {type(exc).__name__}: {exc}",
                                retry=True) from None


def _annotation(v: Verdict, key: str, target: str | None) -> dict[str, Any]:
    result = {k: val for k, val in (("label", v.label), ("score", v.score), ("explanation", v.explanation))
              if val is not None}
    return {"name": v.name, "annotator_kind": HUMAN, key: target, "result": result, "identifier": v.identifier,
            "metadata": {**v.metadata, "annotator": v.who, "source": "ls-trajeval"}}


def _chunks(items: list[T], n: int) -> Iterator[list[T]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]
