"""`align --certify` against figures and bounds worked out by hand.

The alignment is test_align's (see its docstring): after G5/G6 are left out, four traces G1-G4.

Overall, per trace (PRED∩GOLD marks, PRED marks, GOLD marks): G1 (1, 2, 2), G2 (0, 0, 0), G3 (0, 1, 1), G4 (1, 2, 1).
  precision 2/5; the residuals e = y − 0.4·x are 0.2, 0, −0.4, 0.2, Σe² = 0.24, and the binomial 5·0.4·0.6 = 1.2:
  design effect 0.2, taken as 1 -> Wilson on 5 steps.
  recall 2/4; e = 0, 0, −0.5, 0.5, Σe² = 0.5 against 4·0.25 = 1 -> Wilson on 4 steps.
  first errors within 1: every trace, 4/4 -> Wilson on 4 traces.
Per type (PRED's T and GOLD's T on the same step; PRED's T; GOLD's T; traces whose GOLD first error is T, of them
within 1):
  wrong_tool            1/3 precision (G1: 1 of 2, G4: 0 of 1), recall 1/1, first errors 1/1 (G1)
  logical_error         precision 0/1 (G4#6), recall 0/1 (G1#4), no GOLD first error of that type
  missed_element        nothing PRED marks as it (no evidence), recall 0/1, first errors 1/1 (G3: #1 vs #2)
  wrong_arguments       no evidence, recall 0/1, first errors 1/1 (G4)
  hallucinated_element  precision 0/1, nothing GOLD marks as it
"""
from __future__ import annotations

import json
import math

import pytest
from commandline import invoke

from ls_trajeval.analysis.align import pair
from ls_trajeval.analysis.certify import Thresholds, certify
from ls_trajeval.analysis.settings import AnalysisSettings, read
from ls_trajeval.analysis.stats import proportion_interval

from .test_align import WT, _write, files  # noqa: F401 - files is a fixture

Z = 1.959963984540054  # the normal quantile of 0.975


def wilson(successes: float, n: float) -> tuple[float, float]:
    """Wilson's score interval, written out."""
    p = successes / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def test_wilson_by_hand_and_the_design_effect_of_steps_that_err_together():
    assert (proportion_interval([1, 0, 1, 1, 0], [1] * 5).low, proportion_interval([1, 0, 1, 1, 0], [1] * 5).high) \
        == pytest.approx(wilson(3, 5))
    # 8 steps in 3 traces, the 4 successes all in the first: e = 4 − 0.5·4, 0 − 0.5·2, 0 − 0.5·2 = 2, −1, −1;
    # Σe² = 6 against the binomial 8·0.25 = 2: design effect 3, worth 8/3 independent steps
    p = proportion_interval([4, 0, 0], [4, 2, 2])
    assert p.value == 0.5 and p.effective == pytest.approx(8 / 3)
    assert (p.low, p.high) == pytest.approx(wilson(0.5 * 8 / 3, 8 / 3))
    assert p.low < wilson(4, 8)[0]  # wider than if the 8 steps were independent
    # Clopper-Pearson's bounds of 2 in 5: the 2.5% quantiles of Beta(2, 4) and Beta(3, 3)'s 97.5%, from tables
    cp = proportion_interval([1, 0, 1, 0, 0], [1] * 5, method="clopper-pearson")
    assert (cp.low, cp.high) == pytest.approx((0.052745, 0.853367), abs=1e-6)
    assert math.isnan(proportion_interval([0], [0]).low)


def test_certification_by_hand(files):  # noqa: F811
    s = AnalysisSettings()
    pairs = pair(*(read([str(f)], s) for f in files)).pairs
    c = certify(pairs, s, Thresholds(precision=0.1, recall=0.1, first_error=0.3), within=1)
    overall = {k.figure: k for k in c.overall.checks}
    assert [(k.proportion.successes, k.proportion.trials) for k in overall.values()] == [(2, 5), (2, 4), (4, 4)]
    assert overall["error_precision"].proportion.low == pytest.approx(wilson(2, 5)[0])  # 0.1176
    assert overall["error_recall"].proportion.low == pytest.approx(wilson(2, 4)[0])  # 0.1500
    assert overall["first_error_within_1"].proportion.low == pytest.approx(wilson(4, 4)[0])  # 0.5101
    assert c.overall.certified
    scopes = {sc.name: {k.figure: k for k in sc.checks} for sc in c.scopes[1:]}
    assert list(scopes) == ["logical_error", "missed_element", "wrong_arguments", "wrong_tool",
                            "hallucinated_element"]
    counts = {t: tuple((k.proportion.successes, k.proportion.trials) for k in f.values()) for t, f in scopes.items()}
    assert counts == {"wrong_tool": ((1, 3), (1, 1), (1, 1)), "logical_error": ((0, 1), (0, 1), (0, 0)),
                      "missed_element": ((0, 0), (0, 1), (1, 1)), "wrong_arguments": ((0, 0), (0, 1), (1, 1)),
                      "hallucinated_element": ((0, 1), (0, 0), (0, 0))}
    # wrong_tool's precision: e = 1 − 2/3, 0 − 1/3; Σe² = 2/9 against 3·(1/3)(2/3) = 2/3: design effect 1/3 -> 1
    wt = scopes["wrong_tool"]
    assert wt["error_precision"].proportion.low == pytest.approx(wilson(1, 3)[0])  # 0.0615: fails 0.1
    assert wt["error_recall"].proportion.low == pytest.approx(wilson(1, 1)[0])  # 0.2065
    assert (wt["error_precision"].clears, wt["error_recall"].clears, wt["first_error_within_1"].clears) == \
        (False, True, False)  # 1 of 1 first errors: lower bound 0.2065 < 0.3
    assert scopes["missed_element"]["error_precision"].clears is False  # no evidence clears nothing
    assert not any(sc.certified for sc in c.scopes[1:])
    # a higher bar overall: recall's 0.150 fails 0.2, precision's 0.118 clears 0.1, the first errors are unjudged
    strict = certify(pairs, s, Thresholds(precision=0.1, recall=0.2), within=1)
    assert [k.clears for k in strict.overall.checks] == [True, False, None] and not strict.overall.certified


def test_cli_certify_text_and_json(files, tmp_path):  # noqa: F811
    pred, gold = map(str, files)
    args = [pred, gold, "--certify", "--min-precision", "0.1", "--min-recall", "0.1", "--min-first-error", "0.3"]
    res = invoke("align", *args + ["--json", "--out", str(tmp_path / "out")])
    assert res.exit_code == 1, res.output  # G6's step counts still differ; the verdict does not change the code
    doc = json.loads(res.stdout)["certification"]
    assert doc["certified"] is True and doc["interval"] == "wilson" and doc["within"] == 1
    assert doc["scopes"][0]["figures"]["error_precision"]["ci_low"] == pytest.approx(wilson(2, 5)[0], abs=1e-6)
    assert json.loads((tmp_path / "out" / "align.json").read_text())["certification"] == doc
    text = invoke("align", *args).stdout
    assert "overall: CERTIFIED; error types certified: none (of 5)" in text
    assert any(line.split()[:2] == ["wrong_tool", "error_precision"] and line.rstrip().endswith("fails")
               for line in text.splitlines())
    cp = invoke("align", *args + ["--interval", "clopper-pearson", "--json"])
    assert json.loads(cp.stdout)["certification"]["scopes"][0]["figures"]["error_precision"]["ci_low"] == \
        pytest.approx(0.052745, abs=1e-6)  # Beta(2, 4)'s 2.5% quantile, as above
    for bad in ([pred, gold, "--certify"], [pred, gold, "--min-recall", "0.5"]):
        r = invoke("align", *bad)
        assert r.exit_code == 2 and "error:" in r.output


def test_certify_a_judge_whose_errors_cluster_in_one_trace(tmp_path):
    # PRED marks 8 steps: all 4 of A's are right, B's 2 and C's 2 are not. Precision 4/8 is worth 8/3 steps
    # (design effect 3, as in the first test), so its bound is Wilson's on 8/3, not on 8
    gold = _write(tmp_path / "g.jsonl", [("A", 4, {i: WT for i in range(4)}), ("B", 2, {}), ("C", 2, {})], "g")
    pred = _write(tmp_path / "p.jsonl", [("A", 4, {i: WT for i in range(4)}), ("B", 2, {0: WT, 1: WT}),
                                        ("C", 2, {0: WT, 1: WT})], "p")
    s = AnalysisSettings()
    c = certify(pair(read([str(pred)], s), read([str(gold)], s)).pairs, s, Thresholds(precision=0.2))
    precision = c.overall.checks[0]
    assert precision.proportion.low == pytest.approx(wilson(4 / 3, 8 / 3)[0])  # 0.116
    assert wilson(4, 8)[0] > 0.2 and precision.clears is False  # as 8 independent steps (0.215) it would clear
