"""Provenance: which steps an annotator made, accepted from a suggestion or changed, and which suggestions they
removed, decided by comparing an annotation's results with its parent prediction's by result id. The results are
written out in the shapes Label Studio 1.23.2 saved in the browser (tests/browser/test_suggestions.py reads them
there): a prediction's ids kept in the annotation, ``origin`` turned ``prediction-changed`` by a relabel."""
from __future__ import annotations

from studio.uishapes import SUGGESTIONS, SUGGESTIONS_BY

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
POTATO = cfg.loads("""
annotation_schemes:
  - annotation_type: trajectory_eval
    name: error_localization
    correctness_options: [correct, incorrect, partially_correct]
    error_types: [{name: reasoning, subtypes: [logical_error]}, {name: action, subtypes: [wrong_tool, wrong_arguments]}]
""")


def mark(rid, step, label, severity=None, etype=None, rationale=None, *, origin="prediction", score=None,
         judge=None, correctness=None, start_offset=0, end_offset=20):
    """One region of the workbench: its mark, severity (a second label), type (per-region radio) and rationale."""
    span = {"start": str(step), "end": str(step), "startOffset": start_offset, "endOffset": end_offset}

    def item(from_name, rtype, **value):
        out = {"id": rid, "from_name": from_name, "to_name": "te_trace", "type": rtype, "origin": origin,
               "value": {**span, **value}}
        if score is not None:
            out["score"] = score
        return out

    first = item("error_localization", "paragraphlabels", paragraphlabels=[label])
    if judge is not None:
        first["judge"] = judge
    if correctness is not None:
        first["correctness"] = correctness
    out = [first]
    if severity:
        out.append(item("error_localization_severity", "paragraphlabels", paragraphlabels=[severity]))
    if etype:
        out.append(item("error_localization_type", "choices", choices=[etype]))
    if rationale:
        out.append(item("error_localization_rationale", "textarea", text=[rationale]))
    return out


PREDICTION = {"id": 41, "model_version": "llm-judge-m-1", "result": [
    *mark("s1", 1, "suggested", "minor", "wrong_tool", "searched the wrong thing", score=0.6, judge="judge-a"),
    *mark("s3", 3, "suggested", "major", "incorrect_assumption", "assumes", score=0.9),
    *mark("s5", 5, "suggested", "critical", "missed_element", "missed it", score=0.3),
]}


def sources(labels):
    return [(s.step_index, s.source, s.suggested_by, s.confidence) for s in labels.steps]


def test_accepted_edited_rejected_and_own_marks_in_the_workbench():
    # step 1 accepted with the error label's key; step 3's type changed, then accepted; step 5 deleted (Backspace);
    # step 6 marked by the annotator
    annotation = [
        *mark("s1", 1, "incorrect", "minor", "wrong_tool", "searched the wrong thing", origin="prediction-changed"),
        *mark("s3", 3, "incorrect", "major", "wrong_arguments", "assumes", origin="prediction-changed"),
        *mark("own6", 6, "incorrect", "critical", "premature_termination", origin="manual"),
    ]
    got = results.decode(annotation, CONFIG, 7, parent=PREDICTION)
    assert sources(got) == [(0, "human", None, None), (1, "accepted", "judge-a", 0.6), (2, "human", None, None),
                            (3, "edited", "llm-judge-m-1", 0.9), (4, "human", None, None), (5, "human", None, None),
                            (6, "human", None, None)]
    assert got.steps[3].error_type == "wrong_arguments" and got.steps[5].correctness == "correct"
    assert got.rejected_suggestions == [{"step_index": 5, "error_type": "missed_element", "severity": "critical",
                                         "suggested_by": "llm-judge-m-1"}]
    # without the parent, every mark is the annotator's and nothing was rejected
    alone = results.decode(annotation, CONFIG, 7)
    assert {s.source for s in alone.steps} == {"human"} and alone.rejected_suggestions == []
    assert all(s.confidence is None and s.suggested_by is None for s in alone.steps)


def test_any_change_of_severity_rationale_or_span_is_an_edit():
    base = dict(severity="minor", etype="wrong_tool", rationale="searched the wrong thing", origin="prediction-changed")
    for change in ({"severity": "major"}, {"rationale": "searched the wrong file"}, {"rationale": None},
                   {"end_offset": 12}, {"etype": None}):
        got = results.decode(mark("s1", 1, "incorrect", **{**base, **change}), CONFIG, 7, parent=PREDICTION)
        assert got.steps[1].source == "edited", change
    moved = mark("s1", 2, "incorrect", **base)  # the same region, now on another step
    got = results.decode(moved, CONFIG, 7, parent=PREDICTION)
    assert (got.steps[1].source, got.steps[2].source) == ("human", "edited")
    assert [r["step_index"] for r in got.rejected_suggestions] == [3, 5]  # step 1's suggestion lives on at step 2


def test_an_undecided_suggestion_is_no_label_of_the_annotator_and_not_rejected():
    annotation = [*PREDICTION["result"][:4], *mark("s3", 3, "incorrect", "major", "incorrect_assumption", "assumes",
                                                   origin="prediction-changed"), *PREDICTION["result"][8:]]
    got = results.decode(annotation, CONFIG, 7, parent=PREDICTION)
    assert [s.correctness for s in got.steps] == ["correct"] * 3 + ["incorrect"] + ["correct"] * 3
    assert got.rejected_suggestions == []
    assert got.warnings == ["region s1: step #2 is still a suggestion (labelled 'suggested'), not a label of the "
                            "annotator's", "region s5: step #6 is still a suggestion (labelled 'suggested'), not a "
                            "label of the annotator's"]
    # read as the prediction it came from, each one is the mark it suggests, with its confidence and judge
    as_suggested = results.decode(PREDICTION["result"], CONFIG, 7, prediction=True)
    assert [(s.step_index, s.correctness, s.error_type, s.confidence, s.suggested_by) for s in as_suggested.steps
            if s.correctness != "correct"] == [(1, "incorrect", "wrong_tool", 0.6, "judge-a"),
                                               (3, "incorrect", "incorrect_assumption", 0.9, None),
                                               (5, "incorrect", "missed_element", 0.3, None)]


def test_accepting_is_the_relabel_to_what_the_suggestion_said():
    # a judge that called step 1 partially correct: the suggestion carries it; pressing "incorrect" instead is an edit
    prediction = {"id": 7, "model_version": "j", "result": mark("p1", 1, "suggested", "minor", "wrong_tool",
                                                                correctness="partially_correct")}
    assert results.decode(prediction["result"], POTATO, 3, prediction=True).steps[1].correctness == "partially_correct"
    kept = results.decode(mark("p1", 1, "partially_correct", "minor", "wrong_tool", origin="prediction-changed"),
                          POTATO, 3, parent=prediction)
    changed = results.decode(mark("p1", 1, "incorrect", "minor", "wrong_tool", origin="prediction-changed"),
                             POTATO, 3, parent=prediction)
    assert (kept.steps[1].source, changed.steps[1].source) == ("accepted", "edited")
    # a mark whose error label was pressed twice keeps only its severity: still the suggested mark, accepted
    severity_only = [r for r in mark("s1", 1, "incorrect", "minor", "wrong_tool", "searched the wrong thing",
                                     origin="prediction-changed") if r["from_name"] != "error_localization"]
    assert results.decode(severity_only, CONFIG, 7, parent=PREDICTION).steps[1].source == "accepted"


def test_judge_accept_and_older_predictions_read_as_accepted():
    # `judge accept` copies the prediction's results with their ids, each suggestion relabelled as a person would
    annotation = results.accepted(PREDICTION["result"], CONFIG)
    assert [r["value"]["paragraphlabels"] for r in annotation if r["from_name"] == "error_localization"] == [
        ["incorrect"]] * 3
    assert [r["id"] for r in annotation] == [r["id"] for r in PREDICTION["result"]]
    got = results.decode(annotation, CONFIG, 7, parent=PREDICTION)
    assert [s.source for s in got.steps if s.correctness == "incorrect"] == ["accepted"] * 3
    assert got.rejected_suggestions == []
    # a prediction made before the suggestion label (its marks say "incorrect"), kept as it came
    older = {"id": 2, "model_version": "ls-trajeval-rules", "result": mark("o1", 1, "incorrect", "major", "wrong_tool")}
    got = results.decode(older["result"], CONFIG, 3, parent=older)
    assert sources(got)[1] == (1, "accepted", "ls-trajeval-rules", None)


def test_origin_is_the_hint_when_the_prediction_had_no_ids_to_keep():
    # a prediction written without result ids (marks only: Label Studio makes a region of each id-less result) gets
    # new ids in the annotation, its origin still "prediction"
    prediction = {"id": 3, "model_version": "v", "result": [{k: v for k, v in r.items() if k != "id"}
                                                            for r in mark("x", 2, "incorrect")]}
    got = results.decode(mark("newid", 2, "incorrect", origin="prediction"), CONFIG, 4, parent=prediction)
    assert (got.steps[2].source, got.rejected_suggestions) == ("accepted", [])
    # the same mark made by hand (origin manual) is the annotator's, and the suggestion was removed
    own = results.decode(mark("newid", 2, "incorrect", origin="manual"), CONFIG, 4, parent=prediction)
    assert own.steps[2].source == "human" and [r["step_index"] for r in own.rejected_suggestions] == [2]


def paged(step, kind, rid, value, origin="prediction", **extra):
    key = {"correctness": "choices", "type": "taxonomy", "severity": "choices", "rationale": "textarea"}[kind]
    return {"id": rid, "from_name": f"error_localization_{kind}_{step}", "to_name": "te_task", "type": key,
            "origin": origin, "value": {key if key != "textarea" else "text": value}, **extra}


def test_the_paged_layout_decides_per_step_by_the_ids_of_its_results():
    prediction = {"id": 9, "model_version": "judge-p", "result": [
        paged(0, "correctness", "c0", ["correct"], score=0.95),  # an LLM judge's confident verdict
        paged(1, "correctness", "c1", ["incorrect"], score=0.7, judge="judge-q"),
        paged(1, "type", "t1", [["action", "wrong_tool"]], score=0.7),
        paged(1, "severity", "v1", ["major"], score=0.7),
        paged(2, "correctness", "c2", ["incorrect"], score=0.4),
        paged(2, "severity", "v2", ["minor"], score=0.4),
        paged(3, "correctness", "c3", ["correct"]),  # a rule detector's: no confidence, no suggestion
        paged(4, "correctness", "c4", ["incorrect"], score=0.5),
        paged(4, "severity", "v4", ["minor"], score=0.5),
    ]}
    annotation = [
        paged(0, "correctness", "c0", ["correct"]),  # kept
        paged(1, "correctness", "c1", ["incorrect"]), paged(1, "type", "t1", [["action", "wrong_tool"]]),
        paged(1, "severity", "v1", ["major"]),  # kept
        paged(2, "correctness", "c2", ["correct"], origin="prediction-changed"),  # turned correct: rejected
        paged(3, "correctness", "c3", ["correct"]),
        paged(4, "correctness", "c4", ["incorrect"]), paged(4, "severity", "v4", ["critical"], "prediction-changed"),
        paged(5, "correctness", "own5", ["incorrect"], "manual"), paged(5, "severity", "own5s", ["minor"], "manual"),
    ]
    got = results.decode(annotation, CONFIG, 6, parent=prediction)
    assert sources(got) == [(0, "accepted", "judge-p", 0.95), (1, "accepted", "judge-q", 0.7), (2, "human", None, None),
                            (3, "human", None, None), (4, "edited", "judge-p", 0.5), (5, "human", None, None)]
    assert got.rejected_suggestions == [{"step_index": 2, "error_type": None, "severity": "minor",
                                         "suggested_by": "judge-p"}]


def test_the_parent_prediction_is_found_by_id_then_by_shared_ids_then_by_the_projects_model_version():
    a = {"id": 1, "model_version": "v1", "result": mark("a1", 0, "suggested")}
    b = {"id": 2, "model_version": "v2", "result": mark("b1", 1, "suggested")}
    b_later = {"id": 3, "model_version": "v2", "result": mark("b2", 1, "suggested")}
    predictions = [a, b, b_later]
    assert results.parent_prediction({"parent_prediction": 1, "result": []}, predictions) is a
    # Label Studio drops the parent when it rebuilds an annotation from a draft: the ids it carries still tell
    assert results.parent_prediction({"parent_prediction": None, "result": mark("b1", 1, "incorrect")},
                                     predictions, "v1") is b
    # nothing shared: the project's model version (the label stream prefills from it), its latest prediction
    assert results.parent_prediction({"result": mark("own", 1, "incorrect")}, predictions, "v2") is b_later
    assert results.parent_prediction({"result": mark("own", 1, "incorrect")}, predictions, None) is None
    assert results.parent_prediction({"parent_prediction": 99, "result": []}, predictions, "") is None


def test_the_paged_layout_as_the_browser_saved_it():
    # read in the browser (Label Studio 1.23.2, paged layout, the label stream filled from this prediction): the
    # annotator raised step #2's severity and turned step #6 correct. Every result keeps its prediction's id; an edited
    # one turns "prediction-changed"; a step turned correct loses its hidden type, severity and rationale
    prediction = {"id": 5, "model_version": SUGGESTIONS_BY, "result": results.encode(
        SUGGESTIONS, CONFIG, "paged", origin="prediction", confirm_review=False)}
    ids = {r["from_name"]: r["id"] for r in prediction["result"]}

    def saved(name, origin, value):
        key = "taxonomy" if "_type_" in name else "text" if "_rationale_" in name else "choices"
        rtype = "textarea" if key == "text" else key
        return {"id": ids[name], "from_name": name, "to_name": "te_task", "type": rtype, "origin": origin,
                "value": {key: value}}

    annotation = [
        saved("error_localization_correctness_0", "prediction", ["correct"]),
        saved("error_localization_correctness_1", "prediction", ["incorrect"]),
        saved("error_localization_type_1", "prediction", [["action", "wrong_tool"]]),
        saved("error_localization_severity_1", "prediction-changed", ["major"]),
        saved("error_localization_rationale_1", "prediction", ["searched the wrong thing"]),
        saved("error_localization_correctness_2", "prediction", ["correct"]),
        saved("error_localization_correctness_3", "prediction", ["incorrect"]),
        saved("error_localization_type_3", "prediction", [["reasoning", "incorrect_assumption"]]),
        saved("error_localization_severity_3", "prediction", ["major"]),
        saved("error_localization_rationale_3", "prediction", [SUGGESTIONS.steps[3].rationale]),
        saved("error_localization_correctness_4", "prediction", ["correct"]),
        saved("error_localization_correctness_5", "prediction-changed", ["correct"]),
        saved("error_localization_correctness_6", "prediction", ["correct"]),
    ]
    got = results.decode(annotation, CONFIG, 7, parent=prediction)
    assert sources(got) == [(0, "human", None, None), (1, "edited", "judge-a", 0.6), (2, "human", None, None),
                            (3, "accepted", SUGGESTIONS_BY, 0.9), (4, "human", None, None), (5, "human", None, None),
                            (6, "human", None, None)]
    assert got.rejected_suggestions == [{"step_index": 5, "error_type": "missed_element", "severity": "critical",
                                         "suggested_by": "judge-b"}]
