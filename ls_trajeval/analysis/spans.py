"""Agreement on evidence spans: where inside a step two labels put the error, as character overlap (pure).

A wrong step's evidence is a list of spans, code-point offsets into the step's ``content`` (the start of its
``step_text``); a whole-step mark (no span) stands for the step's whole text. Two labels of one step agree on
the characters both mark: per pair, F1 = 2 |A ∩ B| / (|A| + |B|) over the marked characters (the Dice
coefficient, symmetric in A and B). Pooled over many pairs, the overlaps and sizes are summed first (character
F1, every character weighs the same); the mean of the pairs' F1 weighs every pair the same.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from itertools import combinations

from ..core.labels import StepLabel

Intervals = tuple[tuple[int, int], ...]


def merge(spans: Iterable[tuple[int, int]]) -> Intervals:
    """Half-open character ranges, sorted, overlapping and touching ones joined, empty ones left out."""
    out: list[list[int]] = []
    for start, end in sorted((s, e) for s, e in spans if e > s):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return tuple((s, e) for s, e in out)


def marked(label: StepLabel, text: str | None = None) -> Intervals:
    """The characters a wrong step's label marks: its evidence spans, or for a whole-step mark the whole step text
    (the label's, else ``text``: a judge's record may leave its steps' text out)."""
    if label.evidence:
        return merge((sp.start, sp.end) for sp in label.evidence)
    return merge([(0, len(label.step_text or text or ""))])


def size(a: Intervals) -> int:
    return sum(e - s for s, e in a)


def overlap(a: Intervals, b: Intervals) -> int:
    """Characters in both (each a merged, sorted list of ranges)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def pair_counts(a: Intervals, b: Intervals) -> tuple[int, int]:
    """(2 |A ∩ B|, |A| + |B|): the numerator and denominator of the pair's F1, to be summed over pairs."""
    return 2 * overlap(a, b), size(a) + size(b)


def pair_f1(a: Intervals, b: Intervals) -> float:
    """F1 of one pair; two empty marks (the whole of an empty step) agree fully."""
    match, total = pair_counts(a, b)
    return match / total if total else 1.0


def evidence_agreement(marks: Iterable[tuple[Hashable, Hashable, Intervals, bool]]) -> dict:
    """Agreement on evidence between annotators, over the steps two or more of them mark wrong.

    ``marks``: (step key, annotator, marked characters, whether the label had spans) for every wrong step of
    every annotator compared. Every pair of annotators marking the same step is one unit: ``step_pairs``,
    ``pairs_with_a_span`` (at least one of the two gave spans), ``char_f1`` (pooled), ``mean_f1`` and ``exact``
    (the share of pairs that mark the very same characters)."""
    by_step: dict = {}
    for key, who, chars, has_span in marks:
        by_step.setdefault(key, {})[who] = (chars, has_span)
    pairs = with_span = same = match = total = 0
    f1s: list[float] = []
    for labels in by_step.values():
        for (a, a_span), (b, b_span) in combinations(labels.values(), 2):
            m, t = pair_counts(a, b)
            pairs += 1
            with_span += a_span or b_span
            same += a == b
            match += m
            total += t
            f1s.append(m / t if t else 1.0)
    return {"step_pairs": pairs, "pairs_with_a_span": with_span,
            "char_f1": match / total if total else math.nan,
            "mean_f1": sum(f1s) / len(f1s) if f1s else math.nan,
            "exact": same / pairs if pairs else math.nan}

