"""support.files: NaN and Infinity (written by Python's json.dumps for a float nan) read as null where a
format asks for it, refused everywhere else."""
import pytest

from ls_trajeval.converters.support.files import documents, loads


def test_loads_refuses_nan_unless_asked():
    with pytest.raises(ValueError):
        loads(b'{"agent_error": NaN}')
    assert loads(b'{"agent_error": NaN, "x": [Infinity, -Infinity, 1.5]}', nan_as_null=True) == {
        "agent_error": None,
        "x": [None, None, 1.5],
    }
    with pytest.raises(ValueError):  # a real syntax error is still one
        loads(b'{"agent_error": NaN,}', nan_as_null=True)


def test_documents_reads_nan_lines_as_null_and_locates_broken_ones(tmp_path):
    p = tmp_path / "answers.jsonl"
    p.write_bytes(b'{"q": 1, "agent_error": NaN}\n{"q": 2, "agent_error": null}\n{"q": 3,\n')
    strict = list(documents(p))
    assert [type(v).__name__ for _, v in strict] == ["TraceError", "dict", "TraceError"]
    lenient = list(documents(p, nan_as_null=True))
    assert [ln for ln, _ in lenient] == [1, 2, 3]
    assert lenient[0][1] == {"q": 1, "agent_error": None} and lenient[1][1] == {"q": 2, "agent_error": None}
    assert type(lenient[2][1]).__name__ == "TraceError" and lenient[2][1].line == 3
    doc = tmp_path / "one.json"
    doc.write_bytes(b'{"a": NaN}')
    assert list(documents(doc, nan_as_null=True)) == [(None, {"a": None})]
