"""One wrong-typed record in the middle of a file costs that record only: it gets a located error
(file, line, field where known) and the records around it still convert. One case per converter family,
with the wrong types the brief names: content a number or a dict, tool_calls a string, arguments a list,
ids that are objects."""
import copy
import json

import pytest

from .conftest import run


def _openai(i):
    return {
        "id": f"c{i}",
        "messages": [
            {"role": "user", "content": "find x"},
            {
                "role": "assistant",
                "content": "looking",
                "tool_calls": [
                    {"id": "k1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "k1", "content": "found"},
            {"role": "assistant", "content": "done"},
        ],
    }


def _anthropic(i):
    return {
        "id": f"a{i}",
        "messages": [
            {"role": "user", "content": "find x"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "looking"},
                    {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "found"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ],
    }


def _langchain(i):
    return {
        "id": f"r{i}",
        "name": "AgentExecutor",
        "run_type": "chain",
        "inputs": {"input": "find x"},
        "outputs": {"output": "done"},
        "child_runs": [
            {
                "id": f"r{i}-l",
                "name": "ChatOpenAI",
                "run_type": "llm",
                "inputs": {"messages": [{"role": "user", "content": "find x"}]},
                "outputs": {"generations": [{"text": "looking"}]},
                "child_runs": [],
            },
            {
                "id": f"r{i}-t",
                "name": "search",
                "run_type": "tool",
                "inputs": {"query": "x"},
                "outputs": {"output": "found"},
                "child_runs": [],
            },
        ],
    }


def _langfuse(i):
    return {
        "id": f"tr-{i}",
        "name": "agent",
        "input": {"query": "find x"},
        "output": {"result": "done"},
        "observations": [
            {
                "id": f"o{i}g",
                "traceId": f"tr-{i}",
                "type": "GENERATION",
                "name": "gpt",
                "startTime": "2024-01-01T00:00:00Z",
                "input": [{"role": "user", "content": "find x"}],
                "output": {"content": "looking"},
            },
            {
                "id": f"o{i}s",
                "traceId": f"tr-{i}",
                "type": "SPAN",
                "name": "search",
                "startTime": "2024-01-01T00:00:01Z",
                "input": {"q": "x"},
                "output": {"result": "found"},
            },
        ],
    }


def _attr(k, v):
    return {"key": k, "value": {"stringValue": v}}


def _otel(i):
    tid = f"{i:032x}"
    spans = [
        {
            "traceId": tid,
            "spanId": f"{i:08x}root",
            "parentSpanId": "",
            "name": "invoke_agent a",
            "startTimeUnixNano": "1700000000000000000",
            "attributes": [_attr("gen_ai.operation.name", "invoke_agent")],
        },
        {
            "traceId": tid,
            "spanId": f"{i:08x}c",
            "parentSpanId": f"{i:08x}root",
            "name": "chat",
            "startTimeUnixNano": "1700000000000001000",
            "attributes": [
                _attr("gen_ai.operation.name", "chat"),
                _attr("gen_ai.prompt", "find x"),
                _attr("gen_ai.completion", "looking"),
            ],
        },
        {
            "traceId": tid,
            "spanId": f"{i:08x}t",
            "parentSpanId": f"{i:08x}root",
            "name": "execute_tool search",
            "startTimeUnixNano": "1700000000000002000",
            "attributes": [
                _attr("gen_ai.operation.name", "execute_tool"),
                _attr("gen_ai.tool.name", "search"),
                _attr("gen_ai.tool.call.arguments", '{"q": "x"}'),
                _attr("gen_ai.tool.call.result", "found"),
            ],
        },
    ]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "t")]},
                "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}],
            }
        ]
    }


def _autogen(i):
    return {"id": f"ag-{i}", "messages": [
        {"sender": "user_proxy", "receiver": "assistant", "content": "find x"},
        {"sender": "assistant", "receiver": "user_proxy", "content": "looking"},
        {"sender": "user_proxy", "receiver": "assistant", "content": "found"}]}


def _react(i):
    return {
        "id": f"rs-{i}",
        "task": "find x",
        "steps": [{"thought": "look", "action": "search(x)", "observation": "found"}],
    }


def _atif(i):
    return {
        "schema_version": "ATIF-v1.2",
        "session_id": f"s-{i}",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "find x"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "looking",
                "tool_calls": [{"tool_call_id": "c1", "function_name": "search", "arguments": {"q": "x"}}],
                "observation": {"results": [{"source_call_id": "c1", "content": "found"}]},
            },
        ],
    }


def _web(i):
    return {
        "task_id": str(i),
        "intent": "buy x",
        "trajectory": [
            {
                "state": {"url": "https://shop.example/p", "axtree_txt": "page"},
                "thought": "click it",
                "action": "click [12]",
            }
        ],
    }


def _set(rec, path, value):
    o = rec
    for k in path[:-1]:
        o = o[k]
    o[path[-1]] = value
    return rec


CASES = [
    # (format, record maker, path of the field made wrong, wrong value)
    ("openai_chat", _openai, ("messages", 1, "tool_calls"), "not a list"),
    ("openai_chat", _openai, ("messages", 1, "content"), 42),
    ("openai_chat", _openai, ("messages", 1, "tool_calls", 0, "function", "arguments"), [1, 2]),
    ("anthropic", _anthropic, ("messages", 1, "content"), {"text": "a dict"}),
    ("anthropic", _anthropic, ("messages", 1, "content", 1, "input"), [1, 2]),
    ("langchain", _langchain, ("child_runs", 0, "inputs", "messages", 0, "content"), {"a": 1}),
    ("langchain", _langchain, ("child_runs",), "runs"),
    ("langfuse", _langfuse, ("observations", 0, "input", 0, "content"), 7),
    ("langfuse", _langfuse, ("observations",), {"a": 1}),
    ("otel_genai", _otel, ("resourceSpans", 0, "scopeSpans", 0, "spans", 1, "traceId"), {"x": 1}),
    ("otel_genai", _otel, ("resourceSpans", 0, "scopeSpans", 0, "spans", 1, "spanId"), [1, 2]),
    ("otel_genai", _otel, ("resourceSpans", 0, "scopeSpans", 0, "spans", 1, "attributes"), "attrs"),
    ("multi_agent", _autogen, ("messages", 1, "content"), 3.5),
    ("react", _react, ("steps", 0), 5),
    ("atif", _atif, ("steps", 1, "tool_calls"), "calls"),
    ("atif", _atif, ("steps", 1, "tool_calls", 0, "arguments"), [1]),
    ("web_agent", _web, ("trajectory", 0, "state"), 5),
]


@pytest.mark.parametrize("fmt,make,path,value", CASES, ids=[f"{c[0]}-{'.'.join(map(str, c[2]))}" for c in CASES])
def test_one_bad_record_in_the_middle(tmp_path, fmt, make, path, value):
    good_a, good_b = make(1), make(3)
    bad = _set(copy.deepcopy(make(2)), path, value)
    p = tmp_path / f"{fmt}.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in (good_a, bad, good_b)) + "\n")
    traces, errors, _ = run(p, fmt)
    clean_p = tmp_path / "clean.jsonl"  # the same two records on the same lines (a blank line is skipped)
    clean_p.write_text(json.dumps(good_a) + "\n\n" + json.dumps(good_b) + "\n")
    clean, _, _ = run(clean_p, fmt)
    # the good records convert exactly as they do without the bad one between them
    assert [t.to_json()["trace"] for t in traces if t.metadata.get("source_line") != 2] == [
        t.to_json()["trace"] for t in clean
    ]
    assert len([t for t in traces if t.metadata.get("source_line") != 2]) == 2
    # the bad record is either converted with its odd value kept as text, or rejected with a located error
    for e in errors:
        assert e.source == str(p) and e.line == 2, str(e)
        assert "converter failed" not in e.message, str(e)


def _write(p, recs):
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return p


def test_cli_exit_code_nonzero_when_a_record_is_rejected(cli, tmp_path):
    p = _write(tmp_path / "c.jsonl", [_openai(1), {"id": "bad", "messages": "no"}, _openai(3)])
    out = tmp_path / "out.jsonl"
    res = cli("convert", p, "--format", "openai_chat", "-o", out)
    assert res.exit_code == 1
    assert len(out.read_text().splitlines()) == 2
    assert f"{p}:2: messages:" in res.output
