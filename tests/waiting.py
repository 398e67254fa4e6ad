"""Waiting for a condition, never for a fixed time: the one polling loop of the tests (servers coming up, a score
written back, a file appearing). A browser condition is waited for with Playwright's own ``wait_for_*``."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 15, interval: float = 0.1) -> T:
    """``predicate()`` as soon as it is truthy, polled every ``interval`` seconds for at most ``timeout``; its last
    (falsy) value when the time is up."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
