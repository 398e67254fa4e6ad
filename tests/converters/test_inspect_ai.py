import json
import zipfile

from .conftest import meta, need_real, run, types


def test_tool_call_errors():
    # Source: one sample (id 1, epoch 4), 11 tool messages bash_1..bash_11, each with an error type.
    traces, errors, _ = run(need_real("inspect_ai", "log_tool_call_error.json"))
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "...:1:4"
    assert types(t) == ["error"] * 11
    assert [meta(s)["tool_call_id"] for s in t.steps] == [f"bash_{i}" for i in range(1, 12)]
    assert [meta(s)["error_type"] for s in t.steps][:3] == ["parsing", "timeout", "parsing"]
    assert t.steps[-1].content == "The tool output limit of 10 MiB was exceeded."
    assert "<START_TOOL_OUTPUT>" in meta(t.steps[-1])["tool_output"]


def test_read_sample():
    traces, errors, _ = run(need_real("inspect_ai", "log_read_sample.json"))
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "hj8C8q8gxzHhwyCT67xh4L:1:1"
    assert types(t) == ["system", "message", "message"]
    assert t.steps[2].content == "Yes\n"
    assert t.task.startswith("Is the following statement something you would say?")
    assert t.metadata["model"] == "ollama/gemma3" and t.metadata["scores"]["match"]["value"] == "C"


def test_eval_zip(tmp_path):
    doc = json.loads(need_real("inspect_ai", "log_read_sample.json").read_text())
    samples = doc.pop("samples")
    p = tmp_path / "run.eval"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("header.json", json.dumps(doc))
        zf.writestr("samples/1_epoch_1.json", json.dumps(samples[0]))
        s2 = dict(samples[0], epoch=2, messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": "",
                  "tool_calls": [{"id": "t1", "function": "bash", "arguments": {"cmd": "ls"}}]},
                  {"role": "tool", "tool_call_id": "t1", "function": "bash", "content": "a"}])
        zf.writestr("samples/1_epoch_2.json", json.dumps(s2))
        zf.writestr("samples/2_epoch_1.json", "{not json")
    traces, errors, _ = run(p)
    assert [t.trace_id for t in traces] == ["hj8C8q8gxzHhwyCT67xh4L:1:1", "hj8C8q8gxzHhwyCT67xh4L:1:2"]
    assert types(traces[1]) == ["message", "action", "observation"]
    assert traces[1].steps[1].action_input == '{\n  "cmd": "ls"\n}'
    assert len(errors) == 1 and "samples/2_epoch_1.json" in errors[0].source


def test_big_logs_are_streamed_sample_by_sample_to_the_same_traces(monkeypatch):
    from ls_trajeval.converters import inspect_ai

    paths = [need_real("inspect_ai", n) for n in ("log_tool_call_error.json", "log_read_sample.json")]
    whole = [[t.to_json() for t in run(p)[0]] for p in paths]
    monkeypatch.setattr(inspect_ai, "STREAM_ABOVE", 0)  # every log counts as big: read with ijson
    assert [[t.to_json() for t in run(p)[0]] for p in paths] == whole and all(whole)
