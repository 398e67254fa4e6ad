"""What `convert` says when nothing meaningful comes out: a file no format claims names its shape and the
closest formats; a converter that finds no text in a record has failed (a located error saying what the
record holds); a forced --format that does not fit a file warns and rejects the traces it emptied."""
import json

import pytest

from ls_trajeval.converters.base import ConvertWarning
from ls_trajeval.core.trace import Trace, TraceError
from ls_trajeval.flows.convert import FormatError, convert_file, detect_format

from .conftest import FIXTURES, meta, run

OPENHANDS = FIXTURES / "openhands" / "resolver_output.jsonl"


def _items(path, fmt):
    items = list(convert_file(path, fmt))
    return ([i for i in items if isinstance(i, Trace)], [i for i in items if isinstance(i, TraceError)],
            [i for i in items if isinstance(i, ConvertWarning)])


def test_unknown_json_names_its_keys_and_the_closest_formats(tmp_path):
    p = tmp_path / "x.json"
    # keys of tau-bench's results (traj, reward, info) and one unknown
    p.write_text(json.dumps({"traj": "not a list", "reward": 1, "info": {"a": 1}, "zzz": 2}))
    with pytest.raises(FormatError) as exc:
        detect_format(p)
    msg = str(exc.value)
    assert msg.startswith("unknown format: the file holds JSON: an object with keys traj (string), reward (number), "
                          "info (object with keys a), zzz (number); closest formats: tau_bench (")
    assert "shares keys info, reward, traj" in msg and "use --format NAME (one of aider," in msg


def test_unknown_jsonl_names_its_first_record(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"alpha": 1, "beta": [1, 2]}\n{"alpha": 2}\n')
    with pytest.raises(
        FormatError,
        match=r"the file holds JSONL whose first record is an object with keys "
        r"alpha \(number\), beta \(list of 2 numbers\); no format reads more than one",
    ):
        detect_format(p)


def test_unknown_text_names_its_beginning(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some notes\nnothing here\n")
    with pytest.raises(FormatError, match=r"the file holds text beginning 'just some notes nothing here"):
        detect_format(p)


def test_an_empty_reply_is_a_step_that_says_so_and_a_record_of_nothing_is_rejected(tmp_path):
    p = tmp_path / "chat.jsonl"
    p.write_text(
        json.dumps({"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "  "}]})
        + "\n"
        + json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]})
        + "\n"
        + json.dumps({"messages": [{"role": "user", "content": ""}, {"role": "tool", "content": ""}]})
        + "\n"
    )
    traces, errors, _ = run(p, "openai_chat")
    # the model's empty replies are data to judge: kept, saying so; the user's empty message stays as it is
    assert [[(s.content, meta(s).get("empty_response")) for s in t.steps] for t in traces] == [
        [("", None), ("(empty response)", True)], [("hi", None), ("(empty response)", True)]]
    (e,) = errors  # nothing the agent did, and no text at all
    assert (e.line, e.message.split(";")[0]) == (3, "no text: all 2 step(s) made of it are empty, nothing to annotate")
    assert (
        "the record is an object with keys messages (list of 2, the first an object with keys role, content)"
        in e.message
    )


def test_forced_react_on_records_of_agent_steps_says_what_is_there(tmp_path):
    # five {agent, content} steps per record, after Potato's multi-agent examples (hand-made: those are GPL-3.0)
    recs = [
        {
            "id": f"r{k}",
            "task": "t",
            "steps": [
                {"agent": a, "content": f"{a} says {k}"}
                for a in ("Planner", "Researcher", "Planner", "Booking", "Verifier")
            ],
        }
        for k in range(2)
    ]
    p = tmp_path / "agents.json"
    p.write_text(json.dumps(recs))
    traces, errors, warnings = _items(p, "react")
    assert traces == [] and len(errors) == 2
    assert [e.field for e in errors] == ["[0].steps", "[1].steps"]
    assert errors[0].message == ("no steps: the record holds nothing to annotate; the record is an object with keys "
                                 "id (string), task (string), steps (list of 5, the first an object with keys agent, "
                                 "content); looks like potato")
    (w,) = warnings
    assert w.message.startswith(
        "--format react does not recognise this file: 2 record(s) refused (it looks like potato;"
    )
    assert len(run(p, "potato")[0]) == 2


def test_forced_format_that_matches_nothing_warns_and_rejects(tmp_path, cli):
    lines = [json.loads(ln) for ln in OPENHANDS.read_text(encoding="utf-8").splitlines() if ln.strip()]
    histories = [len(r["history"]) for r in lines]
    # OpenHands actions carry their text in "command"/"thought", not "content": multi_agent reads them as empty
    no_content = [sum(1 for h in r["history"] if not h.get("content")) for r in lines]
    assert all(2 * e >= n for e, n in zip(no_content, histories))
    traces, errors, warnings = _items(OPENHANDS, "multi_agent")
    assert traces == []
    assert [(e.line, e.message) for e in errors] == [
        (k + 1, f"{e} of {n} steps are empty: nothing meaningful came out of this record with --format multi_agent")
        for k, (e, n) in enumerate(zip(no_content, histories))]
    (w,) = warnings
    assert w.message.startswith(f"--format multi_agent does not recognise this file: {len(lines)} trace(s) of mostly "
                                "empty steps rejected (it looks like openhands; it holds JSONL whose first record")
    # the same file, its own format: nothing rejected
    assert _items(OPENHANDS, "openhands")[1] == []
    out = tmp_path / "o.jsonl"
    r = cli("convert", OPENHANDS, "--format", "multi_agent", "-o", out)
    assert r.exit_code == 1 and f"0 trace(s) converted, {len(lines)} rejected, 1 warning(s)" in r.stderr
    assert out.read_text() == ""


def test_forced_format_on_a_file_it_recognises_keeps_partly_empty_traces(tmp_path):
    p = tmp_path / "chat.jsonl"
    p.write_text(json.dumps({"messages": [{"role": "user", "content": "run it"}, {"role": "assistant", "content": ""},
                                          {"role": "assistant", "content": ""}]}) + "\n")
    traces, errors, warnings = _items(p, "openai_chat")
    assert len(traces) == 1 and errors == [] and warnings == []
