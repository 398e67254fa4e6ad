"""LangSmith run payloads: expected figures from reading the post/patch operations (SHAPE: langchain-ai/langsmith-sdk
test data and bench run ops, fixtures/converters/langsmith/PROVENANCE.md)."""
import json
from collections import Counter

import pytest

from .conftest import FIXTURES, auto_name, detect, meta, run, types

DIR = FIXTURES / "langsmith"
PY = DIR / "langsmith_py_wrap_openai_.json"
JS = DIR / "langsmith_js_wrap_openai_default.json"
OPS = DIR / "run_ops_1efb27a4-5264-6908-9ab5-23fc3c60ae2d.first14lines.jsonl"


def ops_of(path):
    """(posts, patches) of a {"post","patch"} body or a JSONL of run operations (create lines have start_time)."""
    txt = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        rows = [json.loads(ln) for ln in txt.splitlines() if ln.strip()]
        return [r for r in rows if "start_time" in r], [r for r in rows if "start_time" not in r]
    d = json.loads(txt)
    return d.get("post", []), d.get("patch", [])


@pytest.mark.parametrize("path", [PY, JS, OPS], ids=lambda p: p.name)
def test_detected(path):
    assert auto_name(path) == "langsmith"


@pytest.mark.parametrize("path", [PY, JS], ids=lambda p: p.name)
def test_a_wrapped_openai_call_is_one_trace_with_the_answer_from_the_patch(path):
    posts, patches = ops_of(path)
    assert len(posts) == len(patches) == 1
    traces, errors, warnings = run(path)
    assert not errors and not warnings and len(traces) == 1
    t = traces[0]
    assert t.trace_id == posts[0]["trace_id"]
    assert t.task == posts[0]["inputs"]["messages"][0]["content"] == "howdy"
    answer = patches[0]["outputs"]["choices"][0]["message"]["content"]
    assert [(s.type, s.content) for s in t.steps] == [("message", answer)]
    assert meta(t.steps[0])["usage"]["total_tokens"] == patches[0]["outputs"]["usage_metadata"]["total_tokens"]
    assert t.steps[0]["timestamp"] == posts[0]["start_time"]  # JS: epoch ms, py: ISO, both as written
    assert meta(t.steps[0])["end_time"] == patches[0]["end_time"]  # the JS patch has no id: matched by dotted_order
    if path == JS:
        assert "id" not in patches[0]


def test_run_ops_tree_from_dotted_order():
    posts, patches = ops_of(OPS)
    assert len(posts) == len(patches) == 7 and not any("parent_run_id" in p for p in posts)
    traces, errors, warnings = run(OPS)
    assert not errors and not warnings and len(traces) == 1
    t = traces[0]
    assert t.trace_id == "1efb27a4-5264-6908-9ab5-23fc3c60ae2d" and t.metadata["run_count"] == 7
    assert t.task == posts[0]["inputs"]["messages"][0]["content"]
    assert Counter(p["run_type"] for p in posts) == {"chain": 5, "llm": 1, "parser": 1}
    assert t.metadata["skipped_runs"] == {"parser": 1}
    # depth = the number of dots in each run's dotted_order: the parents came from it
    depth = {p["id"]: p["dotted_order"].count(".") for p in posts}
    assert all(meta(s)["depth"] == depth[meta(s)["run_id"]] for s in t.steps)
    assert [meta(s)["run_name"] for s in t.steps] == ["__start__", "ChatOpenAI", "_write"]
    # the model's structured-output call (Plan) is its action; no tool run executed it, so no result
    llm_patch = next(p for p in patches if p["name"] == "ChatOpenAI")
    call = llm_patch["outputs"]["generations"][0]["message"]["kwargs"]["tool_calls"][0]
    act = next(s for s in t.steps if s.type == "action")
    assert (act.content, json.loads(act.action_input), meta(act)["tool_call_id"]) == (
        call["name"],
        call["args"],
        call["id"],
    )
    assert "observation" not in types(t)
    # the 72 streamed token events are not steps
    assert len(next(p for p in posts if p["name"] == "ChatOpenAI")["events"]) > 70 and len(t.steps) == 3


def test_tool_runs_pair_and_updates_match_by_id_or_dotted_order(tmp_path):
    root, llm, tool = (
        "aaaaaaaa-0000-0000-0000-000000000001",
        "aaaaaaaa-0000-0000-0000-000000000002",
        "aaaaaaaa-0000-0000-0000-000000000003",
    )
    d_root = f"20250101T000000000000Z{root}"
    d_llm = f"{d_root}.20250101T000001000000Z{llm}"
    d_tool = f"{d_root}.20250101T000002000000Z{tool}"
    lines = [
        {
            "patch": [
                {"id": tool, "end_time": "2025-01-01T00:00:03Z", "outputs": {"output": "4 <ok> & done"}},
                {"id": "nope", "outputs": {}},
            ]
        },
        {
            "post": [
                {
                    "id": root,
                    "trace_id": root,
                    "dotted_order": d_root,
                    "name": "Agent",
                    "run_type": "chain",
                    "start_time": "2025-01-01T00:00:00Z",
                    "inputs": {"input": "2+2?"},
                },
                {
                    "id": llm,
                    "trace_id": root,
                    "dotted_order": d_llm,
                    "name": "ChatOpenAI",
                    "run_type": "llm",
                    "start_time": "2025-01-01T00:00:01Z",
                    "inputs": {"messages": [{"role": "user", "content": "2+2?"}]},
                },
                {
                    "id": tool,
                    "trace_id": root,
                    "dotted_order": d_tool,
                    "name": "calc",
                    "run_type": "tool",
                    "start_time": "2025-01-01T00:00:02Z",
                    "inputs": {"input": "2+2"},
                },
            ]
        },
        {
            "patch": [
                {
                    "dotted_order": d_llm,
                    "trace_id": root,
                    "outputs": {
                        "choices": [
                            {
                                "message": {
                                    "role": "assistant",
                                    "content": None,
                                    "tool_calls": [
                                        {
                                            "id": "c1",
                                            "type": "function",
                                            "function": {"name": "calc", "arguments": '{"x": "2+2"}'},
                                        }
                                    ],
                                }
                            }
                        ]
                    },
                },
                {"id": root, "end_time": "2025-01-01T00:00:04Z", "outputs": {"output": "4"}},
            ]
        },
        {"post": [{"id": 5}]},
    ]
    p = tmp_path / "batches.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert detect("langsmith", p) > 0
    traces, errors, warnings = run(p)
    assert [(e.line, e.field, e.message) for e in errors] == [(4, "post[0].run_type", "missing")]
    assert [w.record for w in warnings] == ["1"] and "nope" in warnings[0].message
    t = traces[0]
    assert t.task == "2+2?" and t.metadata["final_output"] == "4"
    acts = [i for i, s in enumerate(t.steps) if s.type == "action"]
    assert [t.steps[i].content for i in acts] == ["calc"]
    i = acts[0]
    assert t.steps[i + 1].type == "observation" and t.steps[i + 1].content == "4 <ok> & done"
    assert meta(t.steps[i])["tool_call_id"] == meta(t.steps[i + 1])["tool_call_id"] == "c1"
    assert meta(t.steps[i])["depth"] == 1


def test_whole_runs_stay_langchain():
    for name in ("flat_runs.jsonl", "run_tree.json"):
        assert detect("langsmith", FIXTURES / "langchain" / name) == 0


@pytest.mark.parametrize("path", [PY, JS], ids=lambda p: p.name)
def test_bodies_too_big_to_sample_whole_are_detected_from_their_opening(path, monkeypatch):
    from ls_trajeval.converters.support import files

    monkeypatch.setattr(files, "SMALL_FILE", 0)
    monkeypatch.setattr(files, "HEAD_BYTES", 300)
    assert auto_name(path) == "langsmith"
