"""Process-reward training data in TRL's stepwise-supervision shape.

Each output line is ``{"prompt": task, "completions": [step text, ...], "labels": [bool, ...]}``
(one label per step, True = the step is good), optionally with ``trace_id`` / ``annotators``.

Label rules, in the order they are applied:

1. Per annotation, each step's vote: a correct label is True, an error label False, except the
   partial labels (``partially_correct``), which follow ``partial``: ``true``, ``false`` or
   ``drop`` (the annotator abstains on that step; a step nobody votes on is removed from the
   example, so its text is gone from the prefix too).
2. Annotators are merged per step (``merge``):
   ``majority`` - True if more True than False votes; **a tie is False** (an error that half
   of the annotators saw is not a step to reward);
   ``any-error`` - False if any annotator voted False;
   ``per-annotator`` - no merging, one example per annotation.
3. After the first False step (``after_error``): ``keep`` the labels as they are, mark every
   later step ``false``, or ``truncate`` the example after the first error (the usual PRM
   convention: a step that follows a mistake is not evidence about a sound prefix).

Merged output needs every annotation of a trace, which may sit in different files, so it reads
the inputs twice: once for the votes (a few bytes per step), once for the step texts, writing each
trace as soon as its text is read. Output follows first appearance in the inputs.
"""
from __future__ import annotations

import json
from array import array
from dataclasses import dataclass
from typing import IO, Iterable, Optional

from ..core.records import AnnotationRecord
from ..core.trace import TraceError
from .settings import AnalysisSettings, read

PARTIAL_CHOICES = ("true", "false", "drop")
AFTER_ERROR_CHOICES = ("keep", "false", "truncate")
MERGE_CHOICES = ("majority", "any-error", "per-annotator")


@dataclass
class PrmStats:
    examples: int = 0
    steps: int = 0
    true_labels: int = 0
    dropped_steps: int = 0
    empty_examples: int = 0  # traces left with no step (all dropped), not written


def step_votes(rec: AnnotationRecord, settings: AnalysisSettings, partial: str) -> list:
    """(step_index, vote) per step: True, False, or None for an abstention."""
    out = []
    for st in rec.steps:
        if not settings.is_error(st.correctness):
            out.append((st.step_index, True))
        elif st.correctness in settings.partial_labels:
            out.append((st.step_index, None if partial == "drop" else partial == "true"))
        else:
            out.append((st.step_index, False))
    return out


def apply_after_error(labels: list, after_error: str) -> int:
    """Change ``labels`` in place; return how many leading steps to keep."""
    try:
        first = labels.index(False)
    except ValueError:
        return len(labels)
    if after_error == "false":
        for i in range(first + 1, len(labels)):
            labels[i] = False
    elif after_error == "truncate":
        return first + 1
    return len(labels)


def _example(task: str, texts: list, labels: list, after_error: str, meta: Optional[dict], stats: PrmStats) -> Optional[dict]:
    keep = apply_after_error(labels, after_error)
    texts, labels = texts[:keep], labels[:keep]
    if not labels:
        stats.empty_examples += 1
        return None
    ex = {"prompt": task, "completions": texts, "labels": labels}
    if meta:
        ex.update(meta)
    stats.examples += 1
    stats.steps += len(labels)
    stats.true_labels += sum(labels)
    return ex


class _Tally:
    """Per-trace vote counts: two small unsigned arrays per trace, indexed by step."""

    __slots__ = ("true", "false", "annotators", "written", "n")

    def __init__(self) -> None:
        self.true = array("H")
        self.false = array("H")
        self.annotators: list = []
        self.written = False
        self.n = 0

    def add(self, votes: list, n_steps: int, annotator: str) -> None:
        size = max([n_steps] + [i + 1 for i, _ in votes])
        if size > len(self.true):
            grow = size - len(self.true)
            self.true.extend([0] * grow)
            self.false.extend([0] * grow)
        for i, v in votes:
            if v is True:
                self.true[i] += 1
            elif v is False:
                self.false[i] += 1
        self.n = max(self.n, n_steps)
        self.annotators.append(annotator)

    def label(self, i: int, merge: str) -> Optional[bool]:
        if i >= len(self.true):
            return None
        t, f = self.true[i], self.false[i]
        if t == 0 and f == 0:
            return None
        if merge == "any-error":
            return f == 0
        return t > f  # a tie goes to False


def build_prm(
    inputs: Iterable[str], out: IO[str], *, settings: Optional[AnalysisSettings] = None,
    partial: str = "false", after_error: str = "keep", merge: str = "majority",
    with_meta: bool = False, on_error=None,
) -> PrmStats:
    settings = settings or AnalysisSettings()
    inputs = list(inputs)
    stats = PrmStats()

    def write(ex: Optional[dict]) -> None:
        if ex is not None:
            out.write(json.dumps(ex, ensure_ascii=False))
            out.write("\n")

    if merge == "per-annotator":
        for rec in read(inputs, settings):
            if isinstance(rec, TraceError):
                on_error and on_error(rec)
                continue
            texts, labels = [], []
            for (i, v), st in zip(step_votes(rec, settings, partial), rec.steps):
                if v is None:
                    stats.dropped_steps += 1
                    continue
                texts.append(st.step_text)
                labels.append(v)
            meta = {"trace_id": rec.trace_id, "annotators": [rec.annotator]} if with_meta else None
            write(_example(rec.task, texts, labels, after_error, meta, stats))
        return stats

    tallies: dict = {}
    for rec in read(inputs, settings):
        if isinstance(rec, TraceError):
            on_error and on_error(rec)
            continue
        tallies.setdefault(rec.trace_id, _Tally()).add(step_votes(rec, settings, partial), rec.n_steps, rec.annotator)
    # Second pass: errors were reported already, so they are skipped silently this time.
    for rec in read(inputs, settings):
        if isinstance(rec, TraceError):
            continue
        tally = tallies.get(rec.trace_id)
        # wait for an annotation that covers every step, so no step text is missing
        if tally is None or tally.written or rec.n_steps < tally.n:
            continue
        tally.written = True
        texts, labels = [], []
        by_index = {st.step_index: st.step_text for st in rec.steps}
        for i in range(len(tally.true)):
            v = tally.label(i, merge)
            if v is None or i not in by_index:
                stats.dropped_steps += 1
                continue
            texts.append(by_index[i])
            labels.append(v)
        meta = {"trace_id": rec.trace_id, "annotators": tally.annotators} if with_meta else None
        write(_example(rec.task, texts, labels, after_error, meta, stats))
        # free the votes as soon as the trace is out
        tally.true = tally.false = array("H")
        tally.annotators = []
    return stats
