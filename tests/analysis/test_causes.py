"""The report's cause tables against counts worked out by hand from this table.

  trace (agent)  steps  annotator  wrong steps (category, cause links)                         root  first
  H1 (A)         6      alice      #1 action; #3 reasoning <- #1; #4 reasoning <- #3          1     1
                        bob        #2 reasoning                                                2     2
  H2 (B)         4      alice      #0 action                                                   0     0
                        carol      #1 action; #3 reasoning, root_cause_step written as 3       3     1
                                   (a record from elsewhere: its root is not its first error)
  H3 (B)         3      bob        none                                                        -     -

  roles: alice's H1 #3 and #4 are propagated (caused by wrong steps), every other error an origin.
"""
from __future__ import annotations

import math

import pytest
from commandline import invoke

from ls_trajeval.analysis.causes import cause_tables
from ls_trajeval.analysis.report import aggregate

from .conftest import deep_line, write_lines


def tables_of(d, **kw) -> dict:
    """The cause tables of a report's data, as the report makes them."""
    return cause_tables(d.causes, d.traces, d.errors, d.by, **kw)


def steps(n):
    return [("thought", f"step {i} text") for i in range(n)]


R = {"error_category": "reasoning", "error_type": "logical_error"}


@pytest.fixture
def caused(tmp_path):
    return write_lines(tmp_path / "caused.jsonl", [
        deep_line("H1", "alice", steps(6), {1: {}, 3: {**R, "caused_by": [1]}, 4: {**R, "caused_by": [3]}},
                  metadata={"agent": "A"}),
        deep_line("H1", "bob", steps(6), {2: R}, metadata={"agent": "A"}),
        deep_line("H2", "alice", steps(4), {0: {}}, metadata={"agent": "B"}),
        deep_line("H2", "carol", steps(4), {1: {}, 3: R}, metadata={"agent": "B"}, root_cause_step=3),
        deep_line("H3", "bob", steps(3), {}, metadata={"agent": "B"}),
    ])


def test_origin_and_propagated_by_category(caused):
    t = tables_of(aggregate([str(caused)]))["errors_by_role"]
    assert t.to_dict("records") == [
        {"category": "(all)", "errors": 7, "origin": 5, "propagated": 2, "propagated_share": pytest.approx(2 / 7)},
        {"category": "action", "errors": 3, "origin": 3, "propagated": 0, "propagated_share": 0.0},
        {"category": "reasoning", "errors": 4, "origin": 2, "propagated": 2, "propagated_share": 0.5}]


def test_root_cause_against_first_error(caused):
    tables = tables_of(aggregate([str(caused)]))
    summary = dict(zip(tables["root_cause_vs_first_error"]["metric"], tables["root_cause_vs_first_error"]["value"]))
    assert summary == {"annotations with an error": 4, "root cause is the first error": 3, "root cause differs": 1,
                       "share that differs": 0.25, "mean steps apart when they differ": 2.0, "most steps apart": 2}
    assert tables["root_cause_distance"].to_dict("records") == [
        {"steps_after_first_error": 0, "annotations": 3, "share": 0.75},
        {"steps_after_first_error": 2, "annotations": 1, "share": 0.25}]


def test_per_group_with_intervals(caused):
    t = tables_of(aggregate([str(caused)], by="agent"), resamples=200)["roles_by_group"]
    a, b = t.to_dict("records")
    assert (a["agent"], a["traces"], a["errors"], a["origin"], a["propagated"]) == ("A", 1, 4, 2, 2)
    # one trace: its value is its interval
    assert (a["propagated_share"], a["propagated_share_low"], a["propagated_share_high"]) == (0.5, 0.5, 0.5)
    assert a["root_differs"] == 0 and math.isnan(a["mean_steps_apart"])
    assert (b["agent"], b["traces"], b["errors"], b["origin"], b["propagated"]) == ("B", 2, 3, 3, 0)
    # H2 alone or with H3: 1 of H2's 2 annotations with an error differs; H3 alone has none (left out)
    assert (b["root_differs"], b["root_differs_low"], b["root_differs_high"]) == (0.5, 0.5, 0.5)
    assert b["mean_steps_apart"] == 2.0


def test_report_writes_and_prints_them(caused, tmp_path):
    res = invoke("report", *[str(caused), "-o", str(tmp_path / "r"), "--by", "agent", "--no-plots",
                                              "--resamples", "50"])
    assert res.exit_code == 0, res.output
    for name in ("errors_by_role", "roles_by_group", "root_cause_vs_first_error", "root_cause_distance"):
        assert (tmp_path / "r" / f"{name}.csv").is_file()
    assert "Origin and propagated errors" in res.output and "root cause differs" in res.output
    html = (tmp_path / "r" / "report.html").read_text()
    assert "Root cause against the first error" in html and "By agent: origin and propagated errors" in html


def test_an_export_without_cause_links_has_only_origins(hand_export, tmp_path):
    tables = tables_of(aggregate([str(hand_export)]))
    roles = tables["errors_by_role"].set_index("category")
    assert roles.loc["(all)", "errors"] == 11 and roles["propagated"].sum() == 0  # conftest's table: 11 errors
    assert tables["root_cause_distance"].to_dict("records") == [
        {"steps_after_first_error": 0, "annotations": 7, "share": 1.0}]  # T2 alice marks nothing
    res = invoke("report", *[str(hand_export), "-o", str(tmp_path / "r"), "--no-plots"])
    assert res.exit_code == 0 and "Origin and propagated" not in res.output
