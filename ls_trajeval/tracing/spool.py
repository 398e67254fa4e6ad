"""The OTLP receiver's on-disk spool: every span received, once, until its trace is imported.

One SQLite file in WAL mode. A request's spans are committed in one transaction before the receiver answers 200,
keyed by (trace id, span id), so an exporter's retry or a duplicate delivery adds nothing; a receiver killed at
any point loses only requests it had not answered (which the exporter sends again). A trace is *ready* once its
root span has arrived and no span of it arrived for the settle window, or, without a root, once it has been
quiet for the orphan window; the importer marks it ``imported`` (or ``rejected``, with the reason) after the
import, which itself skips traces the project already holds: a crash between the two imports nothing twice.
Spans of a trace that arrive after its import are kept and counted as late, never imported.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .otlp import SpooledSpan

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
    trace_id TEXT NOT NULL, span_id TEXT NOT NULL, body BLOB NOT NULL, received REAL NOT NULL,
    PRIMARY KEY (trace_id, span_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY, first_received REAL NOT NULL, last_received REAL NOT NULL,
    has_root INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL DEFAULT 'open', reason TEXT,
    late_spans INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS traces_open ON traces (state, last_received);
"""
OPEN, IMPORTED, REJECTED = "open", "imported", "rejected"


@dataclass
class Added:
    """What one request changed: spans new to the spool, spans it already held, spans of traces already imported."""

    new: int = 0
    duplicates: int = 0
    late: int = 0


class Spool:
    """The spool file at ``path`` (made with its directory when missing). Thread-safe: one connection, one lock
    (SQLite writes one transaction at a time anyway)."""

    def __init__(self, path: str | Path, *, durable: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: a 200 means the spans are on disk, even across a power cut (NORMAL survives a killed process only)
        self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def add(self, spans: Iterable[SpooledSpan], now: float | None = None) -> Added:
        """Commit a request's spans in one transaction."""
        now = time.time() if now is None else now
        added = Added()
        touched: dict[str, list] = {}  # trace id -> [new spans, a root among them]
        spans = list(spans)
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                held = self._held({s.trace_id for s in spans})
                fresh = []
                for s in spans:
                    if (s.trace_id, s.span_id) in held:
                        added.duplicates += 1
                        continue
                    held.add((s.trace_id, s.span_id))  # a span twice in one request counts once
                    fresh.append((s.trace_id, s.span_id, s.body, now))
                    seen = touched.setdefault(s.trace_id, [0, False])
                    seen[0] += 1
                    seen[1] = seen[1] or s.root
                db.executemany("INSERT INTO spans VALUES (?, ?, ?, ?)", fresh)
                added.new = len(fresh)
                for trace_id, (n, root) in touched.items():
                    row = db.execute("SELECT state FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
                    if row is None:
                        db.execute("INSERT INTO traces (trace_id, first_received, last_received, has_root) "
                                   "VALUES (?, ?, ?, ?)", (trace_id, now, now, int(root)))
                    elif row[0] == OPEN:
                        db.execute("UPDATE traces SET last_received = ?, has_root = max(has_root, ?) "
                                   "WHERE trace_id = ?", (now, int(root), trace_id))
                    else:
                        added.late += n
                        db.execute("UPDATE traces SET late_spans = late_spans + ? WHERE trace_id = ?", (n, trace_id))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return added

    def _held(self, trace_ids: set[str]) -> set[tuple[str, str]]:
        """(trace id, span id) of the spans already spooled for these traces (inside the caller's transaction)."""
        out: set[tuple[str, str]] = set()
        ids = list(trace_ids)
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            out.update(self._db.execute(f"SELECT trace_id, span_id FROM spans WHERE trace_id IN "
                                        f"({','.join('?' * len(chunk))})", chunk).fetchall())
        return out

    def ready(self, settle: float, orphan_after: float, now: float | None = None, limit: int = 1000) -> list[str]:
        """Open traces ready to import, oldest first."""
        now = time.time() if now is None else now
        with self._lock:
            rows = self._db.execute(
                "SELECT trace_id FROM traces WHERE state = ? AND "
                "((has_root AND last_received <= ?) OR last_received <= ?) ORDER BY first_received LIMIT ?",
                (OPEN, now - settle, now - orphan_after, limit)).fetchall()
        return [r[0] for r in rows]

    def spans(self, trace_id: str) -> list[bytes]:
        """The trace's spooled span envelopes, in the order they arrived."""
        with self._lock:
            rows = self._db.execute("SELECT body FROM spans WHERE trace_id = ? ORDER BY received, span_id",
                                    (trace_id,)).fetchall()
        return [r[0] for r in rows]

    def mark(self, trace_ids: Iterable[str], state: str, reason: str | None = None) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("UPDATE traces SET state = ?, reason = ? WHERE trace_id = ?",
                                 [(state, reason, t) for t in trace_ids])
            self._db.execute("COMMIT")

    def counts(self) -> dict:
        """Spans and traces by state, and the late spans (what ``ingest otlp`` reports)."""
        with self._lock:
            out = {OPEN: 0, IMPORTED: 0, REJECTED: 0}
            for state, n in self._db.execute("SELECT state, count(*) FROM traces GROUP BY state"):
                out[state] = n
            out["spans"] = self._db.execute("SELECT count(*) FROM spans").fetchone()[0]
            out["late_spans"] = self._db.execute("SELECT coalesce(sum(late_spans), 0) FROM traces").fetchone()[0]
        return out

