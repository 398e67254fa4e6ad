"""One headless Chromium per test session, logged in to the session's real Label Studio.

Debian's ``/usr/bin/chromium`` through Playwright's Python API (never ``playwright install``).
Every page records dialogs, console errors, uncaught exceptions and injected globals, so a test
can assert that untrusted content ran no script.
"""
from __future__ import annotations

import os

import pytest

from .ui import Projects, logged_in

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def annotator(browser, label_studio):
    """The admin user's logged-in page (one context for the session)."""
    with logged_in(browser, label_studio) as a:
        yield a


@pytest.fixture(scope="session")
def projects(ls_client):
    return Projects(ls_client)


@pytest.fixture()
def guard(annotator):
    """Fresh records of dialogs, console errors and page errors for one test."""
    annotator.reset_watch()
    return annotator


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, keep a screenshot and the page's HTML next to the test's tmp dir for diagnosis."""
    outcome = yield
    report = outcome.get_result()
    a = item.funcargs.get("guard") or item.funcargs.get("annotator")
    if report.when == "call" and report.failed and a is not None:
        out = os.environ.get("LS_TRAJEVAL_BROWSER_FAILURES", "/tmp/ls-trajeval-browser-failures")
        os.makedirs(out, exist_ok=True)
        stem = os.path.join(out, item.name.replace("/", "_"))
        try:
            a.page.screenshot(path=stem + ".png", full_page=True)
            with open(stem + ".html", "w", encoding="utf-8") as fh:
                fh.write(a.page.content())
        except Exception:  # noqa: BLE001 - diagnosis must never mask the real failure
            pass
