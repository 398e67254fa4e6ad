"""Config loading: both dialects of the guide, defaults, and every error path with its location."""
from __future__ import annotations

import re
import textwrap

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.config import ConfigError


def load(text: str) -> cfg.Config:
    return cfg.loads(textwrap.dedent(text), source="t.yaml")


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(text)
    return info.value.errors


MINIMAL = """
annotation_schemes:
  - annotation_type: trajectory_eval
    name: error_localization
    error_taxonomy:
      - category: reasoning
        types:
          - name: logical_error
"""


def test_minimal_config_gets_documented_defaults():
    c = load(MINIMAL)
    t = c.trajectory
    assert [(s.name, s.weight) for s in t.severities] == [("minor", -1), ("major", -5), ("critical", -10)]
    assert (t.running_score.initial, t.running_score.min, t.running_score.display) == (100, 0, True)
    assert t.correctness_labels == ("correct", "incorrect") and t.correctness_default == "correct"
    assert t.error_labels == ("incorrect",)
    assert t.rationale.enabled
    assert (c.id_key, c.text_key, c.trace_key) == ("trace_id", "task", "trace")
    assert t.types[0].label == "Logical Error" and t.categories[0].label == "Reasoning"


def test_shipped_default_taxonomy_is_complete():
    c = cfg.load(label_configs.path("trajectory_eval"))
    got = {cat.category: [t.name for t in cat.types] for cat in c.trajectory.categories}
    assert got == {
        "reasoning": ["logical_error", "incorrect_assumption", "over_generalization", "circular_reasoning",
                      "incorrect_calculation"],
        "perception": ["missed_element", "misidentified_element", "hallucinated_element", "outdated_reference"],
        "action": ["wrong_tool", "wrong_arguments", "premature_termination", "unnecessary_action",
                   "destructive_action"],
        "communication": ["unclear_explanation", "missing_context", "incorrect_summary", "overconfident_claim"],
    }
    assert all(t.label and t.description for t in c.trajectory.types)
    (outcome,) = c.whole_trace
    assert outcome.name == "overall_success" and [lb.name for lb in outcome.labels] == ["success", "partial", "failure"]
    assert all(lb.tooltip for lb in outcome.labels)
    coding = cfg.load(label_configs.path("coding_agent"))
    assert [t.name for t in coding.trajectory.categories[-1].types] == [
        "syntax_error", "runtime_error", "logic_bug", "style_violation"]
    assert coding.trajectory.categories[-1].category == "code_quality"


def _guide_block(text: str, start: str, end_markers: tuple[str, ...]) -> str:
    i = text.index(start)
    lines = []
    for line in text[i:].splitlines():
        if lines and any(line.startswith(m) for m in end_markers):
            break
        lines.append(line)
    return "\n".join(lines)


def test_guide_potato_native_configs_load_as_written(fixtures_dir):
    """The French and Hindi guides give the complete config in Potato's native keys."""
    for name in ("002_d12294dc7d33069d.txt", "004_ec529199017e009d.txt"):
        text = (fixtures_dir / "guide" / name).read_text(encoding="utf-8")
        block = _guide_block(text, 'annotation_task_name: "Agent Trajectory Error Localization"', ("user_config:",))
        block += "\nuser_config:\n  allow_all_users: true\n"
        c = cfg.loads(block, source=name)
        t = c.trajectory
        assert t.name == "step_errors"
        assert t.correctness_labels == ("correct", "incorrect", "partially_correct")
        assert t.error_labels == ("incorrect", "partially_correct")
        assert [cat.category for cat in t.categories] == ["reasoning", "perception", "action", "communication"]
        assert len(t.types) == 18
        assert c.trace_key == "trace" and c.step_text_key == "content"
        assert c.step_display["thought"].color == "#E8F0FE"
        assert c.show_step_numbers is True and c.show_timestamps is False
        assert "Walk the trace one step at a time" in c.instructions
        assert c.output_path == "annotation_output/" and c.output_format == "jsonl"
        assert t.running_score.initial == 100 and t.running_score.display
        (radio,) = c.whole_trace
        assert radio.hotkeys and [lb.name for lb in radio.labels] == ["success", "partial", "failure"]
        assert c.user_config == {"allow_all_users": True} and c.task_dir == "."


def test_guide_dialect_config_matches_the_english_guide(fixtures_dir):
    """The English guide's full config lost its line breaks in the seed file; every category, type,
    label, description, severity and weight it names must be in the shipped default config."""
    text = (fixtures_dir / "guide" / "000_b868f1924f416570.txt").read_text(encoding="utf-8")
    block = text[text.index("## Full YAML configuration"):text.index("## Step-by-step setup")]
    shipped = cfg.load(label_configs.path("trajectory_eval"))
    t = shipped.trajectory
    guide_types = re.findall(r'- name: "(\w+)" label: "([^"]+)" description: "([^"]+)"', block)
    assert len(guide_types) == 18
    assert guide_types == [(e.name, e.label, e.description) for e in t.types]
    cats = re.findall(r'- category: "(\w+)" label: "([^"]+)"', block)
    assert cats == [(c.category, c.label) for c in t.categories]
    sev = re.findall(r'- name: "(\w+)" weight: (-?\d+) description: "([^"]+)"', block)
    assert sev == [(s.name, f"{s.weight:g}", s.description) for s in t.severities]
    assert 'initial: 100 min: 0 display: true' in block
    assert t.running_score.initial == 100 and t.running_score.min == 0
    assert f'placeholder: "{t.rationale.placeholder}"' in block


def test_suggestions_default_to_prelabelling_with_their_own_label_and_round_trip():
    c = load(MINIMAL)
    assert (c.suggestions.label, c.suggestions.color, c.suggestions.prelabel) == ("suggested", "#1E88E5", True)
    beside = load(MINIMAL + "suggestions:\n  label: judge says\n  color: '#00897B'\n  prelabel: false\n")
    assert beside.suggestions == cfg.Suggestions("judge says", "#00897B", False)
    assert cfg.load_dict(beside.to_dict()).suggestions == beside.suggestions


def test_config_roundtrips_through_the_embedded_copy():
    c = cfg.load(label_configs.path("coding_agent"))
    from ls_trajeval.core import labelconfig

    for layout in labelconfig.LAYOUTS:
        back = labelconfig.from_label_config(labelconfig.generate(c, layout))
        assert back.trajectory == c.trajectory and back.whole_trace == c.whole_trace
        assert back.step_display == c.step_display and back.instructions == c.instructions


@pytest.mark.parametrize("text, expected", [
    (MINIMAL.replace("name: error_localization", "name: error_localization\n    severity_levels:\n"
                     "      - {name: minor, weight: -1}\n      - {name: major, weight: -5}\n"
                     "      - {name: critical, weight: high}"),
     "annotation_schemes[0].severity_levels[2].weight: expected a number, got 'high'"),
    (MINIMAL + "annotator_config:\n  require_all_step: true\n",
     "annotator_config.require_all_step: unknown key (did you mean 'require_all_steps'?)"),
    (MINIMAL.replace("error_taxonomy:", "error_taxonmy:"),
     "annotation_schemes[0].error_taxonmy: unknown key (did you mean 'error_taxonomy'?)"),
    (MINIMAL + "      - category: action\n        types:\n          - name: logical_error\n",
     "annotation_schemes[0].error_taxonomy: error type 'logical_error' appears in both 'reasoning' and 'action'; "
     "type names must be unique"),
    (MINIMAL.replace("name: logical_error", "name: 'bad name'"),
     "annotation_schemes[0].error_taxonomy[0].types[0].name: expected a name of letters, digits and '_' starting "
     "with a letter, got 'bad name'"),
    (MINIMAL.replace("name: error_localization", "name: e\n    step_correctness: {labels: [ok, bad], default: fine}"),
     "annotation_schemes[0].step_correctness.default: expected one of ['ok', 'bad'], got 'fine'"),
    (MINIMAL.replace("name: error_localization", "name: e\n    running_score: {initial: 10, min: 20}"),
     "annotation_schemes[0].running_score.min: min (20) is above initial (10)"),
    ("annotation_schemes:\n  - annotation_type: likert\n    name: x\n",
     "annotation_schemes[0].annotation_type: expected 'trajectory_eval' or 'radio', got 'likert'"),
    ("annotation_schemes: []\n", "annotation_schemes: needs one scheme with annotation_type: trajectory_eval"),
    (MINIMAL + "  - annotation_type: radio\n    name: error_localization_type\n    labels: [a]\n",
     "annotation_schemes: scheme name 'error_localization_type' collides with a control of 'error_localization'"),
    (MINIMAL + "  - annotation_type: radio\n    name: error_localization\n    labels: [a]\n",
     "annotation_schemes: scheme name 'error_localization' is used twice"),
    (MINIMAL + "display:\n  step_display:\n    thought: {label: T, color: 'red;background:url(x)'}\n",
     "display.step_display.thought.color: expected a CSS colour such as '#E8F0FE', got 'red;background:url(x)'"),
    (MINIMAL + "item_properties:\n  id_key: running_score\n",
     "item_properties.id_key: 'running_score' is reserved for ls-trajeval's own task fields; choose another key"),
    (MINIMAL + "suggestions:\n  label: incorrect\n",
     "suggestions.label: 'incorrect' is already a correctness or severity label; choose another"),
    (MINIMAL + "suggestions:\n  label: major\n",
     "suggestions.label: 'major' is already a correctness or severity label; choose another"),
    (MINIMAL + "suggestions:\n  color: 'blue;x'\n",
     "suggestions.color: expected a colour as '#RRGGBB' or '#RGB', got 'blue;x'"),
    (MINIMAL + "suggestions:\n  color: blue\n",
     "suggestions.color: expected a colour as '#RRGGBB' or '#RGB', got 'blue'"),
    (MINIMAL + "suggestions:\n  prelabel: beside\n", "suggestions.prelabel: expected true or false, got 'beside'"),
    (MINIMAL + "suggestions:\n  prelabels: true\n", "suggestions.prelabels: unknown key (did you mean 'prelabel'?)"),
    ("a: 1\na: 2\n", "line 2, column 1: invalid YAML: duplicate key 'a' (first at line 1)"),
    ("annotation_schemes: [\n", "invalid YAML"),
    ("- just\n- a list\n", "expected a mapping, got a list"),
])
def test_errors_name_the_key_path_and_what_was_expected(text, expected):
    errs = errors_of(text)
    assert any(e == expected or (expected in e and expected == "invalid YAML") for e in errs), errs


def test_all_errors_are_reported_at_once_with_the_file_name():
    text = MINIMAL.replace("name: logical_error", "name: logical_error\n            colour: red") + "outptu: {}\n"
    with pytest.raises(ConfigError) as info:
        load(text)
    assert len(info.value.errors) == 2
    assert str(info.value).startswith("t.yaml: ")


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        cfg.load(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"annotation_task_name: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        cfg.load(bad)


def test_potato_dialect_keys_map_onto_the_same_objects():
    c = load("""
    annotation_schemes:
      - annotation_type: trajectory_eval
        name: s
        steps_key: steps
        step_text_key: action
        correctness_options: [correct, incorrect, partially_correct]
        error_types:
          - name: tool
            subtypes: [wrong_tool, {name: bad_args, label: "Bad <args>", description: "a & b"}]
          - plain
        severities:
          - {name: low, weight: -2}
        show_score: false
        max_score: 50
      - annotation_type: radio
        name: outcome
        labels: [done, failed]
        label_requirement: {required: true}
    """)
    t = c.trajectory
    assert c.trace_key == "steps" and c.step_text_key == "action"
    assert [x.name for x in t.types] == ["wrong_tool", "bad_args", "plain"]
    assert t.type_by_name("bad_args").label == "Bad <args>" and t.type_by_name("bad_args").category == "tool"
    assert t.running_score.initial == 50 and t.running_score.display is False
    assert t.weights == {"low": -2}
    assert c.whole_trace[0].required is True
    assert [lb.name for lb in c.whole_trace[0].labels] == ["done", "failed"]


def test_unquoted_yes_no_labels_get_a_hint():
    errs = errors_of(MINIMAL + "  - annotation_type: radio\n    name: ok\n    labels: [yes, no]\n")
    assert errs[0].startswith("annotation_schemes[1].labels[0]: expected a label name, got True (YAML reads")


def test_mixing_both_spellings_of_one_thing_is_an_error():
    errs = errors_of(MINIMAL.replace("name: error_localization",
                                     "name: e\n    severities: [{name: a, weight: 1}]\n"
                                     "    severity_levels: [{name: a, weight: 1}]"))
    assert "annotation_schemes[0].severities: give either 'severity_levels' or 'severities', not both" in errs


# ---------------------------------------------------------------- Potato's keys, translated into the guide's

POTATO = """
instance_display:
  layout: vertical
  fields:
    - {key: task, type: text, label: Task}
    - key: steps
      type: agent_trace
      display_options:
        show_timestamps: true
        step_type_colors: {thought: "#E8F0FE", tool: "#FFF3E0"}
        step_type_labels: {thought: Reasoning}
annotation_schemes:
  - annotation_type: trajectory_eval
    name: s
    correctness_options: [correct, incorrect]
    error_types:
      - name: tool
        subtypes: [wrong_tool, {name: bad_args, label: Bad args}]
      - plain
    severities:
      - {name: low, weight: -2}
    max_score: 50
    show_score: false
  - annotation_type: radio
    name: outcome
    horizontal: true
    labels: [done, {name: failed, key_value: f}]
    label_requirement: {required: true}
output_annotation_dir: out/
export_annotation_format: json
"""
#: the same config as the guide writes it, by hand
GUIDE = """
display:
  trace_key: steps
  show_timestamps: true
  step_display:
    thought: {label: Reasoning, color: "#E8F0FE"}
    tool: {color: "#FFF3E0"}
annotation_schemes:
  - annotation_type: trajectory_eval
    name: s
    step_correctness: {labels: [correct, incorrect], default: correct}
    error_taxonomy:
      - category: tool
        types: [{name: wrong_tool}, {name: bad_args, label: Bad args}]
      - category: plain
        types: [{name: plain}]
    severity_levels:
      - {name: low, weight: -2}
    running_score: {initial: 50, display: false}
  - annotation_type: radio
    name: outcome
    labels: [done, {name: failed}]
    required: true
output: {path: out/, format: json}
"""


def test_potato_keys_translate_into_the_guides_dialect():
    import yaml

    from ls_trajeval.core.config import dialect, validation

    ck = validation.Checker("t.yaml")
    assert dialect.to_guide(yaml.safe_load(POTATO), ck) == {**yaml.safe_load(GUIDE), "annotation_schemes": [
        {**s, **({"labels": ["done", {"name": "failed"}]} if s["name"] == "outcome" else {})}
        for s in yaml.safe_load(GUIDE)["annotation_schemes"]]} | {"display": {
            "trace_key": "steps", "show_timestamps": True,
            "step_display": {"thought": {"label": "Reasoning", "color": "#E8F0FE"}, "tool": {"color": "#FFF3E0"}}}}
    assert ck.errors == []
    potato, guide = load(POTATO), load(GUIDE)
    assert potato == guide
    assert potato.step_display["tool"].label == "Tool" and potato.whole_trace[0].required


def test_a_guide_config_passes_the_translation_unchanged():
    import yaml

    from ls_trajeval.core.config import dialect, validation

    shipped = yaml.safe_load(label_configs.path("trajectory_eval").read_text(encoding="utf-8"))
    ck = validation.Checker("t.yaml")
    assert dialect.to_guide(shipped, ck) == shipped and ck.origins == {} and ck.errors == []


@pytest.mark.parametrize("change, expected", [
    (("correctness_options: [correct, incorrect]", "correctness_options: [correct, 'in correct']"),
     "annotation_schemes[0].correctness_options[1]: expected a name of letters, digits and '_' starting with a letter, "
     "got 'in correct'"),
    (("correctness_options: [correct, incorrect]", "correctness_options: [correct]"),
     "annotation_schemes[0].correctness_options: expected at least two labels (a correct one and an error one)"),
    (("subtypes: [wrong_tool,", "subtypes: [wrong tool,"),
     "annotation_schemes[0].error_types[0].subtypes[0]: expected a name of letters, digits and '_' starting with a "
     "letter, got 'wrong tool'"),
    (("- name: tool\n", "- name: tool\n        colour: red\n"),
     "annotation_schemes[0].error_types[0].colour: unknown key (allowed: description, label, name, subtypes)"),
    (("      - plain\n", "      - {label: Plain}\n"),
     "annotation_schemes[0].error_types[1].name: required key is missing"),
    (("- plain", "- wrong_tool"),
     "annotation_schemes[0].error_types: error type 'wrong_tool' appears in both 'tool' and 'wrong_tool'; type names "
     "must be unique"),
    (("weight: -2", "weight: high"), "annotation_schemes[0].severities[0].weight: expected a number, got 'high'"),
    (("max_score: 50", "max_score: lots"), "annotation_schemes[0].max_score: expected a number, got 'lots'"),
    (("max_score: 50", "max_score: 50\n    running_score: {initial: 10}"),
     "annotation_schemes[0].max_score: give either 'running_score.initial' or 'max_score', not both"),
    (("show_score: false", "show_score: 'no'"), "annotation_schemes[0].show_score: expected true or false, got 'no'"),
    (('tool: "#FFF3E0"', 'tool: "red;x"'),
     "instance_display.fields[1].display_options.step_type_colors.tool: expected a CSS colour such as '#E8F0FE', got "
     "'red;x'"),
    (("key: steps", "key: running_score"),
     "instance_display.fields[1].key: 'running_score' is reserved for ls-trajeval's own task fields; choose another "
     "key"),
    (("type: agent_trace", "type: text"),
     "instance_display.fields: no field of type 'agent_trace' (which key holds the steps?)"),
    (("export_annotation_format: json", "export_annotation_format: csv"),
     "export_annotation_format: expected 'jsonl' or 'json', got 'csv'"),
    (("label_requirement: {required: true}", "label_requirement: {required: maybe}"),
     "annotation_schemes[1].label_requirement.required: expected true or false, got 'maybe'"),
    (("name: s\n", "name: s\n    steps_key: n_steps\n"),
     "annotation_schemes[0].steps_key: 'n_steps' is reserved for ls-trajeval's own task fields; choose another key"),
])
def test_errors_in_potatos_keys_name_the_key_as_written(change, expected):
    old, new = change
    assert old in POTATO
    assert expected in errors_of(POTATO.replace(old, new, 1))
