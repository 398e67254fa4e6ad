"""Decoding Label Studio results into per-step labels, for both layouts, in the shapes the UI saves."""
import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results
from ls_trajeval.core.labels import StepLabel, TraceLabels

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
POTATO = cfg.loads("""
annotation_schemes:
  - annotation_type: trajectory_eval
    name: step_errors
    correctness_options: [correct, incorrect, partially_correct]
    error_types: [{name: reasoning, subtypes: [logical_error]}, {name: action, subtypes: [wrong_tool]}]
  - annotation_type: radio
    name: overall_success
    labels: [success, failure]
""")


def region(rid, start, end, from_name, rtype, **value):
    return {"id": rid, "from_name": from_name, "to_name": "te_trace", "type": rtype, "origin": "manual",
            "value": {"start": str(start), "end": str(end), "startOffset": 0, "endOffset": 14, **value}}


def test_workbench_ui_shapes_decode():
    # as the workbench saves them (browser-checked): the severity is a second labels result on the mark,
    # the type a per-region radio choice saved by its alias; start/end are strings, results share the id
    result = [
        region("r1", 2, 2, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
        region("r1", 2, 2, "error_localization_severity", "paragraphlabels", paragraphlabels=["major"]),
        region("r1", 2, 2, "error_localization_type", "choices", choices=["incorrect_assumption"]),
        region("r1", 2, 2, "error_localization_rationale", "textarea", text=["assumes the file"]),
        region("r2", 4, 4, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
        region("r2", 4, 4, "error_localization_type", "choices", choices=["Wrong Tool"]),
        {"id": "live", "from_name": "error_localization_live_score", "to_name": "te_task", "type": "textarea",
         "value": {"text": ["Running score: 95 of 100"]}},
    ]
    got = results.decode(result, CONFIG, 6)
    assert got.warnings == []
    assert got.steps[2] == StepLabel(2, "incorrect", "reasoning", "incorrect_assumption", "major", "assumes the file")
    assert got.steps[4] == StepLabel(4, "incorrect", "action", "wrong_tool", None, None)  # no severity chosen yet
    assert [s.correctness for s in got.steps] == ["correct", "correct", "incorrect", "correct", "incorrect", "correct"]


def test_a_mark_made_with_a_severity_alone_is_a_wrong_step():
    # pressing a severity key with no mark selected, then marking, gives a region with only the severity label
    result = [region("r", 3, 3, "error_localization_severity", "paragraphlabels", paragraphlabels=["critical"])]
    got = results.decode(result, CONFIG, 5)
    assert got.steps[3] == StepLabel(3, "incorrect", None, None, "critical", None)
    # a per-region choice left over from a deleted mark is still ignored
    assert results.decode([region("x", 1, 1, "error_localization_type", "choices", choices=["wrong_tool"])],
                          CONFIG, 3).steps[1] == StepLabel(1, "correct")


def test_transcript_before_workbench_shapes_decode():
    # transcript projects made before the workbench: the type a Taxonomy path, the severity a Choices
    result = [
        region("r1", 2, 2, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
        region("r1", 2, 2, "error_localization_type", "taxonomy", taxonomy=[["reasoning", "incorrect_assumption"]]),
        region("r1", 2, 2, "error_localization_severity", "choices", choices=["major"]),
        region("r1", 2, 2, "error_localization_rationale", "textarea", text=["assumes the file", "exists"]),
        region("r2", 4, 4, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
        region("r2", 4, 4, "error_localization_type", "taxonomy", taxonomy=[["Action Error", "Wrong Tool"]]),
        region("r2", 4, 4, "error_localization_severity", "choices", choices=["Critical (−10)"]),
        {"id": "w", "from_name": "overall_success", "to_name": "te_task", "type": "choices",
         "value": {"choices": ["failure"]}},
    ]
    got = results.decode(result, CONFIG, 6)
    assert got.warnings == []
    assert got.steps[2] == StepLabel(2, "incorrect", "reasoning", "incorrect_assumption", "major",
                                     "assumes the file\nexists")
    assert got.steps[4] == StepLabel(4, "incorrect", "action", "wrong_tool", "critical", None)
    assert [s.correctness for s in got.steps] == ["correct", "correct", "incorrect", "correct", "incorrect", "correct"]
    assert got.whole_trace == {"overall_success": "failure"}


def test_paged_ui_shapes_decode_and_details_of_a_correct_step_are_dropped():
    result = [{"id": f"c{i}", "from_name": f"error_localization_correctness_{i}", "to_name": "te_task",
               "type": "choices", "value": {"choices": ["incorrect" if i == 1 else "correct"]}} for i in range(3)]
    result += [
        {"id": "t1", "from_name": "error_localization_type_1", "type": "taxonomy",
         "value": {"taxonomy": [["perception", "missed_element"]]}},
        {"id": "s1", "from_name": "error_localization_severity_1", "type": "choices", "value": {"choices": ["minor"]}},
        {"id": "t2", "from_name": "error_localization_type_2", "type": "taxonomy",
         "value": {"taxonomy": [["perception", "missed_element"]]}},
    ]
    got = results.decode(result, CONFIG, 3)
    assert got.steps == [StepLabel(0, "correct"), StepLabel(1, "incorrect", "perception", "missed_element", "minor"),
                         StepLabel(2, "correct")]
    assert got.whole_trace == {"overall_success": None}


def test_unmarked_steps_take_the_default_and_empty_result_is_all_correct():
    got = results.decode([], CONFIG, 4)
    assert [s.correctness for s in got.steps] == ["correct"] * 4


def test_multi_step_region_and_overlaps_keep_the_more_severe():
    result = [
        region("a", 1, 3, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
        region("a", 1, 3, "error_localization_severity", "choices", choices=["minor"]),
        region("b", 2, 2, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
        region("b", 2, 2, "error_localization_severity", "choices", choices=["critical"]),
    ]
    got = results.decode(result, CONFIG, 5)
    assert [s.severity for s in got.steps] == [None, "minor", "critical", "minor", None]
    assert any("more than one region" in w for w in got.warnings)


def test_problems_become_warnings_not_exceptions():
    result = [
        region("a", 9, 9, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
        region("b", 0, 0, "error_localization", "paragraphlabels", paragraphlabels=["weird"]),
        region("c", 1, 1, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
        region("c", 1, 1, "error_localization_type", "taxonomy", taxonomy=[["x", "y"]]),
        region("c", 1, 1, "error_localization_severity", "choices", choices=["huge"]),
        {"from_name": "error_localization_correctness_7", "value": {"choices": ["incorrect"]}},
        "not a dict", {"from_name": None}, {"from_name": "error_localization", "value": "x"},
    ]
    got = results.decode(result, CONFIG, 2)
    assert got.steps[1] == StepLabel(1, "incorrect")
    assert len(got.warnings) == 5, got.warnings


def test_category_only_taxonomy_keeps_the_category():
    result = [region("a", 0, 0, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
              region("a", 0, 0, "error_localization_type", "taxonomy", taxonomy=[["communication"]])]
    assert results.decode(result, CONFIG, 1).steps[0].error_category == "communication"


@pytest.mark.parametrize("config", [CONFIG, POTATO], ids=["guide", "potato"])
def test_encode_decode_is_identity_in_both_layouts(config):
    scheme = config.trajectory
    err = scheme.error_labels[-1]
    t = scheme.types[-1]
    labels = TraceLabels([
        StepLabel(0, "correct"),
        StepLabel(1, err, t.category, t.name, scheme.severities[1].name, "why <b>&amp;</b> \"x\" 'y' {{idx}} $task"),
        StepLabel(2, "correct"),
        StepLabel(3, scheme.error_labels[0], scheme.types[0].category, scheme.types[0].name,
                  scheme.severities[0].name, None),
    ], {"overall_success": "failure"})
    transcript = [{"author": "Thought", "text": "x" * (i + 3)} for i in range(4)]
    decoded = {}
    for layout in ("transcript", "paged"):
        encoded = results.encode(labels, config, layout, transcript)
        decoded[layout] = results.decode(encoded, config, 4)
        assert decoded[layout].steps == labels.steps
        assert decoded[layout].whole_trace == labels.whole_trace
    assert decoded["transcript"].steps == decoded["paged"].steps


def test_a_suggestion_carries_its_confidence_on_its_region_and_its_judge_on_the_mark():
    labels = TraceLabels([
        StepLabel(0, "correct", confidence=0.7),
        StepLabel(1, "incorrect", "action", "wrong_tool", "major", "why", confidence=0.25, suggested_by="judge-a"),
        StepLabel(2, "incorrect", "action", "wrong_tool", None, None),
    ])
    transcript = [{"author": "Thought", "text": "abc"}] * 3
    out = results.encode(labels, CONFIG, "transcript", transcript, origin="prediction", confirm_review=False)
    region1 = [r for r in out if r["value"]["start"] == "1"]
    assert len(region1) == 4 and {r["score"] for r in region1} == {0.25}
    assert [r["from_name"] for r in region1 if "judge" in r] == ["error_localization"]
    assert region1[0]["judge"] == "judge-a"
    # a label without a confidence (a person's, a rule's) carries no score; a correct step has no region here
    assert all("score" not in r and "judge" not in r for r in out if r["value"]["start"] == "2")
    paged = results.encode(labels, CONFIG, "paged", confirm_review=False)
    by_name = {r["from_name"]: r for r in paged}
    assert by_name["error_localization_correctness_0"]["score"] == 0.7  # the paged layout has a correct step's
    assert by_name["error_localization_correctness_1"]["judge"] == "judge-a"
    assert by_name["error_localization_severity_1"]["score"] == 0.25
    assert "judge" not in by_name["error_localization_severity_1"]
    assert "score" not in by_name["error_localization_correctness_2"]
    # and back: read as a prediction, both layouts decode each step's confidence and judge (the transcript's correct
    # step has none); read as an annotation, none (an annotation's provenance comes from its parent prediction)
    assert results.decode(out, CONFIG, 3, prediction=True).steps == [StepLabel(0, "correct"), *labels.steps[1:]]
    assert results.decode(paged, CONFIG, 3, prediction=True).steps == labels.steps
    assert results.decode(paged, CONFIG, 3).steps[1].confidence is None
    hostile = [{**r, "score": s} for r, s in zip(out, (True, 1.5, "0.5", float("nan")))]
    assert results.decode(hostile, CONFIG, 3, prediction=True).steps[1].confidence is None


def test_values_of_the_wrong_shape_never_raise():
    result = [
        {"from_name": "error_localization_correctness_0", "value": {"choices": {"a": 1}}},
        {"from_name": "error_localization_type_0", "value": {"taxonomy": {"x": 1}}},
        {"from_name": "error_localization_type_1", "value": {"taxonomy": [[1, {}]]}},
        {"from_name": "overall_success", "value": {"choices": [[1]]}},
        region("a", 0, 0, "error_localization", "paragraphlabels", paragraphlabels=[["x"]]),
        region("a", 0, 0, "error_localization_severity", "choices", choices=[{}]),
    ]
    got = results.decode(result, CONFIG, 2)
    assert [s.correctness for s in got.steps] == ["correct", "correct"]
    assert got.whole_trace == {"overall_success": None}


def test_hostile_shapes_decode_to_warnings_not_errors():
    # a region claiming a billion steps on a 10^5-step trace: clipped, one warning, no billion-step loop
    huge = [region("r", 0, 10**9, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
            region("i", float("inf"), 2, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
            {"from_name": {"a": 1}, "value": {}}, {"from_name": ["x"], "value": {}}]
    labels = results.decode(huge, CONFIG, 100_000)
    assert len(labels.steps) == 100_000 and all(s.correctness == "incorrect" for s in labels.steps)
    assert any("reach beyond the trace's 100000 steps" in w for w in labels.warnings)
    for not_a_list in (7, "text", {"from_name": "x"}, None):
        labels = results.decode(not_a_list, CONFIG, 3)
        assert [s.correctness for s in labels.steps] == ["correct"] * 3 and labels.warnings
