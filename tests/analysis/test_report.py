"""The report's numbers against values worked out by hand (see conftest.py for the data)."""
from __future__ import annotations

import base64
import json
import re

import pandas as pd
import pytest
from commandline import invoke

from ls_trajeval.analysis.report import aggregate, build_tables, write_report
from ls_trajeval.analysis.settings import AnalysisSettings, load_settings
from ls_trajeval.cli.analysis import report_command

from .conftest import export_line


def _as_dict(df, key, value):
    return dict(zip(df[key], df[value]))


@pytest.fixture
def tables(hand_export):
    return build_tables(aggregate([str(hand_export)]))


def test_errors_by_category(tables):
    # 11 error steps, partially_correct ones included
    assert _as_dict(tables["errors_by_category"], "category", "count") == {
        "action": 4, "reasoning": 3, "perception": 2, "communication": 2}
    assert list(tables["errors_by_category"]["category"]) == ["action", "reasoning", "communication", "perception"]
    assert tables["errors_by_category"]["share"].iloc[0] == pytest.approx(4 / 11)


def test_error_types(tables):
    et = tables["error_types"]
    assert _as_dict(et, "error_type", "count") == {
        "wrong_tool": 2, "incorrect_assumption": 2, "overconfident_claim": 2, "logical_error": 1,
        "wrong_arguments": 1, "missed_element": 1, "hallucinated_element": 1, "premature_termination": 1}
    assert list(et["count"]) == sorted(et["count"], reverse=True)


def test_severity_distribution(tables):
    sev = tables["severity_distribution"]
    # ordered by |weight|; the one error without a severity is not a severity
    assert list(sev["severity"]) == ["minor", "major", "critical"]
    assert list(sev["count"]) == [2, 3, 5]
    assert list(sev["weight"]) == [1, 5, 10]


def test_final_score_stats(tables):
    fs = tables["final_score_stats"].set_index("group")
    # scores 94 90 94 100 100 70 95 90
    assert fs.loc["all", "n"] == 8
    assert fs.loc["all", "mean"] == pytest.approx(733 / 8)
    assert fs.loc["all", "median"] == 94
    assert fs.loc["all", "min"] == 70 and fs.loc["all", "max"] == 100
    assert fs.loc["overall_success=failure", "n"] == 3
    assert fs.loc["overall_success=failure", "mean"] == pytest.approx(274 / 3)
    assert fs.loc["overall_success=failure", "median"] == 90
    assert fs.loc["overall_success=partial", "mean"] == 94
    assert fs.loc["overall_success=success", "mean"] == 100
    assert fs.loc["overall_success=success", "n"] == 2
    # both the absent key and an explicit null count as missing
    assert fs.loc["overall_success=(missing)", "n"] == 2
    assert fs.loc["overall_success=(missing)", "mean"] == 82.5
    assert fs.loc["overall_success=(missing)", "median"] == 82.5


def test_failure_modes(tables):
    freq = tables["failure_modes_by_frequency"]
    key = list(zip(freq["category"], freq["error_type"]))
    assert key[:3] == [("reasoning", "incorrect_assumption"), ("action", "wrong_tool"),
                       ("communication", "overconfident_claim")]
    fm = freq.set_index(["category", "error_type"])
    # count includes the severity-less partial step; the mean weight is over known severities only
    assert fm.loc[("reasoning", "incorrect_assumption"), "count"] == 2
    assert fm.loc[("reasoning", "incorrect_assumption"), "mean_severity_weight"] == 10
    assert fm.loc[("reasoning", "incorrect_assumption"), "impact"] == 20
    assert fm.loc[("action", "wrong_tool"), "mean_severity_weight"] == 7.5
    assert fm.loc[("action", "wrong_tool"), "impact"] == 15
    assert fm.loc[("perception", "missed_element"), "impact"] == 5
    imp = tables["failure_modes_by_impact"]
    assert list(zip(imp["error_type"], imp["impact"])) == [
        ("incorrect_assumption", 20), ("wrong_tool", 15), ("overconfident_claim", 15),
        ("premature_termination", 10), ("hallucinated_element", 10), ("missed_element", 5),
        ("wrong_arguments", 1), ("logical_error", 1)]


def test_first_error(tables):
    s = _as_dict(tables["first_error_summary"], "metric", "value")
    assert s["annotations"] == 8
    assert s["annotations with an error"] == 7
    # steps as the UI numbers them: first errors at indices 0, 0, 0, 1, 1, 1, 4 are #1 #1 #1 #2 #2 #2 #5
    assert s["mean first error step (#N)"] == pytest.approx(2.0)
    assert s["median first error step (#N)"] == 2
    assert s["mean first error position (0-1)"] == pytest.approx(2 / 7)
    assert s["median first error position (0-1)"] == pytest.approx(1 / 3)
    assert _as_dict(tables["first_error_position"], "first_error_step", "count") == {"#1": 3, "#2": 3, "#5": 1}
    assert tables["first_error_position"]["step_index"].tolist() == [0, 1, 4]


def test_errors_by_step_type(tables):
    st = tables["errors_by_step_type"].set_index("step_type")
    assert st["steps"].to_dict() == {"thought": 12, "action": 10, "observation": 7}
    assert st["errors"].to_dict() == {"thought": 5, "action": 4, "observation": 2}
    assert st.loc["observation", "error_rate"] == pytest.approx(2 / 7)


def test_category_by_severity(tables):
    ct = tables["category_by_severity"].set_index("category")
    assert list(ct.columns) == ["minor", "major", "critical"]
    assert ct.loc["action"].to_dict() == {"minor": 1, "major": 1, "critical": 2}
    assert ct.loc["reasoning"].to_dict() == {"minor": 1, "major": 0, "critical": 1}
    assert ct.loc["communication"].to_dict() == {"minor": 0, "major": 1, "critical": 1}


def test_error_positions(hand_export):
    d = aggregate([str(hand_export)])
    got = sorted(round(x, 6) for x in d.errors["position"])
    want = sorted(round(x, 6) for x in [1 / 3, 1, 1 / 3, 1 / 3, 2 / 3, 0, 0, 0.5, 1, 1, 0])
    assert got == want


def test_running_curves(tmp_path):
    # 5 steps, errors at 1 (major) and 3 (critical): curve 100 95 95 85 85
    p = tmp_path / "a.jsonl"
    p.write_text(json.dumps(export_line("X", "alice", {1: ("incorrect", "action", "wrong_tool", "major"),
                                                       3: ("incorrect", "action", "wrong_tool", "critical")},
                                        "failure", 85, step_types=["thought"] * 5)) + "\n")
    d = aggregate([str(p)])
    assert list(d.curves_step[0, :6]) == [100, 95, 95, 85, 85] + [pytest.approx(float("nan"), nan_ok=True)]
    # position grid 0, .05, ... 1: step k sits at k/4
    assert d.curves_pos[0, 0] == 100 and d.curves_pos[0, 4] == 100 and d.curves_pos[0, 5] == 95
    assert d.curves_pos[0, 14] == 95 and d.curves_pos[0, 15] == 85
    assert d.curves_pos[0, -1] == 85


def test_clamp_and_weights_from_config(tmp_path):
    errs = {i: ("incorrect", "action", "destructive_action", "critical") for i in range(3)}
    p = tmp_path / "a.jsonl"
    line = export_line("X", "alice", errs, "failure", 0, step_types=["action"] * 3)
    line["score_initial"] = 25  # 25 -> 15 -> 5 -> 0 (floor), not -5
    p.write_text(json.dumps(line) + "\n")
    d = aggregate([str(p)])
    assert list(d.traces["final_score"]) == [0]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "annotation_schemes:\n"
        "  - annotation_type: trajectory_eval\n    name: error_localization\n"
        "    step_correctness: {labels: [correct, incorrect], default: correct}\n"
        "    severity_levels:\n      - {name: minor, weight: -2}\n      - {name: critical, weight: -20}\n"
        "    running_score: {initial: 50, min: 10}\n"
        "  - annotation_type: radio\n    name: overall_success\n    labels: [success, failure]\n")
    s = load_settings(str(cfg))
    d = aggregate([str(p)], s)
    assert list(d.traces["final_score"]) == [10]
    t = build_tables(d)
    assert t["failure_modes_by_impact"]["impact"].tolist() == [60]


def test_custom_scheme_names_and_outcome_key(tmp_path):
    line = export_line("X", "alice", {0: ("wrong", "c", "t", "minor")}, "ABSENT", 99,
                       step_types=["action"], scheme="steps_eval")
    line["verdict"] = "bad"
    p = tmp_path / "a.jsonl"
    p.write_text(json.dumps(line) + "\n")
    line2 = dict(line, scheme=None, trace_id="Y", annotation_id=2)
    p.write_text(json.dumps(line) + "\n" + json.dumps(line2) + "\n")  # second line: found without `scheme`
    d = aggregate([str(p)], AnalysisSettings(outcome_key="verdict"))
    assert len(d.traces) == 2 and len(d.errors) == 2
    fs = build_tables(d)["final_score_stats"].set_index("group")
    assert fs.loc["verdict=bad", "n"] == 2 and fs.loc["verdict=bad", "mean"] == 99


def test_matches_plain_pandas(hand_export):
    """Cross-check against a direct pandas analysis of the same lines."""
    import gzip

    rows, finals = [], []
    for f in sorted(hand_export.iterdir()):
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt") as fh:
            for ln in fh:
                ann = json.loads(ln)
                score = 100
                for s in ann["error_localization"]:
                    if s["correctness"] != "correct":
                        rows.append(s)
                        if s["severity"]:
                            score = max(0, score - abs(ann["severity_weights"][s["severity"]]))
                finals.append(score)
    df = pd.DataFrame(rows)
    t = build_tables(aggregate([str(hand_export)]))
    assert _as_dict(t["errors_by_category"], "category", "count") == df["error_category"].value_counts().to_dict()
    assert t["final_score_stats"].iloc[0]["mean"] == pytest.approx(pd.Series(finals).mean())


def test_write_report_html_and_files(hand_export, tmp_path):
    out = tmp_path / "rep"
    res = write_report(aggregate([str(hand_export)]), out)
    names = {p.name for p in res.files}
    assert {"report.html", "errors_by_category.csv", "final_score_stats.csv", "error_positions.png",
            "final_scores.png", "running_scores.png", "category_severity.png"} <= names
    assert "errors_by_category.parquet" in names  # pyarrow is installed here
    assert pd.read_parquet(out / "severity_distribution.parquet")["count"].tolist() == [2, 3, 5]
    html = (out / "report.html").read_text()
    uris = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(uris) == 4
    assert all(base64.b64decode(u)[:8] == b"\x89PNG\r\n\x1a\n" for u in uris)
    assert "src=\"http" not in html and "<script" not in html
    assert "premature_termination" in html
    assert pd.read_csv(out / "errors_by_category.csv")["count"].sum() == 11


def test_html_escapes_labels(tmp_path):
    line = export_line("X", "alice", {0: ("incorrect", "<script>alert(1)</script>", "t&t", "minor")},
                       "<b>ok</b>", 99, step_types=["action"])
    p = tmp_path / "a.jsonl"
    p.write_text(json.dumps(line) + "\n")
    write_report(aggregate([str(p)]), tmp_path / "rep", plots=False)
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>ok</b>" not in html


def test_cli_report(hand_export, tmp_path):
    r = invoke(hand_export, "-o", tmp_path / "r", command=report_command)
    assert r.exit_code == 0, r.output
    assert "Errors by category" in r.output and "action" in r.output
    assert (tmp_path / "r" / "report.html").exists()


def test_cli_report_bad_lines(hand_export, tmp_path):
    bad = hand_export / "zed.jsonl"
    good = json.dumps(export_line("T9", "zed", {}, "success", 100, step_types=["action"]))
    bad.write_text(good + "\n{not json\n" + json.dumps({"trace_id": "T8"}) + "\n"
                   + json.dumps(dict(json.loads(good), trace_id="T7", error_localization=[{"step_index": -1}])) + "\n")
    r = invoke(hand_export, "-o", tmp_path / "r", "-q", "--no-plots", command=report_command)
    assert r.exit_code == 1
    err = r.stderr if hasattr(r, "stderr") else r.output
    assert f"{bad}:2: invalid JSON" in err
    assert f"{bad}:3: no per-step list" in err
    assert f"{bad}:4: error_localization[0].step_index" in err
    assert "Traceback" not in r.output
    # the good lines were still reported: 8 + the one good line in zed.jsonl
    assert pd.read_csv(tmp_path / "r" / "final_score_stats.csv")["n"].iloc[0] == 9


def test_cli_report_nothing_valid(tmp_path):
    r = invoke(tmp_path / "missing.jsonl", "-o", tmp_path / "r", command=report_command)
    assert r.exit_code == 2
    assert "missing.jsonl: no such file or directory" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_potato_native_config_keys(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "annotation_schemes:\n"
        "  - annotation_type: trajectory_eval\n    name: traj\n"
        "    correctness_options: [correct, incorrect, partially_correct]\n"
        "    severities:\n      - {name: low, weight: -2}\n      - {name: high, weight: -7}\n"
        "    max_score: 50\n")
    s = load_settings(str(cfg))
    assert s.correct_labels == ("correct",) and s.partial_labels == ("partially_correct",)
    assert s.severity_weights == {"low": -2, "high": -7}
    assert (s.score_initial, s.score_min, s.scheme) == (50, 0, "traj")


def test_bad_config_is_a_usage_error(hand_export, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("annotation_schemes:\n  - annotation_type: radio\n    name: x\n    labels: [a]\n")
    r = invoke(hand_export, "--config", cfg, "-o", tmp_path / "r", command=report_command)
    assert r.exit_code == 2 and "annotation_schemes: needs one scheme with annotation_type: trajectory_eval" in r.output
    r = invoke(hand_export, "--config", tmp_path / "nope.yaml", command=report_command)
    assert r.exit_code == 2 and "nope.yaml: file not found" in r.output


def test_correct_label_option(tmp_path):
    line = export_line("X", "alice", {0: ("fine", None, None, None), 1: ("bad", "c", "t", "major")},
                       "failure", 95, step_types=["action"] * 2)
    p = tmp_path / "a.jsonl"
    p.write_text(json.dumps(line) + "\n")
    r = invoke(p, "--correct-label", "fine", "--correct-label", "correct", "-o", tmp_path / "r", "--no-plots", "-q",
               command=report_command)
    assert r.exit_code == 0, r.output
    assert pd.read_csv(tmp_path / "r" / "errors_by_category.csv")["count"].tolist() == [1]


@pytest.mark.parametrize("name", ["trajectory_eval.yaml", "coding_agent.yaml"])
def test_shipped_configs_load(name):
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "label_configs" / name
    if not path.exists():
        pytest.skip(f"{path} not shipped")
    s = load_settings(str(path))
    assert s.correct_labels == ("correct",) and "partially_correct" in s.partial_labels
    assert s.severity_weights == {"minor": -1, "major": -5, "critical": -10}
    assert s.scheme == "error_localization" and s.outcome_key == "overall_success"
