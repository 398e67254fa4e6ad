from .conftest import FIXTURES, SCARY, meta, run, types


def test_parallel_calls_reordered_and_paired():
    traces, errors, _ = run(FIXTURES / "openai_chat.jsonl")
    assert not errors and [t.trace_id for t in traces][:2] == ["chat-1", "chat-2"]
    t = traces[0]
    assert types(t) == ["system", "message", "action", "observation", "action", "observation", "message"]
    a, obs_a, b, obs_b = t.steps[2:6]
    assert (a.content, meta(a)["tool_call_id"], obs_a.content) == ("get_weather", "call_a", "18°C")
    assert (meta(b)["tool_call_id"], obs_b.content) == ("call_b", "Error: city not found <b>&amp;</b>")
    assert a.action_input == '{\n  "city": "Paris"\n}' and "Zürich" in b.action_input
    assert t.task == "Weather in Paris and Zürich? " + SCARY
    assert t.steps[-1].content.endswith(SCARY)
    assert t.metadata["source_format"] == "openai_chat" and t.metadata["source_line"] == 1
    assert t.metadata["usage"]["prompt_tokens"] == 10


def test_legacy_function_call_parts_and_empty_content():
    traces, _, _ = run(FIXTURES / "openai_chat.jsonl")
    t = traces[1]
    assert types(t) == ["message", "action", "observation", "message"]
    assert t.steps[0].content.startswith("Look at this\n") and "image_url" in t.steps[0].content
    assert t.steps[1].content == "search" and t.steps[1].action_input == "not json at all"
    # the tool's empty result stays empty; the model's empty reply says so
    assert (t.steps[2].content, t.steps[3].content, meta(t.steps[3])["empty_response"]) == (
        "",
        "(empty response)",
        True,
    )


def test_fallback_id_is_stable():
    a, _, _ = run(FIXTURES / "openai_chat.jsonl")
    b, _, _ = run(FIXTURES / "openai_chat.jsonl")
    assert a[2].trace_id == b[2].trace_id and len(a[2].trace_id) == 16


def test_streaming_chunks_joined():
    traces, errors, _ = run(FIXTURES / "openai_chat_stream.jsonl")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert types(t) == ["message", "message", "action", "observation"]
    assert t.steps[1].content == "One, two <&>"
    assert t.steps[2].content == "log" and t.steps[2].action_input == '{\n  "n": 2\n}'
    assert t.steps[3].content == "logged"
