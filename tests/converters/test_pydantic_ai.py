"""pydantic-ai message histories: expected figures from reading the history (SHAPE: suitenumerique/conversations
fixture, ModelMessagesTypeAdapter.dump_json under pydantic-ai 1.107.1)."""
import json

import pytest

from .conftest import FIXTURES, auto_name, detect, meta, run, types

V1 = FIXTURES / "pydantic_ai" / "pydantic_ai_v1_message_history.json"


def source(msgs):
    """Independent counts of one history (the SHAPE.md snippet, trimmed)."""
    parts = [p for m in msgs for p in m["parts"]]
    calls = [p for p in parts if p["part_kind"] == "tool-call"]
    results = [p for p in parts if p["part_kind"] in ("tool-return", "retry-prompt") and p.get("tool_name")]
    prompts = [p["content"] for p in parts if p["part_kind"] == "user-prompt"]
    first = prompts[0] if prompts else ""
    if isinstance(first, list):
        first = "\n".join(x for x in first if isinstance(x, str))
    return {"calls": calls, "results": results, "task": first,
            "texts": [p["content"] for p in parts if p["part_kind"] == "text"],
            "thinking": [p["content"] for p in parts if p["part_kind"] == "thinking"],
            "instructions": {m.get("instructions") for m in msgs if m["kind"] == "request"} - {None}}


def test_detected():
    assert auto_name(V1) == "pydantic_ai"


def test_each_named_history_is_one_trace_with_its_calls_results_and_task():
    cases = json.loads(V1.read_text(encoding="utf-8"))
    traces, errors, _ = run(V1)
    assert not errors and [t.metadata["history_name"] for t in traces] == list(cases)  # 6 histories (SHAPE)
    assert len(traces) == 6
    for t in traces:
        src = source(cases[t.metadata["history_name"]])
        assert t.task == src["task"]
        acts = [s for s in t.steps if s.type == "action"]
        assert [s.content for s in acts] == [c["tool_name"] for c in src["calls"]]
        assert [meta(s)["tool_call_id"] for s in t.steps if s.type in ("observation", "error")] == \
            [r["tool_call_id"] for r in src["results"]]
        assert [s.content for s in t.steps if meta(s).get("role") == "assistant" and s.type in ("message", "thought")
                and not meta(s).get("reasoning")] == src["texts"]
        assert [s.content for s in t.steps if meta(s).get("reasoning")] == src["thinking"]
        # instructions are the same on every request: one system step, not one per request
        assert [s.content for s in t.steps if s.type == "system"] == sorted(src["instructions"])
        for i, s in enumerate(t.steps):
            if s.type == "action":
                assert t.steps[i + 1].type in ("observation", "error")
                assert meta(t.steps[i + 1])["tool_call_id"] == meta(s)["tool_call_id"]


def test_the_tricky_cases_of_shape_md():
    by = {t.metadata["history_name"]: t for t in run(V1)[0]}
    # retry_prompt: args that are not JSON stay as written; the retry prompt is the call's error
    t = by["retry_prompt"]
    assert [(s.type, s.content) for s in t.steps if s.type in ("action", "error")] == [
        ("action", "get_weather"), ("error", "Invalid JSON in tool arguments.")]
    assert next(s.action_input for s in t.steps if s.type == "action") == "{bad json"
    # synthetic_ok_response: a sliced history starting with a tool return whose call is not there
    t = by["synthetic_ok_response"]
    assert t.task == "" and meta(t.steps[1]).get("unpaired") is True and t.steps[1].content == "resultats"
    # media_content: image and document URLs as references, base64 not inlined
    t = by["media_content"]
    user = next(s for s in t.steps if meta(s).get("role") == "user")
    assert "[image-url: https://s3.example/img.png?sig=x]" in user.content
    assert "[document-url: https://s3.example/doc.pdf?sig=y]" in user.content
    assert "iVBORw0KGgo=" not in user.content and "data:image/png;base64," in user.content
    # dict args are rendered as JSON; the tool-return metadata (sources) is kept
    t = by["tool_call_with_sources_metadata"]
    i = types(t).index("action")
    assert json.loads(t.steps[i].action_input) == {"query": "rapport"}
    assert "sources" in meta(t.steps[i + 1])["tool_metadata"]
    assert meta(next(s for s in t.steps if meta(s).get("role") == "assistant"))["model"] == "albert-large"


def test_parallel_calls_each_followed_by_its_return_and_one_message_per_jsonl_line(tmp_path):
    msgs = [
        {
            "kind": "request",
            "parts": [
                {"part_kind": "system-prompt", "content": "Be <b>terse</b>"},
                {"part_kind": "user-prompt", "content": "a & b?"},
            ],
        },
        {
            "kind": "response",
            "model_name": "m",
            "parts": [
                {"part_kind": "thinking", "content": "two lookups"},
                {"part_kind": "text", "content": "looking"},
                {"part_kind": "tool-call", "tool_name": "look", "args": {"q": "a"}, "tool_call_id": "c1"},
                {"part_kind": "tool-call", "tool_name": "look", "args": '{"q": "b"}', "tool_call_id": "c2"},
            ],
        },
        {
            "kind": "request",
            "instructions": "new rules",
            "parts": [
                {"part_kind": "tool-return", "tool_name": "look", "content": {"hit": "B"}, "tool_call_id": "c2"},
                {
                    "part_kind": "tool-return",
                    "tool_name": "look",
                    "content": "denied",
                    "tool_call_id": "c1",
                    "outcome": "denied",
                },
            ],
        },
        {"kind": "response", "parts": [{"part_kind": "text", "content": "done"}]},
    ]
    p = tmp_path / "h.jsonl"
    p.write_text("".join(json.dumps(m) + "\n" for m in msgs), encoding="utf-8")
    assert detect("pydantic_ai", p) > 0
    traces, errors, _ = run(p)
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.task == "a & b?"
    assert [(s.type, s.content) for s in t.steps] == [
        ("system", "Be <b>terse</b>"), ("message", "a & b?"), ("thought", "two lookups"), ("thought", "looking"),
        ("action", "look"), ("error", "denied"), ("action", "look"), ("observation", '{\n  "hit": "B"\n}'),
        ("system", "new rules"), ("message", "done")]
    assert [meta(s)["tool_call_id"] for s in t.steps[4:8]] == ["c1", "c1", "c2", "c2"]
    assert json.loads(t.steps[6].action_input) == {"q": "b"}


def test_a_bad_history_costs_only_itself(tmp_path):
    good = [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi"}]},
            {"kind": "response", "parts": [{"part_kind": "text", "content": "hello"}]}]
    bad = [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "x"}]}, {"kind": "reply", "parts": []}]
    p = tmp_path / "two.json"
    p.write_text(json.dumps({"good": good, "bad": bad}), encoding="utf-8")
    traces, errors, _ = run(p)
    assert [t.metadata["history_name"] for t in traces] == ["good"]
    assert [(e.field, e.message) for e in errors] == [("bad[1].kind", 'expected "request" or "response", got a string')]


@pytest.mark.parametrize("doc", [{"kind": "request", "parts": [{"type": "text"}]}, [{"role": "user", "content": "x"}]])
def test_not_claimed_without_pydantic_parts(tmp_path, doc):
    p = tmp_path / "x.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    assert detect("pydantic_ai", p) == 0


def test_histories_too_big_to_sample_whole_are_detected_from_their_opening(tmp_path, monkeypatch):
    from ls_trajeval.converters.support import files

    one = json.loads(V1.read_text(encoding="utf-8"))["tool_call_with_sources_metadata"]
    p = tmp_path / "history.json"
    p.write_text(json.dumps(one, indent=2), encoding="utf-8")
    monkeypatch.setattr(files, "SMALL_FILE", 0)
    monkeypatch.setattr(files, "HEAD_BYTES", 300)
    assert auto_name(p) == "pydantic_ai"
