"""The LLM judge's answer cache: one small SQLite file, so that judging the same trace with the same prompt and model
again costs nothing.

An answer is stored under the hash of everything that decides it: the model, the messages (the prompt template
rendered with the trace's content), the response format and the sampling settings. Only answers that passed
validation are stored. The default file is ``judge.sqlite3`` in the user's cache directory (platformdirs).
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import UserError

#: bump when the key's recipe changes, so old entries are not read under a new meaning
KEY_VERSION = 1


def default_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ls-trajeval")) / "judge.sqlite3"


def cache_key(model: str, messages: list[dict], request: dict[str, Any]) -> str:
    """The hash of the model, the messages and the request's other settings (response format, temperature, ...)."""
    blob = json.dumps({"v": KEY_VERSION, "model": model, "messages": messages, "request": request},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    content: str
    prompt_tokens: int
    completion_tokens: int


class AnswerCache:
    """A thread-safe key -> answer store in one SQLite file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                             "content TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT "
                             "NULL, created REAL NOT NULL)")
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"the judge's cache {self.path} cannot be used ({exc}): remove it or pass another "
                            "--cache") from None

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            row = self._db.execute("SELECT content, prompt_tokens, completion_tokens FROM answers WHERE key = ?",
                                   (key,)).fetchone()
        return CachedAnswer(*row) if row else None

    def put(self, key: str, model: str, answer: CachedAnswer) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                             (key, model, answer.content, answer.prompt_tokens, answer.completion_tokens, time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
