"""A small in-process work queue for webhook events: deduplicated, bounded, ordered per key, retried.

Label Studio sends webhooks synchronously inside the annotator's request (1 s timeout), so the
backend only records what needs recomputing and answers at once. A key (a task, or a whole project
when a deleted annotation's task is unknown) is pending at most once: a burst of events for one task
collapses into one recomputation, and an event that arrives while its key is running marks it to
run again afterwards, so the last event is never lost and a key never runs twice at the same time.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Callable, Hashable

log = logging.getLogger(__name__)


class QueueFull(RuntimeError):
    pass


class WorkQueue:
    def __init__(self, handler: Callable[[Hashable], None], workers: int = 2, max_pending: int = 20000,
                 max_attempts: int = 8, base_delay: float = 0.5, max_delay: float = 30.0):
        self.handler = handler
        self.max_pending = max_pending
        self.max_attempts = max_attempts
        self.base_delay, self.max_delay = base_delay, max_delay
        self._pending: OrderedDict[Hashable, float] = OrderedDict()  # key -> not before (monotonic)
        self._attempts: dict[Hashable, int] = {}
        self._running: set[Hashable] = set()
        self._again: set[Hashable] = set()
        self._cv = threading.Condition()
        self.stats = {"submitted": 0, "deduplicated": 0, "done": 0, "retried": 0, "failed": 0}
        self._threads = [threading.Thread(target=self._work, name=f"ls-trajeval-queue-{i}", daemon=True)
                         for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, key: Hashable) -> None:
        with self._cv:
            self.stats["submitted"] += 1
            if key in self._running:
                self._again.add(key)
                self.stats["deduplicated"] += 1
                return
            if key in self._pending:
                self.stats["deduplicated"] += 1
                return
            if len(self._pending) >= self.max_pending:
                raise QueueFull(f"{len(self._pending)} keys pending")
            self._pending[key] = 0.0
            self._attempts[key] = 0
            self._cv.notify()

    def _take(self) -> Hashable:
        with self._cv:
            while True:
                now = time.monotonic()
                wait = None
                for key, not_before in self._pending.items():
                    if key in self._running:
                        continue
                    if not_before <= now:
                        del self._pending[key]
                        self._running.add(key)
                        return key
                    wait = not_before - now if wait is None else min(wait, not_before - now)
                self._cv.wait(timeout=wait)

    def _work(self) -> None:
        while True:
            key = self._take()
            try:
                self.handler(key)
                ok = True
            except Exception as exc:  # log the kind of failure only: messages can carry payload
                ok = False
                log.warning("recomputing %s failed (%s); will retry", key, type(exc).__name__)
            with self._cv:
                self._running.discard(key)
                if ok:
                    self.stats["done"] += 1
                    if key in self._again:
                        self._again.discard(key)
                        self._pending[key] = 0.0
                        self._attempts[key] = 0
                    else:
                        self._attempts.pop(key, None)
                else:
                    self._again.discard(key)  # the retry recomputes from the current state anyway
                    n = self._attempts.get(key, 0) + 1
                    if n >= self.max_attempts:
                        self.stats["failed"] += 1
                        self._attempts.pop(key, None)
                        log.error("giving up on %s after %d attempts: run `ls-trajeval ml resync`", key, n)
                    else:
                        self.stats["retried"] += 1
                        self._attempts[key] = n
                        self._pending[key] = time.monotonic() + min(self.max_delay, self.base_delay * 2 ** (n - 1))
                self._cv.notify_all()

    def idle(self) -> bool:
        with self._cv:
            return not self._pending and not self._running

    def join(self, timeout: float = 60) -> bool:
        """Wait until nothing is pending or running (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._pending or self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(timeout=min(left, 0.2))
        return True

    def snapshot(self) -> dict:
        with self._cv:
            return {**self.stats, "pending": len(self._pending), "running": len(self._running)}
