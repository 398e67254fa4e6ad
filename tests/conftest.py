"""Shared fixtures: one real Label Studio per test session, started on a free port in a temp dir."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the tests read the guide and real fixtures from ../shared")
    return SHARED


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory):
    """A real Label Studio server (SQLite). LS_TRAJEVAL_TEST_DATA_DIR reuses an initialised data dir."""
    from ls_trajeval.localserver import LocalLabelStudio

    data_dir = os.environ.get("LS_TRAJEVAL_TEST_DATA_DIR") or tmp_path_factory.mktemp("label-studio")
    server = LocalLabelStudio(data_dir)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def ls_client(label_studio):
    from ls_trajeval import studio

    return studio.connect(label_studio.url, label_studio.credentials.token)


@pytest.fixture(scope="session")
def ls_env(label_studio):
    """Environment for running the CLI against the session's server."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABEL_STUDIO_URL", label_studio.url)
        mp.setenv("LABEL_STUDIO_API_KEY", label_studio.credentials.token)
        yield label_studio
