"""Deeper marks decoded and encoded (pure): evidence spans from UTF-16 offsets into a card's text to code points of
the step's own content, cause links from relations, corrections; the expected offsets are counted by hand here."""
from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import results
from ls_trajeval.core.labels import Span, StepLabel, TraceLabels
from ls_trajeval.core.results import StepText

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
# "#2 " is the card's header (3 code points, 3 units); 😀 is one code point and two UTF-16 units; é is e + U+0301
CONTENT = "a 😀 e\u0301 東京 word"
CARD = StepText("#2 " + CONTENT, CONTENT, 3)
TEXTS = [StepText("#1 start", "start", 3), CARD, StepText("#3 end of it", "end of it", 3)]


def mark(rid, first, last, start, end, severity=None, **extra):
    span = {"start": str(first), "end": str(last), "startOffset": start, "endOffset": end, "text": "trimmed"}
    out = [{"id": rid, "from_name": "error_localization", "to_name": "te_trace", "type": "paragraphlabels",
            "value": {**span, "paragraphlabels": ["incorrect"]}}]
    if severity:
        out.append({"id": rid, "from_name": "error_localization_severity", "to_name": "te_trace",
                    "type": "paragraphlabels", "value": {**span, "paragraphlabels": [severity]}})
    for name, text in extra.items():
        out.append({"id": rid, "from_name": f"error_localization_{name}", "to_name": "te_trace", "type": "textarea",
                    "value": {**span, "text": [text]}})
    return out


def test_utf16_offsets_become_code_points_of_the_content():
    # "word" is content 10..14 (a, space, 😀, space, e, U+0301, space, 東, 京, space), card code points 13..17;
    # in UTF-16 the emoji counts twice: 14..18
    assert CARD.text[13:17] == "word" and CARD.to_code_points(14) == 13 and CARD.to_units(17) == 18
    got = results.decode(mark("r", 1, 1, 14, 18), CONFIG, 3, texts=TEXTS)
    assert got.steps[1].evidence == (Span(10, 14, "word"),) and got.warnings == []
    # the emoji itself, and the combining accent kept whole: "😀 e\u0301" is content 2..6, units 5..10
    got = results.decode(mark("r", 1, 1, 5, 10), CONFIG, 3, texts=TEXTS)
    assert got.steps[1].evidence == (Span(2, 6, "😀 e\u0301"),)


def test_whole_card_is_a_whole_step_mark_and_a_header_selection_is_clipped_or_kept_whole():
    whole = CARD.units
    assert results.decode(mark("r", 1, 1, 0, whole), CONFIG, 3, texts=TEXTS).steps[1].evidence == ()
    # from inside the header "#2 " to "a": clipped to the content's start
    assert results.decode(mark("r", 1, 1, 1, 4), CONFIG, 3, texts=TEXTS).steps[1].evidence == (Span(0, 1, "a"),)
    # the header alone: a whole-step mark, said
    got = results.decode(mark("r", 1, 1, 0, 2), CONFIG, 3, texts=TEXTS)
    assert got.steps[1].correctness == "incorrect" and got.steps[1].evidence == ()
    assert got.warnings == ["region r: step #2: the selected text '#2' is not in the step's own content but in the "
                            "card's header or a view derived from the step; kept as a whole-step mark"]
    # a card showing a derived view (no verbatim content): any selection is a whole-step mark, said
    derived = [TEXTS[0], StepText(CARD.text, CONTENT, None), TEXTS[2]]
    got = results.decode(mark("r", 1, 1, 14, 18), CONFIG, 3, texts=derived)
    assert got.steps[1].evidence == () and "a view derived from the step" in got.warnings[0]


def test_a_span_crossing_steps_is_split_and_several_spans_in_a_step_are_kept_in_order():
    # from "word" in step 1 to "end" in step 2: step 1 from content 10 to its end, step 2 from 0 to 3
    result = mark("x", 1, 2, 14, 6) + mark("y", 0, 0, 3, 8) + mark("z", 0, 0, 0, 1)
    got = results.decode(result, CONFIG, 3, texts=TEXTS)
    assert got.steps[1].evidence == (Span(10, 14, "word"),)
    assert got.steps[2].evidence == (Span(0, 3, "end"),)
    assert got.steps[0].evidence == (Span(0, 5, "start"),)  # "z" lies in the header: whole-step, with a warning
    assert len(got.warnings) == 1 and got.warnings[0].startswith("region z: step #1:")
    two = results.decode(mark("p", 1, 1, 14, 18) + mark("q", 1, 1, 3, 4), CONFIG, 3, texts=TEXTS)
    assert two.steps[1].evidence == (Span(0, 1, "a"), Span(10, 14, "word")) and two.warnings == []


def test_relations_point_at_the_cause_and_bad_ones_are_said():
    result = (mark("a", 0, 0, 0, 8, "major") + mark("b", 1, 1, 14, 18, correction="check first")
              + mark("c", 2, 2, 0, 12))
    right = {"from_id": "b", "to_id": "a", "type": "relation", "direction": "right"}
    left = {"from_id": "b", "to_id": "c", "type": "relation", "direction": "left"}  # arrow at b: c caused by b
    bi = {"from_id": "c", "to_id": "a", "type": "relation", "direction": "bi"}  # the earlier mark is the cause
    ghost = {"from_id": "b", "to_id": "gone", "type": "relation", "direction": "right"}
    got = results.decode(result + [right, left, bi, ghost], CONFIG, 3, texts=TEXTS)
    assert [s.caused_by for s in got.steps] == [(), (0,), (0, 1)]
    assert got.steps[1].correction == "check first"
    assert got.warnings == ["relation 'b' -> 'gone': links a region that is not a mark; dropped"]


def test_paged_caused_by_and_correction_boxes():
    def box(name, step, text):
        return {"id": f"{name}{step}", "from_name": f"error_localization_{name}_{step}", "to_name": "te_task",
                "type": "textarea", "value": {"text": [text]}}
    wrong = [{"id": f"c{i}", "from_name": f"error_localization_correctness_{i}", "to_name": "te_task",
              "type": "choices", "value": {"choices": ["incorrect"]}} for i in (0, 2)]
    got = results.decode(wrong + [box("caused_by", 2, "#1, 2;x"), box("correction", 2, "do it")], CONFIG, 3)
    assert got.steps[2].caused_by == (0, 1) and got.steps[2].correction == "do it"
    assert got.warnings == ["error_localization_caused_by_2: 'x' is not a step number (#N); ignored"]


def test_encode_places_spans_links_and_corrections_where_decode_reads_them():
    steps = [StepLabel(0, "incorrect", severity="minor"),
             StepLabel(1, "incorrect", "action", "wrong_arguments", "major", "why",
                       evidence=(Span(2, 3, "😀"), Span(10, 14, "word")), caused_by=(0,), correction="fix"),
             StepLabel(2, "correct")]
    for layout in ("transcript", "paged"):
        result = results.encode(TraceLabels(steps), CONFIG, layout, texts=TEXTS)
        got = results.decode(result, CONFIG, 3, texts=TEXTS)
        assert got.steps[1].caused_by == (0,) and got.steps[1].correction == "fix" and got.steps[1].rationale == "why"
        assert got.steps[1].evidence == (steps[1].evidence if layout == "transcript" else ())
    result = results.encode(TraceLabels(steps), CONFIG, "transcript", texts=TEXTS)
    spans = sorted({(r["value"]["startOffset"], r["value"]["endOffset"]) for r in result
                    if r.get("from_name") == "error_localization" and r["value"]["start"] == "1"})
    assert spans == [(5, 7), (14, 18)]  # UTF-16 units of the card, counted by hand above
    (relation,) = [r for r in result if r.get("type") == "relation"]
    ids = {r["value"]["start"]: r["id"] for r in result if r.get("from_name") == "error_localization"
           and r["value"]["startOffset"] in (0, 5)}
    assert relation == {"from_id": ids["1"], "to_id": ids["0"], "type": "relation", "direction": "right"}


def test_step_texts_from_task_data_old_and_new():
    data = {"trace": [{"type": "action", "content": "search", "action_input": {"q": "😀"}}],
            "te_transcript": [{"author": "Action", "text": '#1\nsearch\n{\n  "q": "😀"\n}'}]}
    (old,) = results.step_texts(data, CONFIG)
    assert old.at == 3 and old.text[old.at:old.at + 6] == "search"
    data["te_transcript"][0]["content_at"] = None
    assert results.step_texts(data, CONFIG)[0].at is None
    data["te_transcript"][0]["content_at"] = 0  # not where the content is: not trusted
    assert results.step_texts(data, CONFIG)[0].at is None
    assert results.step_texts({"trace": [], "te_transcript": [{}]}, CONFIG) is None
