"""A small in-process work queue for webhook events: deduplicated, bounded, ordered per key, retried.

Label Studio sends webhooks synchronously inside the annotator's request (1 s timeout), so the
backend records what needs recomputing and waits for it a bounded moment at most. A key (a task, or a
whole project when a deleted annotation's task is unknown) is pending at most once: a burst of events for
one task collapses into one recomputation, and an event that arrives while its key is running marks it to
run again afterwards, so the last event is never lost and a key never runs twice at the same time.

A submitter may wait (bounded) for its event's effect: :meth:`WorkQueue.submit` returns a ticket, and
:meth:`WorkQueue.wait` returns once a run of that key that started after the ticket was issued has ended. A
run that was already under way when the event came does not count: it may have read the state before it.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

log = logging.getLogger(__name__)


class QueueFull(RuntimeError):
    pass


class WorkQueue:
    def __init__(self, handler: Callable[[Hashable], None], workers: int = 2, max_pending: int = 20000,
                 max_attempts: int = 8, base_delay: float = 0.5, max_delay: float = 30.0, max_ended: int = 10000):
        self.handler = handler
        self.max_pending = max_pending
        self.max_attempts = max_attempts
        self.base_delay, self.max_delay = base_delay, max_delay
        self._pending: OrderedDict[Hashable, float] = OrderedDict()  # key -> not before (monotonic)
        self._attempts: dict[Hashable, int] = {}
        self._running: set[Hashable] = set()
        self._again: set[Hashable] = set()
        # tickets: a counter of submissions; a run takes the counter's value when it starts, and its key's
        # last ended run (that value, succeeded) is kept for the last ``max_ended`` keys, for :meth:`wait`
        self._ticket = 0
        self._started: dict[Hashable, int] = {}
        self._ended: OrderedDict[Hashable, tuple[int, bool]] = OrderedDict()
        self.max_ended = max_ended
        lock = threading.Lock()
        self._cv = threading.Condition(lock)
        self._run_ended = threading.Condition(lock)  # apart from ``_cv``, so a waiter never takes a worker's wake-up
        self.stats = {"submitted": 0, "deduplicated": 0, "done": 0, "retried": 0, "failed": 0}
        self._threads = [threading.Thread(target=self._work, name=f"ls-trajeval-queue-{i}", daemon=True)
                         for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, key: Hashable) -> int:
        """Queue ``key``; returns a ticket for :meth:`wait`."""
        with self._cv:
            self.stats["submitted"] += 1
            self._ticket += 1
            if key in self._running:
                self._again.add(key)
                self.stats["deduplicated"] += 1
                return self._ticket
            if key in self._pending:
                self.stats["deduplicated"] += 1
                return self._ticket
            if len(self._pending) >= self.max_pending:
                raise QueueFull(f"{len(self._pending)} keys pending")
            self._pending[key] = 0.0
            self._attempts[key] = 0
            self._cv.notify()
            return self._ticket

    def wait(self, key: Hashable, ticket: int, timeout: float) -> bool:
        """Wait until a run of ``key`` that started after ``ticket`` was issued has ended: True when it
        succeeded, False when it failed (the queue retries it) or ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                ended = self._ended.get(key)
                if ended is not None and ended[0] >= ticket:
                    return ended[1]
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._run_ended.wait(timeout=left)

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
                        self._started[key] = self._ticket
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
                self._ended[key] = (self._started.pop(key), ok)
                self._ended.move_to_end(key)
                if len(self._ended) > self.max_ended:
                    self._ended.popitem(last=False)
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
                self._run_ended.notify_all()

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
