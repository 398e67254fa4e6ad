"""Every command that writes a file writes it the one way (core.jsonfiles.atomic_output), seen through the CLI: an
output that cannot be written is one error line naming it (never a partial file's name), and a run that fails or is
interrupted while writing leaves the previous output as it was and no partial file."""
from __future__ import annotations

import json

import pytest
from commandline import invoke as run

from .test_export import project


def export_line() -> str:
    return json.dumps({"trace_id": "t", "task": "q", "scheme": "s",
                       "s": [{"step_index": 0, "step_text": "a", "correctness": "correct"}]}) + "\n"


@pytest.fixture
def fake_studio(monkeypatch):
    """`export` against the in-memory client of the export flow's tests."""
    fake = project()
    monkeypatch.setattr("ls_trajeval.studio.client.connect", lambda *a, **k: fake)
    return fake


def commands(tmp_path, fixtures_dir, target):
    export = tmp_path / "e.jsonl"
    export.write_text(export_line())
    return {
        "convert": ["convert", fixtures_dir / "converters" / "react.jsonl", "-o", target],
        "prm": ["prm", export, "-o", target],
        "generate": ["generate", "-o", target],
        "export": ["export", "--project", 7, "-o", target],
    }


@pytest.mark.parametrize("name", ["convert", "prm", "generate", "export"])
def test_an_output_that_cannot_be_written_is_named_in_one_error_line(name, tmp_path, fixtures_dir, fake_studio):
    (tmp_path / "a-file").write_text("")
    # a folder that is a file: no command can write there (export makes missing folders, the others do not)
    target = tmp_path / "a-file" / "out.jsonl"
    r = run(*commands(tmp_path, fixtures_dir, target)[name])
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(errors) == 1, r.output
    assert str(target) in errors[0] and "Not a directory" in errors[0] and ".partial" not in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "e.jsonl"]


def test_prm_failing_mid_write_leaves_the_previous_dataset(tmp_path, monkeypatch):
    export = tmp_path / "e.jsonl"
    export.write_text(export_line() + export_line().replace('"t"', '"u"'))
    target = tmp_path / "prm.jsonl"
    assert run("prm", export, "-o", target).exit_code == 0
    before = target.read_bytes()
    assert before.count(b"\n") == 2
    import ls_trajeval.analysis.prm as prm

    made = prm._example
    calls = []

    def second_fails(*args, **kw):  # the first example is written, the second is never made
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("a bug in the middle")
        return made(*args, **kw)

    monkeypatch.setattr(prm, "_example", second_fails)
    r = run("prm", export, "-o", target)
    assert r.exit_code == 2 and "internal error: RuntimeError: a bug in the middle" in r.output and len(calls) == 2
    assert target.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["e.jsonl", "prm.jsonl"]


def test_convert_interrupted_mid_write_leaves_the_previous_output(tmp_path, fixtures_dir, monkeypatch):
    target = tmp_path / "out.jsonl"
    target.write_text("the previous conversion\n")
    import ls_trajeval.flows.convert as convert

    lines = convert.trace_line
    written = []

    def ctrl_c_at_the_second(trace):
        written.append(trace.trace_id)
        if len(written) == 2:
            raise KeyboardInterrupt
        return lines(trace)

    monkeypatch.setattr(convert, "trace_line", ctrl_c_at_the_second)
    r = run("convert", fixtures_dir / "converters" / "openai_chat.jsonl", "-o", target)
    assert r.exit_code == 130 and "error: interrupted" in r.output and len(written) == 2
    assert target.read_text() == "the previous conversion\n" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_export_per_annotator_writes_all_its_files_or_none(tmp_path, fake_studio, monkeypatch):
    out = tmp_path / "by"
    assert run("export", "--project", 7, "--per-annotator", "-o", out).exit_code == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == ["a@example.com.jsonl", "b@example.com.jsonl"]
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    import ls_trajeval.flows.export as export

    built = export.readable_record
    seen = []

    def the_last_fails(*args, **kw):  # the first annotator's file is written, the second annotation breaks
        seen.append(1)
        if len(seen) == 2:
            raise RuntimeError("page 2 broke")
        return built(*args, **kw)

    monkeypatch.setattr(export, "readable_record", the_last_fails)
    r = run("export", "--project", 7, "--per-annotator", "-o", out)
    assert r.exit_code == 2 and "RuntimeError: page 2 broke" in r.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
