"""Existing labels (Who&When, TRAIL, a previous export) as predictions in the project's layout (the
import into a real Label Studio is tests/studio/test_prelabels.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import Trace
from ls_trajeval.flows.convert import convert_inputs
from ls_trajeval.flows.prelabels import Prelabeler, from_metadata, read_export

TRAIL = Path(__file__).resolve().parents[1] / "fixtures" / "converters" / "openinference" / "trail_trace.json"
MAPPED = cfg.loads((label_configs.path("trajectory_eval")).read_text() + """
prelabels:
  type_map:
    Tool-related: wrong_arguments
  severity_map:
    LOW: minor
  default_type: logical_error
  default_severity: major
""")


def traces(path) -> list[Trace]:
    return [t for t in convert_inputs([path]) if isinstance(t, Trace)]


def test_who_and_when_mistake_step_becomes_the_marked_step(fixtures_dir):
    path = fixtures_dir / "real" / "who_and_when" / "hand_crafted_1.json"
    record = json.loads(path.read_text())
    (trace,) = traces(path)
    (pre,) = from_metadata(trace, MAPPED)
    wrong = [s for s in pre.labels.steps if s.correctness == "incorrect"]
    assert [s.step_index for s in wrong] == [int(record["mistake_step"])]
    (s,) = wrong
    assert (s.error_type, s.error_category, s.severity) == ("logical_error", "reasoning", "major")
    assert record["mistake_agent"] in s.rationale and record["mistake_reason"] in s.rationale
    # without a default type the annotator chooses, and the summary says so
    (bare,) = from_metadata(trace, cfg.load(label_configs.path("trajectory_eval")))
    assert [x.error_type for x in bare.labels.steps if x.correctness == "incorrect"] == [None]
    assert any("default_type" in p for p in bare.problems)


def test_trail_errors_map_through_the_table_and_unmapped_ones_are_reported():
    (trace,) = traces(TRAIL)
    (pre,) = from_metadata(trace, MAPPED)
    wrong = {s.step_index: s for s in pre.labels.steps if s.correctness == "incorrect"}
    # the fixture: Tool-related/HIGH on span s-tool2 (steps 4, 5), Goal Deviation/LOW on s-llm1 (step 0)
    assert sorted(wrong) == [0, 4]
    assert (wrong[4].error_type, wrong[4].severity) == ("wrong_arguments", "critical")
    assert wrong[0].severity == "minor" and wrong[0].error_type == "logical_error"  # default type
    assert any("unmapped category 'Goal Deviation'" in p for p in pre.problems)
    assert not any("Tool-related" in p for p in pre.problems)


def test_previous_export_lines_become_predictions(tmp_path):
    line = {"trace_id": "t1", "scheme": "error_localization", "annotator": "ann@x", "overall_success": "partial",
            "error_localization": [
                {"step_index": 0, "correctness": "correct"},
                {"step_index": 1, "correctness": "incorrect", "error_category": "foreign", "error_type": "Tool-related",
                 "severity": "LOW", "rationale": "r <b>"},
                {"step_index": 2, "correctness": "incorrect", "error_type": "nope", "severity": "major"}]}
    p = tmp_path / "prev.jsonl"
    p.write_text(json.dumps(line) + "\n{bad\n" + json.dumps({"trace_id": "x"}) + "\n")
    out = list(read_export(p, MAPPED))
    (tid, pre), bad1, bad2 = out
    assert tid == "t1" and pre.source == "export:ann@x"
    assert [(s.error_type, s.severity) for s in pre.labels.steps] == [
        (None, None), ("wrong_arguments", "minor"), ("logical_error", "major")]
    assert pre.labels.whole_trace == {"overall_success": "partial"}
    assert any("unmapped type 'nope'" in x for x in pre.problems)
    assert str(bad1).endswith(":2: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)")
    assert ":3: scheme: not a trajectory_eval export line" in str(bad2)


@pytest.mark.parametrize("layout", ["transcript", "paged"])
def test_prediction_decodes_back_to_the_prelabels(layout):
    (trace,) = traces(TRAIL)
    data = task_data(trace, MAPPED)
    (pred,) = Prelabeler(MAPPED, layout)(trace, data)
    assert pred["model_version"] == "prelabels-trail"
    assert pred["score"] == 100 - 10 - 1
    decoded = results.decode(pred["result"], MAPPED, len(trace.steps))
    assert [s.correctness for s in decoded.steps] == ["incorrect", "correct", "correct", "correct", "incorrect",
                                                      "correct"]
    assert all(r.get("from_name") != "error_localization_reviewed" for r in pred["result"])


def test_for_the_workbench_the_prelabels_are_suggestions_or_shown_beside_a_blank_trace():
    (trace,) = traces(TRAIL)
    data = task_data(trace, MAPPED)
    (pred,) = Prelabeler(MAPPED, "transcript", suggested=True)(trace, data)
    marks = [r for r in pred["result"] if r["from_name"] == "error_localization"]
    assert [(r["value"]["start"], r["value"]["paragraphlabels"], r["correctness"]) for r in marks] == [
        ("0", ["suggested"], "incorrect"), ("4", ["suggested"], "incorrect")]
    assert "te_suggested" not in data  # annotators start from them
    beside = cfg.load_dict({**MAPPED.to_dict(), "suggestions": {"prelabel": False}})
    data = task_data(trace, beside)
    Prelabeler(beside, "transcript", suggested=True)(trace, data)
    (item,) = data["te_suggested"]
    assert item["html"].count("te-beside-line") == 2 and "prelabels-trail" in item["html"]


# ---------------------------------------------------------------- the shipped presets, out of the box

def _marks(pre):
    return {s.step_index: s for s in pre.labels.steps if s.correctness != "correct"}


def test_trail_labels_onto_the_trail_preset():
    (trace,) = traces(TRAIL)
    (pre,) = from_metadata(trace, cfg.load(label_configs.path("trail")))
    wrong = _marks(pre)
    # trail_trace.labels.json: Tool-related/HIGH on s-tool2 (first step 4), Goal Deviation/LOW on s-llm1 (step 0)
    assert (wrong[4].error_category, wrong[4].error_type, wrong[4].severity) == (
        "reasoning_errors", "tool_related_hallucination", "high")
    assert (wrong[0].error_category, wrong[0].error_type, wrong[0].severity) == (
        "planning_and_coordination_errors", "goal_deviation", "low")
    assert pre.problems == []


def test_trail_labels_onto_the_mast_preset():
    (trace,) = traces(TRAIL)
    (pre,) = from_metadata(trace, cfg.load(label_configs.path("mast")))
    wrong = _marks(pre)
    assert wrong[0].error_type == "task_derailment" and wrong[0].severity == "minor"
    # a fabricated tool output has no MAST mode: the step is marked, the type left to the annotator, and said so
    assert wrong[4].error_type is None and wrong[4].severity == "critical"
    assert pre.problems == ["unmapped category 'Tool-related': add it to prelabels.type_map"]


@pytest.mark.parametrize("name, agent, step", [("hand_crafted_1.json", "web_surfer", 12),
                                               ("hand_crafted_12.json", "assistant", 16)])
def test_who_and_when_onto_its_preset(fixtures_dir, name, agent, step):
    path = fixtures_dir / "real" / "who_and_when" / name
    record = json.loads(path.read_text())
    assert int(record["mistake_step"]) == step  # read from the file, not assumed
    (trace,) = traces(path)
    (pre,) = from_metadata(trace, cfg.load(label_configs.path("who_and_when")))
    (mark,) = _marks(pre).values()
    assert (mark.step_index, mark.correctness, mark.error_category, mark.error_type, mark.severity) == (
        step, "decisive_error", "responsible_agent", agent, "decisive")
    assert record["mistake_reason"] in mark.rationale and pre.problems == []


def test_who_and_when_onto_mast_marks_the_step_and_leaves_the_mode(fixtures_dir):
    path = fixtures_dir / "real" / "who_and_when" / "hand_crafted_1.json"
    (trace,) = traces(path)
    (pre,) = from_metadata(trace, cfg.load(label_configs.path("mast")))
    (mark,) = _marks(pre).values()
    assert mark.step_index == 12 and mark.error_type is None and mark.severity == "major"
    assert any("names no error type" in p for p in pre.problems)
