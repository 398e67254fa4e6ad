"""The trajectory_eval record: what the writer puts in a line is what the reader takes back, and a bad line is one
located rejection."""
from __future__ import annotations

import gzip
import json

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.records import RECORD_KEYS, STEP_KEYS, AnnotationRecord, build_record, dumps, read_records
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import TraceError, parse_trace

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
TRACE = {"trace_id": "t1", "task": "<task> & \"q\"", "trace": [{"type": "thought", "content": "a"},
                                                            {"type": "action", "content": "run", "action_input": "ls"}]}


def annotation(severity: str = "minor") -> dict:
    return {"id": 5, "completed_by": 3, "created_at": "c", "updated_at": "u", "result": [
        {"id": "s1", "from_name": "error_localization_correctness_1", "to_name": "te_task", "type": "choices",
         "value": {"choices": ["incorrect"]}},
        {"id": "s2", "from_name": "error_localization_severity_1", "to_name": "te_task", "type": "choices",
         "value": {"choices": [severity]}}]}


def record(**kw) -> dict:
    task = {"id": 9, "project": 2, "data": task_data(parse_trace(TRACE), CONFIG)}
    rec, warnings = build_record(task, annotation(**kw), CONFIG, layout="paged", users={3: {"email": "c@x"}})
    assert warnings == []
    return rec


def test_the_writer_writes_exactly_the_keys_the_reader_knows():
    rec = record()
    whole = {r.name for r in CONFIG.whole_trace}
    assert set(rec) == (RECORD_KEYS - {"model_version", "gold"}) | {"error_localization"} | whole
    assert all(tuple(e) == STEP_KEYS for e in rec["error_localization"])


def test_a_written_line_reads_back(tmp_path):
    path = tmp_path / "a.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(dumps(record()))
    (back,) = read_records([tmp_path])
    assert isinstance(back, AnnotationRecord)
    assert (back.trace_id, back.task, back.annotator, back.annotation_id) == ("t1", "<task> & \"q\"", "c@x", 5)
    assert [(s.step_index, s.correctness, s.severity, s.step_type, s.step_text) for s in back.steps] == [
        (0, "correct", None, "thought", "a"), (1, "incorrect", "minor", "action", "run\nls")]
    # minor costs 1 of 100 (the shipped weights)
    assert (back.n_steps, back.final_score, back.score_initial) == (2, 99.0, 100.0)
    assert back.severity_weights == {"minor": -1.0, "major": -5.0, "critical": -10.0}
    assert back.labels == {"overall_success": None}


def test_bad_lines_are_located_and_cost_only_themselves(tmp_path):
    good = record()
    lines = [dumps(good), "{oops\n", json.dumps([1]) + "\n", json.dumps({"trace_id": "x"}) + "\n",
             json.dumps({**good, "trace_id": None}) + "\n",
             json.dumps({**good, "error_localization": [{"step_index": 0}, {"step_index": 0}]}) + "\n",
             dumps(good), dumps({**good, "annotation_id": 6})]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    out = list(read_records([path, tmp_path / "missing.jsonl"]))
    errors = [str(x) for x in out if isinstance(x, TraceError)]
    assert [x.annotation_id for x in out if isinstance(x, AnnotationRecord)] == [5, 6]
    assert errors == [
        f"{path}:2: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        f"{path}:3: expected a JSON object",
        f"{path}:4: no per-step list found (no 'scheme' key naming a list, and no list of objects with step_index)",
        f"{path}:5: trace_id: missing or not a string",
        f"{path}:6: error_localization[1].step_index: step 0 appears twice",
        f"{path}:7: duplicate annotation of trace 't1' by c@x (first at {path}:1)",
        f"{tmp_path / 'missing.jsonl'}: no such file or directory",
    ]


def test_an_unmarked_step_is_the_default_label_given():
    from ls_trajeval.core.records import parse_record

    rec = parse_record({"trace_id": "t", "scheme": "s", "s": [{"step_index": 0}]}, "f", 1, default_correctness="ok")
    assert rec.steps[0].correctness == "ok" and rec.scheme == "s"


def test_trace_metadata_and_scalar_fields_travel_with_the_record(tmp_path):
    trace = {**TRACE, "metadata": {"agent": "planner-v2", "model": "m-7b", "run": 3}}
    task = {"id": 9, "project": 2, "data": task_data(parse_trace(trace), CONFIG)}
    rec, _ = build_record(task, {**annotation(), "lead_time": 41.5}, CONFIG, layout="paged", users={3: {"email": "c@x"}})
    assert rec["metadata"] == {"agent": "planner-v2", "model": "m-7b", "run": 3}
    path = tmp_path / "a.jsonl"
    path.write_text(dumps(rec), encoding="utf-8")
    (back,) = read_records([path])
    assert back.metadata == {"agent": "planner-v2", "model": "m-7b", "run": 3}
    assert (back.fields["project_id"], back.fields["task_id"], back.fields["lead_time"]) == (2, 9, 41.5)
    assert "metadata" not in back.labels and "lead_time" not in back.labels


def test_a_prediction_is_read_as_a_record_of_its_model_version():
    task = {"id": 9, "project": 2, "data": task_data(parse_trace(TRACE), CONFIG)}
    pred = {"id": 77, "model_version": "detectors-1", "result": annotation()["result"]}
    rec, _ = build_record(task, pred, CONFIG, annotator="detectors-1")
    assert (rec["annotator"], rec["annotation_id"], rec["model_version"]) == ("detectors-1", 77, "detectors-1")
    assert [e["correctness"] for e in rec["error_localization"]] == ["correct", "incorrect"]
