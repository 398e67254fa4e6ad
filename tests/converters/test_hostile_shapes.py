"""Regression cases for the crashes the long fuzz run (benchmarks/fuzz_all.py) found: each the exact input
shape, through the converter's own ``convert`` (no catch-all around it). A wrong-typed field is a located
error of its record (file, line, field) and the file's other records still convert."""
import io
import json
import zipfile

import pytest

from .conftest import meta, run


def jsonl(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return p


# ---------------------------------------------------------------- anthropic streaming events

def _stream(mid):
    return [
        {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant", "content": [],
                                              "usage": {"input_tokens": 5}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]


@pytest.mark.parametrize(
    "line, bad, field",
    [
        (
            2,
            {"type": "content_block_start", "index": {"i": 0}, "content_block": {"type": "text"}},
            "index",
        ),  # unhashable
        (3, {"type": "content_block_delta", "index": 0, "delta": "text"}, "delta"),
        (
            3,
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": {"x": 1}}},
            "delta.text",
        ),
        (
            3,
            {"type": "content_block_delta", "index": None, "delta": {"type": "input_json_delta", "partial_json": [1]}},
            "delta.partial_json",
        ),
        (1, {"type": "message_start", "message": "m"}, "message"),  # 'str' object has no attribute 'items'
        (1, {"type": "message_start", "message": {"role": "assistant", "usage": "u"}}, "message.usage"),
        (2, {"type": "content_block_start", "index": 0, "content_block": ["x"]}, "content_block"),
        (
            2,
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": {}}},
            "content_block.text",
        ),
        (4, {"type": "message_delta", "delta": 7}, "delta"),
        (4, {"type": "message_delta", "delta": {}, "usage": "u"}, "usage"),
    ],
)
def test_anthropic_stream_event_of_the_wrong_shape(tmp_path, line, bad, field):
    first = _stream("m1")
    first[line - 1] = bad
    p = jsonl(tmp_path, "s.jsonl", first + _stream("m2"))
    traces, errors = run(p, "anthropic")[:2]
    located = [(e.line, e.field) for e in errors]
    assert located == [(line, field)]
    if line == 3:  # the message's only text was on that line: what is left of it is an empty turn, that says so
        (m1,) = [t for t in traces if t.trace_id == "m1"]
        assert [(s.content, meta(s).get("empty_response")) for s in m1.steps] == [("(empty response)", True)]
    assert str(p) in errors[0].source
    assert "m2" in {t.trace_id for t in traces}  # the next stream converts


def test_anthropic_stream_index_null_sorts(tmp_path):
    events = _stream("m1")
    events.insert(2, {"type": "content_block_start", "index": None, "content_block": {"type": "text", "text": "b"}})
    traces, errors = run(jsonl(tmp_path, "s.jsonl", events), "anthropic")[:2]
    assert not errors and traces


def test_anthropic_record_whose_type_is_a_list(tmp_path):
    rec = {"type": ["message_start"], "messages": [{"role": "user", "content": "hi"}]}
    traces, errors = run(jsonl(tmp_path, "a.jsonl", [rec, rec]), "anthropic")[:2]
    assert len(traces) == 2 and not errors


# ---------------------------------------------------------------- openai_chat

def _chunk(i, **delta):
    return {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}


@pytest.mark.parametrize("bad, field", [
    ({"id": "c1", "object": "chat.completion.chunk", "choices": 1.5}, "choices"),  # 'float' object is not iterable
    ({"id": "c1", "object": "chat.completion.chunk", "choices": ["x"]}, "choices[0]"),  # str.get
    ({"id": "c1", "object": "chat.completion.chunk", "choices": [{"delta": "d"}]}, "choices[0].delta"),
    (_chunk(0, tool_calls=3), "choices[0].delta.tool_calls"),
    (_chunk(0, tool_calls=["t"]), "choices[0].delta.tool_calls[0]"),
    (_chunk(0, tool_calls=[{"index": [0]}]), "choices[0].delta.tool_calls[0].index"),  # unhashable
    (_chunk(0, tool_calls=[{"index": 0, "function": "f"}]), "choices[0].delta.tool_calls[0].function"),
    (_chunk(0, tool_calls=[{"index": 0, "function": {"name": 5}}]), "choices[0].delta.tool_calls[0].function.name"),
    (_chunk(0, tool_calls=[{"index": 0, "function": {"arguments": 5}}]),
     "choices[0].delta.tool_calls[0].function.arguments"),  # str + int
])
def test_openai_chat_chunk_of_the_wrong_shape(tmp_path, bad, field):
    lines = [{"role": "user", "content": "count"}, _chunk(0, content="one "), bad, _chunk(0, content="two"),
             {"role": "tool", "tool_call_id": "x", "content": "ok"}]
    p = jsonl(tmp_path, "c.jsonl", lines)
    traces, errors = run(p, "openai_chat")[:2]
    assert [(e.line, e.field) for e in errors] == [(3, field)]
    assert len(traces) == 1 and "one two" in [s.content for s in traces[0].steps]


@pytest.mark.parametrize("role", [["user"], {"r": 1}])
def test_openai_chat_role_that_is_not_a_string(tmp_path, role):
    good = {"id": "g", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    traces, errors = run(jsonl(tmp_path, "c.jsonl", [{"role": role, "content": "x"}, good]), "openai_chat")[:2]
    assert [t.trace_id for t in traces] == ["g"] and len(errors) == 1 and errors[0].line == 1


def test_openai_chat_tool_whose_function_is_a_string(tmp_path):
    rec = {"id": "t", "tools": [{"type": "function", "function": "f"}], "messages": [{"role": "user", "content": "x"}]}
    traces, errors = run(jsonl(tmp_path, "c.jsonl", [rec, dict(rec, id="t2")]), "openai_chat")[:2]
    assert [t.metadata["tools"] for t in traces] == [[None], [None]] and not errors


# ---------------------------------------------------------------- openai_responses (Codex rollouts)

@pytest.mark.parametrize("bad", [
    {"type": "response_item", "payload": {"type": {"x": 1}, "role": "user", "content": "x"}},
    {"type": "response_item", "payload": {"type": ["message"], "content": "x"}},
])
def test_openai_responses_item_type_not_a_string(tmp_path, bad):
    lines = [{"type": "session_meta", "payload": {"id": "s1"}},
             {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "task"}}, bad,
             {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": "done"}}]
    traces, errors = run(jsonl(tmp_path, "r.jsonl", lines), "openai_responses")[:2]
    assert [(e.line, e.field) for e in errors] == [(3, "payload.type")]
    assert len(traces) == 1 and [s.content for s in traces[0].steps] == ["task", "done"]


def test_openai_responses_first_line_type_unhashable(tmp_path):
    good = {"id": "r", "output": [{"type": "message", "role": "assistant", "content": "x"}]}
    traces, errors = run(jsonl(tmp_path, "r.jsonl", [{"type": {"a": 1}, "output": []}, good]), "openai_responses")[:2]
    assert traces and all(str(tmp_path) in e.source for e in errors)


# ---------------------------------------------------------------- claude_code

def _cc(uuid, parent, text, **kw):
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s",
            "message": {"role": "user", "content": text}, **kw}


def test_claude_code_parent_uuid_not_a_string(tmp_path):
    lines = [_cc("u1", None, "one"), _cc("u2", {"u": "u1"}, "two"), _cc("u3", ["u2"], "three")]
    traces, errors = run(jsonl(tmp_path, "c.jsonl", lines), "claude_code")[:2]
    assert not errors and [s.content for s in traces[0].steps] == ["one", "two", "three"]  # as unknown parents


def test_claude_code_type_not_a_string(tmp_path):
    lines = [_cc("u1", None, "one"), {**_cc("u2", "u1", "two"), "type": ["user"]}, _cc("u3", "u1", "three")]
    traces, errors = run(jsonl(tmp_path, "c.jsonl", lines), "claude_code")[:2]
    assert [(e.line, e.field) for e in errors] == [(2, "type")]
    assert [s.content for s in traces[0].steps] == ["one", "three"]


def test_claude_code_parent_cycle(tmp_path):
    # u1 and u2 name each other as parent: the cycle is cut at one link, both records stay
    lines = [_cc("u1", "u2", "one"), _cc("u2", "u1", "two"), _cc("u3", "u2", "three")]
    traces, errors, warnings = run(jsonl(tmp_path, "c.jsonl", lines), "claude_code")
    assert not errors and not warnings and [s.content for s in traces[0].steps] == ["one", "two", "three"]


def test_claude_code_parallel_call_ids_not_strings(tmp_path):
    # a fork (two calls, each result hanging off its call) whose ids are objects and lists: no crash, nothing lost
    def said(uuid, parent, content, kind="assistant"):
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
                "message": {"role": kind, "id": "m1", "content": content}}
    lines = [_cc("u1", None, "go"),
             said("a1", "u1", [{"type": "tool_use", "id": {"x": 1}, "name": "A", "input": {}}]),
             said("a2", "a1", [{"type": "tool_use", "id": "ok", "name": "B", "input": {}}]),
             said("r1", "a1", [{"type": "tool_result", "tool_use_id": ["x"], "content": "ra"}], "user"),
             said("r2", "a2", [{"type": "tool_result", "tool_use_id": "ok", "content": "rb"}], "user")]
    traces, errors, warnings = run(jsonl(tmp_path, "c.jsonl", lines), "claude_code")
    assert not errors and not warnings and len(traces) == 1
    assert sorted(s.content for s in traces[0].steps) == sorted(["go", "A", "B", "ra", "rb"])


def test_claude_code_summary_leaf_uuid_not_a_string(tmp_path):
    lines = [{"type": "summary", "summary": "S", "leafUuid": {"x": 1}}, _cc("u1", None, "one"),
             {"type": "system", "uuid": "u2", "parentUuid": "u1", "sessionId": "s", "message": "plain"}]
    traces, errors = run(jsonl(tmp_path, "c.jsonl", lines), "claude_code")[:2]
    assert not errors and [s.content for s in traces[0].steps] == ["one", "plain"]


# ---------------------------------------------------------------- langchain

@pytest.mark.parametrize("key", ["id", "parent_run_id", "trace_id"])
def test_langchain_run_id_not_a_string(tmp_path, key):
    def tree(i):
        return {"id": f"r{i}", "run_type": "chain", "name": "c", "inputs": {"input": "x"}, "outputs": {"output": "y"},
                "child_runs": [{"id": f"r{i}-t", "name": "search", "run_type": "tool", "inputs": {"query": "x"},
                                "outputs": {"output": "found"}, "child_runs": []}]}
    bad = {**tree(1), key: ["r0"]}
    traces, errors = run(jsonl(tmp_path, "l.jsonl", [tree(0), bad, tree(2)]), "langchain")[:2]
    assert [(e.line, e.field) for e in errors] == [(2, f"run.{key}")]
    assert {t.trace_id for t in traces} == {"r0", "r2"}


# ---------------------------------------------------------------- inspect_ai: damaged .eval archives

def _eval_archive():
    buf = io.BytesIO()
    sample = {"id": 1, "epoch": 1, "input": "q", "messages": [{"role": "user", "content": "q"},
                                                               {"role": "assistant", "content": "a"}]}
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps({"eval": {"eval_id": "E", "task": "t"}}))
        zf.writestr("samples/1_epoch_1.json", json.dumps(sample))
        zf.writestr("samples/2_epoch_1.json", json.dumps({**sample, "id": 2}))
    return buf.getvalue()


def _damage(data, member, how):
    """Flip a byte of one member's compressed data (bad CRC / bad deflate) or of its local header magic."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo(member)
    buf = bytearray(data)
    if how == "magic":
        buf[info.header_offset] ^= 0xFF
    else:
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        buf[start + 2] ^= 0x55
    return bytes(buf)


@pytest.mark.parametrize("how", ["magic", "data"])
def test_inspect_ai_damaged_sample_member(tmp_path, how):
    p = tmp_path / "log.eval"
    p.write_bytes(_damage(_eval_archive(), "samples/1_epoch_1.json", how))
    traces, errors = run(p, "inspect_ai")[:2]
    assert len(errors) == 1 and errors[0].source == f"{p}!samples/1_epoch_1.json"
    assert [t.trace_id for t in traces] == ["E:2:1"]


def test_inspect_ai_damaged_header_member(tmp_path):
    p = tmp_path / "log.eval"
    p.write_bytes(_damage(_eval_archive(), "header.json", "magic"))
    traces, errors = run(p, "inspect_ai")[:2]
    assert [e.source for e in errors] == [f"{p}!header.json"]
    assert len(traces) == 2  # the samples still convert, named after the file


def test_inspect_ai_archive_cut_short(tmp_path):
    p = tmp_path / "log.eval"
    data = _eval_archive()
    p.write_bytes(data[:40] + data[-200:])
    traces, errors = run(p, "inspect_ai")[:2]
    assert errors and all(str(p) in e.source for e in errors)


# ---------------------------------------------------------------- a record of a JSON list: located by its index

@pytest.mark.parametrize("name, bad, good, field", [
    ("anthropic", {"messages": []}, {"messages": [{"role": "user", "content": "hi"}]}, "[0]"),  # no steps
    ("anthropic", {"messages": [{"role": 5, "content": "x"}]}, {"messages": [{"role": "user", "content": "hi"}]},
     "[0].messages[0].role"),
    ("openai_chat", {"messages": [{"role": "user", "content": "x"}], "choices": []},
     {"messages": [{"role": "user", "content": "hi"}]}, None),
    ("openai_chat", {"messages": [{"role": "assistant", "content": 5}]},
     {"messages": [{"role": "user", "content": "hi"}]}, "[0].messages[0].content"),
    ("openai_responses", {"output": [{"type": "message", "role": "user", "content": 5}]},
     {"output": [{"type": "message", "role": "user", "content": "hi"}]}, "[0].output[0].content"),
])
def test_record_of_a_json_list_is_located_by_its_index(tmp_path, name, bad, good, field):
    p = tmp_path / "list.json"
    p.write_text(json.dumps([bad, good]), encoding="utf-8")
    traces, errors = run(p, name)[:2]
    assert len(traces) == 1 + (field is None)
    for e in errors:  # the fuzz contract: a line is a line number (found: line "[0]", a string)
        assert e.line is None and e.field == field and str(p) in e.source
