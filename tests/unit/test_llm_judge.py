"""The LLM judge's pure parts: the answer's schema from the taxonomy, what makes an answer invalid, the prompt
template's own errors. (Its client is tested against a local stand-in in tests/judge/.)"""
from __future__ import annotations

import json

import pytest

from ls_trajeval.core.errors import UserError
from ls_trajeval.core.labels import StepLabel
from ls_trajeval.ml.llm_judge import InvalidAnswer, Prompt, answer_schema, parse_answer, to_label, wire_schema

from .test_results import POTATO as POTATO_CONFIG

#: Potato's dialect: three correctness labels (one partial), two categories of one type each, default severities
POTATO = POTATO_CONFIG.trajectory


def entry(step, correctness="correct", error_type=None, severity=None, confidence=0.5):
    return {"step": step, "correctness": correctness, "error_type": error_type, "severity": severity,
            "rationale": "r", "confidence": confidence}


def answer(*entries) -> str:
    return json.dumps({"steps": list(entries)})


def test_the_schema_is_the_taxonomy():
    wire = wire_schema(POTATO, [3, 4])
    item = wire["properties"]["steps"]["items"]
    assert item["properties"]["correctness"]["enum"] == ["correct", "incorrect", "partially_correct"]
    assert item["properties"]["error_type"]["enum"] == ["logical_error", "wrong_tool", None]
    assert item["properties"]["severity"]["enum"] == ["minor", "major", "critical", None]  # Potato's defaults
    assert item["properties"]["step"]["enum"] == [3, 4]
    # strict structured outputs: every key required, no other key
    assert item["additionalProperties"] is False and set(item["required"]) == set(item["properties"])
    full = answer_schema(POTATO, [3, 4])
    assert full["properties"]["steps"]["minItems"] == full["properties"]["steps"]["maxItems"] == 2
    assert full["properties"]["steps"]["items"]["allOf"][0]["if"]["properties"]["correctness"]["enum"] == \
        ["incorrect", "partially_correct"]


@pytest.mark.parametrize("content, problem", [
    ("", "the answer is empty"),
    ('{"steps": [', "not JSON: Expecting value at line 1 column 12"),
    (answer(entry(1)), "does not match the schema: steps: [{"),  # one entry where two are asked
    (answer(entry(1), entry(1)), "step #2 missing; step #1 given twice"),
    (answer(entry(1), entry(2, "incorrect")), "steps/1/error_type: None is not of type 'string'"),
    (answer(entry(1), entry(2, "partially_correct", "wrong_tool", "minor", confidence=-0.1)),
     "steps/1/confidence: -0.1 is less than the minimum of 0"),
    (json.dumps({"steps": [entry(1), {**entry(2), "extra": 1}]}), "Additional properties are not allowed"),
])
def test_what_makes_an_answer_invalid(content, problem):
    with pytest.raises(InvalidAnswer) as info:
        parse_answer(content, POTATO, [1, 2])
    assert problem in str(info.value)


def test_a_valid_answer_in_any_order_or_a_fence_becomes_labels():
    text = "```json\n" + answer(entry(2, "partially_correct", "wrong_tool", "minor", 0.4), entry(1)) + "\n```"
    entries = parse_answer(text, POTATO, [1, 2])
    assert [e["step"] for e in entries] == [1, 2]
    assert [to_label(e, POTATO) for e in entries] == [
        StepLabel(0, "correct", confidence=0.5),
        StepLabel(1, "partially_correct", "action", "wrong_tool", "minor", "r", confidence=0.4)]


def test_the_prompt_template_says_what_is_wrong_with_it():
    with pytest.raises(UserError, match=r"my.j2:1: not a Jinja2 template"):
        Prompt(POTATO, template_text="{% block system %}", source="my.j2")
    with pytest.raises(UserError, match="needs the blocks 'system' and 'user'.*missing: user"):
        Prompt(POTATO, template_text="{% block system %}x{% endblock %}", source="my.j2")
    bad = Prompt(POTATO, template_text="{% block system %}{{ nothing }}{% endblock %}{% block user %}{% endblock %}",
                 source="my.j2")
    with pytest.raises(UserError, match="my.j2: the prompt template failed: 'nothing' is undefined"):
        bad.messages("t", [{"step": 1, "type": "thought", "content": "c"}], [], 1)
