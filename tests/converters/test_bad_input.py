import gzip
import json

from .conftest import FIXTURES, run


def test_truncated_jsonl_line_is_located_and_others_convert(tmp_path):
    good = {"id": "ok", "messages": [{"role": "user", "content": "hi"}]}
    p = tmp_path / "chat.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(good)[:25] + "\n" + json.dumps(dict(good, id="ok2")) + "\n")
    traces, errors, _ = run(p, "openai_chat")
    assert [t.trace_id for t in traces] == ["ok", "ok2"]
    assert len(errors) == 1 and errors[0].line == 2 and "invalid JSON" in errors[0].message
    assert str(errors[0]).startswith(f"{p}:2: ")


def test_truncated_json_document(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('{\n  "messages": [\n    {"role": "user", "content": "x"')
    traces, errors, _ = run(p, "anthropic")
    assert not traces and errors[0].line is not None and "invalid JSON" in errors[0].message


def test_wrong_field_types_name_the_field(tmp_path):
    p = tmp_path / "c.jsonl"
    rows = [
        {"id": "a", "messages": "not a list"},
        {"id": "b", "messages": [{"role": "assistant", "content": 5}]},
        {
            "id": "c",
            "messages": [
                {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]}
            ],
        },
        {"id": "d", "messages": [{"role": "user", "content": "fine"}]},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    traces, errors, _ = run(p, "openai_chat")
    assert [t.trace_id for t in traces] == ["d"]
    assert [(e.line, e.field) for e in errors] == [
        (1, "messages"),
        (2, "messages[0].content"),
        (3, "messages[0].tool_calls[0].function.name"),
    ]


def test_invalid_utf8_line(tmp_path):
    p = tmp_path / "c.jsonl.gz"
    ok = json.dumps({"id": "a", "messages": [{"role": "user", "content": "é"}]}).encode()
    with gzip.open(p, "wb") as fh:
        fh.write(
            ok
            + b"\n"
            + b'{"id": "b", "messages": [{"role": "user", "content": "\xff\xfe"}]}\n'
            + ok.replace(b'"a"', b'"c"')
            + b"\n"
        )
    traces, errors, _ = run(p, "openai_chat")
    assert [t.trace_id for t in traces] == ["a", "c"] and traces[0].steps[0].content == "é"
    assert errors[0].line == 2 and "invalid UTF-8" in errors[0].message


def test_claude_code_bad_records(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(
        "\n".join(
            [
                json.dumps(
                    {
                        "type": "user",
                        "uuid": "1",
                        "parentUuid": None,
                        "sessionId": "s",
                        "message": {"role": "user", "content": "hi"},
                    }
                ),
                "{broken",
                json.dumps(
                    {
                        "type": "assistant",
                        "parentUuid": "1",
                        "sessionId": "s",
                        "message": {"role": "assistant", "content": "no uuid"},
                    }
                ),
                json.dumps(
                    {
                        "type": "assistant",
                        "uuid": "2",
                        "parentUuid": "1",
                        "sessionId": "s",
                        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                    }
                ),
            ]
        )
        + "\n"
    )
    traces, errors, _ = run(p, "claude_code")
    assert [s.content for s in traces[0].steps] == ["hi", "ok"]
    assert [(e.line, e.field) for e in errors] == [(2, None), (3, "uuid")]


def test_cli_exit_code_and_messages(cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "messages": [{"role": "user", "content": "hi"}]}\n{"id": \n')
    out = tmp_path / "out.jsonl"
    r = cli("convert", bad, "--format", "openai_chat", "-o", out)
    assert r.exit_code == 1
    assert f"{bad}:2: invalid JSON" in r.stderr
    assert "1 trace(s) converted, 1 rejected" in r.stderr
    assert len(out.read_text().splitlines()) == 1


def test_cli_auto_directory_and_stdout(cli):
    r = cli("convert", FIXTURES / "react_trace.txt", FIXTURES / "anthropic.json", "-o", "-")
    assert r.exit_code == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [d["metadata"]["source_format"] for d in lines] == ["react", "anthropic"]
    assert "<script>alert(" in r.stdout and " & ünïcødé" in r.stdout  # not escaped on the way out
    assert lines[0]["task"].endswith('Füße <script>alert("x")</script> & ünïcødé ✓')


def test_cli_unknown_file(cli, tmp_path):
    p = tmp_path / "what.json"
    p.write_text('{"a": 1}')
    r = cli("convert", p, "-o", tmp_path / "o.jsonl")
    assert r.exit_code == 1 and "unknown format" in r.stderr and "openai_chat" in r.stderr


def test_cli_formats(cli):
    r = cli("formats")
    assert r.exit_code == 0
    for name in (
        "trace_jsonl",
        "react",
        "openai_chat",
        "openai_responses",
        "anthropic",
        "claude_code",
        "swe_agent",
        "inspect_ai",
        "smolagents",
        "aider",
    ):
        assert name in r.stdout
    assert "shapes:" in r.stdout


def test_truncated_document_under_auto_names_its_json_error(tmp_path):
    # no detector can claim a cut-off document; its JSON error (with the line) says more than "unknown format"
    whole = json.dumps({"question": "Q?", "history": [{"role": "human", "content": "Q?"}] * 3}, indent=1)
    p = tmp_path / "cut.json"
    p.write_text(whole[: len(whole) // 2])
    traces, errors, _ = run(p, "auto")
    assert not traces and len(errors) == 1
    assert errors[0].line is not None and errors[0].message.startswith("invalid JSON")
    q = tmp_path / "unknown.json"
    q.write_text('{"hello": "world"}')
    (err,) = run(q, "auto")[1]
    assert err.line is None and err.message.startswith("unknown format")
