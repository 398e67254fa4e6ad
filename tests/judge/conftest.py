"""The judge's fixtures: the OpenAI-compatible stand-in (one per test module, its records reset per test) and the
traces its recorded answers are about."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg

from .standin import StandIn

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "judge" / "traces.jsonl"


@pytest.fixture(scope="module")
def standin_server():
    server = StandIn().start()
    yield server
    server.stop()


@pytest.fixture
def standin(standin_server):
    standin_server.reset()
    return standin_server


@pytest.fixture(scope="session")
def judge_config():
    return cfg.load(label_configs.path("trajectory_eval"))


@pytest.fixture(scope="session")
def judge_traces() -> dict:
    """trace id -> trace (the fixture's JSON objects)."""
    return {t["trace_id"]: t for t in map(json.loads, TRACES.read_text(encoding="utf-8").splitlines())}
