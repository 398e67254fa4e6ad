"""PRM data: label rules by hand, and the file loads with `datasets` in TRL's shape."""
from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner

from ls_trajeval.analysis.prm import build_prm
from ls_trajeval.cli.analysis import prm_command

from .conftest import ANNOTATIONS, write_export

T, F = True, False
I = ("incorrect", "action", "wrong_tool", "major")
P = ("partially_correct", "action", "wrong_arguments", "minor")

# Votes per step (True = correct):
#   P1 alice T F T F | bob T F T T | carol T P F T
#   P2 alice T T T   | bob P T T
#   P3 alice F T F T F | carol T T T T F
#   P4 bob F
PRM_DATA = [
    ("P1", "alice", {1: I, 3: I}, "failure", 0),
    ("P1", "bob", {1: I}, "failure", 0),
    ("P1", "carol", {1: P, 2: I}, "failure", 0),
    ("P2", "alice", {}, "success", 0),
    ("P2", "bob", {0: P}, "success", 0),
    ("P3", "alice", {0: I, 2: I, 4: I}, "failure", 0),
    ("P3", "carol", {4: I}, "failure", 0),
    ("P4", "bob", {0: I}, "failure", 0),
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
    res = CliRunner().invoke(prm_command, [str(prm_export), "-o", str(out), "--after-error", "truncate"])
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
    res = CliRunner().invoke(prm_command, [str(hand_export), "-o", str(out)])
    assert res.exit_code == 1
    assert "broken.jsonl:1: expected a JSON object" in res.output
    assert len(out.read_text().splitlines()) == 4  # T1..T4
    assert not (tmp_path / "p.jsonl.partial").exists()


def test_hand_export_majority(hand_export):
    rows, _ = run(hand_export, with_meta=True)
    by = {r["trace_id"]: r["labels"] for r in rows}
    # T1 step1: all three wrong; step2 only carol; step3 only alice
    assert by["T1"] == [T, F, T, T]
    assert by["T4"] == [F]
    assert len(ANNOTATIONS) == 8
