"""`report --judge-align`: error rates corrected for a judge's measured error (Rogan–Gladen), worked out by hand.

The alignment (the judge against gold, every mark action/wrong_tool), per trace [tp, fp, fn, tn] of the error flag:
  A1 10 steps: GOLD marks #1-#4, PRED #1-#3 and #5  -> [3, 1, 1, 5]
  A2 10 steps: GOLD #1-#2, PRED #1                   -> [1, 0, 1, 8]
  A3 10 steps: GOLD #1-#2, PRED #1-#3                -> [2, 1, 0, 7]
  Se = 6/8 = 0.75, Sp = 20/22 = 10/11, J = Se + Sp − 1 = 29/44.
The judge's labels of other traces (the report's input): R1 10 steps, 3 action errors; R2 10 steps, 1 reasoning
error; R3 20 steps, 4 action errors. Apparent p = 8/40 = 0.2; corrected π = (0.2 + 10/11 − 1) / (29/44) = 0.165517.
Variances (linearization over traces, e = y − ratio·x, Var = Σe² / (Σx)²):
  p:  e = 3 − 2, 1 − 2, 4 − 4 = 1, −1, 0            -> 2 / 1600
  Se: e = 3 − 3, 1 − 1.5, 2 − 1.5 = 0, −0.5, 0.5    -> 0.5 / 64
  Sp: e = 5 − 60/11, 8 − 80/11, 7 − 80/11 = −5/11, 8/11, −3/11 -> (98/121) / 484
  Cov(Se, Sp) = (0 − 4/11 − 1.5/11) / (8 · 22) = −0.5 / 176
For the action category alone (all of the alignment's errors are action: the same Se and Sp): p = 7/40, e = 1.25,
−1.75, 0.5 -> 4.875 / 1600. Reasoning: the alignment never saw it, so it cannot be corrected.
"""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from commandline import invoke

from ls_trajeval.analysis.correction import read_alignment, rogan_gladen
from ls_trajeval.core.errors import UserError

from .test_align import WT, _write

Z = 1.959963984540054
SE, SP = 0.75, 10 / 11
J = SE + SP - 1
V_SE, V_SP, COV = 0.5 / 64, (98 / 121) / 484, -0.5 / 176


def by_hand(p: float, var_p: float) -> tuple[float, float, float]:
    pi = (p + SP - 1) / J
    var = (var_p + pi ** 2 * V_SE + (1 - pi) ** 2 * V_SP - 2 * pi * (1 - pi) * COV) / J ** 2
    return pi, max(0.0, pi - Z * math.sqrt(var)), min(1.0, pi + Z * math.sqrt(var))


@pytest.fixture
def alignment(tmp_path):
    gold = _write(tmp_path / "gold.jsonl", [("A1", 10, {i: WT for i in range(4)}), ("A2", 10, {0: WT, 1: WT}),
                                            ("A3", 10, {0: WT, 1: WT})], "gold")
    pred = _write(tmp_path / "pred.jsonl", [("A1", 10, {0: WT, 1: WT, 2: WT, 4: WT}), ("A2", 10, {0: WT}),
                                            ("A3", 10, {0: WT, 1: WT, 2: WT})], "judge")
    res = invoke("align", *[str(pred), str(gold), "--out", str(tmp_path / "align"),
                                             "--resamples", "0"])
    assert res.exit_code == 0, res.output
    return tmp_path / "align" / "align.json"


def test_the_alignment_file_holds_each_traces_counts(alignment):
    judge = read_alignment(alignment)
    assert judge.flag.tolist() == [[3, 1, 1, 5], [1, 0, 1, 8], [2, 1, 0, 7]]
    assert list(judge.categories) == ["action"] and judge.categories["action"].tolist() == judge.flag.tolist()


def test_rogan_gladen_by_hand(alignment):
    judge = read_alignment(alignment)
    c = rogan_gladen([3, 1, 4], [10, 10, 20], judge.flag)
    assert (c.apparent, c.sensitivity, c.specificity) == pytest.approx((0.2, SE, SP))
    assert (c.value, c.low, c.high) == pytest.approx(by_hand(0.2, 2 / 1600))
    assert c.value == pytest.approx(0.165517, abs=1e-6)
    # an apparent rate below the judge's false-positive rate corrects below 0: clipped
    low = rogan_gladen([0, 0, 0], [10, 10, 20], judge.flag)
    assert low.value == 0.0 and low.low == 0.0 and (0 - 1 + SP) / J < 0
    # a judge no better than chance (Se + Sp <= 1) corrects nothing
    chance = rogan_gladen([3], [10], np.array([[1, 5, 1, 5]], dtype=float))
    assert math.isnan(chance.value) and chance.apparent == 0.3


def test_report_corrects_the_judges_rates(alignment, tmp_path):
    rc = ("incorrect", "reasoning", "logical_error", "minor")
    labels = _write(tmp_path / "judged.jsonl", [("R1", 10, {0: WT, 1: WT, 2: WT}), ("R2", 10, {5: rc}),
                                                ("R3", 20, {i: WT for i in range(4)})], "judge")
    out = tmp_path / "report"
    res = invoke("report", *[str(labels), "--judge-align", str(alignment), "-o", str(out),
                                              "--no-plots"])
    assert res.exit_code == 0, res.output
    rows = {r["what"]: r for r in csv.DictReader((out / "corrected_error_rates.csv").open())}
    assert list(rows) == ["(any error)", "action", "reasoning"]
    for what, p, var_p in (("(any error)", 8 / 40, 2 / 1600), ("action", 7 / 40, 4.875 / 1600)):
        r = rows[what]
        got = tuple(float(r[k]) for k in ("corrected_rate", "corrected_rate_low", "corrected_rate_high"))
        assert float(r["apparent_rate"]) == pytest.approx(p) and got == pytest.approx(by_hand(p, var_p))
        assert (float(r["sensitivity"]), float(r["specificity"])) == pytest.approx((SE, SP))
    assert rows["reasoning"]["apparent_rate"] == "0.025" and rows["reasoning"]["corrected_rate"] == ""
    assert "Error rates corrected for the judge's measured error" in res.stdout
    assert "Rogan–Gladen" in (out / "report.html").read_text()


def test_report_corrects_per_group(alignment, tmp_path):
    labels = _write(tmp_path / "judged.jsonl",
                    [("R1", 10, {0: WT, 1: WT, 2: WT}), ("R3", 20, {i: WT for i in range(4)})], "judge")
    out = tmp_path / "report"
    res = invoke("report", *[str(labels), "--judge-align", str(alignment), "-o", str(out),
                                              "--no-plots", "--by", "annotator"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((out / "corrected_error_rates.csv").open()))
    assert [(r["annotator"], r["what"]) for r in rows] == [("(all)", "(any error)"), ("(all)", "action"),
                                                          ("judge@example.com", "(any error)"),
                                                          ("judge@example.com", "action")]
    # 7 errors in 30 steps: e = 3 − 7/3, 4 − 14/3 = 2/3, −2/3 -> Var(p) = (8/9) / 900
    assert float(rows[0]["corrected_rate"]) == pytest.approx(by_hand(7 / 30, (8 / 9) / 900)[0])
    assert float(rows[2]["corrected_rate_low"]) == pytest.approx(by_hand(7 / 30, (8 / 9) / 900)[1])


@pytest.mark.parametrize("content, message", [
    ("{", "align.json:1: invalid JSON"),
    (json.dumps({"traces": 3}), "per_trace_counts: missing"),
    (json.dumps({"per_trace_counts": {"columns": ["trace_id", "steps", "tp", "fp", "fn", "tn"],
                                      "rows": [["a", 2, 1, 0, -1, 1]]}}), "per_trace_counts.rows[0]"),
])
def test_a_bad_alignment_file_is_named(tmp_path, content, message):
    path = tmp_path / "align.json"
    path.write_text(content)
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_alignment(path)
    res = invoke("report", *[str(path), "--judge-align", str(path), "-o", str(tmp_path / "r")])
    assert res.exit_code == 2 and f"error: {path}" in res.output
