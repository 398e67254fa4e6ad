"""A small hand-built export: 4 traces, 3 annotators (one file each, one gzipped).

Every expected number in the tests was worked out by hand from the table below, with the
guide's default weights (minor 1, major 5, critical 10; start 100, floor 0).

  trace  steps (types)              annotator  errors (step: label category/type severity)         outcome   final
  T1     thought action obs thought alice      1: incorrect action/wrong_tool major;                failure   94
                                               3: incorrect reasoning/logical_error minor
                                    bob        1: incorrect action/wrong_tool critical              failure   90
                                    carol      1: partially_correct action/wrong_arguments minor;   partial   94
                                               2: incorrect perception/missed_element major
  T2     thought action obs         alice      -                                                    success   100
                                    bob        0: partially_correct reasoning/incorrect_assumption  success   100
                                                  (no severity: costs nothing)
  T3     thought action obs action  alice      0: incorrect reasoning/incorrect_assumption critical (absent)  70
         thought                               2: incorrect perception/hallucinated_element critical
                                               4: incorrect communication/overconfident_claim critical
                                    carol      4: incorrect communication/overconfident_claim major (null)    95
  T4     action                     bob        0: incorrect action/premature_termination critical   failure   90
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

WEIGHTS = {"minor": -1, "major": -5, "critical": -10}

TRACES = {
    "T1": ["thought", "action", "observation", "thought"],
    "T2": ["thought", "action", "observation"],
    "T3": ["thought", "action", "observation", "action", "thought"],
    "T4": ["action"],
}

# (trace, annotator, {step: (correctness, category, type, severity)}, outcome or "ABSENT", final score)
ANNOTATIONS = [
    ("T1", "alice", {1: ("incorrect", "action", "wrong_tool", "major"),
                     3: ("incorrect", "reasoning", "logical_error", "minor")}, "failure", 94),
    ("T1", "bob", {1: ("incorrect", "action", "wrong_tool", "critical")}, "failure", 90),
    ("T1", "carol", {1: ("partially_correct", "action", "wrong_arguments", "minor"),
                     2: ("incorrect", "perception", "missed_element", "major")}, "partial", 94),
    ("T2", "alice", {}, "success", 100),
    ("T2", "bob", {0: ("partially_correct", "reasoning", "incorrect_assumption", None)}, "success", 100),
    ("T3", "alice", {0: ("incorrect", "reasoning", "incorrect_assumption", "critical"),
                     2: ("incorrect", "perception", "hallucinated_element", "critical"),
                     4: ("incorrect", "communication", "overconfident_claim", "critical")}, "ABSENT", 70),
    ("T3", "carol", {4: ("incorrect", "communication", "overconfident_claim", "major")}, None, 95),
    ("T4", "bob", {0: ("incorrect", "action", "premature_termination", "critical")}, "failure", 90),
]


def export_line(trace_id, annotator, errors, outcome, final, *, step_types=None, ann_id=None,
                weights=WEIGHTS, scheme="error_localization", outcome_key="overall_success"):
    """One export line in the core exporter's shape. Scores are written as given, not computed."""
    step_types = step_types or TRACES[trace_id]
    steps = []
    for i, st in enumerate(step_types):
        c, cat, typ, sev = errors.get(i, ("correct", None, None, None))
        steps.append({"step_index": i, "step_type": st, "step_text": f"{trace_id} step {i} ({st})",
                      "correctness": c, "error_category": cat, "error_type": typ, "severity": sev,
                      "rationale": "why" if c != "correct" else None, "score": None})
    line = {"trace_id": trace_id, "task": f"task of {trace_id}", "project_id": 1, "task_id": 1,
            "annotation_id": ann_id if ann_id is not None else abs(hash((trace_id, annotator))) % 10**6,
            "annotator": f"{annotator}@example.com", "annotator_id": 1,
            "created_at": "2026-12-02T15:00:00.000000Z", "updated_at": "2026-12-02T15:03:00.000000Z",
            "lead_time": 12.5, "layout": "transcript", scheme: steps,
            "running_score": None, "final_score": final, "n_steps": len(step_types),
            "n_errors": len(errors), "first_error_step": min(errors) if errors else None,
            "worst_severity": None, "severity_weights": weights, "score_initial": 100, "score_min": 0,
            "scheme": scheme}
    if outcome != "ABSENT":
        line[outcome_key] = outcome
    return line


def write_export(directory: Path, annotations=ANNOTATIONS, traces=TRACES) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    by_annotator: dict = {}
    for t, a, errs, out, final in annotations:
        by_annotator.setdefault(a, []).append(export_line(t, a, errs, out, final, step_types=traces[t]))
    for a, lines in by_annotator.items():
        text = "".join(json.dumps(x) + "\n" for x in lines)
        if a == "carol":
            with gzip.open(directory / f"{a}.jsonl.gz", "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            (directory / f"{a}.jsonl").write_text(text, encoding="utf-8")
    return directory


@pytest.fixture
def hand_export(tmp_path) -> Path:
    return write_export(tmp_path / "export")


# ---------------------------------------------------------------- lines with the added keys, as export writes them

def deep_line(trace_id: str, annotator: str, steps: list, marks: dict, *, task: str = "", metadata=None,
              whole=None, root_cause_step="computed") -> dict:
    """One export line written by :func:`ls_trajeval.core.records.assemble` (what ``export`` writes), with the
    added keys. ``steps``: (step_type, step_text) per step; ``marks``: step -> the label's fields
    (``correctness`` "incorrect" unless given, ``error_category``, ``error_type``, ``severity`` (default major),
    ``evidence`` as (start, end) pairs into the step's text, ``caused_by``, ``correction``). The roles and
    ``root_cause_step`` are the exporter's; ``root_cause_step`` given overrides it (a record from elsewhere)."""
    from ls_trajeval import label_configs
    from ls_trajeval.core import config as cfg
    from ls_trajeval.core.labels import Span, StepLabel
    from ls_trajeval.core.records import assemble
    from ls_trajeval.core.scoring import summarize

    scheme = cfg.load(label_configs.path("trajectory_eval")).trajectory
    labels = []
    for i, (stype, text) in enumerate(steps):
        m = dict(marks.get(i, {}))
        if i not in marks:
            labels.append(StepLabel(i, "correct", step_type=stype, step_text=text))
            continue
        evidence = tuple(Span(s, e, text[s:e]) for s, e in m.pop("evidence", ()))
        labels.append(StepLabel(i, m.pop("correctness", "incorrect"), m.pop("error_category", "action"),
                                m.pop("error_type", "wrong_arguments"), m.pop("severity", "major"),
                                m.pop("rationale", "why"), stype, text, evidence=evidence,
                                caused_by=tuple(m.pop("caused_by", ())), correction=m.pop("correction", None)))
        assert not m, f"unknown keys {m}"
    head = {"trace_id": trace_id, "task": task or f"task of {trace_id}", "project_id": 1, "task_id": 1,
            "annotation_id": abs(hash((trace_id, annotator))) % 10**6, "annotator": f"{annotator}@example.com",
            "layout": "transcript", "metadata": metadata or {}}
    line = assemble(head, scheme.name, labels, whole or {}, summarize(labels, scheme), len(steps), scheme.weights,
                    scheme.running_score.initial, scheme.running_score.min, is_error=scheme.error_labels.__contains__)
    if root_cause_step != "computed":
        line["root_cause_step"] = root_cause_step
    return line


def write_lines(path: Path, lines: list) -> Path:
    from ls_trajeval.core.records import dumps

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(dumps(x) for x in lines), encoding="utf-8")
    return path


# ---------------------------------------------------------------- docs/analysis.md's worked example of the added keys

def _sample(trace_id: str):
    from ls_trajeval.core.tasks import step_text
    from ls_trajeval.core.trace import Trace, read_traces

    path = Path(__file__).resolve().parents[2] / "ls_trajeval" / "samples" / "traces.jsonl"
    (trace,) = [t for t in read_traces(path) if isinstance(t, Trace) and t.trace_id == trace_id]
    return trace, [(s.type, step_text(s)) for s in trace.steps]


def _at(trace, step: int, *quotes: str) -> list:
    """Evidence spans: where each quote is in the step's content."""
    content = trace.steps[step].content
    return [(content.index(q), content.index(q) + len(q)) for q in quotes]


MATH, CALENDAR = "sample-006-math-train-catchup", "sample-011-hallucinated-calendar-param"


def worked_example_lines() -> dict:
    """alice's and bob's labels of two sample traces with evidence, cause links and corrections, and a judge's:
    file name -> lines (docs/analysis.md shows what the commands make of them)."""
    math, math_steps = _sample(MATH)
    cal, cal_steps = _sample(CALENDAR)
    R = {"error_category": "reasoning", "error_type": "logical_error"}
    OC = {"error_category": "communication", "error_type": "overconfident_claim"}
    WA = {"error_category": "action", "error_type": "wrong_arguments"}
    fix4 = "It takes 2 hours to catch up. The second train left at 10:10, so 10:10 + 2 h = 12:10."
    fix5 = "The second train catches up at 12:10, 2 hours after it departs, 300 km from Lyon."
    fix6 = ("The call is booked for Tuesday 18 March at 15:00 UTC (16:00 Berlin) and Dana was not notified. "
            "Shall I move it to 15:00 Berlin time and send her the invite?")

    def line(trace, steps, who, marks):
        return deep_line(trace.trace_id, who, steps, marks, task=trace.task, metadata=trace.metadata)

    alice = [
        line(math, math_steps, "alice", {
            4: {**R, "evidence": _at(math, 4, "The first train left at 09:40, so 09:40 + 2 h = 11:40"),
                "correction": fix4},
            5: {**OC, "severity": "critical", "caused_by": [4], "evidence": _at(math, 5, "11:40", "240 km"),
                "correction": fix5}}),
        line(cal, cal_steps, "alice", {
            1: {**WA, "correction": "calendar.create_event\n" + json.dumps({
                "title": "Call with Dana", "start": "2025-03-18T15:00:00", "end": "2025-03-18T15:30:00",
                "time_zone": "Europe/Berlin", "attendees": ["dana@acme.io"], "notify_attendees": True})},
            4: {**WA, "severity": "critical"},
            6: {**OC, "severity": "critical", "caused_by": [4],
                "evidence": _at(cal, 6, "15:00 Berlin time", "she's been sent an invite"), "correction": fix6}}),
    ]
    bob = [
        line(math, math_steps, "bob", {
            4: {**R, "error_type": "incorrect_calculation", "evidence": _at(math, 4, "09:40 + 2 h = 11:40"),
                "correction": "10:10 + 2 h = 12:10, so the second train catches up at 12:10."},
            5: {**OC, "severity": "critical", "caused_by": [4]}}),
        line(cal, cal_steps, "bob", {
            1: WA,
            4: {**WA, "severity": "critical", "caused_by": [1]},
            6: {**OC, "severity": "critical", "caused_by": [4], "evidence": _at(cal, 6, "she's been sent an invite")}}),
    ]
    judge = [
        line(math, math_steps, "judge-v1", {5: {**OC, "evidence": _at(math, 5, "11:40")}}),
        line(cal, cal_steps, "judge-v1", {4: WA, 6: {**OC, "caused_by": [4], "evidence": _at(cal, 6, "Berlin time")}}),
    ]
    return {"labels/alice.jsonl": alice, "labels/bob.jsonl": bob, "judge.jsonl": judge}


def write_worked_example(directory: Path) -> None:
    """The worked example's files in ``directory``: labels/ (alice, bob), judge.jsonl, and labels-gold.jsonl (what
    ``export --gold`` makes of labels/: the majority, as two annotators disagree)."""
    from ls_trajeval.analysis.gold import build_gold, gold_line
    from ls_trajeval.analysis.settings import AnalysisSettings, read
    from ls_trajeval.analysis.trace_groups import group_by_trace
    from ls_trajeval.core.records import dumps

    for name, lines in worked_example_lines().items():
        write_lines(directory / name, lines)
    s = AnalysisSettings()
    golds = build_gold(group_by_trace(read([directory / "labels"], s)).items(), s)
    (directory / "labels-gold.jsonl").write_text("".join(dumps(gold_line(g, s)) for g in golds), encoding="utf-8")
