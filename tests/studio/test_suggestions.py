"""Provenance through the API on a real Label Studio (SQLite): the annotation the workbench saved when suggestions were
decided (tests/browser/test_suggestions.py reads it from the browser; uishapes writes it out), posted as it is, exports
with exactly the provenance the browser test's export has; also when Label Studio lost the annotation's parent
(rebuilt from a draft), and for the judge's own prediction exported beside it."""
from __future__ import annotations

import json

import pytest
from commandline import invoke

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.studio import client as studio

from .uishapes import (
    EXPECTED_REJECTED,
    EXPECTED_SCORE,
    EXPECTED_STEPS,
    SUGGESTIONS_BY,
    project_with_suggestions,
    provenance_of,
    ui_decided,
)

pytestmark = pytest.mark.studio

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


def export(args: list, tmp_path) -> list[dict]:
    out = tmp_path / "out.jsonl"
    r = invoke("export", *args, "-o", out)
    assert r.exit_code == 0, r.output
    return [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]


def decided_through_the_api(client, tmp_path, title: str) -> tuple[list[dict], list[dict]]:
    """The scenario on any Label Studio: the annotation as the browser saved it, posted with its parent and once more
    without (a draft rebuilt); the export of both, and of the prediction."""
    pid, task = project_with_suggestions(client, CONFIG, title)
    (prediction,) = task["predictions"]
    result = ui_decided(prediction["result"], task["data"]["te_transcript"])
    studio.create_annotation(client, task["id"], result, parent_prediction=prediction["id"], lead_time=12)
    studio.create_annotation(client, task["id"], result, lead_time=9)
    return export(["--project", pid], tmp_path), export(["--project", pid, "--predictions"], tmp_path)


def test_the_browsers_shapes_through_the_api_give_the_same_provenance(ls_client, ls_env, tmp_path):
    records, predictions = decided_through_the_api(ls_client, tmp_path, "suggestions through the api")
    assert [r["annotation_id"] is not None for r in records] == [True, True]
    for record in records:
        assert provenance_of(record) == (EXPECTED_STEPS, EXPECTED_REJECTED)
        assert record["final_score"] == EXPECTED_SCORE
    (suggested,) = predictions
    assert suggested["annotator"] == SUGGESTIONS_BY
    assert [(e["step_index"], e["correctness"], e["confidence"]) for e in suggested["error_localization"]
            if e["correctness"] != "correct"] == [(1, "incorrect", 0.6), (3, "incorrect", 0.9), (5, "incorrect", 0.3)]
