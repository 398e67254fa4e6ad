"""OpenAI Agents SDK trace exports: expected figures from reading the ingest bodies (SHAPE: traceloop/openllmetry
cassettes, fixtures/converters/openai_agents/PROVENANCE.md)."""
import json
from collections import Counter, defaultdict

import pytest

from .conftest import FIXTURES, auto_name, meta, run, types

DIR = FIXTURES / "openai_agents"
MUSIC = [
    DIR / "test_music_composer_handoff_hierarchy.ingest1.json",
    DIR / "test_music_composer_handoff_hierarchy.ingest2.json",
]
METRICS = DIR / "test_generate_metrics.ingest1.json"
CACHE = DIR / "test_cache_read_input_tokens_recorded.ingest1.json"
WATSONX = DIR / "test_generate_metrics.watsonx_sdk0.0.16.ingest1.json"
ALL = [*MUSIC, METRICS, CACHE, WATSONX]


def source(*paths):
    """Independent reading: spans by trace id, headers, in the order the files list them."""
    items = [x for p in paths for x in json.loads(p.read_text(encoding="utf-8"))["data"]]
    headers = {x["id"]: x for x in items if x["object"] == "trace"}
    spans = defaultdict(list)
    for x in items:
        if x["object"] == "trace.span":
            spans[x["trace_id"]].append(x)
    return headers, spans


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_detected(path):
    assert auto_name(path) == "openai_agents"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_one_trace_per_trace_id_with_spans_and_a_warning_per_header_alone(path):
    headers, spans = source(path)
    traces, errors, warnings = run(path)
    assert not errors
    assert sorted(t.trace_id for t in traces) == sorted(spans)
    assert sorted(w.record for w in warnings) == sorted(f"trace {t}" for t in headers if t not in spans)
    for t in traces:
        assert t.metadata["span_count"] == len(spans[t.trace_id])
        assert t.metadata.get("trace_header_missing", False) == (t.trace_id not in headers)
        if t.trace_id in headers:
            assert t.metadata["workflow_name"] == headers[t.trace_id]["workflow_name"]
        agents = [s["span_data"]["name"] for s in spans[t.trace_id] if s["span_data"]["type"] == "agent"]
        assert [s.content for s in t.steps if s.type == "system"] and [
            json.loads(s.content)["name"] for s in t.steps if s.type == "system"
        ] == sorted(
            agents, key=lambda n: next(x["started_at"] for x in spans[t.trace_id] if x["span_data"].get("name") == n)
        )
        # every response span is one step holding its id (the trace has nothing else of that model call)
        rids = [s["span_data"]["response_id"] for s in spans[t.trace_id] if s["span_data"]["type"] == "response"]
        assert sorted(meta(s)["response_id"] for s in t.steps if meta(s).get("span_type") == "response") == sorted(rids)


def test_a_run_split_over_two_bodies_the_function_span_is_a_call_followed_by_its_result():
    # SHAPE: trace_db01… header in ingest1, its 5 spans in ingest2; compose_music input/output in one span;
    # the Symphony Composer agent span (span_e6a4…) was never exported
    headers, spans = source(*MUSIC)
    tid = "trace_db0186bb863d426e9e4486699cb8418a"
    assert tid in headers and len(spans[tid]) == 5
    fn = [s for s in spans[tid] if s["span_data"]["type"] == "function"]
    assert len(fn) == 1
    t = next(t for t in run(MUSIC[1])[0] if t.trace_id == tid)
    assert t.task == ""  # the user's words are only in the Responses API requests, not in the trace
    acts = [i for i, s in enumerate(t.steps) if s.type == "action" and s.content != "handoff"]
    assert [t.steps[i].content for i in acts] == ["compose_music"]
    i = acts[0]
    assert json.loads(t.steps[i].action_input) == json.loads(fn[0]["span_data"]["input"])
    assert t.steps[i + 1].type == "observation" and t.steps[i + 1].content == fn[0]["span_data"]["output"]
    assert meta(t.steps[i + 1])["tool_name"] == "compose_music"
    assert t.metadata["missing_parents"] == ["span_e6a4e759a5db4b7aafeec6e3"]
    # the handoff is an action between the conductor's model call and the composer's
    h = next(s for s in t.steps if s.content == "handoff")
    assert json.loads(h.action_input) == {"from_agent": "Orchestra Conductor", "to_agent": "Symphony Composer"}
    assert meta(h)["agent"] == "Orchestra Conductor"
    # order by start time, not by export (end) order: the agent span is exported last but comes first
    assert [meta(s)["span_type"] for s in t.steps] == [
        "agent",
        "response",
        "handoff",
        "response",
        "function",
        "function",
    ]
    starts = [s["timestamp"] for s in t.steps]
    assert starts == sorted(starts)


def test_bodies_of_one_run_in_one_jsonl_file_convert_together(tmp_path):
    p = tmp_path / "run.jsonl"
    p.write_text("\n".join(m.read_text(encoding="utf-8") for m in MUSIC) + "\n", encoding="utf-8")
    headers, spans = source(*MUSIC)
    traces, errors, warnings = run(p)
    assert not errors and not warnings  # every header now has its spans
    by = {t.trace_id: t for t in traces}
    assert set(by) == set(spans) == {"trace_db0186bb863d426e9e4486699cb8418a", "trace_294d81b076ea4262b0f0e94cb73d08c9"}
    assert by["trace_db0186bb863d426e9e4486699cb8418a"].metadata["workflow_name"] == \
        headers["trace_db0186bb863d426e9e4486699cb8418a"]["workflow_name"]
    # trace_294d…'s header is in the previous test's cassette, not here
    assert by["trace_294d81b076ea4262b0f0e94cb73d08c9"].metadata["trace_header_missing"] is True


def test_two_roots_after_a_handoff_stay_one_trace():
    # SHAPE: trace_ddeb… has 2 root agent spans (TriageAgent, then AgentA after the handoff)
    _, spans = source(METRICS)
    tid = "trace_ddebf51199d147aa9c276699d6344191"
    roots = [s for s in spans[tid] if s["parent_id"] is None]
    assert len(roots) == 2
    t = next(t for t in run(METRICS)[0] if t.trace_id == tid)
    assert t.metadata["root_spans"] == 2
    assert [(meta(s)["span_type"], meta(s)["agent"]) for s in t.steps] == [
        ("agent", "TriageAgent"), ("response", "TriageAgent"), ("handoff", "TriageAgent"),
        ("agent", "AgentA"), ("response", "AgentA")]


def test_sdk_0_14_custom_task_and_turn_spans_are_containers():
    _, spans = source(CACHE)
    tid = "trace_2aec8f2dade443f2a0f5e7b3d28bef19"
    assert Counter(s["span_data"]["type"] for s in spans[tid]) == {"custom": 2, "agent": 1, "response": 1}
    t = run(CACHE)[0][0]
    assert [meta(s)["span_type"] for s in t.steps] == ["agent", "response"]
    assert [meta(s)["depth"] for s in t.steps] == [1, 3]  # task -> agent -> turn -> response
    assert meta(t.steps[1])["agent"] == "testAgent"


def test_a_generation_span_gives_the_task_and_the_model_answer():
    _, spans = source(WATSONX)
    gen = next(s for s in spans["trace_24d0d719450b4215a7abb7fd48dcc66d"] if s["span_data"]["type"] == "generation")
    t = run(WATSONX)[0][0]
    assert t.task == next(m["content"] for m in gen["span_data"]["input"] if m["role"] == "user") == "What is AI?"
    assert types(t) == ["system", "message"]
    assert t.steps[1].content == gen["span_data"]["output"][0]["content"]
    assert meta(t.steps[1])["model"] == gen["span_data"]["model"]
    assert meta(t.steps[1])["usage"] == gen["span_data"]["usage"]


def test_tool_calls_of_a_generation_pair_with_their_function_spans_and_errors_are_kept(tmp_path):
    """Hand-made from the SDK's span shapes: a generation asking for two tools, one failing, a guardrail."""
    def span(sid, parent, start, data, error=None):
        return {
            "object": "trace.span",
            "id": sid,
            "trace_id": "trace_x",
            "parent_id": parent,
            "started_at": f"2025-01-01T00:00:0{start}.000000+00:00",
            "ended_at": f"2025-01-01T00:00:0{start}.500000+00:00",
            "span_data": data,
            "error": error,
        }
    gen = {
        "type": "generation",
        "model": "gpt-4o",
        "input": [{"role": "user", "content": "weather <b>Paris</b> & Oslo?"}],
        "output": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
                    {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
                ],
            }
        ],
    }
    body = {
        "data": [
            span(
                "span_f2",
                "span_a",
                3,
                {"type": "function", "name": "weather", "input": '{"city": "Oslo"}', "output": None},
                {"message": "Error running tool", "data": {"error": "timeout"}},
            ),
            span(
                "span_f1",
                "span_a",
                2,
                {"type": "function", "name": "weather", "input": '{"city": "Paris"}', "output": "sunny"},
            ),
            span("span_g", "span_a", 1, gen),
            span("span_r", "span_a", 0, {"type": "guardrail", "name": "no_secrets", "triggered": False}),
            span(
                "span_a",
                None,
                0,
                {"type": "agent", "name": "Weather", "tools": ["weather"], "handoffs": [], "output_type": "str"},
            ),
            {"object": "trace", "id": "trace_x", "workflow_name": "wf", "group_id": "g1", "metadata": {"k": "v"}},
            {"object": "trace.span", "id": 5, "trace_id": "trace_x"},
        ]
    }
    p = tmp_path / "x.json"
    p.write_text(json.dumps(body), encoding="utf-8")
    traces, errors, _ = run(p)
    assert [(e.field, e.message) for e in errors] == [("data[6].id", "expected a string, got a number")]
    t = traces[0]
    assert t.task == "weather <b>Paris</b> & Oslo?"
    assert t.metadata["group_id"] == "g1" and t.metadata["trace_metadata"] == {"k": "v"}
    assert [(s.type, s.content) for s in t.steps] == [
        ("system", t.steps[0].content),
        ("other", t.steps[1].content),
        ("thought", "(empty response)"),
        ("action", "weather"),
        ("observation", "sunny"),
        ("action", "weather"),
        ("error", 'Error running tool\n{\n  "error": "timeout"\n}'),
    ]
    assert meta(t.steps[3])["tool_call_id"] == meta(t.steps[4])["tool_call_id"] == "c1"
    assert meta(t.steps[5])["tool_call_id"] == meta(t.steps[6])["tool_call_id"] == "c2"
    assert meta(t.steps[1])["triggered"] is False and json.loads(t.steps[1].content) == {
        "name": "no_secrets",
        "triggered": False,
    }


def test_not_claimed_without_trace_items(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"data": [{"object": "list", "id": "x"}]}), encoding="utf-8")
    from .conftest import detect
    assert detect("openai_agents", p) == 0


@pytest.mark.parametrize("path", [MUSIC[1], WATSONX], ids=lambda p: p.name)
def test_bodies_too_big_to_sample_whole_are_detected_from_their_opening(path, monkeypatch):
    from ls_trajeval.converters.support import files

    monkeypatch.setattr(files, "SMALL_FILE", 0)
    monkeypatch.setattr(files, "HEAD_BYTES", 400)  # the one-line body is cut: no JSON value to look at
    assert auto_name(path) == "openai_agents"
