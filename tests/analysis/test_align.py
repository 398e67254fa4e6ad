"""`align` against figures computed by hand on a small case.

GOLD                                        PRED
G1 5 steps: #2 action/wrong_tool,           #2 action/wrong_tool, #3 action/wrong_tool
            #4 reasoning/logical_error
G2 4 steps: no error                        no error
G3 3 steps: #1 perception/missed_element    #2 perception/hallucinated_element
G4 6 steps: #5 action/wrong_arguments       #5 action/wrong_tool, #6 reasoning/logical_error
G5 2 steps (only in GOLD)                   P9 2 steps (only in PRED)
G6 4 steps                                  G6 3 steps (different step count: left out)

Per step (18 paired steps): TP = G1#2, G4#5 = 2; FP = G1#3, G3#2, G4#6 = 3; FN = G1#4, G3#1 = 2; TN = 11.
  step_accuracy 13/18; precision 2/5; recall 2/4; F1 = 2·2 / (2·2 + 3 + 2) = 4/9
  Cohen's kappa: po = 13/18, pe = (4/18)(5/18) + (14/18)(13/18) = 202/324, kappa = (234 - 202) / (324 - 202) = 32/122
First errors (0-based): G1 1/1, G2 none/none, G3 0/1, G4 4/4 -> exact 3/4, within 1: 4/4
Both mark an error on G1#2 (action = action, wrong_tool = wrong_tool) and G4#5 (action = action,
wrong_arguments != wrong_tool): category accuracy 2/2, type accuracy 1/2.
"""
from __future__ import annotations

import json

import pytest
from commandline import invoke

from ls_trajeval.analysis.align import align
from ls_trajeval.analysis.settings import AnalysisSettings, read
from ls_trajeval.cli.analysis import align_command

from .conftest import deep_line, export_line, write_lines

WT = ("incorrect", "action", "wrong_tool", "major")
WA = ("incorrect", "action", "wrong_arguments", "major")
LE = ("incorrect", "reasoning", "logical_error", "minor")
ME = ("incorrect", "perception", "missed_element", "major")
HE = ("incorrect", "perception", "hallucinated_element", "major")

GOLD = [("G1", 5, {1: WT, 3: LE}), ("G2", 4, {}), ("G3", 3, {0: ME}), ("G4", 6, {4: WA}), ("G5", 2, {}),
        ("G6", 4, {})]
PRED = [("G1", 5, {1: WT, 2: WT}), ("G2", 4, {}), ("G3", 3, {1: HE}), ("G4", 6, {4: WT, 5: LE}), ("P9", 2, {}),
        ("G6", 3, {})]


def _write(path, rows, who):
    path.write_text("".join(json.dumps(export_line(t, who, errs, "failure", 0, step_types=["action"] * n)) + "\n"
                            for t, n, errs in rows))
    return path


@pytest.fixture
def files(tmp_path):
    return _write(tmp_path / "pred.jsonl", PRED, "judge"), _write(tmp_path / "gold.jsonl", GOLD, "gold")


def test_figures_by_hand(files):
    s = AnalysisSettings()
    pred, gold = (read([str(f)], s) for f in files)
    r = align(pred, gold, s, within=1, resamples=1000, seed=1)
    assert (r.traces, r.steps) == (4, 18)
    want = {"step_accuracy": 13 / 18, "error_precision": 2 / 5, "error_recall": 2 / 4, "error_f1": 4 / 9,
            "cohen_kappa": 32 / 122, "first_error_exact": 3 / 4, "first_error_within_1": 1.0,
            "category_accuracy": 1.0, "type_accuracy": 1 / 2,
            # no cause links: the root causes are the first errors; no spans: both mark G1#2 and G4#5 whole
            "root_cause_exact": 3 / 4, "root_cause_within_1": 1.0, "evidence_f1": 1.0}
    assert {k: m.value for k, m in r.metrics.items()} == pytest.approx(want)
    for name, m in r.metrics.items():
        assert m.low <= m.value + 1e-12 and m.value - 1e-12 <= m.high, name  # the interval covers the estimate
        assert m.low < m.high or m.low == m.value == m.high, name
    assert (r.metrics["error_precision"].n, r.metrics["error_recall"].n, r.metrics["type_accuracy"].n) == (5, 4, 2)
    c = r.confusion
    assert c.loc["action", "action"] == 2 and c.loc["reasoning", "(no error)"] == 1
    assert c.loc["perception", "(no error)"] == 1 and c.loc["(no error)", "perception"] == 1
    assert c.loc["(no error)", "(no error)"] == 11 and int(c.to_numpy().sum()) == 18
    assert r.pred_only == [("P9", f"{files[0]}:5")] and r.gold_only == [("G5", f"{files[1]}:5")]
    assert r.mismatches == [{"trace_id": "G6", "pred_steps": 3, "gold_steps": 4, "pred_at": f"{files[0]}:6",
                             "gold_at": f"{files[1]}:6"}]
    g3 = next(t for t in r.per_trace if t["trace_id"] == "G3")
    assert (g3["gold_errors"], g3["pred_errors"], g3["gold_first_error"], g3["first_error_distance"]) == \
        ("#1", "#2", "#1", 1)


def test_within_k_and_no_errors(tmp_path):
    # first errors 0 vs 3: within 2 no, within 3 yes; a trace where only GOLD has an error never matches
    gold = _write(tmp_path / "g.jsonl", [("A", 5, {0: WT}), ("B", 2, {1: WT})], "g")
    pred = _write(tmp_path / "p.jsonl", [("A", 5, {3: WT}), ("B", 2, {})], "p")
    s = AnalysisSettings()
    for k, want in ((2, 0.0), (3, 0.5)):
        r = align(read([str(pred)], s), read([str(gold)], s), s, within=k, resamples=0)
        assert r.metrics[f"first_error_within_{k}"].value == want and r.metrics["first_error_exact"].value == 0
    assert r.metrics["category_accuracy"].n == 0  # no step both mark: undefined, not zero
    assert r.metrics["category_accuracy"].to_json()["value"] is None


def test_cli_json_out_and_exit_code(files, tmp_path):
    out = tmp_path / "out"
    res = invoke(files[0], files[1], "--json", "--out", out, command=align_command)
    assert res.exit_code == 1, res.output  # G6's step counts differ
    doc = json.loads(res.stdout)
    for key in ("traces", "steps", "step_accuracy", "error_precision", "error_recall", "error_f1", "cohen_kappa",
                "first_error_exact", "first_error_within_1", "category_accuracy", "type_accuracy"):
        assert key in doc, key
    assert doc["step_accuracy"]["value"] == pytest.approx(13 / 18, abs=1e-6)
    assert doc["step_accuracy"]["ci_low"] <= doc["step_accuracy"]["value"] <= doc["step_accuracy"]["ci_high"]
    assert f"{files[0]}:6: trace 'G6' has 3 steps in PRED but 4 in GOLD" in res.stderr
    assert "trace 'P9' is only in PRED" in res.stderr and "trace 'G5' is only in GOLD" in res.stderr
    assert (out / "confusion_categories.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "confusion_categories.csv").read_text().splitlines()[0] == \
        "gold \\ pred,action,perception,reasoning,(no error)"
    assert json.loads((out / "align.json").read_text())["traces"] == 4
    text = invoke(files[0], files[1], "--within", "2", command=align_command).stdout
    assert "first_error_within_2" in text and "4 traces paired (18 steps)" in text


def test_cli_nothing_paired(tmp_path):
    a = _write(tmp_path / "a.jsonl", [("X", 2, {})], "a")
    b = _write(tmp_path / "b.jsonl", [("Y", 2, {})], "b")
    res = invoke(a, b, command=align_command)
    assert res.exit_code == 2 and "no trace of PRED is in GOLD" in res.output


# ---------------------------------------------------------------- root causes and evidence
# V1 GOLD #2 [0,4) of "abcdefgh", #4 whole "0123456789" caused by #2   PRED #2 [2,6), #4 [0,5)
#    overlap 2 of 4+4 and 5 of 10+5; root causes #2 and #2
# V2 GOLD #3 whole "xy"                                                PRED #2, #3 whole: overlap 2 of 2+2;
#    root causes #3 and #2 (one apart)
# V3 no errors in either: no root cause in either (a match)
# root_cause_exact 2/3, within_1 3/3; evidence_f1 = (2·2 + 2·5 + 2·2) / (8 + 15 + 4) = 18/27

V1 = [("thought", "-"), ("action", "abcdefgh"), ("thought", "-"), ("thought", "0123456789"), ("thought", "-")]
V2 = [("thought", "-"), ("thought", "-"), ("thought", "xy"), ("thought", "-")]
V3 = [("thought", "-")] * 3


def test_root_cause_and_evidence_figures(tmp_path):
    gold = write_lines(tmp_path / "gold.jsonl", [
        deep_line("V1", "gold", V1, {1: {"evidence": [(0, 4)]}, 3: {"caused_by": [1]}}),
        deep_line("V2", "gold", V2, {2: {}}), deep_line("V3", "gold", V3, {})])
    pred = write_lines(tmp_path / "pred.jsonl", [
        deep_line("V1", "judge", V1, {1: {"evidence": [(2, 6)]}, 3: {"evidence": [(0, 5)]}}),
        deep_line("V2", "judge", V2, {1: {}, 2: {}}), deep_line("V3", "judge", V3, {})])
    res = invoke("align", *[str(pred), str(gold), "--json", "--resamples", "500",
                                             "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    want = {"root_cause_exact": (2 / 3, 3, "traces"), "root_cause_within_1": (1.0, 3, "traces"),
            "evidence_f1": (18 / 27, 3, "steps both mark")}
    for name, (value, n, unit) in want.items():
        m = doc[name]
        assert (m["value"], m["n"], m["unit"]) == (pytest.approx(value, abs=1e-6), n, unit), name
        assert m["ci_low"] <= m["value"] <= m["ci_high"], name
    assert doc["first_error_exact"]["value"] == pytest.approx(2 / 3, abs=1e-6)
    per_trace = (tmp_path / "out" / "per_trace.csv").read_text().splitlines()
    assert per_trace[0].endswith(",gold_root_cause,pred_root_cause") and per_trace[2].endswith(",#3,#2")
