"""Existing labels (Who&When, TRAIL, a previous export) as predictions in the project's layout (the
import into a real Label Studio is tests/studio/test_prelabels.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results
from ls_trajeval.core.labels import Span
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import Step, Trace
from ls_trajeval.flows.convert import convert_inputs
from ls_trajeval.flows.prelabels import Prelabeler, find_evidence, from_metadata, read_export

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
    # the decisive step is the root cause: an origin, caused by no marked step
    assert (s.role, s.caused_by, pre.root_cause_step) == ("origin", (), int(record["mistake_step"]))
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
    # the fixture: Tool-related/HIGH on span s-tool2 (steps 4, 5) with the evidence "ZeroDivisionError", which is
    # in step 5's content; Goal Deviation/LOW on s-llm1 (step 0)
    assert sorted(wrong) == [0, 5]
    assert (wrong[5].error_type, wrong[5].severity) == ("wrong_arguments", "critical")
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
    assert str(bad1).endswith(
        ":2: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)")
    assert ":3: scheme: not a trajectory_eval export line" in str(bad2)


@pytest.mark.parametrize("layout", ["transcript", "paged"])
def test_prediction_decodes_back_to_the_prelabels(layout):
    (trace,) = traces(TRAIL)
    data = task_data(trace, MAPPED)
    (pred,) = Prelabeler(MAPPED, layout)(trace, data)
    assert pred["model_version"] == "prelabels-trail"
    assert pred["score"] == 100 - 10 - 1
    decoded = results.decode(pred["result"], MAPPED, len(trace.steps))
    assert [s.correctness for s in decoded.steps] == ["incorrect", "correct", "correct", "correct", "correct",
                                                      "incorrect"]
    assert all(r.get("from_name") != "error_localization_reviewed" for r in pred["result"])


def test_for_the_workbench_the_prelabels_are_suggestions_or_shown_beside_a_blank_trace():
    (trace,) = traces(TRAIL)
    data = task_data(trace, MAPPED)
    (pred,) = Prelabeler(MAPPED, "transcript", suggested=True)(trace, data)
    marks = [r for r in pred["result"] if r["from_name"] == "error_localization"]
    assert [(r["value"]["start"], r["value"]["paragraphlabels"], r["correctness"]) for r in marks] == [
        ("0", ["suggested"], "incorrect"), ("5", ["suggested"], "incorrect")]  # TRAIL evidence in step 5
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
    # trail_trace.labels.json: Tool-related/HIGH on s-tool2 (evidence in step 5), Goal Deviation/LOW on s-llm1 (step 0)
    assert (wrong[5].error_category, wrong[5].error_type, wrong[5].severity) == (
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
    assert wrong[5].error_type is None and wrong[5].severity == "critical"
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


# ---------------------------------------------------------------- evidence, roles and root causes

def test_trail_evidence_becomes_spans_in_the_steps_content():
    (trace,) = traces(TRAIL)
    (pre,) = from_metadata(trace, cfg.load(label_configs.path("trail")))
    wrong = _marks(pre)
    # step 0's content is "Thought: search first.", step 5's "ZeroDivisionError: division by zero" (the fixture)
    assert wrong[0].evidence == (Span(9, 21, "search first"),)
    assert wrong[5].evidence == (Span(0, 17, "ZeroDivisionError"),)
    for s in wrong.values():
        (span,) = s.evidence
        assert trace.steps[s.step_index].content[span.start:span.end] == span.text
    assert [s.role for s in wrong.values()] == ["origin", "origin"] and pre.root_cause_step == 0


def _trail_trace(content: str, evidence) -> Trace:
    steps = [Step.of("thought", "plan"), Step.of("action", content), Step.of("observation", "ok 😀 done")]
    return Trace("t", "task", steps, {"errors": [{"category": "Tool-related", "location": "s1", "impact": "HIGH",
                                                 "evidence": evidence}], "error_steps": {"s1": [1, 2]}})


@pytest.mark.parametrize("content, evidence, step, span", [
    ("call   Search(\n  q)", "Search( q)", 1, Span(7, 19, "Search(\n  q)")),  # white space runs and case free
    ("Füße ✓ <b>x</b>", "<B>X</b>", 1, Span(7, 15, "<b>x</b>")),  # code points, not bytes
    ("call", "😀 done", 2, Span(3, 9, "😀 done")),  # in the span's second step
])
def test_evidence_is_found_in_the_spans_steps(content, evidence, step, span):
    (pre,) = from_metadata(_trail_trace(content, evidence), MAPPED)
    (mark,) = _marks(pre).values()
    assert (mark.step_index, mark.evidence) == (step, (span,)) and pre.problems == []


def test_evidence_not_found_is_a_whole_step_mark_and_said():
    (pre,) = from_metadata(_trail_trace("call", "not there"), MAPPED)
    (mark,) = _marks(pre).values()
    assert (mark.step_index, mark.evidence) == (1, ())
    assert pre.problems == ["error at 's1': evidence 'not there' not found in #2, #3; whole-step mark on #2"]


def test_find_evidence():
    assert find_evidence("a  b", "a b") == Span(0, 4, "a  b")
    assert find_evidence("abc", "") is None and find_evidence("abc", "   ") is None


def test_previous_export_keeps_evidence_links_and_corrections(tmp_path):
    steps = [{"step_index": 0, "correctness": "incorrect", "error_type": "wrong_tool", "severity": "major",
              "step_text": "grep x", "evidence": [{"start": 5, "end": 6, "text": "x"}], "correction": "grep y"},
             {"step_index": 1, "correctness": "incorrect", "error_type": "wrong_tool", "severity": "minor",
              "caused_by": [0]}]
    p = tmp_path / "prev.jsonl"
    p.write_text(json.dumps({"trace_id": "t1", "scheme": "error_localization", "error_localization": steps}) + "\n")
    ((_, pre),) = list(read_export(p, MAPPED))
    a, b = pre.labels.steps
    assert (a.evidence, a.correction, a.role) == ((Span(5, 6, "x"),), "grep y", "origin")
    assert (b.caused_by, b.role, pre.root_cause_step) == ((0,), "propagated", 0)


def test_trail_evidence_opens_as_spans_in_the_workbench():
    # the prediction's marks cover the evidence, not the whole step: decoded through the cards' texts, the spans
    # are the ones read from the TRAIL labels (above, by hand: "ZeroDivisionError" at 0..17 of step 5's content)
    (trace,) = traces(TRAIL)
    data = task_data(trace, MAPPED)
    (pred,) = Prelabeler(MAPPED, "transcript")(trace, data)
    marks = {r["value"]["start"]: r["value"] for r in pred["result"] if r["from_name"] == "error_localization"}
    card = data["te_transcript"][5]["text"]
    assert card[marks["5"]["startOffset"]:marks["5"]["endOffset"]] == "ZeroDivisionError"  # BMP text: units = points
    got = results.decode(pred["result"], MAPPED, len(trace.steps), prediction=True,
                         texts=results.step_texts(data, MAPPED))
    assert got.steps[5].evidence == (Span(0, 17, "ZeroDivisionError"),)
