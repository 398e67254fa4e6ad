"""Gold labels: adjudicated, unanimous, single, majority with its tie rules, and Dawid–Skene where it must
differ from the majority."""
from __future__ import annotations

import json

import pytest

from ls_trajeval.analysis.gold import Adjudicator, build_gold, gold_line
from ls_trajeval.analysis.settings import AnalysisSettings, read
from ls_trajeval.analysis.trace_groups import group_by_trace
from ls_trajeval.core.records import parse_record

from .conftest import export_line

S = AnalysisSettings()
E = ("incorrect", "action", "wrong_tool", "major")


def _groups(tmp_path, lines):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return group_by_trace(r for r in read([str(p)], S))


def _by_trace(golds):
    return {g.record.trace_id: g for g in golds}


def _errors(gold):
    return [s.step_index for s in gold.record.steps if S.is_error(s.correctness)]


# ---------------------------------------------------------------- Dawid–Skene against the majority
#
# 21 steps in 7 traces of 3 (step s is trace D{s // 3}, step s % 3). The truth: steps 0-9 correct,
# 10-19 incorrect, and the target step 20 correct. Annotator A reports the truth everywhere. B is wrong
# on 0-3 and 10-13, C on 4-7 and 14-17 (never on the same step), and on the target B and C both say
# incorrect while A says correct.
#
# Majority: every step but the target has A plus one of B/C on the truth; the target is 2 to 1 for
# "incorrect".
#
# Dawid–Skene starts from the majority (target = incorrect: 10 tasks correct, 11 incorrect) and
# estimates each annotator's confusion from it:
#   A: P(says c | c) = 10/10,  P(says c | i) = 1/11 (the target only)
#   B: P(says i | c) = 4/10,   P(says i | i) = 7/11 (10-13 said c; the target counts as i)   C: the same
# The next E-step for the target (A says c, B and C say i), with priors 10/21 and 11/21:
#   P(c) ∝ 10/21 · 1 · 0.4 · 0.4        = 0.0762
#   P(i) ∝ 11/21 · 1/11 · 7/11 · 7/11   = 0.0193
# so its posterior is 0.80 for "correct": the annotator who agreed with the others everywhere else outweighs
# two who each erred on 8 of 21 steps; later iterations only make A look more reliable. Every other step
# keeps the truth (e.g. step 0, A c / B i / C c: P(c) ∝ 10/21 · 1 · 0.4 · 0.6 > P(i) ∝ 11/21 · 1/11 · 7/11 · 4/11).

def _ds_lines():
    truth = ["correct"] * 10 + ["incorrect"] * 10 + ["correct"]
    wrong = {"B": set(range(0, 4)) | set(range(10, 14)), "C": set(range(4, 8)) | set(range(14, 18))}
    flip = {"correct": "incorrect", "incorrect": "correct"}
    lines = []
    for who in ("A", "B", "C"):
        for t in range(7):
            errs = {}
            for k in range(3):
                s = 3 * t + k
                said = truth[s]
                if who in wrong and s in wrong[who]:
                    said = flip[said]
                if s == 20 and who != "A":
                    said = "incorrect"
                if said == "incorrect":
                    errs[k] = E
            lines.append(export_line(f"D{t}", who, errs, "failure", 0, step_types=["action"] * 3))
    return lines, truth


def test_dawid_skene_trusts_the_reliable_annotator(tmp_path):
    lines, truth = _ds_lines()
    groups = _groups(tmp_path, lines)
    maj = _by_trace(build_gold(groups.items(), S, method="majority"))
    ds = _by_trace(build_gold(groups.items(), S, method="dawid-skene"))
    for t in range(7):
        want = [k for k in range(3) if truth[3 * t + k] == "incorrect"]
        if t < 6:
            assert _errors(maj[f"D{t}"]) == want and _errors(ds[f"D{t}"]) == want, t
    # D6 holds steps 18, 19 (incorrect) and the target 20
    assert _errors(maj["D6"]) == [0, 1, 2]  # the target: B and C outvote A
    assert _errors(ds["D6"]) == [0, 1]  # Dawid–Skene sides with A
    assert ds["D6"].method == "dawid-skene" and maj["D6"].method == "majority"
    assert ds["D6"].annotators == ["A@example.com", "B@example.com", "C@example.com"]


def test_adjudicated_traces_anchor_dawid_skene(tmp_path):
    lines, _ = _ds_lines()
    # the adjudicator confirms B and C on trace D6: that trace's gold is hers, whatever the model says
    lines.append(dict(export_line("D6", "judge", {0: E, 1: E, 2: E}, "failure", 0, step_types=["action"] * 3),
                      adjudicated=True))
    golds = _by_trace(build_gold(_groups(tmp_path, lines).items(), S, method="dawid-skene",
                                 adjudicator=Adjudicator(flag="adjudicated")))
    assert golds["D6"].method == "adjudicated" and golds["D6"].annotators == ["judge@example.com"]
    assert _errors(golds["D6"]) == [0, 1, 2]


# ---------------------------------------------------------------- the simple cases, by hand

def test_adjudicated_unanimous_single(tmp_path):
    lines = [
        export_line("U", "alice", {1: E}, "failure", 95, step_types=["action"] * 3),
        export_line("U", "bob", {1: E}, "failure", 95, step_types=["action"] * 3),
        export_line("S", "alice", {0: E}, "failure", 95, step_types=["action"] * 2),
        export_line("J", "alice", {0: E}, "failure", 95, step_types=["action"] * 2),
        export_line("J", "bob", {}, "success", 100, step_types=["action"] * 2),
        dict(export_line("J", "ref", {1: E}, "partial", 95, step_types=["action"] * 2), project_id=77),
    ]
    golds = _by_trace(build_gold(_groups(tmp_path, lines).items(), S,
                                 adjudicator=Adjudicator(project_ids=frozenset({77}))))
    assert (golds["U"].method, golds["U"].annotators) == ("unanimous", ["alice@example.com", "bob@example.com"])
    assert golds["S"].method == "single"
    assert golds["J"].method == "adjudicated" and _errors(golds["J"]) == [1]
    line = gold_line(golds["J"], S)
    assert line["overall_success"] == "partial" and line["annotator"] == "gold"
    assert line["project_id"] == 1  # the line points at the original task, not the review project's copy
    assert line["gold"] == {"method": "adjudicated", "annotators": ["ref@example.com"], "ties": []}
    by_email = Adjudicator(annotators=frozenset({"ref@example.com"}))
    assert _by_trace(build_gold(_groups(tmp_path, lines).items(), S, adjudicator=by_email))["J"].method == "adjudicated"


def test_majority_and_its_ties(tmp_path):
    P = ("partially_correct", "action", "wrong_arguments", "minor")
    C = ("incorrect", "action", "wrong_tool", "critical")
    lines = [
        # step 0: incorrect, incorrect, correct -> incorrect; types wrong_tool x2 vs (none) -> wrong_tool;
        #         severities major, critical -> tie, the more severe wins
        # step 1: partially_correct vs correct vs incorrect -> three-way tie: the stricter error, incorrect,
        #         with the type and severity of the one who said incorrect (bob: wrong_tool, major)
        # step 2: all correct
        export_line("M", "alice", {0: E, 1: P}, "failure", 0, step_types=["action"] * 3),
        export_line("M", "bob", {0: C, 1: E}, "failure", 0, step_types=["action"] * 3),
        export_line("M", "carol", {}, "success", 0, step_types=["action"] * 3),
    ]
    (g,) = build_gold(_groups(tmp_path, lines).items(), S)
    st = g.record.steps
    assert (st[0].correctness, st[0].error_type, st[0].severity) == ("incorrect", "wrong_tool", "critical")
    assert (st[1].correctness, st[1].error_type, st[1].severity) == ("incorrect", "wrong_tool", "major")
    assert st[2].correctness == "correct"
    assert g.ties == ["#1 severity", "#2 correctness"]
    assert g.record.labels["overall_success"] == "failure"  # 2 to 1
    assert st[0].rationale == "alice@example.com: why; bob@example.com: why"


def test_gold_line_reads_back(hand_export, tmp_path):
    groups = group_by_trace(r for r in read([str(hand_export)], S))
    golds = build_gold(groups.items(), S)
    lines = [gold_line(g, S) for g in golds]
    by = {x["trace_id"]: x for x in lines}
    # T1: step 1 marked by all three (incorrect, incorrect, partial) -> incorrect; the two who said incorrect
    #     both chose wrong_tool, with major and critical: a tie -> critical; steps 2 and 3: one vote of three
    t1 = by["T1"]
    assert [s["correctness"] for s in t1["error_localization"]] == ["correct", "incorrect", "correct", "correct"]
    assert t1["error_localization"][1]["severity"] == "critical" and t1["final_score"] == 90
    assert t1["first_error_step"] == 1 and t1["n_errors"] == 1 and t1["worst_severity"] == "critical"
    assert by["T4"]["gold"]["method"] == "single"
    for n, line in enumerate(lines, 1):
        rec = parse_record(json.loads(json.dumps(line)), "gold.jsonl", n)
        assert rec.trace_id == line["trace_id"] and rec.annotator == "gold"
        assert "gold" not in rec.labels  # the gold block is not a whole-trace label


def test_unknown_method(hand_export):
    with pytest.raises(ValueError, match="majority, dawid-skene"):
        build_gold([], S, method="vote")


# ---------------------------------------------------------------- the added keys
# M (5 steps), three annotators:
#   alice  #2 wrong, evidence [0,3), correction "fix2-a";  #4 wrong caused by #2, correction "fix4"
#   bob    #2 wrong, evidence [0,3), correction "fix2-b";  #4 wrong caused by #2
#   carol  #2 correct;                                     #4 wrong on its own, evidence [1,2);  #5 wrong
# majority: #2 wrong (alice, bob agree): evidence [0,3); corrections tie 1-1, the first (alice's) wins, not listed
#           #4 wrong (all three): links (#2) 2 of 3, evidence none (whole step) 2 of 3, correction "fix4"
#           #5 correct (1 of 3); so #4 is propagated and the root cause is #2

M = [("thought", f"M step {i}") for i in range(5)]


def _lines(tmp_path, lines):
    from .conftest import write_lines

    return group_by_trace(read([str(write_lines(tmp_path / "m.jsonl", lines))], S))


def test_majority_gold_carries_links_evidence_and_corrections(tmp_path):
    from .conftest import deep_line

    groups = _lines(tmp_path, [
        deep_line("M", "alice", M, {1: {"evidence": [(0, 3)], "correction": "fix2-a"},
                                    3: {"caused_by": [1], "correction": "fix4"}}),
        deep_line("M", "bob", M, {1: {"evidence": [(0, 3)], "correction": "fix2-b"}, 3: {"caused_by": [1]}}),
        deep_line("M", "carol", M, {3: {"evidence": [(1, 2)]}, 4: {}})])
    (gold,) = build_gold(groups.items(), S)
    assert (gold.method, gold.ties) == ("majority", [])
    line = gold_line(gold, S)
    steps = line["error_localization"]
    assert [s["correctness"] for s in steps] == ["correct", "incorrect", "correct", "incorrect", "correct"]
    assert steps[1]["evidence"] == [{"start": 0, "end": 3, "text": "M s"}] and steps[1]["correction"] == "fix2-a"
    assert (steps[3]["caused_by"], steps[3]["evidence"], steps[3]["correction"]) == ([1], [], "fix4")
    assert [s["role"] for s in steps] == [None, "origin", None, "propagated", None]
    assert line["root_cause_step"] == 1
    back = parse_record(json.loads(json.dumps(line)), "gold", 1)
    assert back.steps[3].caused_by == (1,) and back.root_cause_step == 1


def test_links_decide_unanimity_and_a_tie_is_listed(tmp_path):
    from .conftest import deep_line

    same = {1: {"correction": "a"}, 3: {"caused_by": [1]}}
    groups = _lines(tmp_path, [deep_line("M", "alice", M, same), deep_line("M", "bob", M, same)])
    (gold,) = build_gold(groups.items(), S)
    assert gold.method == "unanimous" and gold_line(gold, S)["error_localization"][3]["role"] == "propagated"
    # the same labels, but bob links #4 to nothing: not unanimous; the links tie 1-1, alice's come first
    groups = _lines(tmp_path, [deep_line("M", "alice", M, same), deep_line("M", "bob", M, {1: {}, 3: {}})])
    (gold,) = build_gold(groups.items(), S)
    assert (gold.method, gold.ties) == ("majority", ["#4 caused_by"])
    assert gold_line(gold, S)["error_localization"][3]["caused_by"] == [1]
