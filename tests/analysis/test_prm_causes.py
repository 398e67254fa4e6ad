"""Training data from corrections (sft, dpo) and the PRM policy that respects causes, on lines written by the
exporter's own record writer; every expected row is read off the table below.

  trace F (task "Find the cheapest flight to Oslo on May 3")
    #  type         text
    0  thought      I will search flights for May 3.
    1  action       search_flights(date='May 4')
    2  observation  3 flights found on May 4
    3  thought      The cheapest is FL-9 on May 4.
    4  message      Book FL-9.

    alice  1 wrong (origin), correction A1;  3 wrong, caused by 1 (propagated), correction A3
    bob    1 wrong (origin), correction B1;  3 wrong, caused by 1 (propagated), no correction
    carol  4 wrong (origin), correction C4 (the only one to mark 4: a minority)

  trace G (one step), alice: 0 wrong with a "correction" equal to what the agent did
"""
from __future__ import annotations

import io
import json

import pytest
from commandline import invoke

from ls_trajeval.analysis.prm import build_prm

from .conftest import deep_line, write_lines

T, F = True, False
TASK = "Find the cheapest flight to Oslo on May 3"
STEPS = [("thought", "I will search flights for May 3."), ("action", "search_flights(date='May 4')"),
         ("observation", "3 flights found on May 4"), ("thought", "The cheapest is FL-9 on May 4."),
         ("message", "Book FL-9.")]
A1, B1 = "search_flights(date='May 3')", "search_flights(date='2026-05-03')"
A3, C4 = "The search used the wrong date; search May 3 again.", "Ask before booking."
G_STEPS = [("action", "ls -la")]


@pytest.fixture
def labelled(tmp_path):
    lines = [
        deep_line("F", "alice", STEPS, {1: {"correction": A1}, 3: {"caused_by": [1], "correction": A3}}, task=TASK),
        deep_line("F", "bob", STEPS, {1: {"correction": B1}, 3: {"caused_by": [1]}}, task=TASK),
        deep_line("F", "carol", STEPS, {4: {"correction": C4}}, task=TASK),
        deep_line("G", "alice", G_STEPS, {0: {"correction": "ls -la"}}, task="list files"),
    ]
    assert [s["role"] for s in lines[0]["error_localization"]] == [None, "origin", None, "propagated", None]
    return write_lines(tmp_path / "labels.jsonl", lines)


def run(path, **kw):
    buf = io.StringIO()
    stats = build_prm([str(path)], buf, **kw)
    return [json.loads(x) for x in buf.getvalue().splitlines()], stats


PROMPT_1 = f"{TASK}\n\n[thought]\nI will search flights for May 3."
PROMPT_3 = PROMPT_1 + "\n\n[action]\nsearch_flights(date='May 4')\n\n[observation]\n3 flights found on May 4"


def test_sft_rows_are_the_corrections_of_the_steps_the_vote_calls_wrong(labelled):
    rows, stats = run(labelled, shape="sft")
    # F: step 1 (alice and bob wrong, carol right: 2 of 3) gives A1 and B1; step 3 (2 of 3) gives A3;
    # step 4 (1 of 3) is right by the vote, so carol's C4 gives nothing; G: 1 of 1
    assert rows == [{"prompt": PROMPT_1, "completion": A1}, {"prompt": PROMPT_1, "completion": B1},
                    {"prompt": PROMPT_3, "completion": A3}, {"prompt": "list files", "completion": "ls -la"}]
    assert (stats.examples, stats.corrected_steps, stats.without_correction) == (4, 3, 0)


def test_dpo_rows_pair_the_correction_with_what_the_agent_did(labelled):
    rows, stats = run(labelled, shape="dpo", with_meta=True)
    assert rows == [
        {"prompt": PROMPT_1, "chosen": A1, "rejected": "search_flights(date='May 4')", "trace_id": "F",
         "step_index": 1, "role": "origin", "annotators": ["alice@example.com"]},
        {"prompt": PROMPT_1, "chosen": B1, "rejected": "search_flights(date='May 4')", "trace_id": "F",
         "step_index": 1, "role": "origin", "annotators": ["bob@example.com"]},
        {"prompt": PROMPT_3, "chosen": A3, "rejected": "The cheapest is FL-9 on May 4.", "trace_id": "F",
         "step_index": 3, "role": "propagated", "annotators": ["alice@example.com"]}]
    assert stats.unchanged == 1  # G: the "correction" is what the agent did, no preference


def test_any_error_and_per_annotator_take_minority_corrections(labelled):
    rows, _ = run(labelled, shape="sft", merge="any-error")
    assert [r["completion"] for r in rows] == [A1, B1, A3, C4, "ls -la"]
    assert rows[3]["prompt"] == PROMPT_3 + "\n\n[thought]\nThe cheapest is FL-9 on May 4."
    rows, _ = run(labelled, shape="sft", merge="per-annotator", with_meta=True)
    assert [(r["annotators"], r["step_index"], r["completion"]) for r in rows] == [
        (["alice@example.com"], 1, A1), (["alice@example.com"], 3, A3), (["bob@example.com"], 1, B1),
        (["carol@example.com"], 4, C4), (["alice@example.com"], 0, "ls -la")]


def test_same_correction_from_two_annotators_is_one_row(tmp_path):
    path = write_lines(tmp_path / "same.jsonl", [
        deep_line("F", who, STEPS, {1: {"correction": A1}}, task=TASK) for who in ("alice", "bob")])
    rows, stats = run(path, shape="sft", with_meta=True)
    assert [(r["completion"], r["annotators"]) for r in rows] == [(A1, ["alice@example.com", "bob@example.com"])]
    # a wrong step nobody corrected gives no row and is counted
    path = write_lines(tmp_path / "bare.jsonl", [deep_line("F", "alice", STEPS, {1: {}}, task=TASK)])
    rows, stats = run(path, shape="dpo")
    assert rows == [] and stats.without_correction == 1


# ---------------------------------------------------------------- the PRM policy that respects causes
# completions (observation #2 folded into #3): #0 #1 #2+#3 #4; votes: #1 F F T, #3 F F T (propagated for both
# who marked it), #4 T T F

@pytest.mark.parametrize("after, propagated, labels, completions", [
    ("keep", "negative", [T, F, F, T], 4),
    ("cascade", "negative", [T, F, F, F], 4),
    ("causes", "negative", [T, F, F, T], 4),  # the right step after the error stays positive
    ("causes", "mark", [T, F, F, T], 4),
    ("causes", "drop", [T, F, T], 3),  # the propagated #3 is not graded; its text leads #4
])
def test_after_error_causes(labelled, after, propagated, labels, completions):
    rows, stats = run(labelled, after_error=after, propagated=propagated)
    f = rows[0]
    assert f["labels"] == labels and len(f["completions"]) == completions
    if propagated == "mark":
        assert f["propagated"] == [F, F, T, F]
    else:
        assert "propagated" not in f
    if propagated == "drop":
        assert f["completions"][2] == ("[observation]\n3 flights found on May 4\n\n"
                                       "[thought]\nThe cheapest is FL-9 on May 4.\n\nBook FL-9.")
    assert stats.propagated == (1 if after == "causes" else 0)


def test_a_tie_on_the_role_is_an_origin(tmp_path):
    # alice says #3 was caused by #1, bob marks #3 on its own: one each, so #3 is graded as an origin
    path = write_lines(tmp_path / "tie.jsonl", [
        deep_line("F", "alice", STEPS, {1: {}, 3: {"caused_by": [1]}}, task=TASK),
        deep_line("F", "bob", STEPS, {1: {}, 3: {}}, task=TASK)])
    rows, _ = run(path, after_error="causes", propagated="drop")
    assert rows[0]["labels"] == [T, F, F, T]
    rows, _ = run(path, after_error="causes", propagated="drop", merge="per-annotator")
    assert [r["labels"] for r in rows] == [[T, F, T], [T, F, F, T]]


def test_an_export_without_the_added_keys_has_only_origins(hand_export):
    keep, _ = run(hand_export, after_error="keep")
    causes, stats = run(hand_export, after_error="causes", propagated="drop")
    assert keep == causes and stats.propagated == 0


def test_both_files_load_with_datasets(labelled, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    for shape, columns in (("sft", ["prompt", "completion"]), ("dpo", ["prompt", "chosen", "rejected"])):
        out = tmp_path / f"{shape}.jsonl"
        res = invoke("prm", *[str(labelled), "-o", str(out), "--shape", shape])
        assert res.exit_code == 0, res.output
        ds = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
        assert ds.column_names == columns and all(ds.features[c].dtype == "string" for c in columns)
        assert ds.num_rows == {"sft": 4, "dpo": 3}[shape]
        assert ds[0]["prompt"] == PROMPT_1
        assert ds[2][columns[1]] == A3
    assert "wrote 3 dpo rows from 3 corrected steps (0 wrong steps without a correction, 1 correction equal to " \
           "what the agent did)" in res.output


def test_cli_refuses_options_that_do_not_apply(labelled, tmp_path):
    out = str(tmp_path / "x.jsonl")
    res = invoke("prm", *[str(labelled), "-o", out, "--propagated", "drop"])
    assert res.exit_code == 2 and "--propagated applies with --after-error causes" in res.output
    res = invoke("prm", *[str(labelled), "-o", out, "--shape", "sft", "--after-error", "truncate"])
    assert res.exit_code == 2 and "--after-error applies to step labels" in res.output
    res = invoke("prm", *[str(labelled), "-o", out, "--after-error", "causes", "--propagated",
                                           "mark"])
    assert res.exit_code == 0 and json.loads(open(out).readline())["propagated"] == [F, F, T, F]
