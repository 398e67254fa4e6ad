"""A file's or a record's shape in words, and the formats nearest to it (the words of refusals)."""
import json
import zipfile

from ls_trajeval.converters.detection import closest, closest_text, looks_like
from ls_trajeval.converters.support.files import make_sample, sample_shape, shape_keys, value_shape
from ls_trajeval.core.trace import Step, all_blank, blank_steps, is_blank


def test_value_shape_names_each_key_and_what_it_holds():
    rec = {"id": "a", "n": 3, "ok": True, "none": None, "e": "", "tags": ["x", "y"], "meta": {"k": 1},
           "steps": [{"agent": "A", "content": "c"}] * 5, "empty": []}
    assert value_shape(rec) == (
        "an object with keys id (string), n (number), ok (boolean), none (null), e (empty string), "
        "tags (list of 2 strings), meta (object with keys k), steps (list of 5, the first an object with keys agent, "
        "content), empty (list of 0)")
    assert value_shape([{"a": 1}, 2]) == "a list of 2, the first an object with keys a (number)"
    assert value_shape([1, 2]) == "a list of 2, the first number"
    assert value_shape("x") == "a string"
    many = {f"k{i}": i for i in range(15)}
    assert value_shape(many).endswith("k11 (number), and 3 more")


def test_sample_shape_of_each_kind_of_file(tmp_path):
    j = tmp_path / "a.json"
    j.write_text(json.dumps({"x": 1}))
    assert sample_shape(make_sample(j)) == "JSON: an object with keys x (number)"
    jl = tmp_path / "a.jsonl"
    jl.write_text('{"x": 1}\n{"y": 2}\n')
    assert sample_shape(make_sample(jl)) == "JSONL whose first record is an object with keys x (number)"
    t = tmp_path / "a.txt"
    t.write_text("hello\nworld\n")
    assert sample_shape(make_sample(t)) == "text beginning 'hello world '"
    e = tmp_path / "e.json"
    e.write_text("")
    assert sample_shape(make_sample(e)) == "an empty file"
    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("m.txt", "x")
    assert sample_shape(make_sample(z)) == "a zip archive"


def test_shape_keys_reach_one_level_in():
    assert shape_keys({"a": 1, "b": [{"c": 1}], "d": {"e": 1}}) == {"a", "b", "c", "d", "e"}
    assert shape_keys([{"a": 1}, {"b": 2}]) == {"a", "b"}
    assert shape_keys("text") == set()


def _sample(tmp_path, value):
    p = tmp_path / "x.json"
    p.write_text(json.dumps(value))
    return make_sample(p)


def test_closest_puts_detector_confidence_first_then_shared_keys(tmp_path):
    # a Potato record: potato's detector is sure; formats that only share keys come after it
    s = _sample(tmp_path, {"id": "a", "task_description": "t", "conversation": [{"speaker": "User", "text": "hi"}]})
    near = closest(s)
    assert near[0][0] == "potato" and near[0][1] >= 0.5
    assert all(conf == 0 or conf <= near[0][1] for _, conf, _ in near)
    # nothing confident: by keys shared with the formats' shapes, at least two of them
    s = _sample(tmp_path, {"traj": 1, "reward": 1, "info": 1, "zzz": 1})
    assert closest(s)[0] == ("tau_bench", 0.0, ["info", "reward", "traj"])
    assert closest_text(closest(s)).startswith("closest formats: tau_bench (shares keys info, reward, traj)")
    s = _sample(tmp_path, {"id": 1, "zzz": 2})
    assert closest(s) == [] and closest_text([]) == "no format reads more than one of its keys"


def test_looks_like_names_only_formats_sure_of_the_record(tmp_path):
    rec = {"id": "a", "task": "t", "steps": [{"agent": "A", "content": "c"}]}
    src = str(tmp_path / "f.json")
    assert looks_like(rec, src) == "looks like potato"
    assert looks_like(rec, src, exclude=("potato",)) == ""
    assert looks_like({"zzz": 1}, src) == ""


def test_blank_steps():
    assert is_blank(Step.of("message", "")) and is_blank(Step.of("message", " \n\t"))
    assert (
        is_blank(Step.of("action", "", ""))
        and is_blank(Step.of("action", "", "  "))
        and is_blank(Step.of("action", "", {}))
    )
    assert not is_blank(Step.of("action", "", "ls")) and not is_blank(Step.of("action", "", {"q": 1}))
    assert not is_blank(Step.of("observation", "0"))
    steps = [Step.of("message", ""), Step.of("observation", "x"), Step.of("thought", " ")]
    assert blank_steps(steps) == 2 and not all_blank(steps)
    assert all_blank(steps[:1]) and not all_blank([])


def test_a_head_only_sample_parses_no_more_than_the_head(tmp_path):
    from ls_trajeval.converters.support.files import HEAD_BYTES

    big = tmp_path / "big.json"
    big.write_text(json.dumps({"messages": [{"role": "user", "content": "x" * 100}] * (HEAD_BYTES // 50)}))
    assert big.stat().st_size > HEAD_BYTES
    assert make_sample(big).first_json is not None
    assert make_sample(big, whole_up_to=HEAD_BYTES).first_json is None
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"a": 1}))
    assert make_sample(small, whole_up_to=HEAD_BYTES).first_json == {"a": 1}
