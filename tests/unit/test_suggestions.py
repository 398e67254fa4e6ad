"""Several judges' suggestions merged into one per step, and what a task's suggestions are least sure of."""
from __future__ import annotations

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results
from ls_trajeval.core.labels import StepLabel, TraceLabels
from ls_trajeval.core.suggestions import least_confident, merge, suggestion_fields

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
SCHEME = CONFIG.trajectory


def mark(i, etype="wrong_tool", confidence=None, judge=None, severity="major"):
    category = SCHEME.type_by_name(etype).category
    return StepLabel(i, "incorrect", category, etype, severity, f"{etype} at {i}", confidence=confidence,
                     suggested_by=judge)


def labels(n, *marks, whole=None):
    by = {m.step_index: m for m in marks}
    return TraceLabels([by.get(i, StepLabel(i, "correct")) for i in range(n)], whole or {})


def test_where_judges_disagree_the_more_confident_wins_and_names_its_judge():
    llm = labels(5, mark(1, "wrong_tool", 0.9), mark(2, "logical_error", 0.4), whole={"overall_success": "failure"})
    other = labels(5, mark(2, "wrong_arguments", 0.7), mark(3, "missed_element", 0.2))
    rules = labels(5, mark(1, "wrong_arguments"), mark(4, "wrong_tool"))
    merged = merge([("llm", llm), ("other", other), ("rules", rules)], 5, SCHEME)
    s = merged.steps
    assert s[0] == StepLabel(0, "correct")
    assert (s[1].error_type, s[1].confidence, s[1].suggested_by) == ("wrong_tool", 0.9, "llm")  # 0.9 over none
    assert (s[2].error_type, s[2].confidence, s[2].suggested_by) == ("wrong_arguments", 0.7, "other")
    assert (s[3].error_type, s[3].suggested_by) == ("missed_element", "other")  # one judge only: its suggestion
    assert (s[4].confidence, s[4].suggested_by) == (None, "rules")  # no confidence, but the only suggestion
    assert s[2].rationale == "wrong_arguments at 2" and s[2].severity == "major"  # the whole suggestion, not a mix
    assert merged.whole_trace == {"overall_success": "failure"}


def test_a_judge_without_confidences_can_be_given_one_and_ties_go_to_the_first_listed():
    a = labels(3, mark(0, "wrong_tool", 0.6))
    rules = labels(3, mark(0, "wrong_arguments"), mark(1, "wrong_arguments"))
    merged = merge([("a", a), ("rules", rules)], 3, SCHEME, {"rules": 0.8})  # its precision, measured by align
    assert (merged.steps[0].error_type, merged.steps[0].confidence) == ("wrong_arguments", 0.8)
    tie = merge([("a", a), ("b", labels(3, mark(0, "logical_error", 0.6)))], 3, SCHEME)
    assert tie.steps[0].suggested_by == "a"
    # a step an earlier merge took from a judge keeps that judge's name
    again = merge([("merged", merged), ("c", labels(3))], 3, SCHEME)
    assert again.steps[0].suggested_by == "rules"


def test_a_confident_correct_verdict_competes_with_marks():
    # the paged layout keeps an LLM judge's confidence that a step is correct
    sure = TraceLabels([StepLabel(0, "correct", confidence=0.95), StepLabel(1, "correct", confidence=0.3)])
    unsure = labels(2, mark(0, "wrong_tool", 0.5), mark(1, "wrong_tool", 0.5))
    merged = merge([("sure", sure), ("unsure", unsure)], 2, SCHEME)
    assert [(s.correctness, s.confidence, s.suggested_by) for s in merged.steps] == \
        [("correct", 0.95, "sure"), ("incorrect", 0.5, "unsure")]
    # through Label Studio's paged shapes and back, the merged prediction says the same
    decoded = results.decode(results.encode(merged, CONFIG, "paged", confirm_review=False), CONFIG, 2, prediction=True)
    assert decoded.steps == merged.steps


def test_least_confident_suggestion_and_the_task_fields():
    verdicts = TraceLabels([StepLabel(0, "correct", confidence=0.9), mark(1, confidence=0.55),
                            StepLabel(2, "correct", confidence=0.55), StepLabel(3, "correct")])
    assert least_confident(verdicts.steps, SCHEME) == (0.55, 1)  # the earlier step on a tie
    assert suggestion_fields(verdicts, SCHEME, "judge-x") == {
        "least_confidence": 0.55, "least_confident_step": "#2", "suggestions_by": "judge-x"}
    # a mark without a confidence is the least sure; no suggestion at all says nothing
    assert least_confident(labels(3, mark(2), mark(0, confidence=0.2)).steps, SCHEME) == (0.0, 2)
    assert suggestion_fields(labels(3), SCHEME, "v") == {"least_confidence": None, "least_confident_step": None,
                                                         "suggestions_by": "v"}


def test_suggestions_beside_a_blank_trace_are_inert_text_and_a_line_per_step():
    import re

    from ls_trajeval.core.suggestions import beside, css_string

    hostile = "</style><script>alert(1)</script> \"q\" \\ {{idx}} $task\nnext line — 東京"
    shown = TraceLabels([StepLabel(0, "correct", confidence=0.9),
                         StepLabel(1, "incorrect", "action", "wrong_tool", "major", hostile, confidence=0.62,
                                   suggested_by="judge-b"),
                         StepLabel(2, "incorrect", None, None, None, None)])
    (item,) = beside(shown, CONFIG, "merged")
    assert item["id"] == "te_suggested"
    html = item["html"]
    style = html[html.index("<style>") + 7:html.index("</style>")]
    assert "<" not in style and "\n\n" not in style
    # one line under each suggested step's header (not under a correct verdict), its text a CSS string of escapes
    rules = re.findall(r'\[data-testid="phrase:(\d+)"\] \[class\*="dialoguename"\]::after \{ content: ("[^"]*"); \}',
                       style)
    assert [int(i) for i, _ in rules] == [1, 2]
    decoded = re.sub(r"\\([0-9a-f]{6})", lambda m: chr(int(m.group(1), 16)), rules[0][1])[1:-1]
    assert decoded == ("\u2691 suggested by judge-b, 0.62: Wrong Tool \u00b7 Major (\u22125) \u2014 "
                       + " ".join(hostile.split()))
    assert re.sub(r"\\([0-9a-f]{6})", lambda m: chr(int(m.group(1), 16)), rules[1][1])[1:-1] == \
        "\u2691 suggested by merged: incorrect"
    # the list beside the trace: autoescaped text, step numbers as people see them
    assert "<script>" not in html and "&lt;script&gt;" in html and "<b>#2</b>" in html
    assert css_string('a"b\\c d') == '"a\\000022b\\00005cc\\000020d"'
    assert "No suggestions" in beside(TraceLabels([StepLabel(0, "correct")]), CONFIG, "v")[0]["html"]
