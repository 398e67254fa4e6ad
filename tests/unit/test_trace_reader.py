import gzip
import json

from ls_trajeval.core.trace import Trace, TraceError, read_traces

GOOD = {"trace_id": "t1", "task": "do <it> & \"now\"", "trace": [
    {"type": "thought", "content": "plan"},
    {"type": "action", "content": "search", "action_input": {"q": "x"}, "timestamp": "12:00"}],
    "metadata": {"agent": "a"}, "split": "dev"}


def write(tmp_path, lines, name="t.jsonl"):
    p = tmp_path / name
    p.write_bytes(b"\n".join(x if isinstance(x, bytes) else x.encode() for x in lines) + b"\n")
    return p


def test_every_bad_line_is_reported_with_line_and_field_and_the_rest_is_read(tmp_path):
    lines = [
        json.dumps(GOOD),
        "{not json",
        json.dumps({"task": "no id", "trace": [{"type": "a", "content": "b"}]}),
        json.dumps({"trace_id": "t3", "trace": []}),
        json.dumps({"trace_id": "t4"}),
        json.dumps({"trace_id": "t5", "trace": [{"content": "x"}]}),
        json.dumps({"trace_id": "t6", "trace": [{"type": "x", "content": 5}]}),
        json.dumps({"trace_id": "t7", "trace": "steps"}),
        json.dumps({"trace_id": "t1", "trace": [{"type": "a", "content": "b"}]}),
        b'{"trace_id": "t8", "trace": [{"type": "a", "content": "\xff"}]}',
        '{"trace_id": "t9", "trace": [{"type": "a", "content": NaN}]}',
        json.dumps([1, 2]),
        "",
        json.dumps({"trace_id": 10, "task": None, "trace": [{"type": "a", "content": "x"}]}),
        # steps without any text: nothing to annotate
        json.dumps({"trace_id": "t11", "trace": [{"type": "a", "content": ""},
                                                 {"type": "action", "content": " ", "action_input": ""}]}),
        json.dumps({"trace_id": "t12", "trace": [{"type": "a", "content": ""},
                                                 {"type": "action", "content": "", "action_input": "ls"}]}),
    ]
    out = list(read_traces(write(tmp_path, lines)))
    bad_byte = lines[9].index(b"\xff")  # where line 10 stops being UTF-8
    good = [x for x in out if isinstance(x, Trace)]
    bad = [str(x).split("t.jsonl:", 1)[1] for x in out if isinstance(x, TraceError)]
    assert [t.trace_id for t in good] == ["t1", "10", "t12"]
    assert bad == [
        "2: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        "3: trace_id: missing",
        "4: trace: empty: a trace needs at least one step",
        "5: trace: missing",
        "6: trace[0].type: missing",
        "7: trace[0].content: expected a string, got a number",
        "8: trace: expected a list of steps, got a string",
        "9: trace_id: duplicate trace_id 't1' (first on line 1)",
        f"10: invalid UTF-8 at byte {bad_byte}",
        "11: invalid JSON: NaN is not valid JSON",
        "12: expected a JSON object, got a list",
        "15: trace: all 2 step(s) are empty (no content, no action_input): nothing to annotate",
    ]


def test_extra_keys_and_special_characters_survive(tmp_path):
    (t,) = read_traces(write(tmp_path, [json.dumps(GOOD, ensure_ascii=False)]))
    assert t.to_json() == GOOD
    assert t.steps[1].action_input_text == '{\n  "q": "x"\n}'


def test_gzip_and_custom_keys(tmp_path):
    p = tmp_path / "t.jsonl.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(json.dumps({"id": "g", "question": "q", "steps": [{"type": "a", "content": "b"}]}) + "\n")
    (t,) = read_traces(p, id_key="id", text_key="question", trace_key="steps")
    assert (t.trace_id, t.task, len(t.steps)) == ("g", "q", 1)
