"""Two traces with hostile text and the results the labeling UI saves for one set of labels on them, written out
literally (not produced by our own encoder), so decoders are checked against Label Studio's shapes and not against
themselves. Shared by the round trips on SQLite (test_roundtrip) and PostgreSQL (tests/pg) and by the fuzzer; and the
suggestions an annotator decides in the workbench, with the provenance the export must give them (test_suggestions
in tests/browser, tests/studio and tests/pg)."""
from __future__ import annotations

from ls_trajeval.core import labelconfig
from ls_trajeval.core.labels import StepLabel, TraceLabels

NASTY = "<script>alert('x')</script> & \"q\" {{idx}} $task ]]> — 東京"
TRACES = [
    {"trace_id": "rt-1", "task": f"Fix the discount bug {NASTY}", "trace": [
        {"type": "thought", "content": "Look at calculate_discount first."},
        {"type": "action", "content": "search", "action_input": "def calculate_discount"},
        {"type": "observation", "content": "pricing.py:45: return price * pct / 100"},
        {"type": "thought", "content": f"It must subtract the discount. {NASTY}"},
        {"type": "action", "content": "edit_file", "action_input": {"path": "pricing.py", "line": 45}},
        {"type": "observation", "content": "File edited successfully."},
        {"type": "action", "content": "finish", "action_input": "Fixed."},
    ], "metadata": {"agent": NASTY}},
    {"trace_id": "rt-2", "task": "Weather in Munich", "trace": [
        {"type": "action", "content": "weather", "action_input": "München"},
        {"type": "observation", "content": "12 °C, rain"},
        {"type": "message", "content": "It is 12 °C and raining."},
    ]},
]
RATIONALE = f"assumes the edit works without running tests {NASTY}\nsecond line"


def ui_result(layout: str, transcript: list[dict]) -> list[dict]:
    """What the labeling UI saves for: step 3 wrong (reasoning/incorrect_assumption, major, rationale),
    step 6 wrong (action/premature_termination, critical), outcome 'failure'."""
    if layout == "transcript":
        def region(rid, step, from_name, rtype, **value):
            # as the browser showed: every per-region value repeats the step's text under "text",
            # except the TextArea's, whose "text" is the list of what was typed
            return {"id": rid, "from_name": from_name, "to_name": "te_trace", "type": rtype, "origin": "manual",
                    "value": {"start": str(step), "end": str(step), "startOffset": 0,
                              "endOffset": len(transcript[step]["text"]), "text": transcript[step]["text"],
                              **value}}
        steps = [
            region("aaa111", 3, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
            region("aaa111", 3, "error_localization_type", "taxonomy",
                   taxonomy=[["reasoning", "incorrect_assumption"]]),
            region("aaa111", 3, "error_localization_severity", "choices", choices=["major"]),
            region("aaa111", 3, "error_localization_rationale", "textarea", text=[RATIONALE]),
            region("bbb222", 6, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
            region("bbb222", 6, "error_localization_type", "taxonomy",
                   taxonomy=[["action", "premature_termination"]]),
            region("bbb222", 6, "error_localization_severity", "choices", choices=["critical"]),
            {"id": "rev", "from_name": "error_localization_reviewed", "to_name": "te_trace", "type": "choices",
             "origin": "manual", "value": {"choices": [labelconfig.REVIEWED_TEXT]}},
        ]
    else:
        # what the UI saves: a verdict only where the annotator chose one (step 0 explicitly correct, the
        # others untouched), every control pointing at the task text
        steps = []
        for i in (0, 3, 6):
            steps.append({"id": f"c{i}", "from_name": f"error_localization_correctness_{i}",
                          "to_name": "te_task", "type": "choices", "origin": "manual",
                          "value": {"choices": ["incorrect" if i in (3, 6) else "correct"]}})
        steps += [
            {"id": "t3", "from_name": "error_localization_type_3", "to_name": "te_task", "type": "taxonomy",
             "origin": "manual", "value": {"taxonomy": [["reasoning", "incorrect_assumption"]]}},
            {"id": "s3", "from_name": "error_localization_severity_3", "to_name": "te_task", "type": "choices",
             "origin": "manual", "value": {"choices": ["major"]}},
            {"id": "r3", "from_name": "error_localization_rationale_3", "to_name": "te_task", "type": "textarea",
             "origin": "manual", "value": {"text": [RATIONALE]}},
            {"id": "t6", "from_name": "error_localization_type_6", "to_name": "te_task", "type": "taxonomy",
             "origin": "manual", "value": {"taxonomy": [["action", "premature_termination"]]}},
            {"id": "s6", "from_name": "error_localization_severity_6", "to_name": "te_task", "type": "choices",
             "origin": "manual", "value": {"choices": ["critical"]}},
            {"id": "rev", "from_name": "error_localization_reviewed", "to_name": "te_task", "type": "choices",
             "origin": "manual", "value": {"choices": [labelconfig.REVIEWED_TEXT]}},
        ]
    return steps + [{"id": "out", "from_name": "overall_success", "to_name": "te_task", "type": "choices",
                     "origin": "manual", "value": {"choices": ["failure"]}}]


def ui_marks(layout: str, transcript: list[dict], marks: dict, outcome: str = "failure") -> list[dict]:
    """What the labeling UI saves when an annotator marks ``marks`` ({step: (category, type, severity, rationale)},
    each step "incorrect"), ticks the review box and picks ``outcome``: the workbench's shapes (a ParagraphLabels
    mark, its severity as a second label on the same region, the type as per-region Choices, the rationale as a
    per-region TextArea; aliases saved, as tests/browser/test_workbench.py reads them from the editor) or the paged
    layout's (Repeater-expanded Choices, Taxonomy path, TextArea)."""
    out = []
    for step, (category, etype, severity, rationale) in sorted(marks.items()):
        if layout == "transcript":
            text = transcript[step]["text"]
            span = {"start": str(step), "end": str(step), "startOffset": 0, "endOffset": len(text)}
            rid = f"m{step}"
            out += [
                {"id": rid, "from_name": "error_localization", "to_name": "te_trace", "type": "paragraphlabels",
                 "origin": "manual", "value": {**span, "text": text, "paragraphlabels": ["incorrect"]}},
                {"id": rid, "from_name": "error_localization_severity", "to_name": "te_trace",
                 "type": "paragraphlabels", "origin": "manual",
                 "value": {**span, "text": text, "paragraphlabels": [severity]}},
                {"id": rid, "from_name": "error_localization_type", "to_name": "te_trace", "type": "choices",
                 "origin": "manual", "value": {**span, "text": text, "choices": [etype]}},
                {"id": rid, "from_name": "error_localization_rationale", "to_name": "te_trace", "type": "textarea",
                 "origin": "manual", "value": {**span, "text": [rationale]}},
            ]
        else:
            out += [
                {"id": f"c{step}", "from_name": f"error_localization_correctness_{step}", "to_name": "te_task",
                 "type": "choices", "origin": "manual", "value": {"choices": ["incorrect"]}},
                {"id": f"t{step}", "from_name": f"error_localization_type_{step}", "to_name": "te_task",
                 "type": "taxonomy", "origin": "manual", "value": {"taxonomy": [[category, etype]]}},
                {"id": f"s{step}", "from_name": f"error_localization_severity_{step}", "to_name": "te_task",
                 "type": "choices", "origin": "manual", "value": {"choices": [severity]}},
                {"id": f"r{step}", "from_name": f"error_localization_rationale_{step}", "to_name": "te_task",
                 "type": "textarea", "origin": "manual", "value": {"text": [rationale]}},
            ]
    to_name = "te_trace" if layout == "transcript" else "te_task"
    return out + [
        {"id": "rev", "from_name": "error_localization_reviewed", "to_name": to_name, "type": "choices",
         "origin": "manual", "value": {"choices": [labelconfig.REVIEWED_TEXT]}},
        {"id": "out", "from_name": "overall_success", "to_name": "te_task", "type": "choices", "origin": "manual",
         "value": {"choices": [outcome]}}]


# ---------------------------------------------------------------- suggestions decided in the workbench
#: three suggestions on rt-1 (two judges merged, the third from the merged prediction's own model version)
SUGGESTIONS_BY = "merged-judges"
SUGGESTIONS = TraceLabels([StepLabel(i, "correct") for i in range(7)])
SUGGESTIONS.steps[1] = StepLabel(1, "incorrect", "action", "wrong_tool", "minor", "searched the wrong thing",
                                 confidence=0.6, suggested_by="judge-a")
SUGGESTIONS.steps[3] = StepLabel(3, "incorrect", "reasoning", "incorrect_assumption", "major",
                                 f"assumes the discount is a percentage {NASTY}", confidence=0.9)
SUGGESTIONS.steps[5] = StepLabel(5, "incorrect", "perception", "missed_element", "critical", "the edit was not checked",
                                 confidence=0.3, suggested_by="judge-b")
#: what the annotator does: accept #2, change #4's type to Wrong Arguments and accept it, reject #6, mark #7 themselves
ACCEPT, EDIT, EDIT_TYPE, REJECT = 1, 3, "wrong_arguments", 5
OWN, OWN_SEVERITY, OWN_TYPE = 6, "critical", "premature_termination"
#: and what the export must say, by hand: (step, source, suggested_by, confidence, error_type, severity)
EXPECTED_STEPS = [
    (0, "human", None, None, None, None),
    (1, "accepted", "judge-a", 0.6, "wrong_tool", "minor"),
    (2, "human", None, None, None, None),
    (3, "edited", SUGGESTIONS_BY, 0.9, "wrong_arguments", "major"),
    (4, "human", None, None, None, None),
    (5, "human", None, None, None, None),
    (6, "human", None, None, "premature_termination", "critical"),
]
EXPECTED_REJECTED = [{"step_index": 5, "error_type": "missed_element", "severity": "critical",
                      "suggested_by": "judge-b"}]
EXPECTED_SCORE = 100 - 1 - 5 - 10


def ui_decided(prediction: list[dict], transcript: list[dict], own_id: str = "ownmark7") -> list[dict]:
    """What the workbench saves (read in tests/browser/test_suggestions.py) when the annotator, starting from the
    prediction's suggestions, does what the constants above say, ticks the review box and picks "failure". Label
    Studio keeps a kept region's result ids and per-region ``score``, turns every result of a relabelled region to
    ``origin: prediction-changed``, repeats the step's text under ``text`` in each value but the TextArea's, and drops
    the keys it does not know (``judge``, ``correctness``)."""
    out = []
    for r in prediction:
        step = int(r["value"]["start"])
        if step not in (ACCEPT, EDIT):
            continue
        value = dict(r["value"])
        if r["type"] != "textarea":
            value["text"] = transcript[step]["text"]
        if r["from_name"] == "error_localization":
            value["paragraphlabels"] = ["incorrect"]
        if r["from_name"] == "error_localization_type" and step == EDIT:
            value["choices"] = [EDIT_TYPE]
        out.append({"value": value, "id": r["id"], "from_name": r["from_name"], "to_name": "te_trace",
                    "type": r["type"], "origin": "prediction-changed", "score": r["score"]})
    text = transcript[OWN]["text"]
    span = {"start": str(OWN), "end": str(OWN), "startOffset": 0, "endOffset": len(text), "text": text}
    out += [{"value": {**span, **value}, "id": own_id, "from_name": name, "to_name": "te_trace", "type": rtype,
             "origin": "manual"} for name, rtype, value in (
        ("error_localization", "paragraphlabels", {"paragraphlabels": ["incorrect"]}),
        ("error_localization_severity", "paragraphlabels", {"paragraphlabels": [OWN_SEVERITY]}),
        ("error_localization_type", "choices", {"choices": [OWN_TYPE]}))]
    return out + [
        {"value": {"choices": [labelconfig.REVIEWED_TEXT]}, "id": "rev", "from_name": "error_localization_reviewed",
         "to_name": "te_trace", "type": "choices", "origin": "manual"},
        {"value": {"choices": ["failure"]}, "id": "out", "from_name": "overall_success", "to_name": "te_task",
         "type": "choices", "origin": "manual"}]


def project_with_suggestions(client, config, title: str) -> tuple[int, dict]:
    """A workbench project holding rt-1 with SUGGESTIONS stored as a judge stores them (``judge merge --prelabel``:
    the project's model version, annotators start from them); its id and the task as Label Studio lists it."""
    from ls_trajeval.core.trace import parse_trace
    from ls_trajeval.flows.importer import import_traces
    from ls_trajeval.flows.suggestions import SuggestionStore
    from ls_trajeval.studio import client as studio

    project = studio.create_project(client, config, "transcript", title)
    assert import_traces(client, project["id"], [parse_trace(TRACES[0])], config, progress=False).imported == 1
    (task,) = studio.iter_tasks(client, project["id"])
    store = SuggestionStore(client, project["id"], config, project["label_config"], SUGGESTIONS_BY)
    assert store.put(task, SUGGESTIONS) == "created"
    store.finish(prelabel=True)
    (task,) = studio.iter_tasks(client, project["id"])
    return project["id"], task


def provenance_of(record: dict) -> tuple[list[tuple], list[dict]]:
    """A record's provenance in the shape of EXPECTED_STEPS, and its rejected suggestions."""
    return ([(e["step_index"], e["source"], e["suggested_by"], e["confidence"], e["error_type"], e["severity"])
             for e in record["error_localization"]], record["rejected_suggestions"])


# ---------------------------------------------------------------- deeper marks: spans, cause links, corrections
#: a trace whose text lies beyond the BMP (emoji), in CJK and with combining accents, and hostile
DEEP_TRACE = {"trace_id": "deep-1", "task": f"Fix the discount {NASTY}", "trace": [
    {"type": "thought", "content": "Plan: read pricing.py 😀 then fix it"},
    {"type": "action", "content": "read_file", "action_input": {"path": "pricing.py"}},
    {"type": "observation", "content": "def discount(p, pct): return p * pct / 100  # 東京 😀"},
    {"type": "thought", "content": f"😀 It must subtract the discount {NASTY}; the tests can wait e\u0301 🧪"},
    {"type": "action", "content": "edit_file", "action_input": {"path": "pricing.py", "line": 45}},
    {"type": "thought", "content": "Done 🎉, no need to run the tests"},
    {"type": "action", "content": "finish", "action_input": "Fixed."},
]}
DEEP_CORRECTION = f"run the tests first 🧪 {NASTY}"
#: step 3's two spans and step 5's piece of the selection crossing from step 4 (words of each step's content)
DEEP_WORDS = {3: ("subtract the discount", "the tests can wait"), 5: "Done 🎉"}


def units(text: str) -> int:
    """A string's length as Label Studio's Paragraphs counts offsets: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def ui_deep(layout: str, transcript: list[dict]) -> list[dict]:
    """What the labeling UI saves for deeper marks on DEEP_TRACE (tests/browser/test_deeper_marks.py makes them by hand
    and compares the browser's offsets and texts with these):

    - transcript: step 2 marked whole (minor, hallucinated_element); two spans selected in step 3 (major,
      incorrect_assumption), the first with a correction; a selection from "pricing.py" in step 4's arguments to
      "Done 🎉" in step 5 (critical, premature_termination); relations as Alt+R saves them (``direction`` "right":
      from the selected mark to the clicked cause): step 3 → step 2, step 2 → step 3 (a cause after the effect:
      dropped), and the cross-step mark linked to step 3's first span the other way round (``direction`` "left", as
      the Relations panel's direction switch saves it; the browser test makes that link with Alt+R instead);
    - paged: the same steps wrong (4 and 5 each), "caused by step #" boxes as people type them (``#3``, ``4``, a
      word that is not a step number) and the correction; no spans (the paged cards cannot hold them).
    Offsets are UTF-16 code units into the card's text (``text`` as Label Studio saves it: the selection, trimmed)."""
    out: list[dict] = []
    if layout == "transcript":
        def region(rid, first, last, start, end, selected):
            span = {"start": str(first), "end": str(last), "startOffset": start, "endOffset": end, "text": selected}
            return [
                (rid, "error_localization", "paragraphlabels", {**span}),
                (rid, "error_localization_severity", "paragraphlabels", {**span}),
                (rid, "error_localization_type", "choices", {**span}),
            ]

        def at(step: int, words: str) -> tuple[int, int]:
            text = transcript[step]["text"]
            i = text.index(words)
            return units(text[:i]), units(text[:i]) + units(words)

        whole2 = transcript[2]["text"]
        s1, s2 = at(3, DEEP_WORDS[3][0]), at(3, DEEP_WORDS[3][1])
        cross_start = at(4, "pricing.py")[0]
        cross_end = at(5, DEEP_WORDS[5])[1]
        values = {"m2": (["incorrect"], ["minor"], ["hallucinated_element"]),
                  "m3a": (["incorrect"], ["major"], ["incorrect_assumption"]),
                  "m3b": (["incorrect"], ["major"], ["incorrect_assumption"]),
                  "m45": (["incorrect"], ["critical"], ["premature_termination"])}
        places = {"m2": (2, 2, 0, units(whole2), whole2.strip("\n")),
                  "m3a": (3, 3, *s1, DEEP_WORDS[3][0]), "m3b": (3, 3, *s2, DEEP_WORDS[3][1]),
                  "m45": (4, 5, cross_start, cross_end,
                          transcript[4]["text"][transcript[4]["text"].index("pricing.py"):] + "\n"
                          + transcript[5]["text"][:transcript[5]["text"].index(DEEP_WORDS[5]) + len(DEEP_WORDS[5])])}
        for rid, place in places.items():
            mark, severity, etype = values[rid]
            for (r, name, rtype, value), key, v in zip(region(rid, *place), ("paragraphlabels", "paragraphlabels",
                                                                            "choices"), (mark, severity, etype)):
                out.append({"value": {**value, key: v}, "id": r, "from_name": name, "to_name": "te_trace",
                            "type": rtype, "origin": "manual"})
        first, last, start, end, _ = places["m3a"]
        out.append({"value": {"start": str(first), "end": str(last), "startOffset": start, "endOffset": end,
                              "text": [DEEP_CORRECTION]}, "id": "m3a", "from_name": "error_localization_correction",
                    "to_name": "te_trace", "type": "textarea", "origin": "manual"})
        out += [{"from_id": "m3a", "to_id": "m2", "type": "relation", "direction": "right"},
                {"from_id": "m2", "to_id": "m3b", "type": "relation", "direction": "right"},
                {"from_id": "m3a", "to_id": "m45", "type": "relation", "direction": "left"}]
        to_name = "te_trace"
    else:
        def paged(rid, name, rtype, value):
            return {"id": rid, "from_name": name, "to_name": "te_task", "type": rtype, "origin": "manual",
                    "value": value}
        for step, (category, etype, severity) in {2: ("perception", "hallucinated_element", "minor"),
                                                  3: ("reasoning", "incorrect_assumption", "major"),
                                                  4: ("action", "premature_termination", "critical"),
                                                  5: ("action", "premature_termination", "critical")}.items():
            out += [paged(f"c{step}", f"error_localization_correctness_{step}", "choices", {"choices": ["incorrect"]}),
                    paged(f"t{step}", f"error_localization_type_{step}", "taxonomy",
                          {"taxonomy": [[category, etype]]}),
                    paged(f"s{step}", f"error_localization_severity_{step}", "choices", {"choices": [severity]})]
        out += [paged("k2", "error_localization_caused_by_2", "textarea", {"text": ["#4, the search"]}),
                paged("k3", "error_localization_caused_by_3", "textarea", {"text": ["#3"]}),
                paged("x3", "error_localization_correction_3", "textarea", {"text": [DEEP_CORRECTION]}),
                paged("k4", "error_localization_caused_by_4", "textarea", {"text": ["4"]}),
                paged("k5", "error_localization_caused_by_5", "textarea", {"text": ["#4"]})]
        to_name = "te_task"
    return out + [
        {"id": "rev", "from_name": "error_localization_reviewed", "to_name": to_name, "type": "choices",
         "origin": "manual", "value": {"choices": [labelconfig.REVIEWED_TEXT]}},
        {"id": "out", "from_name": "overall_success", "to_name": "te_task", "type": "choices", "origin": "manual",
         "value": {"choices": ["failure"]}}]


def deep_expected(layout: str) -> dict[int, dict]:
    """What the export must say about DEEP_TRACE's wrong steps, by hand: {step: evidence, caused_by, role,
    correction}; the root cause is step 2 (its link to step 3, a later step, is dropped)."""
    def span(step: int, words: str) -> dict:
        c = DEEP_TRACE["trace"][step]["content"]
        i = c.index(words)  # code points of the step's own content
        return {"start": i, "end": i + len(words), "text": words}

    spans = layout == "transcript"
    return {
        2: {"evidence": [], "caused_by": [], "role": "origin", "correction": None},
        3: {"evidence": [span(3, w) for w in DEEP_WORDS[3]] if spans else [], "caused_by": [2],
            "role": "propagated", "correction": DEEP_CORRECTION},
        # the selection began in step 4's arguments (a derived view, not its content): a whole-step mark
        4: {"evidence": [], "caused_by": [3], "role": "propagated", "correction": None},
        5: {"evidence": [span(5, DEEP_WORDS[5])] if spans else [], "caused_by": [3], "role": "propagated",
            "correction": None},
    }
