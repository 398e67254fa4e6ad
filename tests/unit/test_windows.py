"""Long traces worked in windows (core/windows.py, core/tasks.window_tasks, core/records.build_windowed_record): how a
trace is cut, what a window task holds and shows, and that an annotator's windows, put back together, make the record
the whole trace's task would have made with the same marks.

The trace: 250 steps in windows of at most 100, so three windows of 84, 83 and 83 steps (#1–#84, #85–#167,
#168–#250). The marks (step index: severity), weights from label_configs/trajectory_eval.yaml (minor 1, major 5,
critical 10, from 100): 10 minor, 90 major, 95 critical, 200 major: final score 100 - 1 - 5 - 10 - 5 = 79, four
errors, the first at index 10, the worst critical.
"""
from __future__ import annotations

import re

import pytest
from studio.uishapes import NASTY, ui_marks

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results
from ls_trajeval.core.fields import HEADER, N_STEPS, TRANSCRIPT, WINDOW
from ls_trajeval.core.labels import StepLabel, TraceLabels
from ls_trajeval.core.records import build_record, build_windowed_record
from ls_trajeval.core.tasks import task_data, window_tasks
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.core.windows import Window, incomplete, labels_in, placed, plan, split, window_of

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
N = 250
TRACE = parse_trace({"trace_id": "long-1", "task": f"a long task {NASTY}", "trace": [
    {"type": "action", "content": "run", "action_input": {"command": f"step {i}"}} if i % 3 == 1 else
    {"type": "observation" if i % 3 == 2 else "thought", "content": f"step {i}" + (f" {NASTY}" if i == 80 else "")}
    for i in range(N)]}, source="test")
MARKS = {10: ("reasoning", "logical_error", "minor", "r10"), 90: ("action", "wrong_tool", "major", "r90"),
         95: ("action", "wrong_arguments", "critical", "r95"), 200: ("action", "wrong_tool", "major", "r200")}
BOUNDS = [(0, 84), (84, 167), (167, 250)]


def test_a_trace_is_cut_into_even_windows():
    assert [(w.start, w.end) for w in plan(N, 100)] == BOUNDS
    assert [w.size for w in plan(1000, 100)] == [100] * 10
    assert [(w.index, w.count, w.total) for w in plan(N, 100)] == [(0, 3, N), (1, 3, N), (2, 3, N)]
    assert plan(100, 100) == [Window(0, 1, 0, 100, 100)] and plan(0, 100) == []
    with pytest.raises(ValueError):
        plan(10, 0)
    parts = split(TRACE, 100)
    assert [len(t.steps) for _, t in parts] == [84, 83, 83]
    assert parts[1][1].steps[0] is TRACE.steps[84] and parts[1][1].trace_id == "long-1"


@pytest.mark.parametrize("raw, expected", [
    ({"index": 1, "count": 3, "start": 84, "end": 167, "total": 250}, Window(1, 3, 84, 167, 250)),
    ({"index": 3, "count": 3, "start": 84, "end": 167, "total": 250}, None),  # index past the count
    ({"index": 1, "count": 3, "start": 84, "end": 84, "total": 250}, None),  # empty
    ({"index": 1, "count": 3, "start": 84, "end": 300, "total": 250}, None),  # past the trace
    ({"index": True, "count": 3, "start": 84, "end": 167, "total": 250}, None),
    ({"index": 1, "count": 3, "start": "84", "end": 167, "total": 250}, None),
    ("part 2", None),
])
def test_a_window_field_that_does_not_read_as_one_makes_a_task_of_a_whole_trace(raw, expected):
    assert window_of({WINDOW: raw}) == expected
    assert window_of({}) is None


def test_what_keeps_windows_from_being_the_whole_trace():
    ws = plan(N, 100)
    assert incomplete(ws) is None
    assert incomplete([ws[0], ws[2]]) == "window 2 of 3 missing"
    assert incomplete([ws[0], ws[1], ws[1], ws[2]]) == "a window is there more than once"
    assert "different imports" in incomplete([ws[0], plan(N, 50)[1], ws[2]])
    assert incomplete([]) == "no window"


def test_a_window_task_holds_its_steps_and_numbers_them_as_in_the_whole_trace():
    tasks = window_tasks(TRACE, CONFIG, "paged", 100)
    assert [w.to_json() for w, _ in tasks] == [{"index": i, "count": 3, "start": s, "end": e, "total": N}
                                               for i, (s, e) in enumerate(BOUNDS)]
    window, data = tasks[1]
    assert data["trace_id"] == "long-1" and data["task"] == TRACE.task and data[N_STEPS] == 83
    assert data["trace"] == TRACE.steps[84:167] and data[WINDOW] == window.to_json()
    assert len(data["te_curve"]) == 83
    assert data[TRANSCRIPT][0]["text"].startswith("#85 ") and data[TRANSCRIPT][-1]["text"].startswith("#167 ")
    assert "step 85 of 250" in data["te_pages"][0][0]["html"]
    header = data[HEADER]
    assert "Steps #85–#167 of 250" in header and "part 2 of 3" in header
    # the 84 steps before it, the last three whole: hostile text (step 80) as text
    assert header.count('class="te-before-step"') == 84
    assert "<script>" not in header and "&lt;script&gt;alert" in header
    # the workbench's style addresses the task's own phrases: 0 to 82
    assert re.findall(r'phrase:(\d+)', header) == [str(i) for i in range(83)]
    # a trace that fits is one task with no window
    (none, whole), = window_tasks(split(TRACE, 100)[0][1], CONFIG, "transcript", 100)
    assert none is None and WINDOW not in whole and whole[N_STEPS] == 84
    first = tasks[0][1][HEADER]
    assert "Steps #1–#84 of 250" in first and "te-before" not in first


def _parts(layout: str, extra: dict[int, list[dict]] | None = None) -> list[tuple[dict, dict]]:
    """Each window's task and one annotator's annotation marking MARKS' steps of it, in the UI's shapes."""
    parts = []
    for window, data in window_tasks(TRACE, CONFIG, layout, 100):
        local = {g - window.start: m for g, m in MARKS.items() if window.start <= g < window.end}
        result = ui_marks(layout, data[TRANSCRIPT], local) + (extra or {}).get(window.index, [])
        parts.append(({"id": 100 + window.index, "project": 7, "data": data},
                      {"id": 500 + window.index, "completed_by": 3, "created_at": f"2026-12-0{window.index + 1}",
                       "updated_at": f"2026-12-1{window.index + 1}", "lead_time": 10.0 * (window.index + 1),
                       "result": result}))
    return parts


@pytest.mark.parametrize("layout", ["transcript", "paged"])
def test_an_annotators_windows_make_the_record_of_the_whole_trace(layout):
    merged, warnings = build_windowed_record(_parts(layout), CONFIG, layout=layout, users={3: {"email": "a@x"}})
    assert warnings == []
    whole_data = task_data(TRACE, CONFIG, layout)
    whole, _ = build_record({"id": 1, "project": 7, "data": whole_data},
                            {"id": 9, "completed_by": 3, "result": ui_marks(layout, whole_data[TRANSCRIPT], MARKS)},
                            CONFIG, layout=layout, users={3: {"email": "a@x"}})
    assert merged["error_localization"] == whole["error_localization"]
    for key in ("trace_id", "task", "annotator", "n_steps", "running_score", "final_score", "n_errors",
                "first_error_step", "worst_severity", "root_cause_step", "overall_success"):
        assert merged[key] == whole[key], key
    # by hand (see the module docstring)
    assert (merged["final_score"], merged["n_errors"], merged["first_error_step"]) == (79, 4, 10)
    assert merged["worst_severity"] == "critical" and merged["n_steps"] == N
    wrong = {s["step_index"]: (s["error_type"], s["severity"]) for s in merged["error_localization"]
             if s["correctness"] == "incorrect"}
    assert wrong == {g: (m[1], m[2]) for g, m in MARKS.items()}
    assert merged["error_localization"][84]["step_text"] == "step 84"
    # where it came from: the first window's task and annotation, each window listed
    assert (merged["task_id"], merged["annotation_id"], merged["annotator"]) == (100, 500, "a@x")
    assert merged["windows"] == [{"start": s, "end": e, "task_id": 100 + i, "annotation_id": 500 + i}
                                 for i, (s, e) in enumerate(BOUNDS)]
    assert (merged["created_at"], merged["updated_at"], merged["lead_time"]) == ("2026-12-01", "2026-12-13", 60.0)


def _caused_by(step: int, text: str) -> dict:
    return {"id": f"cb{step}", "from_name": f"error_localization_caused_by_{step}", "to_name": "te_task",
            "type": "textarea", "origin": "manual", "value": {"text": [text]}}


def test_a_cause_typed_in_a_paged_window_is_the_whole_traces_step_number():
    """Step 95 (window 2, its step 11) typed "#91": caused by 90, in the same window; step 200 (window 3, its step 33)
    typed "#11": caused by 10, two windows back. 10 and 90 have no cause: origins; the root cause is the earliest."""
    merged, warnings = build_windowed_record(_parts("paged", {1: [_caused_by(11, "#91")], 2: [_caused_by(33, "#11")]}),
                                             CONFIG, layout="paged")
    assert warnings == []
    steps = merged["error_localization"]
    assert (steps[95]["caused_by"], steps[95]["role"]) == ([90], "propagated")
    assert (steps[200]["caused_by"], steps[200]["role"]) == ([10], "propagated")
    assert steps[10]["role"] == steps[90]["role"] == "origin" and merged["root_cause_step"] == 10


def test_windows_that_differ_on_the_outcome_keep_the_latest_with_a_warning():
    parts = _parts("transcript")
    last = parts[2][1]
    last["result"] = [r for r in last["result"] if r["from_name"] != "overall_success"] + [
        {"id": "out", "from_name": "overall_success", "to_name": "te_task", "type": "choices", "origin": "manual",
         "value": {"choices": ["success"]}}]
    merged, warnings = build_windowed_record(parts, CONFIG)
    assert merged["overall_success"] == "success"
    assert len(warnings) == 1 and "task 102 annotation 502" in warnings[0] and "'failure'" in warnings[0]


def test_a_task_that_is_not_a_window_cannot_be_merged():
    data = task_data(TRACE, CONFIG)
    with pytest.raises(ValueError, match="task 1 is not a window"):
        build_windowed_record([({"id": 1, "data": data}, {"id": 2, "result": []})], CONFIG)


def test_labels_move_between_a_window_and_the_whole_trace():
    window = plan(N, 100)[1]
    labels = TraceLabels([StepLabel(i, "incorrect" if i in (10, 90, 95) else "correct",
                                    caused_by=(10, 90) if i == 95 else ()) for i in range(N)], {"overall_success": "x"})
    inside = labels_in(labels, window)
    assert [s.step_index for s in inside.steps] == list(range(83))
    assert inside.steps[95 - 84].caused_by == (90 - 84,)  # the link to step 10, before the window, is left out
    assert inside.whole_trace == {"overall_success": "x"}
    back = placed(inside.steps[11], window)
    assert (back.step_index, back.caused_by) == (95, (90,))


def test_the_window_size_is_a_config_key_that_travels_with_the_project():
    raw = CONFIG.to_dict()
    assert "window_steps" not in raw["annotator_config"]  # a config without it is written as before
    raw["annotator_config"]["window_steps"] = 100
    windowed = cfg.load_dict(raw)
    assert windowed.window_steps == 100 and cfg.load_dict(windowed.to_dict()) == windowed
    for bad in (-1, "100", True, 2.5):
        raw["annotator_config"]["window_steps"] = bad
        with pytest.raises(cfg.ConfigError, match=r"annotator_config\.window_steps: expected a number of steps"):
            cfg.load_dict(raw)


def test_the_backends_live_score_and_score_columns_number_a_windows_steps_as_the_whole_trace():
    """Window 2 (steps #85–#167) with 90 (major) and 95 (critical) marked: the live score lists #91 and #96 and
    counts those two (100 - 5 - 10 = 85); the Data Manager's first_error_step is #91."""
    from ls_trajeval.ml.model import Predictor
    from ls_trajeval.ml.writeback import task_fields

    task, annotation = _parts("transcript")[1]
    labels = results.decode(annotation["result"], CONFIG, 83)
    text = Predictor(CONFIG).live_score(task, labels)["result"][0]["value"]["text"][0]
    lines = text.splitlines()
    assert lines[0].startswith("Running score now: 85 of 100 (the marks of steps #85–#167")
    assert [line.split(" · ")[0] for line in lines[1:]] == ["#91", "#96"]
    fields = task_fields(CONFIG, task["data"], [annotation])
    assert (fields["running_score"], fields["first_error_step"], fields["n_errors"]) == (85, 91, 2)
