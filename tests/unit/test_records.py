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
    # less those only some records have: an exported prediction's, a gold line's, a trace worked in windows'
    assert set(rec) == (RECORD_KEYS - {"model_version", "gold", "windows"}) | {"error_localization"} | whole
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
    rec, _ = build_record(task, {**annotation(), "lead_time": 41.5}, CONFIG, layout="paged",
                          users={3: {"email": "c@x"}})
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


# ---------------------------------------------------------------- the keys added this round
from ls_trajeval.core.labels import Span, StepLabel, TraceLabels, resolve_causes  # noqa: E402
from ls_trajeval.core.records import parse_record  # noqa: E402
from ls_trajeval.core.results import encode  # noqa: E402


def test_a_record_written_before_any_key_was_added_carries_their_defaults():
    rec = record()
    assert [(e["source"], e["suggested_by"], e["confidence"], e["evidence"], e["caused_by"], e["role"],
             e["correction"]) for e in rec["error_localization"]] == [
        ("human", None, None, [], [], None, None),  # step 0: correct, so no role
        ("human", None, None, [], [], "origin", None)]  # step 1: wrong, caused by nothing marked
    assert (rec["root_cause_step"], rec["rejected_suggestions"]) == (1, [])


def _labels(*marks: tuple[int, tuple[int, ...]], n: int = 6) -> list[StepLabel]:
    wrong = dict(marks)
    return [StepLabel(i, "incorrect" if i in wrong else "correct", caused_by=wrong.get(i, ())) for i in range(n)]


def test_cause_links_give_roles_and_the_root_cause():
    # 1 is wrong on its own; 3 was caused by 1 (wrong): propagated; 4 was caused by 2, which nobody marked: origin
    steps = _labels((1, ()), (3, (1,)), (4, (2,)))
    root, warnings = resolve_causes(steps, {"incorrect"}.__contains__)
    assert [(s.role, tuple(s.caused_by)) for s in steps] == [
        (None, ()), ("origin", ()), (None, ()), ("propagated", (1,)), ("origin", (2,)), (None, ())]
    assert (root, warnings) == (1, [])


def test_links_to_itself_later_steps_or_from_a_correct_step_are_dropped_with_a_warning():
    steps = _labels((2, (2, 4, 0, 0)), (4, (2,)))
    steps[5].caused_by = (4,)  # a correct step cannot be caused
    root, warnings = resolve_causes(steps, {"incorrect"}.__contains__)
    assert [tuple(s.caused_by) for s in steps] == [(), (), (0,), (), (2,), ()]
    assert [s.role for s in steps] == [None, None, "origin", None, "propagated", None]
    assert root == 2
    assert warnings == ["step #3: a cause must be an earlier step, not itself; link dropped",
                        "step #3: a cause must be an earlier step, not the later step #5; link dropped",
                        "step #6: is not marked wrong; its cause links are dropped"]


def test_no_errors_no_root_cause():
    assert resolve_causes(_labels(), {"incorrect"}.__contains__) == (None, [])


def test_the_added_keys_read_back_as_written():
    rec = record()
    entry = rec["error_localization"][1]
    entry.update(source="edited", suggested_by="judge-v2", confidence=0.75, caused_by=[0], role="propagated",
                 evidence=[{"start": 4, "end": 6, "text": "ls"}], correction="run `ls -la`")
    rec["rejected_suggestions"] = [{"step_index": 0, "error_type": "wrong_tool", "severity": "minor",
                                    "suggested_by": "judge-v2"}]
    back = parse_record(json.loads(dumps(rec)), "f", 1, scheme="error_localization")
    assert isinstance(back, AnnotationRecord)
    step = back.steps[1]
    assert (step.source, step.suggested_by, step.confidence, tuple(step.caused_by), step.role, step.correction) == (
        "edited", "judge-v2", 0.75, (0,), "propagated", "run `ls -la`")
    assert tuple(step.evidence) == (Span(4, 6, "ls"),)
    assert back.steps[0].source == "human" and back.steps[0].evidence == ()
    assert back.root_cause_step == 1
    assert back.rejected_suggestions == rec["rejected_suggestions"]


def test_a_line_of_the_guide_shape_reads_with_the_defaults():
    line = {"trace_id": "g", "error_localization": [
        {"step_index": 0, "correctness": "incorrect", "error_type": "x", "severity": "major"},
        {"step_index": 1, "correctness": "correct", "source": "accepted"}]}
    back = parse_record(line, "f", 1)
    assert isinstance(back, AnnotationRecord)
    assert [(s.source, s.evidence, s.caused_by, s.role, s.correction) for s in back.steps] == [
        ("human", (), (), None, None), ("accepted", (), (), None, None)]
    assert (back.root_cause_step, back.rejected_suggestions) == (None, [])


def test_malformed_added_keys_are_located():
    def problem(**kw) -> str:
        line = {"trace_id": "g", "error_localization": [{"step_index": 0, "correctness": "incorrect", **kw}]}
        return str(parse_record(line, "f", 3))

    assert problem(source="robot") == (
        "f:3: error_localization[0].source: expected one of human, accepted, edited, got 'robot'")
    assert problem(confidence=1.5) == "f:3: error_localization[0].confidence: expected a number from 0 to 1"
    assert problem(evidence=[{"start": 5, "end": 2, "text": ""}]) == (
        'f:3: error_localization[0].evidence[0]: expected {"start", "end", "text"} with 0 <= start <= end')
    assert problem(caused_by=["1"]) == "f:3: error_localization[0].caused_by: expected a list of step indices"
    assert problem(role="victim") == ("f:3: error_localization[0].role: expected one of origin, propagated or null, "
                                      "got 'victim'")
    assert problem(correction=3) == "f:3: error_localization[0].correction: expected a string or null"
    bad = {"trace_id": "g", "error_localization": [], "rejected_suggestions": [{"error_type": "x"}]}
    assert str(parse_record(bad, "f", 4, scheme="error_localization")) == (
        "f:4: rejected_suggestions: expected a list of objects with a step_index")


def test_a_suggestion_carries_its_confidence_and_judge_on_its_results():
    data = task_data(parse_trace(TRACE), CONFIG)
    steps = [StepLabel(0, "correct"),
             StepLabel(1, "incorrect", "tool_errors", "wrong_tool", "major", "why", confidence=0.4,
                       suggested_by="judge-a")]
    for layout in ("transcript", "paged"):
        out = [r for r in encode(TraceLabels(steps), CONFIG, layout, data["te_transcript"], origin="prediction",
                                 confirm_review=False)
               if r["from_name"] not in {r.name for r in CONFIG.whole_trace}]
        step1 = [r for r in out if layout == "transcript" or r["from_name"].endswith("_1")]
        assert step1 and all(r["score"] == 0.4 for r in step1), layout
        assert [r.get("judge") for r in step1] == ["judge-a"] + [None] * (len(step1) - 1), layout
        assert all("score" not in r for r in out if r not in step1), layout


def test_provenance_in_the_record_from_the_tasks_predictions():
    trace = {**TRACE, "trace": [{"type": "thought", "content": f"step {i}"} for i in range(4)]}
    data = task_data(parse_trace(trace), CONFIG)
    judged = TraceLabels([StepLabel(0, "correct"), StepLabel(1, "incorrect", "action", "wrong_tool", "major", "why",
                                                             confidence=0.8),
                          StepLabel(2, "incorrect", "reasoning", "logical_error", "minor", None, confidence=0.4),
                          StepLabel(3, "correct")])
    prediction = {"id": 31, "model_version": "judge-v1", "score": 94,
                  "result": encode(judged, CONFIG, "transcript", data["te_transcript"], origin="prediction",
                                   confirm_review=False, suggested=True)}
    step1 = [r for r in prediction["result"] if r["value"]["start"] == "1"]
    # the annotator accepted step 1 (relabelled, ids kept) and deleted step 2; the draft lost parent_prediction
    kept = [{**r, "origin": "prediction-changed", "value": {**r["value"], "paragraphlabels": ["incorrect"]}}
            if r["from_name"] == "error_localization" else r for r in step1]
    task = {"id": 9, "project": 2, "data": data, "predictions": [prediction]}
    rec, warnings = build_record(task, {"id": 5, "completed_by": 3, "result": kept, "parent_prediction": None},
                                 CONFIG, layout="transcript", users={3: {"email": "c@x"}})
    assert warnings == []
    assert [(e["source"], e["suggested_by"], e["confidence"]) for e in rec["error_localization"]] == [
        ("human", None, None), ("accepted", "judge-v1", 0.8), ("human", None, None), ("human", None, None)]
    assert rec["rejected_suggestions"] == [{"step_index": 2, "error_type": "logical_error", "severity": "minor",
                                            "suggested_by": "judge-v1"}]
    # nothing of the prediction kept: the project's model version says which one the stream prefilled from
    rec, _ = build_record(task, {"id": 6, "completed_by": 3, "result": []}, CONFIG, model_version="judge-v1")
    assert [r["step_index"] for r in rec["rejected_suggestions"]] == [1, 2]
    rec, _ = build_record(task, {"id": 6, "completed_by": 3, "result": []}, CONFIG)  # blank trace, beside
    assert rec["rejected_suggestions"] == []
    # the prediction itself, exported, is the suggestions it carries
    rec, _ = build_record(task, prediction, CONFIG, annotator="judge-v1", prediction=True)
    assert [(e["correctness"], e["confidence"]) for e in rec["error_localization"]] == [
        ("correct", None), ("incorrect", 0.8), ("incorrect", 0.4), ("correct", None)]
