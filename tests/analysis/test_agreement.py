"""Agreement statistics against published worked examples, then end to end through the export."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from commandline import invoke

from ls_trajeval.analysis.agreement import collect, compute
from ls_trajeval.analysis.disagreement import Thresholds, disagreements_in
from ls_trajeval.analysis.settings import AnalysisSettings
from ls_trajeval.analysis.stats import cohen_kappa, cohen_kappa_table, fleiss_kappa, krippendorff_alpha
from ls_trajeval.cli.analysis import agreement_command

from .conftest import export_line

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
# 12 units, values 1-5, missing data. Published: nominal 0.743, ordinal 0.815.
K2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}
# Same paper, section A: binary data, two observers, no missing data. Published alpha 0.095.
K2011_BINARY = {"A": [0, 1, 0, 0, 0, 0, 0, 0, 1, 0], "B": [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]}

# Fleiss (1971) as tabulated on Wikipedia's "Fleiss' kappa" page: 10 subjects, 14 raters, 5 categories.
FLEISS_WIKI = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
               [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def _value_counts(data: dict) -> np.ndarray:
    n_units = len(next(iter(data.values())))
    values = sorted({v for row in data.values() for v in row if v is not None})
    vc = np.zeros((n_units, len(values)))
    for row in data.values():
        for u, v in enumerate(row):
            if v is not None:
                vc[u, values.index(v)] += 1
    return vc


def test_krippendorff_2011_examples():
    vc = _value_counts(K2011)
    assert krippendorff_alpha(vc, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(vc, "ordinal", value_domain=list(range(5))) == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(_value_counts(K2011_BINARY), "nominal") == pytest.approx(0.095, abs=5e-4)


def test_fleiss_wikipedia_example():
    assert fleiss_kappa(np.array(FLEISS_WIKI)) == pytest.approx(0.210, abs=5e-4)


def test_cohen_kappa_worked_example():
    # Wikipedia "Cohen's kappa": 50 grant proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> 0.4
    assert cohen_kappa_table(np.array([[20, 5], [10, 15]])) == pytest.approx(0.4)
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(np.array(a), np.array(b)) == pytest.approx(0.4)
    assert math.isnan(cohen_kappa(np.array([1, 1]), np.array([1, 1])))


def _write(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _binary_export(tmp_path):
    """K2011_BINARY as two traces of five steps; 1 = incorrect."""
    lines = []
    for who, row in K2011_BINARY.items():
        for t, chunk in (("X", row[:5]), ("Y", row[5:])):
            errs = {i: ("incorrect", "action", "wrong_tool", "major") for i, v in enumerate(chunk) if v}
            lines.append(export_line(t, who, errs, "failure", 0, step_types=["action"] * 5))
    _write(tmp_path / "a.jsonl", lines)
    return tmp_path / "a.jsonl"


def test_two_annotators_end_to_end(tmp_path):
    path = str(_binary_export(tmp_path))
    r = compute(collect([path]))
    s = r.statistics
    assert s["is_error"]["units"] == 10
    assert s["is_error"]["krippendorff_alpha"] == pytest.approx(0.095, abs=5e-4)
    # by hand: po = 6/10, pe = .2*.4 + .8*.6 = .56, kappa = .04/.44
    assert s["is_error"]["cohen_kappa"] == pytest.approx(0.04 / 0.44)
    assert s["is_error"]["percent_agreement"] == pytest.approx(0.6)
    # first errors: X A=1 B=0 (within 2), Y A=3 B=0 (not)
    fe = r.first_error
    assert fe["pairs"] == 2 and fe["exact"] == 0 and fe["within_2"] == 0.5
    # both wrong on X step 1 only, same category/type/severity
    assert s["error_category"]["units_marked_wrong_by_2plus"] == 1
    assert s["error_category"]["percent_agreement"] == 1
    # with one other annotator, "the majority" is that annotator: agreement is the pairwise 0.6
    assert [p["agreement_with_majority"] for p in r.per_annotator] == [pytest.approx(0.6)] * 2
    # 2 differing steps in each trace (1/2 each); Y also disputes its first error: 3 vs 0 is more than
    # k = 2 apart (+1/2), while X's 1 vs 0 is within it
    dis = disagreements_in([path], AnalysisSettings(), Thresholds(first_error_steps=2))
    assert [(d.trace_id, d.score) for d in dis] == [("Y", 1.5), ("X", 1.0)]
    assert [d.summary()["steps_in_dispute"] for d in dis] == ["#1, #4", "#1, #3"]


def _k2011_export(tmp_path, all_wrong: bool):
    """K2011 as one 12-step trace; a missing value is a step the annotator did not label."""
    labels = {1: "correct", 2: "incorrect", 3: "partially_correct", 4: "wrong", 5: "bad"}
    # severities named against their order, to prove the order comes from |weight|
    sev = {1: "e", 2: "d", 3: "c", 4: "b", 5: "a"}
    weights = {"e": -1, "d": -2, "c": -3, "b": -4, "a": -5}
    lines = []
    for who, row in K2011.items():
        line = export_line("K", who, {}, "failure", 0, step_types=["thought"] * 12, weights=weights)
        steps = []
        for i, v in enumerate(row):
            if v is None:
                continue
            st = line["error_localization"][i]
            if all_wrong:
                st.update(correctness="incorrect", error_category=f"cat{v}", error_type=f"type{v}", severity=sev[v])
            else:
                st.update(correctness=labels[v])
            steps.append(st)
        line["error_localization"] = steps
        lines.append(line)
    _write(tmp_path / "k.jsonl", lines)
    return tmp_path / "k.jsonl"


def test_four_annotators_with_missing_steps(tmp_path):
    r = compute(collect([str(_k2011_export(tmp_path, all_wrong=False))]))
    c = r.statistics["correctness"]
    assert c["units"] == 11  # unit 12 has one rating only
    assert c["krippendorff_alpha"] == pytest.approx(0.743, abs=5e-4)
    assert c["fleiss_raters"] == 4 and c["fleiss_units"] == 8  # units 2-9 have all four
    assert len(c["cohen_kappa_pairwise"]) == 6


def test_category_and_ordinal_severity(tmp_path):
    r = compute(collect([str(_k2011_export(tmp_path, all_wrong=True))]))
    s = r.statistics
    assert s["error_category"]["krippendorff_alpha"] == pytest.approx(0.743, abs=5e-4)
    assert s["error_type"]["krippendorff_alpha"] == pytest.approx(0.743, abs=5e-4)
    assert s["severity"]["order"] == ["e", "d", "c", "b", "a"]
    assert s["severity"]["krippendorff_alpha_ordinal"] == pytest.approx(0.815, abs=5e-4)


def test_vs_majority_three_annotators(tmp_path):
    # 4 steps. errors: alice {0, 1}, bob {0}, carol {0, 2}
    E = ("incorrect", "action", "wrong_tool", "minor")
    lines = [export_line("T", a, {i: E for i in errs}, "failure", 0, step_types=["action"] * 4)
             for a, errs in (("alice", [0, 1]), ("bob", [0]), ("carol", [0, 2]))]
    _write(tmp_path / "m.jsonl", lines)
    r = compute(collect([str(tmp_path / "m.jsonl")]))
    pa = {p["annotator"]: p for p in r.per_annotator}
    # alice vs (bob, carol): step0 E,E -> E (agree); 1 C,C -> C (she says E); 2 C,E tie (skipped); 3 agree
    assert pa["alice@example.com"]["steps_compared"] == 3
    assert pa["alice@example.com"]["agreement_with_majority"] == pytest.approx(2 / 3)
    # bob vs (alice, carol): 0 E agree; 1 tie; 2 tie; 3 agree
    assert pa["bob@example.com"]["steps_compared"] == 2
    assert pa["bob@example.com"]["agreement_with_majority"] == 1
    assert r.first_error["exact"] == 1  # everyone's first error is step 0


def test_single_annotator_has_nothing_to_compare(hand_export):
    r = compute(collect([str(hand_export / "alice.jsonl")]))
    assert r.statistics == {} and "nothing to compare" in r.notes[0]


def test_later_annotation_replaces_earlier(tmp_path):
    E = ("incorrect", "action", "wrong_tool", "minor")
    lines = [export_line("T", "alice", {0: E}, "failure", 0, step_types=["action"] * 2, ann_id=1),
             export_line("T", "alice", {}, "failure", 0, step_types=["action"] * 2, ann_id=2),
             export_line("T", "bob", {}, "failure", 0, step_types=["action"] * 2, ann_id=3)]
    _write(tmp_path / "d.jsonl", lines)
    r = compute(collect([str(tmp_path / "d.jsonl")]))
    assert r.statistics["is_error"]["percent_agreement"] == 1
    assert "replaced" in r.notes[0]


def test_cli_agreement(hand_export, tmp_path):
    out = tmp_path / "agr.json"
    res = invoke(hand_export, "--k", "1", "-o", out, command=agreement_command)
    assert res.exit_code == 0, res.output
    assert "correctness" in res.output and "most disagreement" in res.output
    doc = json.loads(out.read_text())
    assert doc["n_annotations"] == 8 and doc["n_traces_with_2plus_annotators"] == 3
    assert doc["first_error_step"]["k"] == 1
    # T1: alice/bob/carol all first err at 1; T2: alice none vs bob 0; T3: alice 0 vs carol 4
    assert doc["first_error_step"]["pairs"] == 5
    assert doc["first_error_step"]["exact"] == pytest.approx(3 / 5)
    # the adjudication list (disagreement finder, first errors within k = 1): T3 1.625, T1 4/3, T2 1
    assert [(d["trace_id"], d["steps_in_dispute"]) for d in doc["most_disagreement"]] == [
        ("T3", "#1, #3, #5"), ("T1", "#2, #3, #4"), ("T2", "#1")]
    assert "T3: disputedness 1.62, steps #1, #3, #5" in res.output
    res = invoke(hand_export, "--json", command=agreement_command)
    assert json.loads(res.stdout)["annotators"]
