import pytest

from .conftest import FIXTURES, SCARY, auto_name, detect, meta, roundtrip, run, types

D = FIXTURES / "swebench"


def test_predictions():
    traces, errors, _ = run(D / "preds.jsonl", "swebench")
    assert [t.trace_id for t in traces] == ["astropy__astropy-12907__gpt-4o"]
    t = traces[0]
    assert t.task.endswith(SCARY)
    assert types(t) == ["code"]
    assert t.steps[0].content.startswith("diff --git a/astropy/modeling/separable.py")
    assert t.steps[0].content.endswith("= right\n")
    assert meta(t.steps[0])["patch_kind"] == "model_patch"
    assert t.metadata["instance_id"] == "astropy__astropy-12907"
    # a prediction with an empty patch (line 2) leaves nothing to annotate: refused, saying what the record holds
    (empty,) = [e for e in errors if e.line == 2]
    assert empty.trace_id == "django__django-11099__gpt-4o" and empty.message.startswith("no text: all 1 step(s)")
    assert "model_patch (empty string)" in empty.message
    assert SCARY in roundtrip(t)["task"]


def test_bad_records_located():
    _, errors, _ = run(D / "preds.jsonl", "swebench")
    by_line = {e.line: e for e in errors}
    assert set(by_line) == {2, 3, 4, 5}
    assert "invalid JSON" in by_line[3].message
    assert by_line[4].field == "model_patch" and "string" in by_line[4].message
    assert by_line[5].field == "instance_id"


def test_instance_record():
    (t,), errors, _ = run(D / "instances.json", "swebench")
    assert errors == []
    assert t.trace_id == "psf__requests-2317"
    assert t.task == "method = builtin_str(method) problem"
    assert types(t) == ["message", "code", "code"]
    assert t.steps[0].content == "Ugh. This should have been caught & fixed <sooner>."
    assert [meta(s)["patch_kind"] for s in t.steps[1:]] == ["gold_patch", "test_patch"]
    assert t.metadata["repo"] == "psf/requests" and t.metadata["base_commit"].startswith("091991be")


def test_predictions_dict():
    (t,), errors, _ = run(D / "preds_dict.json", "swebench")
    assert errors == [] and t.trace_id == "pallets__flask-4045__claude"
    assert '"no dots"' in t.steps[0].content


@pytest.mark.parametrize("name", ["preds.jsonl", "instances.json", "preds_dict.json"])
def test_detect_fixture(name):
    assert detect("swebench", D / name) > 0.5
    assert auto_name(D / name) == "swebench"

