"""The disagreement finder on the hand-built export of conftest.py; every figure worked out by hand below.

T1 (4 steps, alice/bob/carol):
  step 0  all correct                                      -> no dispute
  step 1  incorrect / incorrect / partially_correct        -> correctness: modal 2 of 3, 1 - 2/3 = 1/3
          types wrong_tool, wrong_tool, wrong_arguments    -> type: 1 - 2/3 = 1/3, x 0.5 = 1/6
          severities major, critical, minor (ranks 1 2 0)  -> severity: modal 1 of 3, 2/3 x 0.25 = 1/6
  step 2  correct / correct / incorrect                    -> 1/3
  step 3  incorrect / correct / correct                    -> 1/3
  first errors 1, 1, 1                                     -> no dispute
  disputedness 2/3 + 1/3 + 1/3 = 4/3; steps in dispute #2, #3, #4
T2 (3 steps, alice/bob): step 0 correct vs partially_correct -> 1/2; first errors none vs 0 -> 1/2; total 1
T3 (5 steps, alice/carol): step 0 -> 1/2, step 2 -> 1/2, step 4 same type, critical vs major -> 1/2 x 0.25;
   first errors 0 vs 4 -> 1/2; total 1.625
T4 has one annotator: nothing to compare.
"""
from __future__ import annotations

import json

import pytest

from ls_trajeval.analysis.disagreement import Thresholds, find_disagreements, rank_disagreements
from ls_trajeval.analysis.settings import AnalysisSettings, read
from ls_trajeval.analysis.trace_groups import group_by_trace, iter_trace_groups

from .conftest import deep_line, export_line, write_lines

S = AnalysisSettings()


@pytest.fixture
def groups(hand_export):
    return group_by_trace(r for r in read([str(hand_export)], S))


def test_t1_by_hand(groups):
    d = find_disagreements(groups["T1"], S)
    by = {s.step_index: s for s in d.steps}
    assert sorted(by) == [1, 2, 3]
    assert by[1].kinds == ("correctness", "error_type", "severity")
    assert by[1].score == pytest.approx(1 / 3 + 1 / 6 + 1 / 6)
    assert by[2].kinds == ("correctness",) and by[2].score == pytest.approx(1 / 3)
    assert not d.first_error_disputed
    assert d.score == pytest.approx(4 / 3)
    s = d.summary()
    assert s["steps_in_dispute"] == "#2, #3, #4"
    assert (s["correctness_disputes"], s["error_type_disputes"], s["severity_disputes"]) == (3, 1, 1)
    assert s["first_errors"] == "alice@example.com: #2; bob@example.com: #2; carol@example.com: #2"
    assert by[1].labels["carol@example.com"].error_type == "wrong_arguments"
    assert str(by[1].labels["bob@example.com"]) == "incorrect action/wrong_tool critical"


def test_ranking_and_first_error(groups):
    ranked = rank_disagreements(groups.items(), S)
    assert [(d.trace_id, round(d.score, 4)) for d in ranked] == [("T3", 1.625), ("T1", 1.3333), ("T2", 1.0)]
    t2 = ranked[2]
    assert t2.first_error_disputed and t2.first_errors == {"alice@example.com": None, "bob@example.com": 0}
    assert t2.summary()["first_errors"] == "alice@example.com: none; bob@example.com: #1"
    json.dumps([d.to_json() for d in ranked])  # JSON-able for the HTML report and the adjudication list


def test_thresholds(groups):
    # first errors 0 and 4 are within 4 steps: T3 loses its 1/2 and falls below T1
    ranked = rank_disagreements(groups.items(), S, Thresholds(first_error_steps=4))
    assert [(d.trace_id, round(d.score, 4)) for d in ranked] == [("T1", 1.3333), ("T3", 1.125), ("T2", 1.0)]
    # correctness needs a modal share under 0.6: 2 of 3 (T1) is agreement enough, 1 of 2 (T2, T3) is not
    t1 = find_disagreements(groups["T1"], S, Thresholds(correctness=0.6))
    assert [s.step_index for s in t1.steps] == [1] and t1.steps[0].kinds == ("error_type", "severity")
    # severities one rank apart pass with severity_ranks=1 (T3 step 4: major vs critical)
    t3 = find_disagreements(groups["T3"], S, Thresholds(severity_ranks=1))
    assert [s.step_index for s in t3.steps] == [0, 2]


def test_unanimous_trace_is_not_listed(tmp_path):
    e = ("incorrect", "action", "wrong_tool", "major")
    p = tmp_path / "u.jsonl"
    p.write_text("".join(json.dumps(export_line("U", a, {1: e}, "failure", 95, step_types=["action"] * 3)) + "\n"
                         for a in ("alice", "bob")))
    g = group_by_trace(read([str(p)], S))
    assert not find_disagreements(g["U"], S).disputed
    assert rank_disagreements(g.items(), S) == []


def test_streaming_groups_and_latest_line_wins(hand_export, tmp_path):
    got = {t: sorted(r.annotator.split("@")[0] for r in rs)
           for t, rs in iter_trace_groups([str(hand_export)], S, min_annotators=2)}
    assert got == {"T1": ["alice", "bob", "carol"], "T2": ["alice", "bob"], "T3": ["alice", "carol"]}
    e = ("incorrect", "action", "wrong_tool", "major")
    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in [
        export_line("X", "alice", {0: e}, "failure", 95, step_types=["action"] * 2, ann_id=1),
        export_line("X", "bob", {}, "success", 100, step_types=["action"] * 2, ann_id=2),
        export_line("X", "alice", {}, "success", 100, step_types=["action"] * 2, ann_id=3)]))
    ((tid, recs),) = list(iter_trace_groups([str(p)], S, min_annotators=2))
    assert [r.annotation_id for r in recs] == [3, 2]  # alice's later line replaced her first
    assert not find_disagreements(recs, S).disputed


def test_one_trace_only(groups):
    with pytest.raises(ValueError):
        find_disagreements(groups["T1"] + groups["T2"], S)


def test_the_summary_is_the_review_tasks_columns(groups):
    from ls_trajeval.core.fields import DISPUTE_FIELDS

    d = find_disagreements(groups["T1"], S)
    assert tuple(d.summary()) == DISPUTE_FIELDS
    assert d.to_json()["annotators"] == [r.annotator for r in groups["T1"]]  # the list, not its length


# ---------------------------------------------------------------- roles and root causes
# W: alice #2 wrong, #4 wrong caused by #2 (propagated); bob #2 and #4 wrong on their own: the role of #4 is
#    disputed, 1 - 1/2 = 1/2, x 0.25 = 0.125; the root causes are the first errors (#2 each): no root dispute
# X: both mark #2 and #4; alice's record (from elsewhere) names #4 the root cause, bob's is #2: 1 - 1/2 = 1/2


def _trace(tmp_path, name, marks_a, marks_b, **alice):
    steps = [("thought", f"s{i}") for i in range(5)]
    path = write_lines(tmp_path / f"{name}.jsonl", [deep_line(name, "alice", steps, marks_a, **alice),
                                                    deep_line(name, "bob", steps, marks_b)])
    return list(read([str(path)], S))


def test_a_role_dispute(tmp_path):
    d = find_disagreements(_trace(tmp_path, "W", {1: {}, 3: {"caused_by": [1]}}, {1: {}, 3: {}}), S)
    (step,) = d.steps
    assert (step.number, step.kinds, step.score) == ("#4", ("role",), 0.125)
    assert str(step.labels["alice@example.com"]) == "incorrect action/wrong_arguments major propagated"
    assert not d.root_cause_disputed and d.score == 0.125
    s = d.summary()
    assert (s["role_disputes"], s["root_cause_disputed"]) == (1, False)
    assert s["root_causes"] == "alice@example.com: #2; bob@example.com: #2"


def test_a_root_cause_dispute_beyond_the_first_error(tmp_path):
    recs = _trace(tmp_path, "X", {1: {}, 3: {}}, {1: {}, 3: {}}, root_cause_step=3)
    d = find_disagreements(recs, S)
    assert d.steps == [] and not d.first_error_disputed
    assert d.root_cause_disputed and d.score == 0.5
    assert d.summary()["root_causes"] == "alice@example.com: #4; bob@example.com: #2"
    assert not find_disagreements(recs, S, Thresholds(root_cause_steps=2)).disputed
