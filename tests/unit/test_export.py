"""The export flow's own logic against an in-memory client: which annotations are written, in what order, to which
file, what is counted and left out, what is asked of Label Studio. The results are written by hand in the shape the
labeling UI saves."""
from __future__ import annotations

import json

import httpx
import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.labelconfig import generate
from ls_trajeval.core.records import ANNOTATION_FIELDS, PREDICTION_FIELDS, TASK_FIELDS, build_record
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.export import export_gold, export_predictions, export_project, iter_records
from ls_trajeval.studio.client import StudioError

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


def many_tasks(n: int = 12) -> FakeStudio:
    """``n`` traces, each annotated once or twice (one skip among them), some with a prediction and a draft."""
    tasks = []
    for i in range(n):
        trace = {**TRACE, "trace_id": f"tr-{i}"}
        data = task_data(parse_trace(trace), CONFIG)
        text = data["te_transcript"][1]["text"]
        annotations = [{"id": 100 + 2 * i, "completed_by": 1, "result": wrong_step(1, text, "minor"),
                        "lead_time": 1.25 * i, "created_at": f"2026-12-05T10:00:{i:02d}.000100Z"}]
        if i % 3 == 0:
            annotations.insert(0, {"id": 101 + 2 * i, "completed_by": {"id": 2, "email": "b@example.com"},
                                   "result": wrong_step(1, text, "critical"), "was_cancelled": i == 6})
        tasks.append({"data": data, "annotations": annotations, "drafts": [{"id": i}] if i % 4 == 0 else [],
                      "predictions": [{"id": 500 + i, "model_version": "judge-1", "score": 0.5,
                                       "result": wrong_step(1, text, "major")}]})
    return FakeStudio(label_config=generate(CONFIG, "transcript"), tasks=tasks, users=USERS)


def test_pages_read_ahead_give_every_task_once_in_order_and_the_counts(tmp_path):
    fake = many_tasks()
    summary = export_project(fake, 7, tmp_path / "out.jsonl", page_size=5)
    # 12 tasks; tasks 0, 3, 6, 9 have a second annotation, task 6's skipped; drafts on tasks 0, 4, 8
    assert (summary.written, summary.tasks, summary.cancelled, summary.drafts) == (15, 12, 1, 3)
    assert summary.warnings == []
    records = lines(tmp_path / "out.jsonl")
    assert [(r["task_id"], r["annotation_id"]) for r in records] == sorted(
        (r["task_id"], r["annotation_id"]) for r in records)
    assert [r["trace_id"] for r in records[:3]] == ["tr-0", "tr-0", "tr-1"]
    assert records[2]["lead_time"] == 1.25 and records[2]["created_at"] == "2026-12-05T10:00:01.000100Z"
    # 12 tasks in pages of 5 (the last one short), then the tasks with a draft (3: one page)
    assert fake.pages == [5, 5, 5, 5]
    # the same file as one page, and as the default page size
    export_project(many_tasks(), 7, tmp_path / "one-page.jsonl", page_size=100)
    export_project(many_tasks(), 7, tmp_path / "default.jsonl")
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "one-page.jsonl").read_bytes() == \
        (tmp_path / "default.jsonl").read_bytes()


def test_predictions_are_read_with_their_fields(tmp_path):
    summary = export_predictions(many_tasks(), 7, tmp_path / "predictions.jsonl", page_size=5)
    assert (summary.written, summary.tasks) == (12, 12)
    first = lines(tmp_path / "predictions.jsonl")[0]
    assert (first["annotator"], first["model_version"], first["worst_severity"]) == ("judge-1", "judge-1", "major")


@pytest.mark.parametrize("export", [export_project, export_gold, export_predictions])
def test_an_error_while_reading_ahead_ends_the_export_and_leaves_no_file(tmp_path, monkeypatch, export):
    monkeypatch.setenv("LS_TRAJEVAL_RETRIES", "0")  # the page fails for good: no backoff to wait through
    fake = many_tasks()
    answer = fake._request

    def fail_on_the_third_page(path, method, params):
        if len(fake.pages) == 2:
            raise httpx.ConnectError("refused")
        return answer(path, method, params)

    fake._client_wrapper.httpx_client.request = fail_on_the_third_page
    out = tmp_path / "out.jsonl"
    out.write_text("an earlier export\n")
    with pytest.raises(StudioError, match="cannot reach Label Studio"):
        export(fake, 7, out, page_size=5)
    assert out.read_text() == "an earlier export\n" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_the_export_asks_only_for_the_fields_the_record_reads():
    """build_record reads nothing of a task, an annotation or the predictions it compares the annotation with
    (provenance) but TASK_FIELDS, ANNOTATION_FIELDS and PREDICTION_FIELDS (what the export asks Label Studio for):
    a key read there must be named there too."""
    class Reads(dict):
        def __init__(self, data, seen):
            super().__init__(data)
            self.seen = seen

        def get(self, key, default=None):
            self.seen.add(key)
            return super().get(key, default)

        def __getitem__(self, key):
            self.seen.add(key)
            return super().__getitem__(key)

    stored = many_tasks().stored
    for task in (stored[0], stored[1]):
        for item in task["annotations"] + task["predictions"]:
            is_prediction = item in task["predictions"]
            task_reads, item_reads, prediction_reads = set(), set(), set()
            read = Reads({**task, "predictions": [Reads(p, prediction_reads) for p in task["predictions"]]},
                         task_reads)
            record, _ = build_record(read, Reads(item, item_reads), CONFIG, users={1: USERS[0]},
                                     annotator="judge-1" if is_prediction else None, prediction=is_prediction,
                                     model_version="judge-1")
            assert task_reads <= set(TASK_FIELDS) and item_reads <= set(ANNOTATION_FIELDS)
            assert prediction_reads <= set(PREDICTION_FIELDS)
            assert {"data", "id"} <= task_reads and {"result", "completed_by", "created_at"} <= item_reads
            if not is_prediction:  # the annotation's provenance: its parent, the judge's prediction, was read
                assert {"predictions"} <= task_reads and {"id", "result", "model_version"} <= prediction_reads
                assert record["error_localization"][1]["suggested_by"] == "judge-1"


def test_gold_taken_trace_by_trace_is_the_gold_of_all_traces_at_once(tmp_path):
    """The export keeps only one trace's records in memory for the majority gold: the lines are what the analysis
    makes of every record at once (group_by_trace + build_gold)."""
    from ls_trajeval.analysis.gold import build_gold, gold_line
    from ls_trajeval.analysis.settings import from_config
    from ls_trajeval.analysis.trace_groups import group_by_trace
    from ls_trajeval.flows.export import export_gold, read_back

    settings = from_config(CONFIG)
    records = [read_back(r, CONFIG) for r in iter_records(many_tasks(), 7)]
    expected = [gold_line(g, settings) for g in build_gold(group_by_trace(records).items(), settings)]
    assert {g["gold"]["method"] for g in expected} == {"single", "majority"}  # tasks 0, 3, 9: two annotators differ
    summary = export_gold(many_tasks(), 7, tmp_path / "gold.jsonl", review=[], page_size=5)
    assert lines(tmp_path / "gold.jsonl") == expected
    assert summary.written == 12 and summary.methods == {"single": 9, "majority": 3}
