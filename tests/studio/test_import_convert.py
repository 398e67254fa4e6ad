"""``ls-trajeval import --format auto``: real agent logs converted on the fly into a real Label Studio.

The expected counts come from the source files (one trace per SWE-agent run, per Inspect sample and
epoch, per Claude Code session, per Who&When record), not from the converters.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from commandline import invoke

from ls_trajeval.studio import client as studio

pytestmark = pytest.mark.studio

KINDS = ("swe_agent", "inspect_ai", "claude_code", "who_and_when")


def traces_in_sources(real: Path) -> int:
    n = len(list((real / "swe_agent").glob("*.traj"))) + len(list((real / "who_and_when").glob("*.json")))
    for log in (real / "inspect_ai").glob("*.json"):
        n += len({(s["id"], s["epoch"]) for s in json.loads(log.read_text())["samples"]})
    for session in (real / "claude_code").glob("*.jsonl"):
        recs = [json.loads(ln) for ln in session.read_text().splitlines() if ln.strip()]
        n += len({(r["sessionId"], bool(r.get("isSidechain"))) for r in recs if r.get("type") in ("user", "assistant")})
    return n


@pytest.fixture(scope="module")
def real_inputs(fixtures_dir, tmp_path_factory) -> list[Path]:
    real = fixtures_dir / "real"
    base = tmp_path_factory.mktemp("real")
    dirs = []
    for kind in KINDS:
        shutil.copytree(real / kind, base / kind)
        dirs.append(base / kind)
    return dirs


@pytest.fixture(scope="module")
def imported(ls_env, ls_client, real_inputs):
    r = invoke("import", "--create", "real logs", "--format", "auto", "--quiet", *real_inputs)
    assert r.exit_code == 0, r.output
    pid = int(re.search(r"project (\d+): imported", r.output).group(1))
    return pid, r


def tasks_of(client, pid):
    return list(studio.iter_tasks(client, pid))


def test_every_real_trace_becomes_one_task(imported, ls_client, fixtures_dir):
    pid, r = imported
    expected = traces_in_sources(fixtures_dir / "real")
    assert expected == 8  # 2 SWE-agent runs, 2 Inspect samples, 2 Claude Code sessions, 2 Who&When records
    assert f"imported {expected}, skipped 0 (already there), rejected 0" in r.output
    tasks = tasks_of(ls_client, pid)
    assert len(tasks) == expected
    formats = sorted(t["data"]["metadata"]["source_format"] for t in tasks)
    assert formats == sorted(["swe_agent"] * 2 + ["inspect_ai"] * 2 + ["claude_code"] * 2 + ["multi_agent"] * 2)
    for t in tasks:
        assert t["data"]["n_steps"] == len(t["data"]["trace"]) > 0


def test_reimport_adds_nothing(imported, ls_env, ls_client, real_inputs):
    pid, _ = imported
    before = {t["data"]["trace_id"] for t in tasks_of(ls_client, pid)}
    r = invoke("import", "--project", pid, "--format", "auto", "--quiet", *real_inputs)
    assert r.exit_code == 0, r.output
    assert f"imported 0, skipped {len(before)} (already there)" in r.output
    after = [t["data"]["trace_id"] for t in tasks_of(ls_client, pid)]
    assert sorted(after) == sorted(before) and len(after) == len(set(after))


def test_bad_file_is_located_and_the_rest_imports(ls_env, ls_client, fixtures_dir, tmp_path):
    real = fixtures_dir / "real"
    shutil.copy(real / "who_and_when" / "hand_crafted_1.json", tmp_path / "good.json")
    # a Who&When record cut off mid-file, and a JSON file of no known format
    good = (real / "who_and_when" / "hand_crafted_12.json").read_text()
    (tmp_path / "cut.json").write_text(good[: len(good) // 2])
    (tmp_path / "unknown.json").write_text('{"hello": "world"}\n')
    r = invoke("import", "--create", "bad input", "--format", "auto", "--quiet", tmp_path)
    assert r.exit_code == 1, r.output
    assert "rejected 2" in r.output and "imported 1," in r.output
    assert re.search(r"rejected: \S*cut\.json:\d+: invalid JSON", r.output), r.output
    assert re.search(r"rejected: \S*unknown\.json: unknown format", r.output), r.output
    pid = int(re.search(r"project (\d+): imported", r.output).group(1))
    (task,) = tasks_of(ls_client, pid)
    assert task["data"]["metadata"]["source_file"].endswith("good.json")


def test_bad_jsonl_line_is_located(ls_env, ls_client, fixtures_dir, tmp_path):
    src = (fixtures_dir / "real" / "claude_code" / "session_b.jsonl").read_text().splitlines()
    lines = src[:1] + ["{not json"] + src[1:]
    (tmp_path / "session.jsonl").write_text("\n".join(lines) + "\n")
    r = invoke("import", "--create", "bad line", "--format", "claude_code", "--quiet", tmp_path / "session.jsonl")
    assert r.exit_code == 1, r.output
    assert re.search(r"rejected: \S*session\.jsonl:2: invalid JSON", r.output), r.output
    assert "imported 1," in r.output


def test_unknown_format_name_is_one_line(ls_env, tmp_path):
    (tmp_path / "x.json").write_text("{}")
    r = invoke("import", "--create", "never", "--format", "nonsense", tmp_path / "x.json")
    assert r.exit_code == 2
    assert "unknown format 'nonsense'" in r.output and "Traceback" not in r.output
    assert "created project" not in r.output  # checked before anything is created


def test_long_traces_are_named_and_windows_suggested_unless_imported_in_windows(ls_env, tmp_path):
    """`generate --layout paged` states the limit; importing longer traces without windows names how many and the
    longest and suggests `--window`, in either layout; imported in windows they are split without a word."""
    from ls_trajeval.core.layouts import PAGED_MAX_STEPS

    def make(tid, n):
        return {"trace_id": tid, "task": "t", "trace": [{"type": "thought", "content": f"s{i}"} for i in range(n)]}

    src = tmp_path / "mixed.jsonl"
    src.write_text("".join(json.dumps(make(f"len-{n}", n)) + "\n" for n in (3, PAGED_MAX_STEPS, PAGED_MAX_STEPS + 7)))
    r = invoke("generate", "--layout", "paged")
    assert r.exit_code == 0 and f"traces longer than {PAGED_MAX_STEPS} steps open slowly" in r.output
    assert "open slowly" not in invoke("generate", "--layout", "transcript").output
    for layout in ("paged", "transcript"):
        r = invoke("import", "--create", f"long {layout}", "--layout", layout, "--quiet", src)
        assert r.exit_code == 0, r.output
        assert (f"warning: 1 traces have more than {PAGED_MAX_STEPS} steps (longest {PAGED_MAX_STEPS + 7}); "
                "every click on them is slow") in r.output and "--window 100" in r.output
        assert "imported 3," in r.output
    r = invoke("import", "--create", "long in windows", "--window", "100", "--quiet", src)
    # 3 steps: one task; 200: two windows of 100; 207: three of 69
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    assert "imported 6 tasks (5 of them windows of long traces)," in r.output


def test_a_trace_whose_steps_are_all_empty_is_refused_and_the_rest_imports(ls_env, ls_client, tmp_path):
    src = tmp_path / "traces.jsonl"
    has_text = [{"type": "thought", "content": "plan"}, {"type": "observation", "content": ""}]
    hollow = [{"type": "message", "content": ""}, {"type": "action", "content": " ", "action_input": ""}]
    src.write_text(json.dumps({"trace_id": "has-text", "task": "t", "trace": has_text}) + "\n"
                   + json.dumps({"trace_id": "hollow", "task": "t", "trace": hollow}) + "\n")
    r = invoke("import", "--create", "empty steps", "--quiet", src)
    assert r.exit_code == 1, r.output
    assert re.search(r"rejected: \S*traces\.jsonl:2: trace: all 2 step\(s\) are empty", r.output), r.output
    assert "imported 1," in r.output and "rejected 1" in r.output
    pid = int(re.search(r"project (\d+): imported", r.output).group(1))
    assert [t["data"]["trace_id"] for t in tasks_of(ls_client, pid)] == ["has-text"]


def test_potato_files_import_with_their_text_and_empty_ones_are_refused(ls_env, ls_client, fixtures_dir, tmp_path):
    potato = fixtures_dir / "converters" / "potato"
    files = sorted(potato.glob("*.jsonl"))
    recs = {p.name: json.loads(p.read_text(encoding="utf-8").splitlines()[0]) for p in files}
    empty = sorted(n for n, rec in recs.items() if not rec["conversation"])
    assert len(empty) == 2
    r = invoke("import", "--create", "potato", "--format", "auto", "--quiet", *files)
    assert r.exit_code == 1, r.output
    for name in empty:
        assert re.search(rf"rejected: \S*{re.escape(name)}:1: conversation: empty", r.output), r.output
    pid = int(re.search(r"project (\d+): imported", r.output).group(1))
    tasks = tasks_of(ls_client, pid)
    assert len(tasks) == len(files) - len(empty)
    for task in tasks:
        name = Path(task["data"]["metadata"]["source_file"]).name
        texts = [turn["text"] for turn in recs[name]["conversation"]]
        steps = task["data"]["trace"]
        assert len(steps) == len(texts) and all(s["content"] or s.get("action_input") for s in steps)
