import json

import pytest

from .conftest import FIXTURES, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "otel_genai"
T = "5b8efff798038103d269b633813fc60c"


def test_current_conventions_across_batches():
    traces, errors, _ = run(D / "current.jsonl", "otel_genai")
    (t,) = traces  # the trace's spans come in two export lines: grouped by traceId
    assert t.trace_id == T and t.task.endswith(SCARY)
    assert types(t) == ["thought", "action", "observation", "action", "error", "message"]
    s = t.steps
    assert s[0].content == "Two cities: call the tool twice."
    assert (
        meta(s[0])["usage"] == {"input_tokens": 100, "output_tokens": 40} and meta(s[0])["model"] == "gpt-4o-2024-08-06"
    )
    assert [meta(x)["tool_call_id"] for x in s[1:5]] == ["call_p", "call_p", "call_z", "call_z"]
    # JSON arguments are indented, whichever way the source wrote them (step convention: render_args)
    assert s[1].action_input == '{\n  "city": "Paris"\n}' and s[2].content == "18°C <sunny> & dry"
    assert s[4].content.startswith("upstream timed out")
    assert s[5].content == "Paris 18°C <sunny> & Zürich unknown."
    assert all(meta(x)["agent"] == "weather_bot" for x in s)
    assert t.metadata["skipped_spans"] == 1  # the HTTP span under the chat span
    assert t.metadata["service"] == "weather-svc"
    roundtrip(t)


def test_bad_lines_located():
    _, errors, _ = run(D / "current.jsonl", "otel_genai")
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {3, 4}
    assert "invalid JSON" in by_line[3].message
    assert by_line[4].field == "resourceSpans[0].scopeSpans[0].spans[0].attributes"


def test_older_attributes_and_events():
    traces, errors, _ = run(D / "older.json", "otel_genai")
    assert errors == []
    a, b = traces
    assert a.task == "What is 6*7? & <b>"
    # the call has no execute_tool span: its result comes from the next prompt's tool message
    assert types(a) == ["action", "observation", "message"]
    assert (a.steps[0].content, a.steps[0].action_input) == ("multiply", '{\n  "a": 6,\n  "b": 7\n}')
    assert meta(a.steps[0])["usage"] == {"input_tokens": 30, "output_tokens": 9}
    assert a.steps[1].content == "42" and meta(a.steps[1])["tool_call_id"] == "call_m"
    assert b.task == "Say hi in Japanese"
    assert types(b) == ["message"] and b.steps[0].content == "こんにちは"


@pytest.mark.parametrize("name", ["current.jsonl", "older.json"])
def test_detect_fixture(name):
    assert detect("otel_genai", D / name) > 0.5
    assert auto_name(D / name) == "otel_genai"



def test_whole_prompt_and_completion_attributes():
    # OpenLLMetry's oldest form: gen_ai.prompt holds the message list as JSON, gen_ai.completion the text
    traces, errors, _ = run(D / "whole_attribute.json", "otel_genai")
    assert not errors
    (t,) = traces
    assert t.task == "Book a flight to Zürich <now> & fast"
    assert [(s.type, s.content) for s in t.steps] == [
        ("thought", "I will search"),
        ("action", "search"),
        ("observation", "Found 5"),
    ]


@pytest.mark.parametrize("name", ["older.json", "whole_attribute.json"])
def test_big_export_is_streamed_with_the_same_result(name, monkeypatch, tmp_path):
    from ls_trajeval.converters.support import files

    whole, whole_errors, _ = run(D / name, "otel_genai")
    monkeypatch.setattr(files, "STREAM_ABOVE", 16)  # every document counts as big: read entry by entry with ijson
    streamed, streamed_errors, _ = run(D / name, "otel_genai")
    assert [t.to_json() for t in streamed] == [t.to_json() for t in whole] and streamed
    assert streamed_errors == whole_errors
    # a syntax error in a streamed export is located and the entries before it still convert
    doc = json.loads((D / name).read_text())
    bad = tmp_path / "cut.json"
    bad.write_text(json.dumps(doc)[:-3])
    traces, errors, _ = run(bad, "otel_genai")
    assert errors and errors[0].message.startswith("invalid JSON") and "resourceSpans[" in errors[0].field
