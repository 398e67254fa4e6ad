"""`report --by`, the traces worst first, the annotators, and agreement in the HTML report, against figures worked
out by hand from the lines below.

  agent    trace  steps  errors (step: category severity)          final  lead_time (alice / bob)
  planner  P1     4      #2 action major                           95     10
  planner  P2     2      -                                         100    20
  planner  P3     4      #3 reasoning minor, #4 action major       94     30
  coder    C1     5      -                                         100    40 / 50 (bob: no error either)
  coder    C2     5      #5 reasoning critical                     90     60

Per agent (alice's lines; bob's one line on C1 counts for the coder too):
  planner: 10 steps, 3 errors -> error rate 0.3 (action 2/10, reasoning 1/10); scores 95, 100, 94 -> 96.333;
           2 of 3 with an error; first errors at positions 1/3 and 2/3 -> 0.5, steps #2 and #3 -> #2.5
  coder:   15 steps (C1 twice), 1 error -> 1/15; scores 100, 100, 90 -> 96.667; 1 of 3 with an error; position 1
Bootstrap, traces resampled within the agent: planner's error rate is 0 when only P2 is drawn and 0.5 when only
P3 (each 1/27 of the resamples, more than the 2.5% in each tail), so its interval is [0, 0.5]; the coder's C1
unit (2 annotations, 10 steps, no error) and C2 (5 steps, 1 error) give 0 or 1/5 at the extremes (1/4 each):
[0, 0.2].
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from commandline import invoke

from ls_trajeval.analysis.agreement import assess
from ls_trajeval.analysis.report import aggregate, write_report
from ls_trajeval.cli.analysis import report_command

from .conftest import export_line

A = ("incorrect", "action", "wrong_tool", "major")
R1 = ("incorrect", "reasoning", "logical_error", "minor")
R10 = ("incorrect", "reasoning", "logical_error", "critical")
ROWS = [  # trace, agent, steps, errors, final, lead time, annotator, task id
    ("P1", "planner", 4, {1: A}, 95, 10, "alice", 11),
    ("P2", "planner", 2, {}, 100, 20, "alice", 12),
    ("P3", "planner", 4, {2: R1, 3: A}, 94, 30, "alice", 13),
    ("C1", "coder", 5, {}, 100, 40, "alice", 14),
    ("C1", "coder", 5, {}, 100, 50, "bob", 14),
    ("C2", "coder", 5, {4: R10}, 90, 60, "alice", 15),
]


@pytest.fixture
def export(tmp_path):
    p = tmp_path / "agents.jsonl"
    lines = []
    for tid, agent, n, errs, final, lead, who, task in ROWS:
        line = export_line(tid, who, errs, "failure" if errs else "success", final, step_types=["action"] * n)
        line.update(metadata={"agent": agent, "run": 7}, lead_time=lead, task_id=task, project_id=4)
        lines.append(json.dumps(line))
    p.write_text("\n".join(lines) + "\n")
    return p


def test_groups_by_trace_metadata(export, tmp_path):
    out = write_report(aggregate([str(export)], by="agent"), tmp_path / "r", plots=False, resamples=2000, seed=3)
    g = out.tables["groups"].set_index("agent")
    assert list(g.index) == ["coder", "planner"]  # most annotations first (3 = 3: then by name)
    assert g.loc["planner", ["annotations", "traces", "steps", "errors"]].tolist() == [3, 3, 10, 3]
    assert g.loc["coder", ["annotations", "traces", "steps", "errors"]].tolist() == [3, 2, 15, 1]
    assert g.loc["planner", "error_rate"] == pytest.approx(0.3)
    assert g.loc["coder", "error_rate"] == pytest.approx(1 / 15)
    assert g.loc["planner", "mean_final_score"] == pytest.approx(289 / 3)
    assert g.loc["coder", "mean_final_score"] == pytest.approx(290 / 3)
    assert g.loc["planner", "share_with_error"] == pytest.approx(2 / 3)
    assert g.loc["planner", "first_error_position"] == pytest.approx(0.5)
    assert g.loc["planner", "first_error_step"] == pytest.approx(2.5)  # #2 and #3
    assert g.loc["coder", "first_error_position"] == 1.0 and g.loc["coder", "first_error_step"] == 5
    assert (g.loc["planner", "error_rate_low"], g.loc["planner", "error_rate_high"]) == (0.0, 0.5)
    assert (g.loc["coder", "error_rate_low"], g.loc["coder", "error_rate_high"]) == (0.0, pytest.approx(0.2))
    # a resample of C1 alone has no first error: the interval is over the resamples where there is one
    assert (g.loc["coder", "first_error_position_low"], g.loc["coder", "first_error_position_high"]) == (1.0, 1.0)
    for f in ("error_rate", "mean_final_score", "share_with_error", "first_error_position", "first_error_step"):
        for agent in g.index:
            assert g.loc[agent, f"{f}_low"] <= g.loc[agent, f] <= g.loc[agent, f"{f}_high"], (agent, f)
    c = out.tables["group_error_rates"].set_index(["agent", "category"])["error_rate"]
    assert c.to_dict() == pytest.approx({("coder", "action"): 0, ("coder", "reasoning"): 1 / 15,
                                         ("planner", "action"): 0.2, ("planner", "reasoning"): 0.1})


def test_a_record_field_and_a_missing_key(export, tmp_path):
    g = write_report(aggregate([str(export)], by="annotator"), tmp_path / "a", plots=False, resamples=0) \
        .tables["groups"].set_index("annotator")
    assert g.loc["bob@example.com", ["annotations", "steps", "errors"]].tolist() == [1, 5, 0]
    assert pd.isna(g.loc["bob@example.com", "error_rate_low"])  # resamples=0: no intervals
    g = write_report(aggregate([str(export)], by="model"), tmp_path / "m", plots=False, resamples=0) \
        .tables["groups"]
    assert g["model"].tolist() == ["(missing)"] and g["annotations"].tolist() == [6]
    g = write_report(aggregate([str(export)], by="metadata.run"), tmp_path / "n", plots=False, resamples=0) \
        .tables["groups"]
    assert g["metadata.run"].tolist() == ["7"]


def test_traces_worst_first_with_links_and_annotators(export, tmp_path):
    out = write_report(aggregate([str(export)], by="agent"), tmp_path / "r", plots=False, resamples=0,
                       task_link=lambda p, t: f"http://ls:8080/projects/{p}/data?task={t}")
    t = out.tables["traces_worst_first"]
    # mean final scores: C2 90, P3 94, P1 95, then C1 and P2 at 100 without errors: by trace id
    assert t["trace_id"].tolist() == ["C2", "P3", "P1", "C1", "P2"]
    assert t["first_errors"].tolist() == ["#5", "#3", "#2", "none, none", "none"]
    assert t.loc[0, "link"] == "http://ls:8080/projects/4/data?task=15" and t.loc[0, "agent"] == "coder"
    a = out.tables["annotators"].set_index("annotator")
    # alice: 5 annotations, errors 1 + 0 + 2 + 0 + 1 = 4 -> 0.8 per trace; scores mean 479 / 5; lead 10..60 without 50
    assert a.loc["alice@example.com", "errors_per_trace"] == pytest.approx(0.8)
    assert a.loc["alice@example.com", "mean_final_score"] == pytest.approx(479 / 5)
    assert a.loc["alice@example.com", "seconds_per_trace"] == pytest.approx(32)
    assert a.loc["alice@example.com", "median_seconds_per_trace"] == 30
    assert a.loc["bob@example.com", ["annotations", "seconds_per_trace"]].tolist() == [1, 50]
    html = (tmp_path / "r" / "report.html").read_text()
    assert '<a href="http://ls:8080/projects/4/data?task=15">open</a>' in html
    assert "By agent: errors, scores and the first error" in html


def test_agreement_and_adjudication_list_in_the_html(hand_export, tmp_path):
    # hand_export: the disagreement finder ranks T3 (1.625), T1 (4/3), T2 (1): tests/analysis/test_agreement.py
    agreement = assess([str(hand_export)], k=1)
    out = write_report(aggregate([str(hand_export)]), tmp_path / "r", plots=False, agreement=agreement,
                       task_link=lambda p, t: f"http://ls/projects/{p}/data?task={t}")
    adj = out.tables["adjudication"]
    assert adj["trace_id"].tolist() == ["T3", "T1", "T2"]
    assert adj["steps_in_dispute"].tolist() == ["#1, #3, #5", "#2, #3, #4", "#1"]
    html = (tmp_path / "r" / "report.html").read_text()
    assert "Adjudication list" in html and "Agreement between annotators" in html
    assert html.count('<a href="http://ls/projects/1/data?task=1">open</a>') >= 3
    assert set(out.tables["agreement"]["what"]) >= {"correctness", "is_error", "severity"}


def test_cli_by_and_url(export, tmp_path):
    r = invoke(export, "--by", "agent", "--url", "http://ls:8080/", "-o", tmp_path / "r", "--no-plots",
               command=report_command)
    assert r.exit_code == 0, r.output
    assert "By agent (95% intervals)" in r.output and "planner" in r.output
    assert "0.3 [0, 0.5]" in r.output  # planner's error rate and its interval (see the module docstring)
    t = pd.read_csv(tmp_path / "r" / "traces_worst_first.csv")
    assert t.loc[0, "link"] == "http://ls:8080/projects/4/data?task=15"
    g = pd.read_csv(tmp_path / "r" / "groups.csv")
    assert list(g.columns[:5]) == ["agent", "annotations", "traces", "steps", "errors"]


def test_a_group_of_one_trace_has_its_value_as_interval(export, tmp_path):
    g = write_report(aggregate([str(export)], by="trace_id"), tmp_path / "t", plots=False).tables["groups"]
    p1 = g.set_index("trace_id").loc["P1"]
    assert (p1["error_rate"], p1["error_rate_low"], p1["error_rate_high"]) == (0.25, 0.25, 0.25)


def test_by_a_key_no_trace_has_warns_names_the_keys_there_and_exits_1(export, tmp_path):
    """A newcomer's typo would otherwise put every annotation under "(missing)" and exit 0."""
    r = invoke(export, "--by", "agnet", "-o", tmp_path / "r", "--no-plots", "-q", command=report_command)
    assert r.exit_code == 1, r.output
    assert r.stderr.splitlines()[-1] == (
        "warning: --by: no annotation has 'agnet', in its trace metadata or as a field of its line (the trace "
        "metadata keys there are: agent, run; or a field such as annotator): every one is under (missing)")
    g = pd.read_csv(tmp_path / "r" / "groups.csv")  # the report is still written, all of it one group
    assert g["agnet"].tolist() == ["(missing)"] and g["annotations"].tolist() == [6]


def test_by_a_key_some_traces_lack_warns_with_their_count(export, tmp_path):
    lines = export.read_text().splitlines()
    first = json.loads(lines[0])
    del first["metadata"]["agent"]  # P1 (alice) says no agent
    export.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    r = invoke(export, "--by", "agent", "-o", tmp_path / "r", "--no-plots", "-q", command=report_command)
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines() == ["warning: --by: 1 of 6 annotations have no 'agent': they are grouped under "
                                     "(missing)"]
    assert sorted(pd.read_csv(tmp_path / "r" / "groups.csv")["agent"]) == ["(missing)", "coder", "planner"]
    r = invoke(export, "--by", "run", "-o", tmp_path / "r2", "--no-plots", "-q", command=report_command)
    assert (r.exit_code, r.stderr) == (0, "")  # every line has it: nothing to say
