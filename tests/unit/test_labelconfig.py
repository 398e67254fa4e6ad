"""Generated XML: well-formed, escaping exact, names as results expects, shipped XML in sync."""
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from commandline import invoke

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig

NASTY = "A <b>&amp;</b> \"quoted\" 'single' & <script>alert(1)</script> --> ]]>"




@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_special_characters_stay_valid_xml_and_come_back_exactly(layout):
    c = cfg.loads("""
annotation_schemes:
  - annotation_type: trajectory_eval
    name: e
    description: "A <b>&amp;</b> \\"quoted\\" 'single' & <script>alert(1)</script> --> ]]>"
    error_taxonomy:
      - category: c
        label: "A <b>&amp;</b> \\"quoted\\" 'single' & <script>alert(1)</script> --> ]]>"
        types:
          - name: t
            label: "A <b>&amp;</b> \\"quoted\\" 'single' & <script>alert(1)</script> --> ]]>"
            description: "A <b>&amp;</b> \\"quoted\\" 'single' & <script>alert(1)</script> --> ]]>"
    severity_levels:
      - {name: s, weight: -3, description: "A <b>&amp;</b> \\"quoted\\" 'single' & <script>alert(1)</script> --> ]]>"}
    rationale: {placeholder: "A <b>&amp;</b> \\"quoted\\" 'single' & <script>alert(1)</script> --> ]]>"}
  - annotation_type: radio
    name: outcome
    labels:
      - name: "A <b>&amp;</b> \\"quoted\\" 'single' & <script>alert(1)</script> --> ]]>"
        tooltip: "A <b>&amp;</b> \\"quoted\\" 'single' & <script>alert(1)</script> --> ]]>"
""")
    xml = labelconfig.generate(c, layout)
    root = ET.fromstring(xml)  # well-formed
    assert "<script>" not in xml
    values = [el.get(a) for el in root.iter() for a in ("value", "hint", "placeholder") if el.get(a)]
    assert values.count(NASTY) >= 5
    assert labelconfig.from_label_config(xml).trajectory == c.trajectory  # the embedded copy survives '-->' too


@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_structure_and_names(layout):
    c = cfg.load(label_configs.path("trajectory_eval"))
    root = ET.fromstring(labelconfig.generate(c, layout))
    names = {el.get("name") for el in root.iter() if el.get("name")}
    tags = {el.tag for el in root.iter()}
    assert "overall_success" in names and "te_task" in names
    assert {"TextArea", "Header"} <= tags
    severities = ["Minor (−1)", "Major (−5)", "Critical (−10)"]
    first_category = ("reasoning", ["logical_error", "incorrect_assumption", "over_generalization",
                                    "circular_reasoning", "incorrect_calculation"])
    if layout == "transcript":
        assert {"Paragraphs", "ParagraphLabels"} <= tags and {"Repeater", "Taxonomy"}.isdisjoint(tags)
        assert {"error_localization", "error_localization_type", "error_localization_severity",
                "error_localization_rationale", "error_localization_reviewed"} <= names
        # the workbench: the trace pane and the side pane, side by side (the Style block lays them out)
        workbench = next(el for el in root.iter("View") if el.get("className") == "te-workbench")
        assert [v.get("className") for v in workbench] == ["te-trace-pane", "te-side-pane"]
        assert next(workbench[0].iter("Paragraphs")).get("name") == "te_trace"
        side = {el.get("name") for el in workbench[1].iter() if el.get("name")}
        assert {"error_localization", "error_localization_severity", "error_localization_type", "overall_success",
                "error_localization_live_score", "error_localization_reviewed"} <= side
        # marks call an interactive backend without the Auto-Annotation toggle; the first error label is preselected
        marks = next(el for el in root.iter("ParagraphLabels") if el.get("name") == "error_localization")
        # and an undecided suggestion is a mark of its own label and colour
        assert marks.get("smartOnly") == "true" and [(lb.get("value"), lb.get("selected"), lb.get("background"))
                                                     for lb in marks] == [("incorrect", "true", "#D32F2F"),
                                                                          ("suggested", None, "#1E88E5")]
        # a choice required only on undecided suggestions, which nobody can tick, keeps Submit from taking them
        decision = next(el for el in root.iter("Choices") if el.get("name") == "error_localization_decision")
        assert (decision.get("perRegion"), decision.get("required"), decision.get("whenLabelValue")) == (
            "true", "true", "suggested")
        assert "Backspace" in decision.get("requiredMessage") and [c.get("hotkey") for c in decision] == [
            "ctrl+alt+shift+f12"]
        assert all(">" not in style.text for style in root.iter("Style"))
        # the severity is a second set of labels on the mark (a relabel calls the backend), saved by its name
        severity = next(el for el in root.iter("ParagraphLabels") if el.get("name") == "error_localization_severity")
        assert [(lb.get("value"), lb.get("alias")) for lb in severity] == \
            list(zip(severities, ["minor", "major", "critical"]))
        # every error type is one radio of one per-region group, under its category's header
        types = next(el for el in root.iter("Choices") if el.get("name") == "error_localization_type")
        assert (types.get("perRegion"), types.get("choice"), types.get("required")) == ("true", "single-radio", "true")
        groups = [(g.find("Header").get("value"), [c.get("alias") for c in g.iter("Choice")]) for g in types]
        assert (groups[0][0], groups[0][1]) == ("Reasoning Error", first_category[1])
        assert all(c.get("hint") for c in types.iter("Choice"))  # descriptions shown as hints
        rationale = next(el for el in root.iter("TextArea") if el.get("name") == "error_localization_rationale")
        assert rationale.get("perRegion") == "true" and rationale.get("displayMode") == "region-list"
        live = next(el for el in root.iter("TextArea") if el.get("name") == "error_localization_live_score")
        assert live.get("toName") == "te_task" and live.get("perRegion") is None  # never the rationale box
        headers = [el.get("value") for el in root.iter("Header")]
        assert "Running score: $running_score ($te_score_status)" in headers  # says whether a backend keeps it
        assert ">" not in next(root.iter("Style")).text  # Label Studio escapes it, breaking the rule
    else:
        taxonomy = next(el for el in root.iter("Taxonomy") if len(el))  # the shared store's holder
        cats = [(ch.get("alias"), [g.get("alias") for g in ch]) for ch in taxonomy]
        assert cats[0] == first_category
        assert all(g.get("hint") for ch in taxonomy for g in ch)  # descriptions shown as hints
        severity = next(el for el in root.iter("Choices")
                        if el.get("name", "").startswith("error_localization_severity"))
        assert [ch.get("value") for ch in severity] == severities
        assert "Running score: $running_score ($te_score_status)" in [el.get("value") for el in root.iter("Header")]
        rep = next(root.iter("Repeater"))
        # each step shows the score after it, as the backend last wrote it back
        assert "Score after this step: $te_curve[{{idx}}] (as saved)" in [el.get("value") for el in rep.iter("Header")]
        assert rep.get("indexFlag") == "{{idx}}" and rep.get("mode") == "pagination"
        corr = next(el for el in root.iter("Choices") if el.get("name") == "error_localization_correctness_{{idx}}")
        # nothing preselected: a step without a verdict is the default, and a preselected result per step
        # made every step cost at open
        assert [(ch.get("value"), ch.get("selected")) for ch in corr] == [("correct", None), ("incorrect", None)]
        assert corr.get("required") is None and "error_localization_reviewed" in names
        view = next(el for el in root.iter("View") if el.get("visibleWhen") == "choice-selected")
        assert view.get("whenChoiceValue") == "incorrect"
        # the error types are declared once, in a hidden Taxonomy that fills the store the steps share
        per_step = next(el for el in rep.iter("Taxonomy"))
        assert len(per_step) == 0 and per_step.get("sharedStore") == taxonomy.get("sharedStore") == taxonomy.get("name")
        assert taxonomy.get("required") is None and per_step.get("required") == "true"
        # a step's card is a List item; a List with a control pointing at it shows nothing
        assert next(rep.iter("List")).get("value") == "$te_pages[{{idx}}]"
        assert {el.get("toName") for el in rep.iter() if el.get("toName")} == {"te_task"}
        assert ">" not in next(root.iter("Style")).text  # Label Studio escapes it, breaking the rule
        # Repeater replaces only the first {{idx}} of an attribute
        assert all(v.count("{{idx}}") <= 1 for el in root.iter() for v in el.attrib.values())


def test_the_suggestion_label_is_recognised_in_a_project_config():
    c = cfg.load(label_configs.path("trajectory_eval"))
    assert labelconfig.shows_suggestions(labelconfig.generate(c, "transcript"), c)
    assert not labelconfig.shows_suggestions(labelconfig.generate(c, "paged"), c)
    before = (Path(__file__).parents[1] / "fixtures" / "transcript_before_workbench.xml").read_text(encoding="utf-8")
    assert not labelconfig.shows_suggestions(before, c) and not labelconfig.shows_suggestions("<View", c)
    # its colour is what the workbench finds its marks by, as Label Studio writes it in a mark's inline style
    assert labelconfig.rgb("#1E88E5") == "30, 136, 229" and labelconfig.rgb("#fa0") == "255, 170, 0"
    xml = labelconfig.generate(c, "transcript")
    assert '.htx-highlight-last[style*="rgba(30, 136, 229,"] { counter-increment: te-undecided; }' in xml


def test_no_rationale_no_score_display():
    c = cfg.loads("""
annotation_schemes:
  - annotation_type: trajectory_eval
    name: e
    error_taxonomy: [{category: c, types: [{name: t}]}]
    rationale: {enabled: false}
    running_score: {display: false}
""")
    for layout in labelconfig.LAYOUTS:
        xml = labelconfig.generate(c, layout)
        # the correction boxes (and the paged caused-by box) stay: only the rationale's goes
        assert 'name="e_rationale' not in xml and "$running_score" not in xml
        assert 'name="e_correction' in xml


@pytest.mark.parametrize("name", ["trajectory_eval", "coding_agent", "mast", "trail", "who_and_when"])
@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_shipped_xml_equals_what_the_generator_prints(name, layout):
    shipped = (label_configs.DIR / f"{name}.{layout}.xml").read_text(encoding="utf-8")
    out = invoke("generate", label_configs.path(name), "--layout", layout)
    assert out.exit_code == 0
    assert out.stdout == shipped, (f"regenerate with: ls-trajeval generate label_configs/{name}.yaml --layout {layout} "
                                   f"-o label_configs/{name}.{layout}.xml")


def test_paged_cards_are_one_item_lists_and_earlier_shapes_need_rendering():
    """The List tag the paged layout shows a card with takes a list of items; cards in the HyperText shape
    of earlier versions ({"html": ...} per step) are not pages to it, so ``layout paged`` renders them anew."""
    from ls_trajeval.core import trace
    from ls_trajeval.core.tasks import has_pages, task_data

    c = cfg.load(label_configs.path("trajectory_eval"))
    t = trace.parse_trace({"trace_id": "p", "task": "t", "trace": [
        {"type": "thought", "content": "a <b>"}, {"type": "action", "content": "run", "action_input": {"x": 1}}]})
    data = task_data(t, c, "paged")
    assert [[sorted(item) for item in card] for card in data["te_pages"]] == [[["html", "id"]], [["html", "id"]]]
    assert [card[0]["id"] for card in data["te_pages"]] == ["step-1", "step-2"]
    assert "a &lt;b&gt;" in data["te_pages"][0][0]["html"]
    assert has_pages(data)
    assert not has_pages({**data, "te_pages": [card[0] for card in data["te_pages"]]})  # the earlier shape
    assert not has_pages({**data, "te_pages": data["te_pages"][:1]})  # one card short
    assert not has_pages(task_data(t, c, "transcript"))
