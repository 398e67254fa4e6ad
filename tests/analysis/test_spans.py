"""Agreement on evidence spans and on root causes, against hand computations.

  trace S, two annotators; the texts' lengths decide the whole-step marks
    step  text (length)              alice                      bob               pair F1 (2|A∩B| / (|A|+|B|))
    #2    "abcdefghij" (10)          [2,5) and [4,6) = [2,6)    [4,8)             2·2 / (4+4)   = 0.5
    #4    "0123456789ABCDEFGHIJ" (20) whole step: 20 chars      [0,5)             2·5 / (20+5)  = 0.4
    #5    "xyz" (3)                  whole step                 not marked        no pair
    #6    "uvwxyz" (6)               whole step                 whole step        2·6 / (6+6)   = 1
  pooled: (4 + 10 + 12) / (8 + 25 + 12) = 26/45; mean (0.5 + 0.4 + 1) / 3 = 19/30; same characters 1 of 3

  root causes (first errors, no cause links): S alice #2, bob #2; trace U alice #3, bob #4
"""
from __future__ import annotations

import pytest

from ls_trajeval.analysis.agreement import assess, format_table
from ls_trajeval.analysis.spans import merge, overlap, pair_f1

from .conftest import deep_line, write_lines

S = [("thought", "-"), ("thought", "abcdefghij"), ("thought", "-"), ("thought", "0123456789ABCDEFGHIJ"),
     ("thought", "xyz"), ("thought", "uvwxyz")]
U = [("thought", f"u{i}") for i in range(5)]


def test_interval_arithmetic():
    assert merge([(4, 6), (2, 5), (9, 9), (6, 7)]) == ((2, 7),)
    assert overlap(((0, 3), (5, 10)), ((2, 6), (8, 20))) == 1 + 1 + 2
    assert pair_f1(((0, 4),), ((2, 6),)) == pytest.approx(2 * 2 / 8)
    assert pair_f1((), ()) == 1.0  # the whole of an empty step, twice


@pytest.fixture
def spans_export(tmp_path):
    return write_lines(tmp_path / "spans.jsonl", [
        deep_line("S", "alice", S, {1: {"evidence": [(2, 5), (4, 6)]}, 3: {}, 4: {}, 5: {}}),
        deep_line("S", "bob", S, {1: {"evidence": [(4, 8)]}, 3: {"evidence": [(0, 5)]}, 5: {}}),
        deep_line("U", "alice", U, {2: {}}),
        deep_line("U", "bob", U, {3: {}}),
    ])


def test_evidence_and_root_cause_agreement(spans_export):
    r = assess([str(spans_export)])
    ev = r.statistics["evidence"]
    assert (ev["step_pairs"], ev["pairs_with_a_span"]) == (3, 2)
    assert ev["char_f1"] == pytest.approx(26 / 45)
    assert ev["mean_f1"] == pytest.approx(19 / 30)
    assert ev["exact"] == pytest.approx(1 / 3)
    rc = r.root_cause
    assert (rc["pairs"], rc["exact"], rc["within_1"]) == (2, 0.5, 1.0)
    doc = r.to_json()
    assert doc["root_cause_step"]["within_1"] == 1.0 and doc["statistics"]["evidence"]["step_pairs"] == 3
    text = format_table(r)
    assert "root-cause step: 2 annotator pairs, exact 0.500, within ±1 1.000" in text
    assert "evidence: 3 annotator pairs on steps both mark wrong (2 with a span), character F1 0.578" in text


def test_a_root_cause_apart_from_the_first_error(tmp_path):
    # bob's record (from elsewhere) names #5 as the root cause, though his first error is #3
    path = write_lines(tmp_path / "r.jsonl", [deep_line("U", "alice", U, {3: {}, 4: {}}),
                                              deep_line("U", "bob", U, {2: {}, 4: {}}, root_cause_step=4)])
    r = assess([str(path)])
    assert (r.first_error["exact"], r.first_error["within_2"]) == (0.0, 1.0)
    assert (r.root_cause["exact"], r.root_cause["within_1"]) == (0.0, 1.0)


def test_an_export_without_the_added_keys(hand_export):
    r = assess([str(hand_export)], k=1)
    # no cause links: every root cause is the first error
    assert {k: r.root_cause[k] for k in ("pairs", "exact", "within_1")} == \
        {k: r.first_error[k] for k in ("pairs", "exact", "within_1")}
    # no spans: every pair of whole-step marks of one step agrees on every character
    ev = r.statistics["evidence"]
    assert ev["pairs_with_a_span"] == 0 and ev["char_f1"] == 1.0 and ev["exact"] == 1.0
