"""Process-reward training data from one export, in several shapes.

Each output line is ``{"prompt": task, "completions": [step text, ...], "labels": [...]}`` (one label per
completion), optionally with ``trace_id`` / ``annotators``. The shape decides the labels:

- ``trl`` — TRL's stepwise supervision: ``True`` = a good step;
- ``prm800k`` — PRM800K-style ratings: ``1`` a correct step, ``0`` a partially correct one, ``-1`` an error;
- ``soft`` — severity-weighted soft labels in [0, 1]: ``1`` a correct step, an error
  ``1 - |weight(severity)| / max |weight|`` (minor 0.9, major 0.5, critical 0 with the default weights);
  an error without a severity is ``0``, a partial one without a severity ``0.5``.

**Steps.** By default only the agent's own steps (``thought``, ``action``, ``code``, ``message``; a step without
a type counts as the agent's) become completions. The other steps — tool observations, errors, system prompts
— are context: those before the first agent step are appended to the prompt, those between two agent steps
lead the next completion (``[observation]`` and its text, then the step), those after the last one are
dropped. Their labels are not used. ``agent_steps=None`` keeps every step as a completion (the shape before
this option existed).

Label rules, in the order they are applied:

1. Per annotation, each step's vote. For ``trl``, a partial label (``partially_correct``) follows
   ``partial``: ``true``, ``false`` or ``drop`` (the annotator abstains; a step nobody votes on is removed,
   its text too). ``prm800k`` and ``soft`` keep partial steps as such.
2. Annotators are merged per step (``merge``): ``majority`` — the most common vote; **a tie goes to the
   worse label** (an error that half of the annotators saw is not a step to reward); for ``soft`` the mean;
   ``any-error`` — the worst vote; ``per-annotator`` — one example per annotation.
3. After the first error (``after_error``): ``keep`` the labels, ``cascade`` (alias ``false``) — every later
   step gets the shape's negative label (``False``, ``-1``, ``0.0``), ``truncate`` the example after the
   first error, or ``causes``: every step keeps its own label (a step that is right given its inputs stays
   positive after an error) and a *propagated* error (caused by an earlier wrong step) follows ``propagated``:
   ``negative`` (its label, as ``keep``), ``drop`` (not graded: its text leads the next completion as context,
   like an observation) or ``mark`` (graded negative, and a ``propagated`` column flags it so a trainer can
   weigh it apart). A step is propagated when most of the annotators who marked it wrong say so (a tie is an
   origin); with ``any-error`` only when all of them do. The first error is a ``False`` (``trl``), a ``-1``
   (``prm800k``), or for ``soft`` the step whose ``trl`` label would be ``False``.

**Corrections** (``sft``, ``dpo``): one row per corrected wrong step, in TRL's standard (plain-text) formats:
``sft`` is prompt-completion (``{"prompt", "completion"}``), ``dpo`` is preference with an explicit prompt
(``{"prompt", "chosen", "rejected"}``). The prompt is the task and every step before the corrected one, each as
``[type]`` and its text; the completion (``chosen``) is the correction, ``rejected`` what the agent did (the step's
text; a pair whose correction equals it is left out). A step yields rows when the merged vote calls it wrong
(rules 1 and 2); its rows are the distinct corrections of the annotators who marked it wrong, one row each
(annotators who wrote the same text share a row). ``per-annotator`` takes each annotation's own corrections; a
gold export is one annotation per trace, so its corrections are the gold's.

Merged output needs every annotation of a trace, which may sit in different files, so it reads the inputs
twice: once for the votes (a few bytes per step and annotator, and the corrections written), once for the step
texts, writing each trace as soon as its text is read. Output follows first appearance in the inputs.
"""
from __future__ import annotations

import json
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from ..core.records import AnnotationRecord
from ..core.trace import TraceError
from .settings import AnalysisSettings, read
from .trace_groups import roles

#: step labels per completion
LABEL_SHAPES = ("trl", "prm800k", "soft")
#: rows from the annotators' corrections
CORRECTION_SHAPES = ("sft", "dpo")
SHAPES = LABEL_SHAPES + CORRECTION_SHAPES
PARTIAL_CHOICES = ("true", "false", "drop")
AFTER_ERROR_CHOICES = ("keep", "cascade", "false", "truncate", "causes")
PROPAGATED_CHOICES = ("negative", "drop", "mark")
MERGE_CHOICES = ("majority", "any-error", "per-annotator")
AGENT_STEPS = ("thought", "action", "code", "message")
_NEGATIVE = {"trl": False, "prm800k": -1, "soft": 0.0}


@dataclass
class PrmStats:
    examples: int = 0
    steps: int = 0
    true_labels: int = 0  # steps labelled as fully good (True, 1, 1.0)
    dropped_steps: int = 0
    context_steps: int = 0  # steps folded into the prompt or the next completion
    empty_examples: int = 0  # traces left with no step (all dropped), not written
    propagated: int = 0  # propagated errors among the graded steps, or folded into context (``causes``)
    corrected_steps: int = 0  # wrong steps that gave sft/dpo rows
    without_correction: int = 0  # wrong steps nobody wrote a correction for
    unchanged: int = 0  # dpo: corrections equal to what the agent did (no preference: left out)


class _Votes:
    """One annotation's votes: a code per step (1 correct, 0 partial, -1 error, or abstain), a soft value, whether
    a wrong step is a propagated error, and the corrections written for wrong steps."""

    __slots__ = ("code", "soft", "prop", "corrections")

    def __init__(self, rec: AnnotationRecord, settings: AnalysisSettings) -> None:
        weights = settings.weights_for(rec)
        top = max((abs(w) for w in weights.values()), default=0.0) or 1.0
        self.code = array("b", [1]) * rec.n_steps  # a step the record does not list is the default label
        self.soft = array("f", [1.0]) * rec.n_steps
        self.prop = array("b", [0]) * rec.n_steps
        self.corrections: dict = {}
        role = roles(rec, settings)
        for st in rec.steps:
            if not settings.is_error(st.correctness):
                continue
            partial = st.correctness in settings.partial_labels
            self.code[st.step_index] = 0 if partial else -1
            w = weights.get(st.severity) if st.severity is not None else None
            self.soft[st.step_index] = 1 - abs(w) / top if w is not None else (0.5 if partial else 0.0)
            self.prop[st.step_index] = role[st.step_index] == "propagated"
            if st.correction:
                self.corrections[st.step_index] = st.correction


def _trl_vote(code: int, partial: str) -> bool | None:
    if code == 0:
        return None if partial == "drop" else partial == "true"
    return code == 1


def _merge(votes: list, i: int, shape: str, merge: str, partial: str) -> tuple:
    """(label, is_error) of step ``i`` from the annotations' votes, or (None, None) when nobody votes."""
    codes = [v.code[i] for v in votes if i < len(v.code)]
    trl = [x for x in (_trl_vote(c, partial) for c in codes) if x is not None]
    if merge == "any-error":
        flag = False in trl
    else:
        flag = sum(trl) <= len(trl) / 2  # a tie is an error
    if shape == "trl":
        return (not flag, flag) if trl else (None, None)
    if not codes:
        return None, None
    if shape == "prm800k":
        if merge == "any-error":
            rating = min(codes)
        else:
            counts = {r: codes.count(r) for r in (-1, 0, 1)}
            rating = max((-1, 0, 1), key=lambda r: (counts[r], -r))  # ties go to the lower rating
        return rating, rating == -1
    softs = [v.soft[i] for v in votes if i < len(v.soft)]
    value = min(softs) if merge == "any-error" else sum(softs) / len(softs)
    return round(value, 6), bool(trl) and flag


def _propagated(votes: list, i: int, merge: str) -> bool:
    """Whether step ``i`` is a propagated error by the votes of the annotators who marked it wrong."""
    said = [v.prop[i] for v in votes if i < len(v.code) and v.code[i] != 1]
    if not said:
        return False
    return all(said) if merge == "any-error" else 2 * sum(said) > len(said)


def _render(step_type: str | None, text: str) -> str:
    """A step as context: its type in brackets above its text."""
    return f"[{step_type}]\n{text}" if step_type else text


def apply_after_error(labels: list, errors: list, after_error: str, shape: str) -> int:
    """Change ``labels`` in place; return how many leading steps to keep."""
    try:
        first = errors.index(True)
    except ValueError:
        return len(labels)
    if after_error in ("cascade", "false"):
        for i in range(first + 1, len(labels)):
            labels[i] = _NEGATIVE[shape]
            errors[i] = True
    elif after_error == "truncate":
        return first + 1
    return len(labels)


def _example(task: str, steps: list, labels: list, errors: list, propagated: list, *, shape: str,
             after_error: str, propagated_as: str, agent_steps: tuple | None, meta: dict | None,
             stats: PrmStats) -> dict | None:
    """``steps``: (step_type, text) per step; ``labels``/``errors``: per step, None for a step nobody voted on;
    ``propagated``: per step, whether it is a propagated error (used by ``after_error="causes"``)."""
    completions: list[str] = []
    prompt, out, flags, context, marks = [task], [], [], [], []
    by_cause = after_error == "causes"
    for (stype, text), label, err, prop in zip(steps, labels, errors, propagated):
        if agent_steps is not None and stype is not None and stype not in agent_steps:
            context.append(_render(stype, text))
            stats.context_steps += 1
            continue
        if label is None:
            stats.dropped_steps += 1
            continue
        prop = bool(by_cause and err and prop)
        stats.propagated += prop
        if prop and propagated_as == "drop":
            context.append(_render(stype, text))  # not graded, but what came after it answers it
            stats.context_steps += 1
            continue
        if completions:
            text = "\n\n".join(context + [text])
        else:
            prompt += context
        context = []
        completions.append(text)
        out.append(label)
        flags.append(err)
        marks.append(prop)
    keep = apply_after_error(out, flags, after_error, shape)
    completions, out = completions[:keep], out[:keep]
    if not out:
        stats.empty_examples += 1
        return None
    ex = {"prompt": "\n\n".join(p for p in prompt if p), "completions": completions, "labels": out}
    if by_cause and propagated_as == "mark":
        ex["propagated"] = marks[:keep]
    if meta:
        ex.update(meta)
    stats.examples += 1
    stats.steps += len(out)
    stats.true_labels += sum(1 for x in out if x == 1)
    return ex


def _correction_rows(task: str, steps: list, votes: list, annotators: list, *, shape: str, merge: str,
                     partial: str, with_meta: bool, trace_id: str, stats: PrmStats) -> list:
    """sft/dpo rows of one trace: for each step the merged vote calls wrong, one row per distinct correction of
    the annotators who marked it wrong."""
    rows = []
    for i, (_, text) in enumerate(steps):
        if not _merge(votes, i, "trl", merge, partial)[1]:
            continue
        fixes: dict = {}  # correction -> the annotators who wrote it
        for who, v in zip(annotators, votes):
            fix = v.corrections.get(i)
            if fix is not None:
                fixes.setdefault(fix, []).append(who)
        if not fixes:
            stats.without_correction += 1
            continue
        stats.corrected_steps += 1
        prompt = "\n\n".join(p for p in [task, *(_render(t, x) for t, x in steps[:i])] if p)
        role = "propagated" if _propagated(votes, i, merge) else "origin"
        for fix, who in fixes.items():
            if shape == "sft":
                row = {"prompt": prompt, "completion": fix}
            elif fix == text:
                stats.unchanged += 1
                continue
            else:
                row = {"prompt": prompt, "chosen": fix, "rejected": text}
            if with_meta:
                row.update(trace_id=trace_id, step_index=i, role=role, annotators=who)
            rows.append(row)
    stats.examples += len(rows)
    return rows


def build_prm(
    inputs: Iterable[str], out: IO[str], *, settings: AnalysisSettings | None = None, shape: str = "trl",
    partial: str = "false", after_error: str = "keep", propagated: str = "negative", merge: str = "majority",
    agent_steps: tuple | None = AGENT_STEPS, with_meta: bool = False, on_error=None,
) -> PrmStats:
    """Write the examples of ``inputs`` (trajectory_eval exports) to ``out`` as JSONL, one per trace (per
    annotation with ``merge="per-annotator"``), or for ``sft``/``dpo`` one per correction; see the module's
    docstring for the rules. ``propagated`` applies with ``after_error="causes"`` only."""
    settings = settings or AnalysisSettings()
    inputs = list(inputs)
    stats = PrmStats()

    def write(rows: list) -> None:
        for ex in rows:
            if ex is not None:
                out.write(json.dumps(ex, ensure_ascii=False))
                out.write("\n")

    def texts(rec: AnnotationRecord, n: int) -> list:
        by_index = {st.step_index: (st.step_type, st.step_text) for st in rec.steps}
        return [by_index.get(i, (None, "")) for i in range(n)]

    def examples(rec: AnnotationRecord, annotators: list, votes: list, n: int) -> list:
        steps = texts(rec, n)
        if shape in CORRECTION_SHAPES:
            return _correction_rows(rec.task, steps, votes, annotators, shape=shape, merge=merge, partial=partial,
                                    with_meta=with_meta, trace_id=rec.trace_id, stats=stats)
        pairs = [_merge(votes, i, shape, merge, partial) for i in range(n)]
        props = [after_error == "causes" and _propagated(votes, i, merge) for i in range(n)]
        meta = {"trace_id": rec.trace_id, "annotators": annotators} if with_meta else None
        return [_example(rec.task, steps, [p[0] for p in pairs], [p[1] for p in pairs], props, meta=meta,
                         stats=stats, shape=shape, after_error=after_error, propagated_as=propagated,
                         agent_steps=agent_steps)]

    if merge == "per-annotator":
        for rec in read(inputs, settings):
            if isinstance(rec, TraceError):
                on_error and on_error(rec)
                continue
            write(examples(rec, [rec.annotator], [_Votes(rec, settings)], rec.n_steps))
        return stats

    tallies: dict = {}  # trace_id -> [annotators, votes, written]
    for rec in read(inputs, settings):
        if isinstance(rec, TraceError):
            on_error and on_error(rec)
            continue
        t = tallies.setdefault(rec.trace_id, [[], [], False])
        t[0].append(rec.annotator)
        t[1].append(_Votes(rec, settings))
    # Second pass: errors were reported already, so they are skipped silently this time.
    for rec in read(inputs, settings):
        if isinstance(rec, TraceError):
            continue
        t = tallies.get(rec.trace_id)
        n = max((len(v.code) for v in t[1]), default=0) if t else 0
        # wait for an annotation that covers every step, so no step text is missing
        if t is None or t[2] or rec.n_steps < n:
            continue
        write(examples(rec, t[0], t[1], n))
        # free the votes as soon as the trace is out
        tallies[rec.trace_id] = [[], [], True]
    return stats
