"""Langfuse, through the public API client of the official ``langfuse`` SDK (the ``[langfuse]`` extra): traces with
their observations in, scores out.

Write-back: a step's verdict becomes a score on the step's observation (``traceId`` and ``observationId``), a
trace's a score on the trace. Each score's ``id`` is derived from the verdict's key, so sending it again updates
the same score (Langfuse upserts by id); a withdrawn verdict's score is deleted by that id. Categorical verdicts
(correctness, error type, severity, whole-trace labels) use score configs made from the project's taxonomy, made
once in Langfuse and found again by name.

No Langfuse server runs on the machines that test this project: the requests this module makes through the SDK are
checked against Langfuse's published OpenAPI document (``tests/tracing/test_langfuse_contract.py``), not against a
live server.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from .verdict import DeliveryError, Verdict

#: the namespace of the score ids made from verdict keys (fixed: ids must not change between runs)
SCORE_NAMESPACE = uuid.UUID("1f0d3c8e-7d0b-4e52-9a43-2b6f0e1c5a77")


def score_id(key: str) -> str:
    """The Langfuse score id of a verdict: the same key, the same id, run after run."""
    return str(uuid.uuid5(SCORE_NAMESPACE, key))


class Langfuse:
    """A Langfuse project, reached with its public and secret key (HTTP Basic, as the SDK does)."""

    name = "langfuse"

    def __init__(self, host: str, public_key: str, secret_key: str, timeout: float = 60):
        from langfuse.api.client import LangfuseAPI

        from .. import __version__

        self.host = host.rstrip("/")
        self.public_key = public_key
        self.api = LangfuseAPI(base_url=self.host, username=public_key, password=secret_key, timeout=timeout,
                               x_langfuse_sdk_name="ls-trajeval", x_langfuse_sdk_version=__version__,
                               x_langfuse_public_key=public_key)
        self.requests = 0
        self._configs: dict[str, str] | None = None

    @property
    def destination(self) -> str:
        return f"langfuse {self.host} key {self.public_key}"

    def close(self) -> None:
        pass

    # ------------------------------------------------------------ in
    def trace_page(self, page: int, *, since: datetime | None, until: datetime | None, name: str | None,
                   tags: Sequence[str], limit: int = 50) -> tuple[list[dict], int]:
        """One page of traces (oldest first) without their observations, and the number of pages."""
        result = self._call(partial(self.api.trace.list, page=page, limit=limit, from_timestamp=since,
                                    to_timestamp=until, name=name, tags=list(tags) or None, order_by="timestamp.asc"))
        return [t.dict() for t in result.data], result.meta.total_pages

    def trace(self, trace_id: str) -> dict:
        """One trace with its observations, in the shape Langfuse exports it (what the langfuse converter reads)."""
        return self._call(partial(self.api.trace.get, trace_id)).dict()

    # ------------------------------------------------------------ out
    def ensure_configs(self, categories: Mapping[str, Sequence[str]],
                       descriptions: Mapping[str, str]) -> dict[str, str]:
        """Score config id by name, making the categorical configs that do not exist yet (name -> category labels)."""
        from langfuse.api import ConfigCategory

        if self._configs is None:
            found: dict[str, str] = {}
            page, pages = 1, 1
            while page <= pages:
                result = self._call(partial(self.api.score_configs.get, page=page, limit=100))
                for c in result.data:
                    if not c.is_archived:
                        found.setdefault(c.name, c.id)
                pages = result.meta.total_pages
                page += 1
            self._configs = found
        for name, labels in categories.items():
            if name not in self._configs:
                made = self._call(partial(
                    self.api.score_configs.create, name=name, data_type="CATEGORICAL",
                    description=descriptions.get(name),
                    categories=[ConfigCategory(value=float(i), label=lab) for i, lab in enumerate(labels)]))
                self._configs[name] = made.id
        return dict(self._configs)

    def send(self, verdicts: Sequence[Verdict]) -> None:
        """One score per verdict: categorical (with its config) when it has a label, numeric otherwise."""
        configs = self._configs or {}
        for v in verdicts:
            categorical = v.label is not None
            value: str | float = v.label if v.label is not None else float(v.score if v.score is not None else 0.0)
            self._call(partial(
                self.api.scores.create, id=score_id(v.key), trace_id=v.trace_id, observation_id=v.span_id,
                name=v.name, value=value, data_type="CATEGORICAL" if categorical else "NUMERIC",
                config_id=configs.get(v.name) if categorical else None, comment=v.explanation,
                metadata={**v.metadata, "annotator": v.who, "source": "ls-trajeval"}))

    def withdraw(self, verdicts: Sequence[Verdict]) -> None:
        for v in verdicts:
            self._call(partial(self.api.legacy.score_v1.delete, score_id(v.key)))

    # ------------------------------------------------------------ plumbing
    def _call(self, fn: Callable[[], Any]) -> Any:
        from langfuse.api.core.api_error import ApiError

        self.requests += 1
        try:
            return fn()
        except ApiError as exc:
            status = exc.status_code or 0
            raise DeliveryError(f"Langfuse answered {status}: {str(exc.body)[:300]}",
                                retry=status == 429 or status >= 500) from None
        except Exception as exc:  # httpx's transport errors, through the SDK
            import httpx

            if isinstance(exc, httpx.HTTPError):
                raise DeliveryError(f"Langfuse at {self.host} did not answer: {type(exc).__name__}: {exc}",
                                    retry=True) from None
            raise

