"""Shared fixtures: one real Label Studio per test session (SQLite, a free port, a temp dir), one on PostgreSQL for
the tests that need it, one headless Chromium. ``tests/`` is on the import path (pyproject), so test helpers are
imported as packages: ``from pg.pgserver import ...``."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: real agent logs (``real/``) and the guide this project implements (``guide/``), copied with their provenance
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory):
    """A real Label Studio server (SQLite). LS_TRAJEVAL_TEST_DATA_DIR reuses an initialised data dir."""
    from ls_trajeval.studio.localserver import LocalLabelStudio

    data_dir = os.environ.get("LS_TRAJEVAL_TEST_DATA_DIR") or tmp_path_factory.mktemp("label-studio")
    server = LocalLabelStudio(data_dir)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def ls_client(label_studio):
    from ls_trajeval.studio import client as studio

    return studio.connect(label_studio.url, label_studio.credentials.token)


@pytest.fixture(scope="session")
def ls_env(label_studio):
    """Environment for running the CLI against the session's server."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABEL_STUDIO_URL", label_studio.url)
        mp.setenv("LABEL_STUDIO_API_KEY", label_studio.credentials.token)
        yield label_studio


@pytest.fixture(scope="session")
def pg_label_studio(request):
    """A real Label Studio on a real PostgreSQL server (started once per session, for tests/pg and tests/faults)."""
    from pg.pgserver import session_label_studio

    return session_label_studio(request.config)


@pytest.fixture(scope="session")
def pg_client(pg_label_studio):
    from ls_trajeval.studio import client as studio

    return studio.connect(pg_label_studio.url, pg_label_studio.credentials.token)


CHROMIUM = os.environ.get("LS_TRAJEVAL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    """One headless Debian Chromium per session, through Playwright's sync API (which allows one per process)."""
    playwright = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}: run scripts/system-deps.sh (never `playwright install`)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
