"""PRM data: label rules by hand, and the file loads with `datasets` in TRL's shape."""
from __future__ import annotations

import io
import json

import pytest
from commandline import invoke

from ls_trajeval.analysis.prm import build_prm
from ls_trajeval.cli.analysis import prm_command

from .conftest import ANNOTATIONS, write_export

T, F = True, False
W = ("incorrect", "action", "wrong_tool", "major")
P = ("partially_correct", "action", "wrong_arguments", "minor")

# Votes per step (True = correct):
#   P1 alice T F T F | bob T F T T | carol T P F T
#   P2 alice T T T   | bob P T T
#   P3 alice F T F T F | carol T T T T F
#   P4 bob F
PRM_DATA = [
    ("P1", "alice", {1: W, 3: W}, "failure", 0),
    ("P1", "bob", {1: W}, "failure", 0),
    ("P1", "carol", {1: P, 2: W}, "failure", 0),
    ("P2", "alice", {}, "success", 0),
    ("P2", "bob", {0: P}, "success", 0),
    ("P3", "alice", {0: W, 2: W, 4: W}, "failure", 0),
    ("P3", "carol", {4: W}, "failure", 0),
    ("P4", "bob", {0: W}, "failure", 0),
]


PRM_TRACES = {"P1": ["thought"] * 4, "P2": ["thought"] * 3, "P3": ["thought"] * 5, "P4": ["action"]}


@pytest.fixture
def prm_export(tmp_path):
    return write_export(tmp_path / "prm", PRM_DATA, PRM_TRACES)


def run(inputs, **kw):
    buf = io.StringIO()
    stats = build_prm([str(inputs)], buf, **kw)
    rows = [json.loads(x) for x in buf.getvalue().splitlines()]
    return rows, stats


def labels(rows):
    return [r["labels"] for r in rows]


@pytest.mark.parametrize("partial, p2", [("false", [F, T, T]), ("true", [T, T, T]), ("drop", [T, T, T])])
def test_majority(prm_export, partial, p2):
    rows, _ = run(prm_export, partial=partial)
    # P2 under "false": alice T vs bob F is a tie, and a tie is an error
    # P3: steps 0 and 2 are ties too
    assert labels(rows) == [[T, F, T, T], p2, [F, T, F, T, F], [F]]
    assert rows[0]["prompt"] == "task of P1"
    assert rows[0]["completions"] == [f"P1 step {i} (thought)" for i in range(4)]
    assert set(rows[0]) == {"prompt", "completions", "labels"}


def test_any_error(prm_export):
    rows, _ = run(prm_export, merge="any-error")
    assert labels(rows) == [[T, F, F, F], [F, T, T], [F, T, F, T, F], [F]]


@pytest.mark.parametrize("after, p1, p3", [
    ("keep", [T, F, T, T], [F, T, F, T, F]),
    ("false", [T, F, F, F], [F, F, F, F, F]),
    ("truncate", [T, F], [F]),
])
def test_after_error(prm_export, after, p1, p3):
    rows, _ = run(prm_export, after_error=after, partial="true")
    got = labels(rows)
    assert got[0] == p1 and got[2] == p3
    assert len(rows[0]["completions"]) == len(p1)


def test_per_annotator_and_drop(prm_export):
    rows, stats = run(prm_export, merge="per-annotator", partial="drop", with_meta=True)
    assert len(rows) == 8 and stats.examples == 8
    carol = next(r for r in rows if r["trace_id"] == "P1" and r["annotators"] == ["carol@example.com"])
    # her partial step 1 is left out, completions and labels alike
    assert carol["labels"] == [T, F, T]
    assert carol["completions"] == ["P1 step 0 (thought)", "P1 step 2 (thought)", "P1 step 3 (thought)"]
    bob_p2 = next(r for r in rows if r["trace_id"] == "P2" and r["annotators"] == ["bob@example.com"])
    assert bob_p2["labels"] == [T, T]
    assert stats.dropped_steps == 2


def test_meta_lists_annotators(prm_export):
    rows, _ = run(prm_export, with_meta=True)
    assert rows[0]["trace_id"] == "P1"
    assert rows[0]["annotators"] == ["alice@example.com", "bob@example.com", "carol@example.com"]


def test_loads_with_datasets(prm_export, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "prm.jsonl"
    res = invoke(prm_export, "-o", out, "--after-error", "truncate", command=prm_command)
    assert res.exit_code == 0, res.output
    import datasets

    ds = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.column_names == ["prompt", "completions", "labels"]
    assert ds.features["labels"].feature.dtype == "bool"
    assert ds.features["completions"].feature.dtype == "string"
    assert ds[0]["labels"] == [T, F] and ds.num_rows == 4


def test_cli_rejects_bad_lines_and_still_writes(hand_export, tmp_path):
    (hand_export / "broken.jsonl").write_text("[1, 2]\n")
    out = tmp_path / "p.jsonl"
    res = invoke(hand_export, "-o", out, command=prm_command)
    assert res.exit_code == 1
    assert "broken.jsonl:1: expected a JSON object" in res.output
    assert len(out.read_text().splitlines()) == 4  # T1..T4
    assert not (tmp_path / "p.jsonl.partial").exists()


def test_hand_export_majority(hand_export):
    rows, _ = run(hand_export, with_meta=True)
    by = {r["trace_id"]: r for r in rows}
    # T1 (thought action observation thought): step1 all three wrong; step2 (the observation) is context now,
    # its text leading step 3; step3 only alice
    assert by["T1"]["labels"] == [T, F, T]
    assert by["T1"]["completions"][2] == "[observation]\nT1 step 2 (observation)\n\nT1 step 3 (thought)"
    assert by["T4"]["labels"] == [F]
    assert len(ANNOTATIONS) == 8
    rows, _ = run(hand_export, with_meta=True, agent_steps=None)  # every step a completion, as before
    assert {r["trace_id"]: r["labels"] for r in rows}["T1"] == [T, F, T, T]


# ---------------------------------------------------------------- the other shapes, worked out from the votes
# codes per step (1 correct, 0 partial, -1 error):
#   P1 alice 1 -1 1 -1 | bob 1 -1 1 1 | carol 1 0 -1 1      P2 alice 1 1 1 | bob 0 1 1
#   P3 alice -1 1 -1 1 -1 | carol 1 1 1 1 -1                  P4 bob -1
# incorrect steps are "major" (1 - 5/10 = 0.5), partial ones "minor" (1 - 1/10 = 0.9)

def test_prm800k_ratings(prm_export):
    rows, _ = run(prm_export, shape="prm800k")
    # P1 step1 -1 -1 0 -> -1; P2 step0 1 vs 0 ties -> the lower, 0; P3 steps 0 and 2 tie -> -1
    assert labels(rows) == [[1, -1, 1, 1], [0, 1, 1], [-1, 1, -1, 1, -1], [-1]]
    rows, _ = run(prm_export, shape="prm800k", after_error="cascade")
    assert labels(rows)[0] == [1, -1, -1, -1] and labels(rows)[1] == [0, 1, 1]  # a 0 is no error
    rows, _ = run(prm_export, shape="prm800k", merge="any-error")
    assert labels(rows)[0] == [1, -1, -1, -1]


def test_soft_labels(prm_export):
    rows, _ = run(prm_export, shape="soft")
    got = labels(rows)
    assert got[0] == pytest.approx([1, (0.5 + 0.5 + 0.9) / 3, (1 + 1 + 0.5) / 3, (0.5 + 1 + 1) / 3])
    assert got[1] == pytest.approx([0.95, 1, 1])
    rows, _ = run(prm_export, shape="soft", after_error="cascade")
    assert labels(rows)[0] == pytest.approx([1, 1.9 / 3, 0, 0])  # the first error is step 1 (trl: F)


def test_context_steps_fold_into_prompt_and_next_step(tmp_path):
    from .conftest import write_export

    types = {"C": ["system", "thought", "action", "observation", "thought", "observation"]}
    write_export(tmp_path / "c", [("C", "alice", {2: W}, "failure", 0)], types)
    rows, stats = run(tmp_path / "c")
    (r,) = rows
    assert r["prompt"] == "task of C\n\n[system]\nC step 0 (system)"
    assert r["completions"] == ["C step 1 (thought)", "C step 2 (action)",
                                "[observation]\nC step 3 (observation)\n\nC step 4 (thought)"]
    assert r["labels"] == [T, F, T]
    assert stats.context_steps == 3  # the trailing observation judges nothing and is left out
    rows, _ = run(tmp_path / "c", agent_steps=("thought",))
    assert rows[0]["labels"] == [T, T]  # the wrong action is context now: its label is not used


@pytest.mark.parametrize("shape, dtype, first", [("trl", "bool", [T, F, T, T]), ("prm800k", "int64", [1, -1, 1, 1]),
                                                 ("soft", "float64", None)])
def test_every_shape_loads_with_datasets(prm_export, tmp_path, monkeypatch, shape, dtype, first):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / f"{shape}.jsonl"
    res = invoke(prm_export, "-o", out, "--shape", shape, command=prm_command)
    assert res.exit_code == 0, res.output
    import datasets

    ds = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.column_names == ["prompt", "completions", "labels"] and ds.num_rows == 4
    assert ds.features["labels"].feature.dtype == dtype
    if first is not None:
        assert ds[0]["labels"] == first
    else:
        assert ds[1]["labels"] == pytest.approx([0.95, 1, 1])
