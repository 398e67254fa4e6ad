import pytest

from .conftest import FIXTURES, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "mcp"


def test_session_log():
    traces, errors, warnings = run(D / "session.jsonl", "mcp")
    assert len(traces) == 2  # a second initialize starts a new session
    t = traces[0]
    assert types(t) == [
        "system", "system", "system", "system", "system",  # initialize + result, initialized, tools/list + result
        "action", "observation",  # id 2: its result arrived after id 3's, still placed right after it
        "action", "observation",  # id 3
        "observation",  # server log notification
        "action", "error",  # isError result
        "action", "error",  # JSON-RPC error
        "other",  # a record that is not JSON-RPC
        "action",  # id 8 never answered
    ]
    s = t.steps
    assert (s[5].content, meta(s[5])["rpc_id"], meta(s[6])["rpc_id"]) == ("get_weather", 2, 2)
    assert s[5].action_input == '{\n  "city": "Zürich"\n}'
    assert s[6].content.startswith("Zürich: 4°C\n[image image/png: data:image/png;base64,<")
    assert "iVBORw0KGgo" not in s[6].content  # inline image data is referenced, not inlined
    assert s[8].content == SCARY and meta(s[8])["tool_call_id"] == "3"
    assert s[7].action_input == '{\n  "city": "Paris <script>alert(\\"x\\")</script> & ✓"\n}'
    assert s[9].content == "upstream slow" and meta(s[9])["level"] == "warning"
    assert s[11].content == "days must be <= 7"
    assert s[13].content == "-32602: Unknown tool: nope"
    assert meta(s[15])["no_response"] is True
    assert t.metadata["server"] == {"name": "weather-server", "version": "1.2.0"}
    second = traces[1]
    assert types(second) == ["system", "system", "action", "observation"] and second.steps[3].content == ""
    assert len(warnings) == 1 and "1 record" in warnings[0].message
    roundtrip(t)


def test_bad_messages_located_session_continues():
    traces, errors, _ = run(D / "session.jsonl", "mcp")
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {15, 16}
    assert "invalid JSON" in by_line[15].message
    assert by_line[16].field == "params.name" and "string" in by_line[16].message
    assert traces[0].steps[-1].content == "get_weather"  # line 18, after the bad lines, still converted


def test_inspector_wrappers():
    (t,), errors, _ = run(D / "inspector.json", "mcp")
    assert errors == []
    assert types(t) == ["action", "observation", "action", "observation", "action"]
    assert t.steps[1].content == "127.0.0.1 localhost"
    assert (t.steps[2].content, t.steps[3].content) == ("resources/read", "x & y")
    assert meta(t.steps[0])["direction"] == "outgoing" and t.steps[1]["timestamp"] == "2025-09-01T10:00:00.250Z"
    assert t.trace_id == run(D / "inspector.json", "mcp")[0][0].trace_id


@pytest.mark.parametrize("name", ["session.jsonl", "inspector.json"])
def test_detect_fixture(name):
    assert detect("mcp", D / name) > 0.5
    assert auto_name(D / name) == "mcp"

