"""The export flow's own logic against an in-memory client: which annotations are written, in what order, to which
file, what is counted and left out. The results are written by hand in the shape the labeling UI saves."""
from __future__ import annotations

import json

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.labelconfig import generate
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.export import export_project, iter_records

from .fakestudio import FakeStudio

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
TRACE = {"trace_id": "tr-1", "task": "fix <b>it</b>", "trace": [
    {"type": "thought", "content": "look"}, {"type": "action", "content": "grep", "action_input": "x"},
    {"type": "observation", "content": "found"}]}
USERS = [{"id": 1, "email": "a@example.com"}]


def wrong_step(step: int, text: str, severity: str) -> list[dict]:
    span = {"start": str(step), "end": str(step), "startOffset": 0, "endOffset": len(text)}
    return [
        {"id": "r1", "from_name": "error_localization", "to_name": "te_trace", "type": "paragraphlabels",
         "value": {**span, "paragraphlabels": ["incorrect"]}},
        {"id": "r1", "from_name": "error_localization_type", "to_name": "te_trace", "type": "taxonomy",
         "value": {**span, "taxonomy": [["action", "wrong_tool"]]}},
        {"id": "r1", "from_name": "error_localization_severity", "to_name": "te_trace", "type": "choices",
         "value": {**span, "choices": [severity]}},
        {"id": "o1", "from_name": "overall_success", "to_name": "te_task", "type": "choices",
         "value": {"choices": ["failure"]}},
    ]


def project(tmp_path=None) -> FakeStudio:
    data = task_data(parse_trace(TRACE), CONFIG)
    text = data["te_transcript"][1]["text"]
    task = {"data": data, "drafts": [{"id": 99}], "annotations": [
        {"id": 12, "completed_by": {"id": 2, "email": "b@example.com"}, "result": wrong_step(1, text, "critical")},
        {"id": 10, "completed_by": 1, "was_cancelled": True, "result": []},
        {"id": 11, "completed_by": 1, "result": wrong_step(1, text, "major"), "lead_time": 4.5},
    ]}
    return FakeStudio(label_config=generate(CONFIG, "transcript"), tasks=[task], users=USERS)


def lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_submitted_annotations_are_written_in_id_order_and_the_rest_counted(tmp_path):
    out = tmp_path / "out" / "annotations.jsonl"
    summary = export_project(project(), 7, out)
    assert (summary.written, summary.tasks, summary.cancelled, summary.drafts) == (2, 1, 1, 1)
    assert summary.files == [str(out)] and [p.name for p in out.parent.iterdir()] == ["annotations.jsonl"]
    first, second = lines(out)
    assert (first["annotation_id"], first["annotator"], first["annotator_id"]) == (11, "a@example.com", 1)
    assert (second["annotation_id"], second["annotator"]) == (12, "b@example.com")
    # step 1 wrong: major costs 5 of 100, critical 10
    assert (first["final_score"], first["running_score"], first["worst_severity"]) == (95, [100, 95, 95], "major")
    assert second["final_score"] == 90
    assert (first["n_steps"], first["n_errors"], first["first_error_step"]) == (3, 1, 1)
    assert first["overall_success"] == "failure" and first["task"] == "fix <b>it</b>" and first["lead_time"] == 4.5
    assert [e["correctness"] for e in first["error_localization"]] == ["correct", "incorrect", "correct"]
    assert first["error_localization"][1]["step_text"] == "grep\nx"


def test_per_annotator_files_and_the_config_default_output(tmp_path, monkeypatch):
    summary = export_project(project(), 7, tmp_path / "by", per_annotator=True)
    assert sorted(p.name for p in (tmp_path / "by").iterdir()) == ["a@example.com.jsonl", "b@example.com.jsonl"]
    assert summary.written == 2
    monkeypatch.chdir(tmp_path)  # the shipped config's output.path is "output/"
    summary = export_project(project(), 7)
    assert summary.files == ["output/annotations.jsonl"] and len(lines(tmp_path / "output" / "annotations.jsonl")) == 2


def test_an_empty_project_still_gives_a_file(tmp_path):
    fake = FakeStudio(label_config=generate(CONFIG, "transcript"))
    summary = export_project(fake, 7, tmp_path / "empty.jsonl")
    assert (tmp_path / "empty.jsonl").read_text() == "" and summary.written == 0


def test_iter_records_streams_the_same_records(tmp_path):
    export_project(project(), 7, tmp_path / "x.jsonl")
    assert list(iter_records(project(), 7)) == lines(tmp_path / "x.jsonl")
