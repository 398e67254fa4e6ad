import ast
import json
import re

import pytest

from .conftest import FIXTURES, SCARY, auto_name, meta, run, types


def test_memory_steps():
    traces, errors, _ = run(FIXTURES / "smolagents_steps.json")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.task == "How many r in strawberry? " + SCARY
    assert types(t) == [
        "message",
        "thought",
        "thought",
        "code",
        "observation",
        "action",
        "error",
        "thought",
        "action",
        "observation",
        "message",
    ]
    assert meta(t.steps[1])["planning"]
    assert t.steps[3].content == "print('strawberry'.count('r'))" and meta(t.steps[4])["tool_call_id"] == "call_1"
    assert t.steps[5].content == "web_search" and t.steps[6].content == "Search failed: <timeout>"
    assert meta(t.steps[6])["error_type"] == "AgentToolExecutionError"
    assert meta(t.steps[-1])["final_answer"]
    assert t.metadata["usage"] == {"input_tokens": 50, "output_tokens": 10}


# ---------------------------------------------------------------- benchmark output (real GAIA runs)
SMOL = FIXTURES / "smolagents"
GAIA = ["code_o1_27-01_vision.jsonl", "code_o1_27-01_text.jsonl"]


def _gaia_records(name):
    """The records read independently: Python's json (it accepts the files' bare NaN), the printed steps
    counted with regular expressions over their text."""
    out = []
    for line in (SMOL / name).read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        acts = [s for s in r["intermediate_steps"] if s.startswith("ActionStep(")]
        out.append({
            "question": r["question"],
            "actions": len(acts),
            "call_ids": [i for s in acts for i in re.findall(r"\bid='(call_\d+)'\)", s)],
            "calls": sum(len(re.findall(r"ToolCall\(name='python_interpreter'", s)) for s in acts),
            "observations": sum(1 for s in acts if ", observations=None," not in s),
            "errors": sum(1 for s in acts if ", error=None," not in s),
            "errors_without_call": sum(1 for s in acts if ", error=None," not in s and "tool_calls=None" in s),
            "prediction": r["prediction"], "level": r["task"],
        })
    return out


#: hand counts from the staging SHAPE.md: (ActionSteps, tool calls, ActionSteps with an error) per file
SHAPE_TOTALS = {"code_o1_27-01_vision.jsonl": (69, 66, 9), "code_o1_27-01_text.jsonl": (94, 86, 8)}


@pytest.mark.parametrize("name", GAIA)
def test_gaia_benchmark_output_one_trace_per_question(name):
    recs = _gaia_records(name)
    assert tuple(sum(r[k] for r in recs) for k in ("actions", "calls", "errors")) == SHAPE_TOTALS[name]
    traces, errors, warnings = run(SMOL / name)
    assert auto_name(SMOL / name) == "smolagents"
    assert not errors and not warnings  # the bare NaN of agent_error costs no line
    assert len(traces) == len(recs) == 12
    for t, r in zip(traces, recs):
        assert t.task == r["question"]  # the question, not the harness's augmented_question
        assert (
            t.steps[0].type == "system"
            and t.steps[1].type == "message"
            and t.steps[1].content.startswith("It is paramount")
        )
        code = [s for s in t.steps if s.type == "code"]
        assert len(code) == r["calls"] and not [s for s in t.steps if s.type == "action"]
        assert {meta(s)["tool_name"] for s in code} == {"python_interpreter"}
        assert [meta(s)["tool_call_id"] for s in code] == r["call_ids"]
        assert types(t).count("thought") == r["actions"]
        assert types(t).count("observation") == r["observations"] and types(t).count("error") == r["errors"]
        # each call's results right after it (its observation, then its error when the step failed)
        for i, s in enumerate(t.steps):
            if s.type == "code":
                nxt = t.steps[i + 1]
                assert nxt.type in ("observation", "error") and meta(nxt)["tool_call_id"] == meta(s)["tool_call_id"]
        unpaired_errors = [s for s in t.steps if s.type == "error" and "tool_call_id" not in meta(s)]
        assert len(unpaired_errors) == r["errors_without_call"]
        assert t.metadata["prediction"] == r["prediction"] and t.metadata["level"] == r["level"]
        assert "agent_error" not in t.metadata or t.metadata["agent_error"] is not None
    steps = [s for t in traces for s in t.steps]
    actions, calls, failed = SHAPE_TOTALS[name]
    assert sum(s.type == "code" for s in steps) == calls and sum(s.type == "error" for s in steps) == failed
    assert sum(s.type == "thought" for s in steps) == actions


def test_gaia_step_contents_as_printed():
    # Read by hand from the text run's first record: ActionStep(... ToolCall(name='python_interpreter',
    # arguments='graveyard_page = navigational_web_search(query="Ben & Jerry\'s flavor graveyard site")\n
    # print(graveyard_page)',
    # id='call_2') ... step_number=0, error=None, duration=..., llm_output="..." ...)
    t = run(SMOL / "code_o1_27-01_text.jsonl")[0][0]
    code = next(s for s in t.steps if s.type == "code")
    assert (
        code.content
        == 'graveyard_page = navigational_web_search(query="Ben & Jerry\'s flavor graveyard site")\n'
        "print(graveyard_page)"
    )
    assert meta(code)["tool_call_id"] == "call_2" and meta(code)["step_number"] == 0
    assert meta(code)["timing"]["start_time"] == 1738013058.7473888
    # the vision run's failed steps: AgentExecutionError('…') becomes an error step of that type
    v = run(SMOL / "code_o1_27-01_vision.jsonl")[0]
    errs = [s for t in v for s in t.steps if s.type == "error"]
    assert {meta(e)["error_type"] for e in errs} <= {"AgentExecutionError", "AgentParsingError"} and errs
    assert all(e.content and not e.content.startswith(("AgentExecutionError(", "'")) for e in errs)
    obs = [s for t in v for s in t.steps if s.type == "observation"]
    assert all("observations_images" not in o.content for o in obs)


def test_a_printed_step_that_cannot_be_read_is_kept_with_a_warning(tmp_path):
    p = tmp_path / "answers.jsonl"
    rec = {
        "question": "q?",
        "prediction": "a",
        "agent_error": float("nan"),
        "intermediate_steps": [
            "TaskStep(task='q?', task_images=None)",
            "ActionStep(tool_calls=[ToolCall(name='web_search', arguments={'query': 'x'}, id='call_1')], "
            "step_number=0, error=None, llm_output='look', observations='found <b>', action_output=None)",
            "ActionStep(tool_calls=[ToolCall(name='web_search', arguments={'query': 'x",
        ],
    }
    p.write_text(json.dumps(rec) + "\n")  # json.dumps writes the nan as a bare NaN
    traces, errors, warnings = run(p)
    assert not errors and len(warnings) == 1 and "1 printed step" in warnings[0].message
    t = traces[0]
    assert types(t) == ["message", "thought", "action", "observation", "other"]
    assert (t.steps[2].content, t.steps[2].action_input) == ("web_search", '{\n  "query": "x"\n}')
    assert t.steps[3].content == "found <b>" and t.steps[-1].content == rec["intermediate_steps"][-1]


# ---------------------------------------------------------------- benchmark output as messages
def _messages_figures():
    """Tool calls and responses of benchmark_messages.jsonl, read with ast.literal_eval of each
    ``Calling tools:`` list (the file is written as smolagents' examples/smolagents_benchmark/run.py does)."""
    out = []
    for line in (SMOL / "benchmark_messages.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        calls, responses = [], 0
        for m in r["intermediate_steps"]:
            body = m["content"][0]["text"]
            if m["role"] == "tool-call":
                calls += [(c["id"], c["function"]["name"], c["function"]["arguments"])
                          for c in ast.literal_eval(body[len("Calling tools:\n"):])]
            responses += m["role"] == "tool-response"
        out.append((r["original_question"], calls, responses))
    return out


def test_benchmark_messages_name_each_call_by_its_tool():
    traces, errors, warnings = run(SMOL / "benchmark_messages.jsonl")
    assert auto_name(SMOL / "benchmark_messages.jsonl") == "smolagents"
    assert not errors and not warnings
    figures = _messages_figures()
    assert len(traces) == len(figures) == 2
    for t, (question, calls, responses) in zip(traces, figures):
        assert t.task == question
        made = [s for s in t.steps if s.type in ("action", "code")]
        assert [meta(s)["tool_call_id"] for s in made] == [c[0] for c in calls]
        assert [s.content if s.type == "action" else meta(s)["tool_name"] for s in made] == [c[1] for c in calls]
        assert "tool-call" not in [s.content for s in made]
        results = [s for s in t.steps if s.type in ("observation", "error")]
        assert len(results) == responses
        for r in results:  # right after its call
            i = t.steps.index(r)
            assert (
                t.steps[i - 1].type in ("action", "code")
                and meta(t.steps[i - 1])["tool_call_id"] == meta(r)["tool_call_id"]
            )
    first = traces[0]
    search = next(s for s in first.steps if s.content == "web_search")
    assert search.action_input == '{\n  "query": "letters in strawberry <b>&</b>"\n}'
    # "Call id: call_2 / Error:" answers the first of two parallel calls; the second has no response
    visit = next(i for i, s in enumerate(first.steps) if s.content == "visit_webpage")
    assert first.steps[visit + 1].type == "error" and first.steps[visit + 2].content == "python_interpreter"
    code = next(s for s in traces[1].steps if s.type == "code")
    assert code.content == "result = 7 * 6\nfinal_answer(result)"


def test_a_tool_call_message_that_cannot_be_read_stays_as_written(tmp_path):
    p = tmp_path / "m.json"
    msgs = [{"role": "user", "content": "New task:\nq"},
            {"role": "tool-call", "content": "Calling tools:\n[{'id': 'call_1', 'function': {'name': "},
            {"role": "tool-response", "content": "Observation:\nok"}]
    p.write_text(json.dumps(msgs))
    traces, errors, warnings = run(p)
    assert not errors and len(warnings) == 1
    assert types(traces[0]) == ["message", "action", "observation"] and traces[0].steps[1].content == "tool-call"
    assert traces[0].task == "q"


def test_a_question_the_agent_failed_on_is_one_located_error(tmp_path):
    # smolagents_benchmark/run.py writes intermediate_steps = [] when the agent raised
    p = tmp_path / "answers.jsonl"
    ok = {
        "model_id": "m",
        "agent_action_type": "code",
        "question": "q1",
        "answer": "a",
        "intermediate_steps": [
            {"role": "user", "content": [{"type": "text", "text": "New task:\nq1"}]},
            {
                "role": "tool-call",
                "content": [
                    {
                        "type": "text",
                        "text": "Calling tools:\n[{'id': 'c1', 'type': 'function', "
                        "'function': {'name': 'final_answer', 'arguments': {'answer': 'a'}}}]",
                    }
                ],
            },
            {"role": "tool-response", "content": [{"type": "text", "text": "Observation:\na"}]},
        ],
    }
    failed = {
        "model_id": "m",
        "agent_action_type": "code",
        "question": "q2",
        "answer": "Error: boom",
        "intermediate_steps": [],
    }
    p.write_text(json.dumps(failed) + "\n" + json.dumps(ok) + "\n")
    assert auto_name(p) == "smolagents"
    traces, errors, _ = run(p)
    assert [t.task for t in traces] == ["q1"] and types(traces[0]) == ["message", "action", "observation"]
    assert len(errors) == 1 and errors[0].line == 1 and "no steps" in errors[0].message
