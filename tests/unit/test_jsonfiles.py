"""core.jsonfiles: the one reading layer (decoding, JSONL and JSON with located errors, the inputs of a command) and
the one way to write an output file (beside the target, renamed at the end)."""
from __future__ import annotations

import gzip
import os
import stat
import threading

import pytest

from ls_trajeval.core.jsonfiles import (
    TraceError,
    atomic_output,
    documents,
    dumps_line,
    expand_inputs,
    is_jsonl,
    iter_lines,
    load_located,
    loads,
    read_lines,
)

# ---------------------------------------------------------------- decoding and encoding


def test_loads_refuses_what_is_not_json_and_reads_what_orjson_does_not():
    assert loads(b'{"a": [1, 2.5, "\xc3\xbc"]}') == {"a": [1, 2.5, "ü"]}
    assert loads(str(2 ** 70)) == 2 ** 70  # beyond 64 bits: the standard library reads it
    assert loads('"\\ud800"') == "\ud800"  # a lone surrogate escaped in JSON text
    with pytest.raises(ValueError, match="NaN is not valid JSON"):
        loads("[NaN]")
    assert loads("[NaN, Infinity]", nan_as_null=True) == [None, None]
    with pytest.raises(ValueError, match="invalid UTF-8 at byte 2"):
        loads(b'"a\xff"')


def test_dumps_line_is_one_line_of_utf8_whatever_the_value():
    assert dumps_line({"t": "<ü & \"x\">", "n": 1}) == '{"t":"<ü & \\"x\\">","n":1}\n'.encode()
    assert loads(dumps_line({"big": 2 ** 70})) == {"big": 2 ** 70}
    line = dumps_line({"s": "\ud800"})  # no UTF-8 for it: escaped, the line stays JSON
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and loads(line) == {"s": "\ud800"}


# ---------------------------------------------------------------- reading

def test_jsonl_lines_are_read_one_by_one_with_located_errors(tmp_path):
    p = tmp_path / "x.jsonl.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(b'{"a": 1}\n\n{broken\n"\xff"\n[2]\n')
    assert list(read_lines(p)) == [
        (1, {"a": 1}),
        TraceError(
            str(p), 3, None, "invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
        ),
        TraceError(str(p), 4, None, "invalid UTF-8 at byte 1"),
        (5, [2]),
    ]
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(p.read_bytes()[:20])  # a truncated gzip stream: the file's error, located at the file
    assert list(read_lines(cut))[-1].message.startswith("cannot read: ")


def test_a_document_or_its_lines(tmp_path):
    doc = tmp_path / "doc.json"
    doc.write_text('{\n  "a": [1,\n  2]\n}\n')  # pretty-printed: one document
    assert not is_jsonl(doc) and list(documents(doc)) == [(None, {"a": [1, 2]})]
    lines = tmp_path / "lines.json"
    lines.write_text('{"a": 1}\n{"b": 2}\n')  # a .json file of lines: JSONL all the same
    assert is_jsonl(lines) and list(documents(lines)) == [(1, {"a": 1}), (2, {"b": 2})]
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "a": 1,\n  "b": \n}\n')
    err = load_located(broken)
    assert (err.line, err.message) == (4, "invalid JSON: Expecting value (column 1)")
    assert list(documents(tmp_path / "missing.json"))[0][1].message.startswith("cannot read: ")


def test_inputs_records_only_or_every_file(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    for name in ("d/b.jsonl", "d/a.jsonl.gz", "d/notes.txt", "d/sub/c.jsonl", "d/.hidden.jsonl"):
        (tmp_path / name).write_text("")
    (tmp_path / "empty").mkdir()
    given = [tmp_path / "d", tmp_path / "nope.jsonl", tmp_path / "empty"]
    records = list(expand_inputs(given, records_only=True))
    assert records == [
        tmp_path / "d" / "a.jsonl.gz",
        tmp_path / "d" / "b.jsonl",
        TraceError(str(tmp_path / "nope.jsonl"), None, None, "no such file or directory"),
        TraceError(str(tmp_path / "empty"), None, None, "directory holds no *.jsonl or *.jsonl.gz files"),
    ]
    every = list(expand_inputs(given))
    assert every[:4] == [tmp_path / "d" / "a.jsonl.gz", tmp_path / "d" / "b.jsonl", tmp_path / "d" / "notes.txt",
                         tmp_path / "d" / "sub" / "c.jsonl"]
    assert [e.message for e in every[4:]] == ["no such file or directory", "directory holds no files"]


# ---------------------------------------------------------------- writing

def _left(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_the_file_appears_whole_at_the_end(tmp_path):
    target = tmp_path / "out.jsonl"
    with atomic_output(target) as fh:
        fh.write("one\n")
        fh.flush()
        partial = [p for p in tmp_path.iterdir() if p != target]
        assert not target.exists() and len(partial) == 1 and partial[0].name.startswith(".out.jsonl.")
        assert partial[0].read_text() == "one\n"
        fh.write("two\n")
    assert target.read_text() == "one\ntwo\n" and _left(tmp_path) == ["out.jsonl"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # as a new file opened for writing would be


@pytest.mark.parametrize("failure", [RuntimeError("a bug while writing"), KeyboardInterrupt()])
def test_a_failure_mid_write_leaves_the_target_as_it_was_and_no_partial_file(tmp_path, failure):
    target = tmp_path / "out.jsonl"
    target.write_text("the previous run\n")
    target.chmod(0o640)
    with pytest.raises(type(failure)):
        with atomic_output(target) as fh:
            fh.write("x" * 100_000)  # more than a buffer: part of it is on disk already
            raise failure
    assert target.read_text() == "the previous run\n" and _left(tmp_path) == ["out.jsonl"]
    with atomic_output(target) as fh:
        fh.write("new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o640  # it keeps its permissions


def test_errors_name_the_target_not_the_partial_file(tmp_path):
    missing = tmp_path / "no-such-folder" / "out.jsonl"
    with pytest.raises(FileNotFoundError) as exc:
        with atomic_output(missing):
            pass
    assert exc.value.filename == str(missing)
    (tmp_path / "a-dir").mkdir()
    with pytest.raises(IsADirectoryError) as exc:
        with atomic_output(tmp_path / "a-dir"):
            pass
    assert exc.value.filename == str(tmp_path / "a-dir")
    (tmp_path / "a-file").write_text("")
    with pytest.raises(NotADirectoryError) as exc:
        with atomic_output(tmp_path / "a-file" / "out.jsonl", make_folder=True):
            pass
    assert exc.value.filename == str(tmp_path / "a-file" / "out.jsonl")
    assert _left(tmp_path) == ["a-dir", "a-file"]
    with atomic_output(missing, make_folder=True) as fh:  # asked to, it makes the folder
        fh.write("x")
    assert missing.read_text() == "x"


def test_a_link_is_followed_and_a_pipe_is_written_in_place(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_text("old")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with atomic_output(link) as fh:
        fh.write("new")
    assert link.is_symlink() and real.read_text() == "new"
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # like /dev/null or /dev/stdout: nothing to replace, it must stay what it is
    got = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_bytes()))
    reader.start()
    with atomic_output(pipe, "wb") as fh:
        fh.write(b"through the pipe")
    reader.join(timeout=60)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(pipe.stat().st_mode)
    assert _left(tmp_path) == ["link.jsonl", "pipe", "real.jsonl"]


def test_a_file_that_breaks_off_is_a_located_error_after_its_lines(tmp_path):
    whole = tmp_path / "log.jsonl.gz"
    whole.write_bytes(gzip.compress(b'{"a": 1}\n' * 2000))
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole.read_bytes()[:60])  # the stream breaks off inside the first lines' compressed block
    got = list(documents(cut))
    assert all(line is not None and value == {"a": 1} for line, value in got[:-1])
    assert got[-1][0] is None and got[-1][1].message.startswith("cannot read: ")
    with pytest.raises((OSError, EOFError)):
        list(iter_lines(cut))  # unlocated, the reading layer's callers get the exception itself
