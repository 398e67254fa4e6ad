"""The local state of ingest and write-back, one small SQLite file: the checkpoint of each pull (so a rerun fetches
only what is new) and the ledger of every verdict delivered (so an unchanged label is not sent again, a changed one
is sent as an update, and one that no longer exists is withdrawn)."""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (source TEXT PRIMARY KEY, value TEXT NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS deliveries (
    destination TEXT NOT NULL, key TEXT NOT NULL, trace_id TEXT NOT NULL, digest TEXT NOT NULL,
    payload TEXT NOT NULL, sent REAL NOT NULL, PRIMARY KEY (destination, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS deliveries_trace ON deliveries (destination, trace_id);
"""


def default_path() -> Path:
    """Where the state lives when no ``--state`` is given: the user's data directory."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("ls-trajeval")) / "tracing.sqlite"


class Ledger:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------ checkpoints
    def checkpoint(self, source: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM checkpoints WHERE source = ?", (source,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_checkpoint(self, source: str, value: dict) -> None:
        with self._lock:
            self._db.execute("INSERT INTO checkpoints VALUES (?, ?, ?) ON CONFLICT (source) DO UPDATE SET "
                             "value = excluded.value, updated = excluded.updated",
                             (source, json.dumps(value), time.time()))

    # ------------------------------------------------------------ deliveries
    def delivered(self, destination: str, trace_ids: Iterable[str]) -> dict[str, tuple[str, str, str]]:
        """key -> (trace id, digest, payload) of what was delivered for these traces."""
        out: dict[str, tuple[str, str, str]] = {}
        ids = list(trace_ids)
        with self._lock:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                marks = ",".join("?" * len(chunk))
                query = ("SELECT key, trace_id, digest, payload FROM deliveries "
                         f"WHERE destination = ? AND trace_id IN ({marks})")
                for key, tid, digest, payload in self._db.execute(query, (destination, *chunk)):
                    out[key] = (tid, digest, payload)
        return out

    def record(self, destination: str, sent: Iterable[tuple[str, str, str, str]]) -> None:
        """Remember delivered verdicts: (key, trace id, digest, payload) each."""
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT INTO deliveries VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (destination, key) "
                                 "DO UPDATE SET digest = excluded.digest, payload = excluded.payload, "
                                 "sent = excluded.sent",
                                 [(destination, k, t, d, p, now) for k, t, d, p in sent])
            self._db.execute("COMMIT")

    def forget(self, destination: str, keys: Iterable[str]) -> None:
        """Drop withdrawn verdicts."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("DELETE FROM deliveries WHERE destination = ? AND key = ?",
                                 [(destination, k) for k in keys])
            self._db.execute("COMMIT")
