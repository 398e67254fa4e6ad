"""``convert -j N``: files converted in worker processes give the same output, byte for byte, as one process."""
import tempfile

import pytest

import ls_trajeval.flows.convert as convert
from ls_trajeval.core.trace import Trace, TraceError

from .conftest import FIXTURES, REAL

INPUTS = [FIXTURES, REAL]


@pytest.fixture
def small_inputs_in_parallel(monkeypatch):
    # the fixtures are small: let them go to workers anyway
    monkeypatch.setattr(convert, "PARALLEL_MIN_BYTES", 0)


def test_cli_output_and_messages_are_the_same_with_1_and_4_jobs(cli, tmp_path, small_inputs_in_parallel):
    runs = {}
    for jobs in (1, 4):
        out = tmp_path / f"j{jobs}.jsonl"
        r = cli("convert", *INPUTS, "-o", out, "-j", jobs)
        runs[jobs] = (out.read_bytes(), r.output, r.exit_code)
    one, four = runs[1], runs[4]
    assert one[0] == four[0] and one[0].count(b"\n") > 50  # every fixture trace, same bytes, same order
    assert one[1] == four[1] and "rejected" in one[1]  # each located error and warning, in the same order
    assert one[2] == four[2] == 1


def test_workers_really_convert_the_files(small_inputs_in_parallel):
    items = list(convert.convert_inputs(INPUTS, jobs=2))
    spooled = [i for i in items if isinstance(i, convert.SpooledTrace)]
    assert spooled and len(spooled) == sum(isinstance(i, Trace) for i in items)
    # a spooled trace reads like any trace once something asks for its fields
    alone = [t for t in convert.convert_inputs(INPUTS, jobs=1) if isinstance(t, Trace)]
    assert len(alone) == len(spooled)
    for t, same in zip(spooled, alone):
        assert t.to_json() == same.to_json()
        assert t.steps and t.metadata.get("source_format", "auto") == t.source_format
    assert any(isinstance(i, TraceError) for i in items)


def test_stopping_early_leaves_no_spool_files(tmp_path, monkeypatch, small_inputs_in_parallel):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    items = convert.convert_inputs(INPUTS, jobs=2)
    first = next(items)
    assert list(tmp_path.iterdir())  # the spool directory while converting
    items.close()
    assert first is not None and list(tmp_path.iterdir()) == []


def test_one_file_or_little_input_stays_in_this_process():
    items = list(convert.convert_inputs([FIXTURES / "openai_chat.jsonl"], jobs=4))
    assert items and not any(isinstance(i, convert.SpooledTrace) for i in items)
    few = sorted(p for p in FIXTURES.iterdir() if p.is_file())  # the folders' real logs make the whole set larger
    assert len(few) > 1 and sum(p.stat().st_size for p in few) < convert.PARALLEL_MIN_BYTES
    items = list(convert.convert_inputs(few, jobs=4))
    assert items and not any(isinstance(i, convert.SpooledTrace) for i in items)
