"""Gemini CLI sessions: expected figures from reading the session files (SHAPE: codemie-ai/codemie-code fixtures)."""
import json
import shutil
from collections import Counter

import pytest

from .conftest import FIXTURES, auto_name, meta, run, types

DIR = FIXTURES / "gemini_cli"
OLD = DIR / "session-2025-12-01T21-45-5b959dae.json"
NEW = DIR / "session-2026-01-16T11-01-file-ops-37b7abef.json"


def source(path):
    """Independent counts from the file itself."""
    d = json.loads(path.read_text(encoding="utf-8"))
    ms = d["messages"]
    calls = [c for m in ms for c in m.get("toolCalls") or []]
    return {
        "session": d["sessionId"],
        "users": [m["content"] for m in ms if m["type"] == "user"],
        "calls": calls,
        "thoughts": sum(len(m.get("thoughts") or []) for m in ms),
        "texts": [m["content"] for m in ms if m["type"] == "gemini" and m["content"]],
    }


@pytest.mark.parametrize("path,calls,thoughts,prompts", [(OLD, 10, 18, 3), (NEW, 14, 0, 5)])
def test_a_session_is_one_trace_with_every_call_followed_by_its_result(path, calls, thoughts, prompts):
    src = source(path)
    assert len(src["calls"]) == calls and src["thoughts"] == thoughts and len(src["users"]) == prompts  # SHAPE.md
    traces, errors, _ = run(path)
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == src["session"] and t.metadata["source_format"] == "gemini_cli"
    assert t.task == src["users"][0]
    actions = [s for s in t.steps if s.type == "action"]
    assert Counter(s.content for s in actions) == Counter(c["name"] for c in src["calls"])
    assert types(t).count("observation") == calls and "error" not in types(t)
    for i, s in enumerate(t.steps):
        if s.type == "action":
            res = t.steps[i + 1]
            assert res.type == "observation" and meta(res)["tool_call_id"] == meta(s)["tool_call_id"]
            assert meta(res)["tool_name"] == s.content
    by_id = {c["id"]: c for c in src["calls"]}
    for i, s in enumerate(t.steps):
        if s.type == "action":
            c = by_id[meta(s)["tool_call_id"]]
            assert json.loads(s.action_input) == c["args"] and s["timestamp"] == c["timestamp"]
            assert t.steps[i + 1].content == c["result"][0]["functionResponse"]["response"]["output"]
    assert types(t).count("thought") == thoughts
    assert [s.content for s in t.steps if s.type == "message" and meta(s)["role"] == "user"] == src["users"]
    assert [s.content for s in t.steps if s.type == "message" and meta(s)["role"] == "gemini"] == src["texts"]


def test_one_tool_list_spanning_three_model_requests_is_ordered_and_grouped_by_time():
    # SHAPE: 37b7abef message 4 holds 9 calls at 11:04:00.677 (2), 11:04:13.954 (4), 11:04:26.219 (3)
    msg = json.loads(NEW.read_text(encoding="utf-8"))["messages"][3]
    stamps = [c["timestamp"] for c in msg["toolCalls"]]
    assert Counter(stamps) == {
        "2026-01-16T11:04:00.677Z": 2,
        "2026-01-16T11:04:13.954Z": 4,
        "2026-01-16T11:04:26.219Z": 3,
    }
    t = run(NEW)[0][0]
    acts = [s for s in t.steps if s.type == "action" and meta(s)["message_id"] == msg["id"]]
    assert [meta(s)["request_index"] for s in acts] == [0, 0, 1, 1, 1, 1, 2, 2, 2]
    assert [s.content for s in acts] == [c["name"] for c in msg["toolCalls"]]
    # 5b959dae: one message with 3 calls at 3 times: sequential requests, not a parallel batch
    old = run(OLD)[0][0]
    multi = [m for m in json.loads(OLD.read_text(encoding="utf-8"))["messages"] if len(m.get("toolCalls") or []) > 1]
    assert len(multi) == 1 and len(multi[0]["toolCalls"]) == 3
    acts = [s for s in old.steps if s.type == "action" and meta(s)["message_id"] == multi[0]["id"]]
    assert [(s.content, meta(s)["request_index"]) for s in acts] == [
        ("read_file", 0),
        ("write_file", 1),
        ("read_file", 2),
    ]


def test_thoughts_come_before_the_answer_with_their_subject():
    t = run(OLD)[0][0]
    first = json.loads(OLD.read_text(encoding="utf-8"))["messages"][1]
    assert types(t)[:4] == ["message", "thought", "thought", "message"]
    assert [t.steps[1].content, meta(t.steps[1])["subject"]] == [
        first["thoughts"][0]["description"],
        first["thoughts"][0]["subject"],
    ]
    assert meta(t.steps[1])["agent"] == "gemini-3-pro-image-preview"


def test_the_prompt_log_beside_its_session_file_adds_nothing(tmp_path):
    traces, errors, warnings = run(DIR / "logs.json")
    assert not traces and not errors
    assert len(warnings) == 1 and OLD.name in warnings[0].message
    # on its own: the three prompts of session 5b959dae
    alone = tmp_path / "logs.json"
    shutil.copy(DIR / "logs.json", alone)
    traces, errors, _ = run(alone)
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "5b959dae-8655-4cd1-b10f-720b8c336ea2/prompts"
    assert [s.content for s in t.steps] == [e["message"] for e in json.loads(alone.read_text())]
    assert t.task == "hi" and types(t) == ["message"] * 3


def test_the_jsonl_session_log_is_replayed(tmp_path):
    """The newer JSONL recording of the same session: a header, messages re-written under their id as
    they change, a rewind that drops a message, a metadata $set, and one bad line."""
    d = json.loads(NEW.read_text(encoding="utf-8"))
    head = {k: d[k] for k in ("sessionId", "projectHash", "startTime", "lastUpdated")}
    lines = [json.dumps(head)]
    ms = d["messages"]
    for m in ms[:3]:
        lines.append(json.dumps(m))
    lines.append(json.dumps(dict(ms[3], toolCalls=ms[3]["toolCalls"][:2])))  # first written with 2 calls
    lines.append("{broken")
    lines.append(json.dumps(ms[3]))  # re-written with all 9
    lines.append(json.dumps({"id": "dropped", "type": "user", "timestamp": "x", "content": "never mind"}))
    lines.append(json.dumps({"$rewindTo": "dropped"}))
    lines += [json.dumps(m) for m in ms[4:]]
    lines.append(json.dumps({"$set": {"summary": "file ops"}}))
    p = tmp_path / "session-2026-01-16T11-01-37b7abef.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert auto_name(p) == "gemini_cli"
    traces, errors, _ = run(p)
    assert len(errors) == 1 and errors[0].line == 6
    t = traces[0]
    assert t.trace_id == d["sessionId"] and t.metadata["summary"] == "file ops"
    assert types(t).count("action") == 14 and types(t).count("observation") == 14
    assert "never mind" not in [s.content for s in t.steps]
    assert [s.content for s in t.steps] == [s.content for s in run(NEW)[0][0].steps]


def test_a_bad_message_costs_only_itself_and_a_failed_call_is_an_error(tmp_path):
    d = json.loads(NEW.read_text(encoding="utf-8"))
    d["messages"][1]["toolCalls"] = "not a list"
    call = d["messages"][6]["toolCalls"][0]
    call["status"] = "error"
    call["result"] = [
        {"functionResponse": {"id": call["id"], "name": call["name"], "response": {"error": "disk full"}}}
    ]
    p = tmp_path / "session.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    traces, errors, _ = run(p)
    assert len(errors) == 1 and errors[0].field == "messages[1].toolCalls" and "expected a list" in errors[0].message
    t = traces[0]
    assert types(t).count("message") == len(d["messages"]) - 1 - 4  # 14 messages, the bad one out, 4 with calls only
    i = next(i for i, s in enumerate(t.steps) if meta(s).get("tool_call_id") == call["id"])
    assert t.steps[i + 1].type == "error" and t.steps[i + 1].content == "disk full"
    assert meta(t.steps[i + 1])["status"] == "error"


def test_a_session_too_big_to_sample_whole_is_detected_from_its_opening(monkeypatch):
    from ls_trajeval.converters.support import files

    monkeypatch.setattr(files, "SMALL_FILE", 0)
    assert auto_name(NEW) == "gemini_cli"
