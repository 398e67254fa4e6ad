"""CrewAI output_log_file logs: expected figures from reading the logs (SHAPE: laffer-ryan/Deadlift-Feedback logs)."""
import json
import re

import pytest

from .conftest import FIXTURES, NOT_LOGS, auto_name, detect, meta, run

DIR = FIXTURES / "crewai"
FILES = sorted(p for p in DIR.glob("*.md") if p.name not in NOT_LOGS)
START = re.compile(r'^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}): (?=task_name=")', re.M)


def entries(path):
    """Independent reading (SHAPE.md's way): entries from their starts, the output after the last marker."""
    text = path.read_text(encoding="utf-8")
    starts = [(m.start(), m.group(1)) for m in START.finditer(text)]
    out = []
    for i, (pos, ts) in enumerate(starts):
        body = text[pos + len(ts) + 2:starts[i + 1][0] if i + 1 < len(starts) else len(text)].rstrip("\n")
        e = {"timestamp": ts, "line": text.count("\n", 0, pos) + 1,
             "task": body.split('", task="', 1)[1].split('", agent="', 1)[0],
             "agent": body.split('", agent="', 1)[1].split('", status="', 1)[0],
             "status": "completed" if '", status="completed"' in body else "started"}
        if '", output="' in body:
            e["output"] = body.split('", output="', 1)[1][:-1]
        out.append(e)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_detected(path):
    assert auto_name(path) == "crewai"


@pytest.mark.parametrize("path,kickoffs,output_chars", [
    (DIR / "deadlift_close_wrist_front.mp4_A1_json.md", 2, [1325, 1462]),
    (DIR / "deadlift_ankle_wide_front.mp4_A3_json.md", 1, [2852]),
    (DIR / "deadlift_good_form_side.mp4_A1_json.md", 4, [1448, 1249, 1527, 1552]),
], ids=lambda v: v.name if hasattr(v, "name") else None)
def test_each_kickoff_is_a_trace_with_its_task_and_the_agents_output(path, kickoffs, output_chars):
    es = entries(path)
    assert [e["status"] for e in es] == ["started", "completed"] * kickoffs  # SHAPE
    assert [len(e["output"]) for e in es if "output" in e] == output_chars  # SHAPE's hand counts
    traces, errors, _ = run(path)
    assert not errors and len(traces) == kickoffs
    for t, (start, done) in zip(traces, zip(es[::2], es[1::2])):
        assert t.task == start["task"]
        assert [(s.type, meta(s)["role"]) for s in t.steps] == [("message", "task"), ("message", "agent")]
        assert t.steps[1].content == done["output"]
        assert meta(t.steps[1])["agent"] == done["agent"].strip()
        assert [s["timestamp"] for s in t.steps] == [start["timestamp"], done["timestamp"]]
        assert [meta(s)["source_line"] for s in t.steps] == [start["line"], done["line"]]
        assert t.metadata["source_line"] == start["line"]
        assert "action" not in [s.type for s in t.steps]  # the log holds no tool calls


def test_the_orchestration_task_embeds_json_with_quotes_and_lines_starting_with_brackets():
    path = DIR / "deadlift_ankle_wide_front.mp4_A3_json.md"
    t = run(path)[0][0]
    assert "```" in t.task and '"checkpoint"' in t.task
    assert any(ln.startswith(("[", "{")) for ln in t.task.splitlines())
    assert t.task == entries(path)[0]["task"]


def test_json_log_several_tasks_per_kickoff_and_a_bad_entry(tmp_path):
    def e(ts, name, status, out=None):
        d = {
            "timestamp": ts,
            "task_name": name,
            "task": f'do {name} <now> & "well"',
            "agent": "Researcher\n",
            "status": status,
        }
        if out is not None:
            d["output"] = out
        return d
    log = [
        e("2025-01-01 10:00:00", "research", "started"),
        e("2025-01-01 10:00:05", "research", "completed", "found"),
        e("2025-01-01 10:00:06", "write", "started"),
        e("2025-01-01 10:00:09", "write", "completed", "written"),
        e("2025-01-01 11:00:00", "research", "started"),
        {"timestamp": "x", "task_name": "research", "task": "t", "agent": "a", "status": 3},
        e("2025-01-01 11:00:05", "research", "completed", "again"),
    ]
    p = tmp_path / "crew_log.json"
    p.write_text(json.dumps(log), encoding="utf-8")
    assert detect("crewai", p) > 0
    traces, errors, _ = run(p)
    assert [(e.field, e.message) for e in errors] == [("[5].status", "expected a string, got a number")]
    assert len(traces) == 2
    a, b = traces
    assert a.task == 'do research <now> & "well"'
    assert [s.content for s in a.steps] == [log[0]["task"], "found", log[2]["task"], "written"]
    assert a.metadata["task_names"] == ["research", "write"] and meta(a.steps[1])["source_record"] == 1
    assert [s.content for s in b.steps] == [log[4]["task"], "again"]


def test_a_text_entry_without_its_fields_costs_only_itself(tmp_path):
    p = tmp_path / "log.txt"
    p.write_text('2025-01-01 10:00:00: task_name="a", task="x", agent="r", status="started"\n'
                 '2025-01-01 10:00:01: task_name="a", broken\n'
                 '2025-01-01 10:00:02: task_name="a", task="x", agent="r", status="completed", output="y "quoted""\n',
                 encoding="utf-8")
    traces, errors, _ = run(p)
    assert [(e.line, e.field) for e in errors] == [(2, "task_name")]
    assert [s.content for s in traces[0].steps] == ["x", 'y "quoted"']
