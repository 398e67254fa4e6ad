"""Traces from the tracing stack into a project: live over OTLP, or pulled from Phoenix or Langfuse.

Nothing here reads a span: each trace's spans (or a Langfuse trace with its observations) are written as the file
the existing converter reads (OTLP/JSON for the OTel GenAI and OpenInference converters, Phoenix's span list for
OpenInference, a Langfuse export for langfuse), converted by :func:`ls_trajeval.flows.convert.convert_file`, and
imported by the existing idempotent import (:func:`ls_trajeval.flows.importer.import_traces`), which skips the
traces a project already has. The task's trace id is the tool's trace id, and each step keeps the span or
observation id it came from in its metadata (``span_id`` / ``observation_id``): that is how verdicts find their way
back (:mod:`.verdicts`).
"""
from __future__ import annotations

import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol

import orjson

from ..core.config import Config
from ..core.errors import UserError
from ..core.jsonfiles import atomic_output, dumps_line
from ..core.trace import Trace, TraceError
from ..studio import client as studio
from ..tracing.ledger import Ledger
from ..tracing.otlp import export_request
from ..tracing.spool import IMPORTED, REJECTED, Spool
from ..tracing.verdict import DeliveryError
from .convert import convert_file
from .importer import ImportSummary, import_traces
from .projects import project_config


@dataclass
class IngestSummary:
    """What an ingest did: traces seen in the tool, imported, already in the project, rejected (with reasons)."""

    fetched: int = 0
    imported: int = 0
    skipped: int = 0
    rejected: int = 0
    errors: list[TraceError] = field(default_factory=list)
    rounds: int = 0

    def add(self, s: ImportSummary | IngestSummary) -> None:
        if isinstance(s, IngestSummary):
            self.fetched += s.fetched
        self.imported += s.imported
        self.skipped += s.skipped
        self.rejected += s.rejected
        self.errors.extend(s.errors)

    @property
    def ok(self) -> bool:
        return self.rejected == 0


def import_trace_files(client: Any, project_id: int, config: Config, files: dict[str, tuple[Path, str]],
                       on_error: Callable[[TraceError], None] | None = None) -> tuple[ImportSummary, dict[str, str]]:
    """Convert and import one file per trace (trace id -> (path, format)); also returns the rejected trace ids with
    their reasons (a conversion error names the file, which names its trace)."""
    by_path = {str(path): tid for tid, (path, _) in files.items()}

    def items() -> Iterator[Trace | TraceError]:
        for path, fmt in dict.fromkeys(files.values()):  # several traces may share one file
            for item in convert_file(path, fmt):
                if isinstance(item, (Trace, TraceError)):
                    yield item  # conversion warnings say nothing an ingest can act on

    summary = import_traces(client, project_id, items(), config, progress=False, on_error=on_error)
    rejected: dict[str, str] = {}
    for err in summary.errors:
        tid = err.trace_id or by_path.get(err.source)
        if tid is not None:
            rejected.setdefault(tid, err.detail)
    return summary, rejected


# ---------------------------------------------------------------- OTLP: the spool's settled traces

def drain_spool(client: Any, project_id: int, config: Config, spool: Spool, *, settle: float, orphan_after: float,
                now: float | None = None, batch: int = 500,
                on_error: Callable[[TraceError], None] | None = None) -> IngestSummary:
    """Import the spool's ready traces, a batch at a time, until none is ready (``fetched``: how many were)."""
    total = IngestSummary()
    while True:
        ready = spool.ready(settle, orphan_after, now, limit=batch)
        total.fetched += len(ready)
        if not ready:
            return total
        with tempfile.TemporaryDirectory(prefix="ls-trajeval-otlp-") as tmp:
            files = {}
            for tid in ready:
                path = Path(tmp) / f"{tid}.json"
                with atomic_output(path, "wb") as fh:
                    fh.write(orjson.dumps(export_request(spool.spans(tid))))
                files[tid] = (path, "auto")  # OTel GenAI or OpenInference, told by the attributes
            summary, rejected = import_trace_files(client, project_id, config, files, on_error)
        spool.mark([t for t in ready if t not in rejected], IMPORTED)
        for tid, reason in rejected.items():
            spool.mark([tid], REJECTED, reason)
        total.add(summary)
        if len(ready) < batch:
            return total


@dataclass
class OtlpReceiver:
    """``ingest otlp``: the receiver on ``host``:``port`` and the importer beside it, in one process."""

    project_id: int
    spool_path: Path
    host: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    user: str | None = None
    password: str | None = None
    settle: float = 30.0
    orphan_after: float = 600.0
    max_body: int = 16 * 1024 * 1024
    threads: int = 4
    poll: float = 1.0

    def run(self, client: Any, *, echo: Callable[[str], None] = print,
            on_error: Callable[[TraceError], None] | None = None, ready: Callable[[str], None] | None = None,
            stop: threading.Event | None = None) -> IngestSummary:
        """Serve and import until SIGINT/SIGTERM (or ``stop``); the spool is imported once more on the way out."""
        from ..tracing.receiver import Credentials, Server, create_app

        project = studio.get_project(client, self.project_id)  # refuses a wrong project before anything listens
        config = project_config(project, None)
        spool = Spool(self.spool_path)
        app = create_app(spool, Credentials(self.token, self.user, self.password), self.max_body)
        server = Server(app, self.host, self.port, threads=self.threads, max_body=self.max_body)
        stop = stop or threading.Event()
        total = IngestSummary()

        def importer() -> None:
            while not stop.wait(self.poll):
                self._import_once(client, config, spool, total, echo, on_error)
            server.close()

        def on_signal(signum, frame) -> None:
            stop.set()

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, on_signal)
        worker = threading.Thread(target=importer, name="ls-trajeval-otlp-import", daemon=True)
        worker.start()
        counts = spool.counts()
        echo(f"receiving OTLP/HTTP on {server.url}/v1/traces (auth {'off' if not (self.token or self.user) else 'on'})"
             f"; spool {self.spool_path}: {counts['open']} open, {counts['imported']} imported traces")
        if ready is not None:
            ready(server.url)
        try:
            server.run()
        finally:
            stop.set()
            worker.join()
            self._import_once(client, config, spool, total, echo, on_error)
            counts = spool.counts()
            spool.close()
        echo(f"stopped; spool: {counts['spans']} spans, {counts['open']} open, {counts['imported']} imported, "
             f"{counts['rejected']} rejected traces, {counts['late_spans']} late spans")
        return total

    def _import_once(self, client: Any, config: Config, spool: Spool, total: IngestSummary,
                     echo: Callable[[str], None], on_error: Callable[[TraceError], None] | None) -> None:
        try:
            s = drain_spool(client, self.project_id, config, spool, settle=self.settle,
                            orphan_after=self.orphan_after, on_error=on_error)
        except Exception as exc:  # noqa: BLE001 - Label Studio away: the spool keeps the traces for the next round
            echo(f"import failed, will retry: {type(exc).__name__}: {exc}")
            return
        if s.fetched:
            total.add(s)
            total.rounds += 1
            echo(f"imported {s.imported}, skipped {s.skipped} (already there), rejected {s.rejected}")


# ---------------------------------------------------------------- pulling from a tool

@dataclass(frozen=True)
class TraceRef:
    """A trace as a tool lists it: its id, when it started, and whether it is finished for our purposes."""

    trace_id: str
    start: datetime
    settled: bool


class Source(Protocol):
    """A tracing tool to pull from: a listing by start time and the trace files the converter reads."""

    fmt: str

    @property
    def checkpoint_key(self) -> str: ...

    def listing(self, start: datetime | None, settle_before: datetime) -> Iterable[TraceRef]: ...

    def files(self, trace_ids: list[str], directory: Path) -> dict[str, Path]: ...


def pull(client: Any, project_id: int, source: Source, ledger: Ledger, *, since: datetime | None = None,
         settle: float = 60.0, follow: bool = False, interval: float = 30.0, max_interval: float = 600.0,
         rounds: int | None = None, batch: int = 200, now: Callable[[], datetime] | None = None,
         echo: Callable[[str], None] = print, on_error: Callable[[TraceError], None] | None = None,
         stop: threading.Event | None = None) -> IngestSummary:
    """Import the tool's finished traces that started after the stored checkpoint (or ``since``), and move the
    checkpoint on; with ``follow``, keep polling every ``interval`` seconds, backing off to ``max_interval`` while the
    tool or Label Studio does not answer. The checkpoint only passes a trace once it is imported or rejected: a trace
    still running is fetched again next time, one imported already is skipped by the import."""
    clock = now or (lambda: datetime.now(timezone.utc))
    project = studio.get_project(client, project_id)
    config = project_config(project, None)
    stop = stop or threading.Event()
    total = IngestSummary()
    wait = interval
    while True:
        try:
            _pull_round(client, project_id, config, source, ledger, since, settle, batch, clock, total, on_error)
            wait = interval
        except (DeliveryError, UserError) as exc:
            if not (follow and getattr(exc, "retry", True)):
                raise
            wait = min(max_interval, wait * 2)
            echo(f"{exc}; trying again in {wait:.0f} s")
        total.rounds += 1
        if not follow or (rounds is not None and total.rounds >= rounds) or stop.wait(wait):
            return total


def _pull_round(client: Any, project_id: int, config: Config, source: Source, ledger: Ledger,
                since: datetime | None, settle: float, batch: int, clock: Callable[[], datetime],
                total: IngestSummary, on_error: Callable[[TraceError], None] | None) -> None:
    key = f"{source.checkpoint_key} -> project {project_id}"
    mark = ledger.checkpoint(key) or {}
    start = _later(since, datetime.fromisoformat(mark["start"]) if mark.get("start") else None)
    done = set(mark.get("done", ()))
    refs = [r for r in source.listing(start, clock() - timedelta(seconds=settle)) if r.trace_id not in done]
    ready = [r for r in refs if r.settled]
    total.fetched += len(ready)
    for i in range(0, len(ready), batch):
        chunk = ready[i:i + batch]
        with tempfile.TemporaryDirectory(prefix="ls-trajeval-pull-") as tmp:
            paths = source.files([r.trace_id for r in chunk], Path(tmp))
            summary, _ = import_trace_files(client, project_id, config,
                                            {tid: (p, source.fmt) for tid, p in paths.items()}, on_error)
        total.add(summary)
    # the next round lists from the earliest trace still running, else from the latest start seen; the bound is
    # inclusive, so the finished traces listed again from there are passed over by id
    running = [r.start for r in refs if not r.settled]
    starts = [r.start for r in refs]
    if not starts:
        return
    nxt = min(running) if running else max(starts)
    if start is not None and nxt < start:
        nxt = start
    done = {r.trace_id for r in ready if r.start >= nxt} | ({t for t in done} if nxt == start else set())
    ledger.set_checkpoint(key, {"start": nxt.isoformat(), "done": sorted(done)})


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return max(a, b)


def parse_time(text: str) -> datetime:
    """An ISO time as the tools print them (``Z`` or an offset; without one, UTC)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


class PhoenixSource:
    """A Phoenix project's traces; ``name`` keeps only those whose root span has that name."""

    fmt = "openinference"

    def __init__(self, phoenix: Any, until: datetime | None = None, name: str | None = None, page: int = 1000):
        self.phoenix, self.until, self.name, self.page = phoenix, until, name, page

    @property
    def checkpoint_key(self) -> str:
        return f"{self.phoenix.destination} name={self.name or ''}"

    def listing(self, start: datetime | None, settle_before: datetime) -> Iterator[TraceRef]:
        listed: set[str] = set()  # a page starts at the last one's latest start time: those traces come twice
        while True:
            traces = self.phoenix.traces(start, self.until, self.page)
            for t in traces:
                if t["trace_id"] in listed:
                    continue
                listed.add(t["trace_id"])
                yield TraceRef(t["trace_id"], parse_time(t["start_time"]),
                               t.get("end_time") is not None and parse_time(t["end_time"]) <= settle_before)
            if len(traces) < self.page:
                return
            nxt = parse_time(traces[-1]["start_time"])
            if start is not None and nxt <= start:  # a page of traces starting at one instant: take the next page
                return
            start = nxt

    def files(self, trace_ids: list[str], directory: Path) -> dict[str, Path]:
        grouped: dict[str, list] = {}
        for span in self.phoenix.spans(trace_ids):
            grouped.setdefault(span["context"]["trace_id"], []).append(span)
        out = {}
        for tid, spans in grouped.items():
            if self.name is not None and not any(s.get("parent_id") is None and s.get("name") == self.name
                                                 for s in spans):
                continue
            path = directory / f"{tid}.json"
            with atomic_output(path, "wb") as fh:
                fh.write(orjson.dumps(spans))
            out[tid] = path
        return out


class LangfuseSource:
    """A Langfuse project's traces, filtered by trace name and tags (Langfuse's own filters)."""

    fmt = "langfuse"

    def __init__(self, langfuse: Any, until: datetime | None = None, name: str | None = None,
                 tags: tuple[str, ...] = ()):
        self.langfuse, self.until, self.name, self.tags = langfuse, until, name, tags

    @property
    def checkpoint_key(self) -> str:
        return f"{self.langfuse.destination} name={self.name or ''} tags={','.join(self.tags)}"

    def listing(self, start: datetime | None, settle_before: datetime) -> Iterator[TraceRef]:
        page, pages = 1, 1
        while page <= pages:
            traces, pages = self.langfuse.trace_page(page, since=start, until=self.until, name=self.name,
                                                     tags=self.tags)
            for t in traces:
                began = _as_time(t["timestamp"])
                changed = _as_time(t.get("updatedAt") or t["timestamp"])
                yield TraceRef(t["id"], began, changed <= settle_before)
            page += 1

    def files(self, trace_ids: list[str], directory: Path) -> dict[str, Path]:
        path = directory / "traces.jsonl"
        with atomic_output(path, "wb") as fh:
            for tid in trace_ids:
                fh.write(dumps_line(self.langfuse.trace(tid)))
        # one file for the batch (converted once): a conversion error names its line, the import its trace
        return {tid: path for tid in trace_ids}


def _as_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return parse_time(str(value))

