"""Suggestions (a judge's per-step labels, stored as Label Studio predictions) as the review works with them: what a
task's suggestions are least sure of, and several judges' suggestions merged into one per step.

A *suggestion* is a step label a judge gave: a mark (any correctness but the default), or a step it called correct
with a confidence (an LLM judge's verdict on every step; the paged layout keeps those in a prediction, the transcript
layout only its marks). Its confidence is :attr:`StepLabel.confidence`; one without (a rule detector's mark) is
unknown, which counts as the least sure: reviewed first, never accepted unreviewed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache

from .config import Config, TrajectoryScheme
from .fields import LEAST_CONFIDENCE, LEAST_CONFIDENT_STEP, SUGGESTED, SUGGESTIONS_BY
from .labelconfig import _env, severity_label
from .labels import StepLabel, TraceLabels, step_number


def is_suggestion(step: StepLabel, scheme: TrajectoryScheme) -> bool:
    """A mark, or a verdict that carries a confidence."""
    return step.correctness != scheme.correctness_default or step.confidence is not None


def least_confident(steps: Sequence[StepLabel], scheme: TrajectoryScheme) -> tuple[float, int] | None:
    """(confidence, step_index) of the least confident suggestion, the earlier step on a tie; a suggestion without
    a confidence counts as 0. None when there is no suggestion at all."""
    found = [(s.confidence if s.confidence is not None else 0.0, s.step_index) for s in steps
             if is_suggestion(s, scheme)]
    return min(found) if found else None


def suggestion_fields(labels: TraceLabels, scheme: TrajectoryScheme, model_version: str) -> dict:
    """The task-data fields that describe a task's suggestions (:data:`~.fields.SUGGESTION_FIELDS`); None where it
    has none."""
    least = least_confident(labels.steps, scheme)
    return {LEAST_CONFIDENCE: least[0] if least else None,
            LEAST_CONFIDENT_STEP: step_number(least[1]) if least else None,
            SUGGESTIONS_BY: model_version}


def merge(judges: Sequence[tuple[str, TraceLabels]], n_steps: int, scheme: TrajectoryScheme,
          default_confidence: Mapping[str, float] | None = None) -> TraceLabels:
    """One suggestion per step from several judges' (``(model_version, labels)``, in order of preference).

    Per step the most confident of the judges' suggestions wins; it names the judge that made it
    (``suggested_by``: its own, when it comes from an earlier merge, else the model version). A suggestion without a
    confidence takes the judge's ``default_confidence`` when given (e.g. a rule detector's precision measured by
    ``align``), else ranks below every suggestion with one. Ties go to the judge listed first. A step no judge
    suggests anything for keeps the default label. A whole-trace label comes from the first judge that gives one.
    """
    defaults = default_confidence or {}
    best: dict[int, tuple[float, int, StepLabel]] = {}
    whole: dict[str, str | None] = {}
    for order, (version, labels) in enumerate(judges):
        for step in labels.steps:
            if not (0 <= step.step_index < n_steps) or not is_suggestion(step, scheme):
                continue
            confidence = step.confidence if step.confidence is not None else defaults.get(version)
            rank = confidence if confidence is not None else -1.0
            held = best.get(step.step_index)
            if held is None or (rank, -order) > (held[0], -held[1]):
                best[step.step_index] = (rank, order, replace(step, confidence=confidence,
                                                              suggested_by=step.suggested_by or version))
        for name, value in labels.whole_trace.items():
            if value is not None:
                whole.setdefault(name, value)
    steps = [best[i][2] if i in best else StepLabel(i, scheme.correctness_default) for i in range(n_steps)]
    return TraceLabels(steps, whole)


#: how much of a suggestion's rationale the line beside its step shows
BESIDE_RATIONALE = 200


def css_string(text: str) -> str:
    """``text`` as a CSS string literal in which every character but ASCII letters and digits is a six-digit hex
    escape: no quote, backslash, ``<`` or line break can end the string or the style element it sits in (a space is
    escaped too: CSS takes a space right after an escape as the escape's end)."""
    return '"' + "".join(c if c.isascii() and c.isalnum() else f"\\{ord(c):06x}" for c in text) + '"'


def beside_line(step: StepLabel, config: Config, model_version: str) -> str:
    """What the workbench shows under a suggested step's header when annotators start from a blank trace: who
    suggested what, how sure, and why (the rationale cut at :data:`BESIDE_RATIONALE` characters)."""
    scheme = config.trajectory
    etype = scheme.type_by_name(step.error_type) if step.error_type else None
    severity = scheme.severity_by_name(step.severity) if step.severity else None
    what = " \u00b7 ".join(x for x in (etype.label if etype else step.error_category, step.correctness
                                      if step.correctness != scheme.error_labels[0] else None,
                                      severity_label(severity) if severity else None) if x)
    sure = f", {step.confidence:.2f}" if step.confidence is not None else ""
    by = step.suggested_by or model_version
    line = f"\u2691 {config.suggestions.label} by {by}{sure}: {what or step.correctness}"
    why = " ".join((step.rationale or "").split())
    if why:
        line += " \u2014 " + (why if len(why) <= BESIDE_RATIONALE else why[:BESIDE_RATIONALE - 1] + "\u2026")
    return line


@lru_cache(maxsize=1)
def _beside_template():
    return _env().get_template("suggested.html.j2")


def beside(labels: TraceLabels, config: Config, model_version: str) -> list[dict]:
    """The task field :data:`~.fields.SUGGESTED`: the suggested marks of ``labels`` as the workbench shows them when
    annotators start from a blank trace (``suggestions.prelabel: false``), a one-item list for a ``List`` tag: a line
    under each suggested step's header (a style of the task's own, so the step's text stays as it is: evidence
    offsets count in it) and the list of them beside the trace."""
    marks = [s for s in labels.steps if s.correctness in config.trajectory.error_labels]
    lines = [(s.step_index, beside_line(s, config, model_version)) for s in marks]
    style = "".join(f'.te-trace-pane [data-testid="phrase:{i}"] [class*="dialoguename"]::after {{ content: '
                    f'{css_string(text)}; }}\n' for i, text in lines)
    html = _beside_template().render(lines=[(step_number(i), text) for i, text in lines], style=style,
                                     model_version=model_version, label=config.suggestions.label,
                                     color=config.suggestions.color)
    return [{"id": SUGGESTED, "html": html}]
