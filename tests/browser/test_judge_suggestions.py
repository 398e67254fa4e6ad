"""An LLM judge's predictions (stored by `ls-trajeval judge`, answered by the local stand-in) open in the labeling UI:
the task opens pre-filled with the judge's marks on the steps its recorded answer calls wrong, carrying their
confidence (Label Studio's per-region score), with no error on the page."""
from __future__ import annotations

import json

import pytest
from judge.conftest import TRACES
from judge.standin import MODEL, StandIn

from ls_trajeval.core import trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.flows.judge import judge_project
from ls_trajeval.flows.projects import load_config
from ls_trajeval.ml.llm_judge import JudgeSettings
from ls_trajeval.studio import client as studio

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def judged(ls_client, tmp_path_factory):
    config = load_config("trajectory_eval")
    project = studio.create_project(ls_client, config, "transcript", "judge in the UI")
    (line,) = [t for t in TRACES.read_text(encoding="utf-8").splitlines() if '"judge-ok-wrong"' in t]
    assert import_traces(ls_client, project["id"], [trace.parse_trace(json.loads(line))], config,
                         progress=False).imported == 1
    server = StandIn().start()
    try:
        summary = judge_project(ls_client, project["id"], JudgeSettings(base_url=server.url, model=MODEL),
                                cache_path=tmp_path_factory.mktemp("cache") / "judge.sqlite3")
    finally:
        server.stop()
    assert summary.judged == 1
    (task,) = studio.iter_tasks(ls_client, project["id"])
    return project["id"], task


def test_the_judges_marks_open_on_the_steps_it_called_wrong(judged, guard):
    pid, task = judged
    guard.open(pid, task["id"])
    # the recorded answer (tests/fixtures/judge/responses.json, "ok-wrong") calls steps 2 and 4 wrong
    marked = [i for i in range(4) if guard.phrase(i).locator(".htx-highlight").count()]
    assert marked == [1, 3]
    (prediction,) = task["predictions"]
    assert sorted({r.get("score") for r in prediction["result"]}) == [0.62, 0.81]
    assert guard.watch.errors == [] and guard.watch.dialogs == []
