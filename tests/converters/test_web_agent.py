import json

import pytest

from .conftest import FIXTURES, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "web_agent"


def test_browsergym_steps():
    (t,), errors, _ = run(D / "browsergym.json", "web_agent")
    assert errors == []
    assert t.trace_id == "bg-ep-001" and t.task.endswith(SCARY)
    assert types(t) == [
        "observation", "thought", "action",
        "observation", "thought", "action",
        "error", "observation", "action",  # the failed click is reported by the next page
        "observation", "thought", "action",
    ]
    s = t.steps
    assert (s[2].content, s[2].action_input) == ("fill", "fill('12', 'Zürich')")
    assert meta(s[0])["screenshot"] == "screenshots/step_0.png" and meta(s[0])["url"] == "https://flights.example/"
    # inline screenshots become a short reference, never the base64 itself
    assert meta(s[3])["screenshot"].startswith("data:image/png;base64,<") and "iVBOR" not in meta(s[3])["screenshot"]
    assert s[6].content == 'ValueError: Could not find element with bid "99"'
    assert s[9].content == "[40] row 'LX 318 €89 & up <fast>'"
    assert meta(s[9])["url"] == "https://flights.example/results?to=Z%C3%BCrich&a=1"
    assert s[11].action_input == "send_msg_to_user('€89')" and meta(s[11])["reward"] == 1
    assert t.metadata["benchmark"] == "miniwob"
    roundtrip(t)


def test_webarena_and_bad_lines():
    traces, errors, _ = run(D / "webarena.jsonl", "web_agent")
    assert [t.trace_id for t in traces] == ["27", "28"]
    a, b = traces
    assert types(a) == ["observation", "thought", "action", "observation", "thought", "action"]
    assert (a.steps[2].content, a.steps[2].action_input) == ("click", "click [1587]")
    assert a.steps[5].content == "stop" and a.metadata["start_url"] == "http://reddit.example"
    # alternating StateInfo / Action items
    assert types(b) == ["observation", "thought", "action", "observation"]
    assert meta(b.steps[0])["url"] == "http://shop.example/" and meta(b.steps[0])["screenshot"] == "render_28_0.png"
    assert b.steps[2].content == "CLICK" and '"element_id": "1"' in b.steps[2].action_input
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {3, 4}
    assert "invalid JSON" in by_line[3].message
    assert by_line[4].field == "trajectory[0].action"


@pytest.mark.parametrize("name", ["browsergym.json", "webarena.jsonl"])
def test_detect_fixture(name):
    assert detect("web_agent", D / name) > 0.5
    assert auto_name(D / name) == "web_agent"



def test_an_action_written_as_a_string_item_is_an_action(tmp_path):
    """A trajectory may hold an action as a bare string between state objects; it once cost the whole record."""
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"intent": "buy", "trajectory": [
        "click [1]", {"state": {"url": "u", "axtree_txt": "page"}, "action": "stop [done]"}]}) + "\n")
    traces, errors, _ = run(p, "web_agent")
    assert not errors and len(traces) == 1
    assert [(s.type, s.content, s.action_input) for s in traces[0].steps] == [
        ("action", "click", "click [1]"), ("observation", "page", None), ("action", "stop", "stop [done]")]
