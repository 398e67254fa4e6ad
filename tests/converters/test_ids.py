"""Trace ids: every converter gives each record of a log its own id, and `convert` refuses to write a second trace
with an id an earlier one has (import would reject it), naming where the first came from."""
import json

import pytest

from ls_trajeval.converters.detection import convert_file
from ls_trajeval.converters.registry import names
from ls_trajeval.core.trace import Trace, TraceError

from .conftest import FIXTURES, NOT_LOGS, REAL, run

#: every log under the converter fixtures and the real public logs (tests/fixtures/real: the shared ones)
LOGS = sorted(p for d in (FIXTURES, REAL) for p in d.rglob("*") if p.is_file() and p.name not in NOT_LOGS)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES.parent)))
def test_every_converter_gives_each_record_of_a_log_its_own_id(path):
    assert len(LOGS) > 90
    for fmt in names():  # forced formats too: a converter that reads a file badly must still tell its records apart
        items = list(convert_file(path, fmt))
        dups = [str(e) for e in items if isinstance(e, TraceError) and "duplicate trace_id" in e.message]
        ids = [t.trace_id for t in items if isinstance(t, Trace)]
        assert dups == [] and len(ids) == len(set(ids)), fmt


def test_records_without_an_id_of_their_own_get_one_each(tmp_path):
    # the case: OpenAI chat records read as SWE-agent trajectories (mini-swe-agent's messages), no ids
    traces, errors, _ = run(FIXTURES / "openai_chat.jsonl", "swe_agent")
    lines = [ln for ln in (FIXTURES / "openai_chat.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert not errors and len(traces) == len(lines) == 3
    assert len({t.trace_id for t in traces}) == 3 and [t.metadata["source_line"] for t in traces] == [1, 2, 3]


def _chat(tid, text):
    return {"id": tid, "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]}


def test_convert_refuses_a_second_trace_with_an_id_and_says_where_the_first_is(tmp_path, cli):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(
        "\n".join(json.dumps(r) for r in (_chat("t1", "one"), _chat("t2", "two"), _chat("t1", "again"))) + "\n"
    )
    b.write_text(json.dumps(_chat("t2", "elsewhere")) + "\n" + json.dumps(_chat("t3", "three")) + "\n")
    out = tmp_path / "out.jsonl"
    r = cli("convert", a, b, "-o", out, "-j", 1)
    assert r.exit_code == 1
    assert [json.loads(ln)["trace_id"] for ln in out.read_text().splitlines()] == ["t1", "t2", "t3"]
    assert f"error: {a}:3: trace_id: duplicate trace_id 't1' (first on line 1)" in r.stderr
    assert f"error: {b}:1: trace_id: duplicate trace_id 't2' (first in {a}:2)" in r.stderr
    assert "2 file(s): 3 trace(s) converted, 2 rejected" in r.stderr


def test_the_same_refusal_with_worker_processes(tmp_path, cli, monkeypatch):
    import ls_trajeval.flows.convert as convert

    monkeypatch.setattr(convert, "PARALLEL_MIN_BYTES", 0)  # small files: to the workers all the same
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(_chat("t1", "one")) + "\n" + json.dumps(_chat("t1", "again")) + "\n")
    b.write_text(json.dumps(_chat("t1", "elsewhere")) + "\n")
    runs = {}
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}.jsonl"
        r = cli("convert", a, b, "-o", out, "-j", jobs)
        runs[jobs] = (r.exit_code, r.stderr, out.read_bytes())
    assert runs[1] == runs[2] and runs[1][0] == 1
    assert f"{a}:2: trace_id: duplicate trace_id 't1' (first on line 1)" in runs[1][1]
    assert f"{b}:1: trace_id: duplicate trace_id 't1' (first in {a}:1)" in runs[1][1]
