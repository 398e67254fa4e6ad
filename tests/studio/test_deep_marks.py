"""Deeper marks through a real Label Studio (SQLite), both layouts: the results the labeling UI saves for evidence
spans (one crossing two steps, two in one step), cause links and corrections (tests/browser/test_deeper_marks.py
reads them from the browser; uishapes writes them out), posted as they are; the export holds the spans in the steps'
own code points, the links, the roles, the root cause and the corrections computed by hand, and says which link and
which selection it could not use. tests/pg runs the same on PostgreSQL."""
from __future__ import annotations

import json

import pytest
from commandline import invoke

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.studio import client as studio

from .uishapes import DEEP_TRACE, deep_expected, ui_deep

pytestmark = pytest.mark.studio

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


def deep_round_trip(client, layout: str, tmp_path, env: dict | None = None) -> tuple[dict, str]:
    """One project of ``layout`` holding DEEP_TRACE, annotated with the UI's shapes, exported: the record and what
    the export said on stderr."""
    project = studio.create_project(client, CONFIG, layout, f"deeper marks {layout} {tmp_path.name}")
    assert import_traces(client, project["id"], [parse_trace(DEEP_TRACE)], CONFIG, progress=False).imported == 1
    (task,) = studio.iter_tasks(client, project["id"])
    studio.create_annotation(client, task["id"], ui_deep(layout, task["data"]["te_transcript"]), lead_time=5)
    out = tmp_path / f"deep-{layout}.jsonl"
    r = invoke("export", "--project", project["id"], "-o", out, env=env)
    assert r.exit_code == 0, r.output
    (record,) = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    return record, r.stderr


def check(record: dict, stderr: str, layout: str) -> None:
    steps = record["error_localization"]
    want = deep_expected(layout)
    assert [s["step_index"] for s in steps if s["correctness"] == "incorrect"] == sorted(want)
    for i, keys in want.items():
        assert {k: steps[i][k] for k in keys} == keys, f"step {i}"
        for span in steps[i]["evidence"]:
            assert DEEP_TRACE["trace"][i]["content"][span["start"]:span["end"]] == span["text"]
    assert all(s["evidence"] == [] and s["caused_by"] == [] and s["role"] is None and s["correction"] is None
               for s in steps if s["step_index"] not in want)
    assert record["root_cause_step"] == 2
    assert record["final_score"] == 100 - 1 - 5 - 10 - 10
    # what could not be used is said, located, and nothing else is lost
    assert "step #3: a cause must be an earlier step, not the later step #4; link dropped" in stderr
    if layout == "transcript":
        assert "step #5: the selected text" in stderr and "kept as a whole-step mark" in stderr
    else:
        assert "error_localization_caused_by_2: 'the' is not a step number (#N); ignored" in stderr


@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_spans_links_and_corrections_round_trip(ls_client, ls_env, layout, tmp_path):
    record, stderr = deep_round_trip(ls_client, layout, tmp_path)
    check(record, stderr, layout)
