"""``ls-trajeval judge accept`` and ``judge audit``: accept confident suggestions without review, keep a random audit
sample of them for people, and measure from that sample what accepting costs.

**Accept.** A task is eligible when nobody has annotated it, it was not decided before, and its least confident
suggestion (the ``least_confidence`` task field that ``judge`` and ``judge merge`` write, with the model version it
describes) is at least the threshold. Of the eligible tasks a seeded random ``audit`` share (rounded up) is left for
people (``acceptance: audit``, a Data Manager tab lists them); every other one gets an annotation made from the
prediction through the API, its results' ids kept and ``parent_prediction`` set, so provenance reads the suggestions
as accepted (``acceptance: accepted``). ``te_acceptance`` records the model version, prediction, threshold and
confidence each decision was made from. Running it again decides only tasks not decided yet (an annotation made by a
run that was interrupted before marking its task is recognised and marked).

**Audit.** Once people have annotated audit tasks, each one's latest submitted annotation is compared with the
prediction that would have been accepted: a step is wrong when its correctness differs, or both mark it as an error
of different types (a severity that differs is counted apart). The error rate of the accepted suggestions is the
share of audited traces with a wrong step, with its 95% interval (Wilson or Clopper–Pearson); per step too, on the
effective number of steps (:func:`ls_trajeval.analysis.stats.proportion_interval`). The audit sample is a random
sample of the same eligible tasks, so the rate holds for the accepted ones: times their number, it is how many
accepted traces are expected to be wrong.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core import results
from ..core.config import Config
from ..core.fields import (
    ACCEPTANCE,
    ACCEPTANCE_DETAIL,
    LEAST_CONFIDENCE,
    LEAST_CONFIDENT_STEP,
    NUMBER_FIELDS,
    SUGGESTIONS_BY,
    n_steps,
)
from ..core.labels import step_number
from ..studio import client as studio
from .projects import project_config

if TYPE_CHECKING:  # the audit's statistics need the [analysis] extra; accepting does not
    from ..analysis.stats import Proportion

ACCEPTED, AUDIT = "accepted", "audit"
#: the Data Manager tab of the tasks left for people to audit
AUDIT_TAB = "Audit sample"


@dataclass
class AcceptSummary:
    project_id: int
    threshold: float
    audit: float
    seed: int
    tasks: int = 0
    accepted: int = 0
    audit_sample: int = 0
    below: int = 0
    #: already annotated by someone, or decided by an earlier run
    annotated: int = 0
    decided_before: int = 0
    #: no confidence recorded for the model version (or no prediction of it)
    without_confidence: int = 0
    versions: set = field(default_factory=set)
    changes: list[str] = field(default_factory=list)


def _live(annotations) -> list[dict]:
    return [a for a in annotations or [] if not a.get("was_cancelled")]


def _latest(predictions, version: str | None, prediction_id=None) -> dict | None:
    mine = sorted((p for p in predictions or [] if p.get("model_version") == version), key=lambda p: p.get("id") or 0)
    exact = [p for p in mine if prediction_id is not None and p.get("id") == prediction_id]
    return (exact or mine or [None])[-1]


def _confidence(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        else None


def accept_project(client, project_id: int, *, threshold: float, audit: float, seed: int = 0,
                   model_version: str | None = None, config: Config | None = None) -> AcceptSummary:
    """Accept the project's confident suggestions, leaving the audit sample for people (see the module docstring).
    ``model_version`` accepts only that judge's (by default whichever the task's ``least_confidence`` describes)."""
    summary = AcceptSummary(project_id, threshold, audit, seed)
    config = project_config(studio.get_project(client, project_id), config)
    me = studio.whoami(client).get("id")
    eligible: list[tuple[int, dict, dict]] = []  # task id, the prediction to accept, what the decision is made from
    for task in studio.iter_tasks(client, project_id, page_size=100):
        summary.tasks += 1
        data = task.get("data") or {}
        version = data.get(SUGGESTIONS_BY)
        prediction = _latest(task.get("predictions"), version) if isinstance(version, str) else None
        least = _confidence(data.get(LEAST_CONFIDENCE))
        detail = {"model_version": version, "prediction": (prediction or {}).get("id"), "threshold": threshold,
                  "least_confidence": least, "least_confident_step": data.get(LEAST_CONFIDENT_STEP)}
        if data.get(ACCEPTANCE):
            summary.decided_before += 1
            continue
        annotations = _live(task.get("annotations"))
        if annotations:
            mine = [a for a in annotations if a.get("completed_by") == me and prediction is not None
                    and a.get("parent_prediction") == prediction.get("id")]
            if mine and len(annotations) == 1:  # accepted by a run stopped before it marked the task
                studio.update_task_data(client, task["id"], {ACCEPTANCE: ACCEPTED, ACCEPTANCE_DETAIL: {
                    **detail, "annotation": mine[0].get("id"), "seed": seed}})
                summary.decided_before += 1
            else:
                summary.annotated += 1
            continue
        if prediction is None or least is None or (model_version is not None and version != model_version):
            summary.without_confidence += 1
            continue
        if least < threshold:
            summary.below += 1
            continue
        eligible.append((task["id"], prediction, detail))
    rng = random.Random(seed)
    sample = set(rng.sample([t for t, *_ in eligible], math.ceil(audit * len(eligible)))) if audit > 0 else set()
    for task_id, prediction, detail in eligible:
        summary.versions.add(detail["model_version"])
        if task_id in sample:
            studio.update_task_data(client, task_id, {ACCEPTANCE: AUDIT, ACCEPTANCE_DETAIL: {**detail, "seed": seed}})
            summary.audit_sample += 1
            continue
        # the prediction's results with their ids (origin "prediction", score, judge), each suggestion decided as an
        # annotator accepts it (relabelled to what it suggests): provenance reads "accepted"
        annotation = studio.create_annotation(client, task_id, results.accepted(prediction.get("result") or [], config),
                                              parent_prediction=prediction["id"])
        studio.update_task_data(client, task_id, {ACCEPTANCE: ACCEPTED, ACCEPTANCE_DETAIL: {
            **detail, "annotation": annotation.get("id"), "seed": seed}})
        summary.accepted += 1
    if summary.audit_sample and studio.find_tab(client, project_id, AUDIT_TAB) is None:
        studio.ensure_tab(client, project_id, AUDIT_TAB, ordering=["tasks:id"], numbers=NUMBER_FIELDS,
                          filters={"conjunction": "and", "items": [{
                              "filter": f"filter:tasks:data.{ACCEPTANCE}", "operator": "equal", "type": "String",
                              "value": AUDIT}]})
        summary.changes.append(f"added the Data Manager tab {AUDIT_TAB!r}: the tasks left for people to audit")
    return summary


def describe_accept(s: AcceptSummary) -> list[str]:
    versions = ", ".join(repr(v) for v in sorted(s.versions)) or "no judge"
    lines = [f"project {s.project_id}: accepted {s.accepted} tasks' suggestions ({versions}) at confidence >= "
             f"{s.threshold:g}; {s.audit_sample} left for people to audit ({s.audit:.0%}, seed {s.seed})",
             f"not accepted: {s.below} below the threshold, {s.annotated} annotated already, {s.decided_before} "
             f"decided before, {s.without_confidence} with no confidence recorded (run judge or judge merge)"]
    return lines + s.changes


# ---------------------------------------------------------------- the audit
@dataclass
class AuditedTrace:
    task_id: int
    trace_id: str | None
    steps: int
    wrong_steps: int
    severity_differs: int
    differences: list[str]


@dataclass
class AuditReport:
    project_id: int
    accepted: int
    audit_tasks: int
    audited: list[AuditedTrace]
    method: str
    #: the share of audited traces with a wrong step, and of wrong steps
    traces: Proportion
    steps: Proportion
    problems: list[str] = field(default_factory=list)

    @property
    def pending(self) -> int:
        return self.audit_tasks - len(self.audited) - len(self.problems)

    def expected_wrong(self) -> tuple[float, float, float]:
        """Accepted traces expected to hold a wrong step: the audited rate (and its interval) times the accepted."""
        p = self.traces
        return self.accepted * p.value, self.accepted * p.low, self.accepted * p.high

    def to_json(self) -> dict:
        expected = [round(x, 6) if math.isfinite(x) else None for x in self.expected_wrong()]
        return {"project_id": self.project_id, "accepted": self.accepted, "audit_tasks": self.audit_tasks,
                "audited": len(self.audited), "pending": self.pending, "trace_error_rate": self.traces.to_json(),
                "step_error_rate": self.steps.to_json(),
                "expected_wrong_accepted_traces": dict(zip(("value", "ci_low", "ci_high"), expected)),
                "traces": [vars(t) for t in self.audited], "problems": self.problems}


def _differences(suggested, annotated, scheme) -> tuple[int, int, list[str]]:
    wrong = severity = 0
    notes = []
    errors = scheme.error_labels
    for s, h in zip(suggested.steps, annotated.steps):
        both = s.correctness in errors and h.correctness in errors

        def said(x):
            return f"{x.correctness}/{x.error_type}" if x.correctness in errors else x.correctness

        if s.correctness != h.correctness or (both and s.error_type != h.error_type):
            wrong += 1
            notes.append(f"{step_number(s.step_index)}: suggested {said(s)}, annotated {said(h)}")
        elif both and s.severity != h.severity:
            severity += 1
            notes.append(f"{step_number(s.step_index)}: severity suggested {s.severity}, annotated {h.severity}")
    return wrong, severity, notes


def audit_report(client, project_id: int, *, method: str = "wilson", config: Config | None = None) -> AuditReport:
    """The measured error rate of the accepted suggestions, from the audit tasks people have annotated."""
    from ..analysis.stats import proportion_interval  # statsmodels: the [analysis] extra

    project = studio.get_project(client, project_id)
    config = project_config(project, config)
    scheme = config.trajectory
    accepted, audit_tasks, audited, problems = 0, 0, [], []
    for task in studio.iter_tasks(client, project_id, page_size=100):
        data = task.get("data") or {}
        decision = data.get(ACCEPTANCE)
        accepted += decision == ACCEPTED
        if decision != AUDIT:
            continue
        audit_tasks += 1
        annotations = sorted(_live(task.get("annotations")), key=lambda a: (a.get("updated_at") or "", a.get("id")))
        if not annotations:
            continue
        detail: dict = data[ACCEPTANCE_DETAIL] if isinstance(data.get(ACCEPTANCE_DETAIL), dict) else {}
        prediction = _latest(task.get("predictions"), detail.get("model_version"), detail.get("prediction"))
        if prediction is None:
            problems.append(f"task {task['id']}: the prediction of {detail.get('model_version')!r} it was decided "
                            "from is gone; left out")
            continue
        n = n_steps(data)
        suggested = results.decode(prediction.get("result") or [], config, n, prediction=True)
        annotated = results.decode(annotations[-1].get("result") or [], config, n)
        wrong, severity, notes = _differences(suggested, annotated, scheme)
        audited.append(AuditedTrace(task["id"], None if data.get(config.id_key) is None else str(data[config.id_key]),
                                    n, wrong, severity, notes))
    return AuditReport(project_id, accepted, audit_tasks, audited, method,
                       proportion_interval([t.wrong_steps > 0 for t in audited], [1] * len(audited), method),
                       proportion_interval([t.wrong_steps for t in audited], [t.steps for t in audited], method),
                       problems)


def format_audit(r: AuditReport) -> str:
    def f(x: float) -> str:
        return f"{x:.3f}" if math.isfinite(x) else "–"

    t, s = r.traces, r.steps
    lines = [f"audit of project {r.project_id}: {len(r.audited)} of {r.audit_tasks} audit tasks annotated by people "
             f"({r.pending} pending); {r.accepted} tasks accepted without review"]
    if not r.audited:
        lines.append("nothing to measure yet: annotate the tasks of the Data Manager tab 'Audit sample'")
    else:
        lo, mid, hi = r.expected_wrong()[1], r.expected_wrong()[0], r.expected_wrong()[2]
        lines += [
            f"  traces with a wrong suggestion  {f(t.value)} [{f(t.low)}, {f(t.high)}]  "
            f"({t.successes:g} of {t.trials:g} audited traces; 95% {r.method})",
            f"  wrong steps                     {f(s.value)} [{f(s.low)}, {f(s.high)}]  "
            f"({s.successes:g} of {s.trials:g} steps, worth {s.effective:.1f} independent ones)",
            f"  what accepting cost: about {mid:.1f} [{lo:.1f}, {hi:.1f}] of the {r.accepted} accepted traces hold a "
            f"wrong suggestion",
        ]
        for a in r.audited:
            if a.differences:
                lines.append(f"  task {a.task_id} ({a.trace_id}): " + "; ".join(a.differences[:8])
                             + (f"; ... {len(a.differences) - 8} more" if len(a.differences) > 8 else ""))
    lines += [f"  {p}" for p in r.problems]
    return "\n".join(lines)
