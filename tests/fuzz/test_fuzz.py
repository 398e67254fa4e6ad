"""Property tests on hostile input: the trace reader, the config loader, the results decoder (as the export
uses it), format detection and every converter. No uncaught exception; every rejection located.

CI runs a modest number of examples per entry point (derandomized, so a run is repeatable); the long run
(≥100,000 inputs per entry point, atheris where installed) is ``python benchmarks/fuzz_all.py``.
"""
from __future__ import annotations

import json

import pytest
from fuzz import fuzzlib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ls_trajeval.converters.base import ConvertWarning
from ls_trajeval.converters.registry import all_converters
from ls_trajeval.core.trace import Trace, TraceError, read_traces
from ls_trajeval.flows.convert import convert_file
from ls_trajeval.flows.export import ExportSummary, readable_record

FAST = settings(max_examples=50, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
SLOW = settings(FAST, max_examples=12)

SEEDS = fuzzlib.converter_seeds()
ALL_SEEDS = [s for v in SEEDS.values() for s in v]


@FAST
@given(st.data())
def test_trace_reader(data):
    fuzzlib.check_trace_reader(fuzzlib.generic_input(fuzzlib.DrawChooser(data),
                                                     [(".jsonl", (fuzzlib.FIXTURES / "traces.jsonl").read_bytes())])[1])


@SLOW
@given(st.data())
def test_config_loader(data):
    fuzzlib.check_config(fuzzlib.config_input(fuzzlib.DrawChooser(data)))


@FAST
@given(st.data())
def test_results_decoder_through_the_export(data):
    result, n_steps = fuzzlib.decoder_input(fuzzlib.DrawChooser(data))
    config, _ = fuzzlib._decoder_setup()
    task = {"id": 1, "project": 1, "data": {"trace_id": "t", "task": "x", "n_steps": max(n_steps, 0),
                                            "te_transcript": []}}
    summary = ExportSummary()
    record = readable_record(task, {"id": 9, "result": result}, config, layout="transcript", users={},
                             summary=summary)
    if record is None:
        assert summary.unreadable == 1 and summary.warnings[-1].startswith("task 1 annotation 9: left out")
    else:
        assert len(record["error_localization"]) == max(n_steps, 0) == record["n_steps"]
        json.dumps(record)  # the line can be written


@FAST
@given(st.data())
def test_format_detection(data):
    fuzzlib.check_detect(*fuzzlib.generic_input(fuzzlib.DrawChooser(data), ALL_SEEDS))


@pytest.mark.parametrize("name", [c.name for c in all_converters()])
@settings(FAST, max_examples=20)
@given(data=st.data())
def test_every_converter(name, data):
    """The converter's own convert(), with no catch-all around it: every converter, strictly."""
    suffix, blob = fuzzlib.generic_input(fuzzlib.DrawChooser(data), SEEDS.get(name) or ALL_SEEDS)
    fuzzlib.check_converter(name, suffix, blob)


# ---------------------------------------------------------------- the named giants, every time
HUGE = "x" * fuzzlib.HUGE_STEP


@pytest.fixture(scope="module")
def hostile_file(tmp_path_factory):
    lines = [
        json.dumps({"trace_id": "huge", "task": "t", "trace": [{"type": "observation", "content": HUGE}]}),
        json.dumps({"trace_id": "many", "task": "t", "trace": [{"type": "action", "content": str(i)}
                                                               for i in range(100_000)]}),
        "[" * 100_000 + "]" * 100_000,
        '{"trace_id": "deep", "task": "t", "trace": [{"type": "x", "content": "y", "action_input": '
        + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}]}",
        '{"trace_id": "nan", "task": "t", "trace": [{"type": "x", "content": "y", "action_input": NaN}]}',
        '{"trace_id": "inf", "task": "t", "trace": [{"type": "x", "content": "y", "n": -Infinity}]}',
        '{"trace_id": "dup", "trace_id": "dup2", "task": "t", "trace": [{"type": "x", "content": "y"}]}',
        '{"trace_id": "surrogate", "task": "\\ud800", "trace": [{"type": "x", "content": "y"}]}',
    ]
    p = tmp_path_factory.mktemp("hostile") / "hostile.jsonl"
    with open(p, "wb") as fh:
        for line in lines:
            fh.write(line.encode() + b"\n")
        fh.write(b'{"trace_id": "bad-utf8", "task": "\xff\xfe", "trace": [{"type": "x", "content": "y"}]}\n')
    return p


def test_trace_reader_on_the_giants(hostile_file):
    items = list(read_traces(hostile_file))
    by_line = {getattr(i, "line", None): i for i in items if isinstance(i, TraceError)}
    traces = {t.trace_id: t for t in items if isinstance(t, Trace)}
    assert len(traces["huge"].steps[0].content) == fuzzlib.HUGE_STEP
    assert len(traces["many"].steps) == 100_000
    assert "invalid JSON" in by_line[3].message  # nested 10^5 deep
    assert "NaN is not valid JSON" in by_line[5].message and "Infinity" in by_line[6].message
    bad = b'{"trace_id": "bad-utf8", "task": "'
    assert by_line[9].message == f"invalid UTF-8 at byte {len(bad)}"  # the \xff right after it
    assert all(str(hostile_file) in str(e) for e in by_line.values())
    assert "dup2" in traces  # JSON's last duplicate key wins, as in every JSON parser


@pytest.mark.parametrize("name", [c.name for c in all_converters()])
def test_every_converter_on_the_giants(name, hostile_file):
    for item in convert_file(hostile_file, name):
        assert isinstance(item, (Trace, TraceError, ConvertWarning))
        if isinstance(item, TraceError):
            assert str(hostile_file) in item.source and item.message


@pytest.mark.parametrize("first", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_detection_when_the_first_line_is_nested_100000_deep(first, tmp_path):
    p = tmp_path / "deep.jsonl"
    p.write_text(first + "\n" + '{"trace_id": "a", "task": "t", "trace": [{"type": "x", "content": "y"}]}\n')
    items = list(convert_file(p))  # auto-detection: found this uncaught RecursionError in the format sniffer
    assert items and all(isinstance(i, (Trace, TraceError, ConvertWarning)) for i in items)


def test_decoder_region_spanning_10_to_the_400_steps():
    """Found by the long run: len() of the region's range overflowed (OverflowError) instead of a warning."""
    from ls_trajeval.core.results import decode

    config, seeds = fuzzlib._decoder_setup()
    result = [dict(r, value=dict(r["value"], start=-(10 ** 401))) if r.get("id") == "bbb222" else r for r in seeds[0]]
    labels = decode(result, config, 7)
    assert len(labels.steps) == 7
    assert any("reach beyond the trace's 7 steps" in w for w in labels.warnings)


# Found by the long run (config_loader input #92344): math.isfinite raised OverflowError on such an int.
def test_config_number_of_400_digits_is_a_located_error(tmp_path):
    from ls_trajeval import label_configs
    from ls_trajeval.core import config as cfg

    text = label_configs.path("trajectory_eval").read_text(encoding="utf-8")
    p = tmp_path / "c.yaml"
    p.write_text(text.replace("      initial: 100\n", "      initial: 1" + "0" * 400 + "\n", 1), encoding="utf-8")
    with pytest.raises(cfg.ConfigError, match="running_score.initial"):
        cfg.load(p)


# Found by the long run (converter:swebench input #4271): an empty instance_id made a trace with an empty id.
def test_swebench_empty_instance_id_is_a_located_error_and_the_rest_converts(tmp_path):
    from ls_trajeval.converters.registry import get_converter
    from ls_trajeval.core.trace import Trace, TraceError

    rec = {"repo": "psf/requests", "patch": "diff --git a/x b/x\n", "problem_statement": "p"}
    p = tmp_path / "instances.json"
    p.write_text(json.dumps([dict(rec, instance_id="psf__requests-1"), dict(rec, instance_id="  ")]), encoding="utf-8")
    out = list(get_converter("swebench").convert(p))
    assert [t.trace_id for t in out if isinstance(t, Trace)] == ["psf__requests-1"]
    errors = [e for e in out if isinstance(e, TraceError)]
    assert len(errors) == 1 and "instance_id" in str(errors[0]) and str(p) in errors[0].source


# Found by the long run (converter:openinference input #59149): a span whose trace id was an object
# raised TypeError (unhashable) when spans were grouped by trace.
def test_openinference_span_with_an_object_as_trace_id_is_a_located_error(tmp_path):
    from ls_trajeval.converters.registry import get_converter

    good = {"name": "llm", "context": {"trace_id": "t1", "span_id": "s1"}, "span_kind": "LLM",
            "attributes": {"openinference.span.kind": "LLM", "output.value": "hello"}}
    bad = dict(good, context={"trace_id": {"x": 1}, "span_id": "s2"})
    p = tmp_path / "spans.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    out = list(get_converter("openinference").convert(p))
    errors = [e for e in out if isinstance(e, TraceError)]
    assert len(errors) == 1 and errors[0].line == 2 and "trace_id" in str(errors[0]), out
    assert [t.trace_id for t in out if isinstance(t, Trace)] == ["t1"]


# Found by the long run (converter:langchain input #8117): a root run with "id": "" made a trace with an empty id.
def test_langchain_run_with_an_empty_id_gets_the_stable_default_id(tmp_path):
    from ls_trajeval.converters.registry import get_converter

    p = tmp_path / "runs.jsonl"
    p.write_text(json.dumps({"id": "", "run_type": "chain", "inputs": {"question": "List files"}, "outputs": None,
                             "error": "Timeout after tool"}) + "\n", encoding="utf-8")
    first = list(get_converter("langchain").convert(p))
    again = list(get_converter("langchain").convert(p))
    traces = [t for t in first if isinstance(t, Trace)]
    assert len(traces) == 1 and traces[0].trace_id.strip()
    assert traces[0].trace_id == [t for t in again if isinstance(t, Trace)][0].trace_id  # stable across runs
