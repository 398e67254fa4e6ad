"""Certify a judge (``align --certify``): does the lower bound of each figure's 95% interval clear the threshold a
team sets, overall and per error type?

Figures, over PRED and GOLD paired as :func:`.align.pair` pairs them:

- ``error_precision``: of the steps PRED marks, the share GOLD marks too; per error type T, of the steps PRED marks
  as T, the share GOLD marks as T;
- ``error_recall``: of the steps GOLD marks, the share PRED marks; per type, of GOLD's T steps, PRED's T;
- ``first_error_within_K``: the share of traces whose first errors are at most K steps apart (none matches only
  none, as in ``align``); per type, over the traces whose GOLD first error is of type T, PRED's first error (of
  any type) within K steps of it.

A step marked without a type counts overall, in no type. The bound is the lower end of the two-sided 95% interval
(:func:`.stats.proportion_interval`: Wilson's or Clopper–Pearson's; for the step figures on the effective number of
steps, since the steps of one trace are not independent). A figure with nothing to count (no step PRED marks as T)
is no evidence and clears nothing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core.records import AnnotationRecord
from .settings import AnalysisSettings
from .stats import LEVEL, Proportion, proportion_interval
from .trace_groups import first_error, step_labels

OVERALL = "overall"
PRECISION, RECALL = "error_precision", "error_recall"


def first_error_name(within: int) -> str:
    return f"first_error_within_{within}"


@dataclass(frozen=True)
class Thresholds:
    """The least lower bound each figure must reach; None leaves a figure unjudged."""

    precision: float | None = None
    recall: float | None = None
    first_error: float | None = None

    def by_figure(self, within: int) -> dict[str, float | None]:
        return {PRECISION: self.precision, RECALL: self.recall, first_error_name(within): self.first_error}


@dataclass
class Check:
    figure: str
    proportion: Proportion
    threshold: float | None

    @property
    def clears(self) -> bool | None:
        """None when unjudged; False when there was nothing to count."""
        if self.threshold is None:
            return None
        return math.isfinite(self.proportion.low) and self.proportion.low >= self.threshold

    def to_json(self) -> dict:
        return {**self.proportion.to_json(), "threshold": self.threshold, "clears": self.clears}


@dataclass
class Scope:
    """The checks of one scope: ``overall`` or an error type."""

    name: str
    checks: list[Check]

    @property
    def certified(self) -> bool:
        judged = [c.clears for c in self.checks if c.clears is not None]
        return bool(judged) and all(judged)

    def to_json(self) -> dict:
        return {"scope": self.name, "certified": self.certified,
                "figures": {c.figure: c.to_json() for c in self.checks}}


@dataclass
class Certification:
    within: int
    method: str
    thresholds: Thresholds
    scopes: list[Scope] = field(default_factory=list)
    level: float = LEVEL

    @property
    def overall(self) -> Scope:
        return self.scopes[0]

    def to_json(self) -> dict:
        return {"certified": self.overall.certified, "level": self.level, "interval": self.method,
                "bound": "lower end of the two-sided interval", "within": self.within,
                "thresholds": self.thresholds.by_figure(self.within),
                "scopes": [s.to_json() for s in self.scopes]}


def _trace_rows(pred: AnnotationRecord, gold: AnnotationRecord, settings: AnalysisSettings, within: int,
                types: dict) -> list[float]:
    """The trace's overall counts (tp, PRED marks, GOLD marks, first errors within K), and into ``types`` its
    per-type counts (type -> {trace index: [both, PRED, GOLD, first error of GOLD is T, within K]})."""
    tp = marked_p = marked_g = 0
    for p, g in zip(step_labels(pred, settings), step_labels(gold, settings)):
        pe, ge = settings.is_error(p.correctness), settings.is_error(g.correctness)
        tp, marked_p, marked_g = tp + (pe and ge), marked_p + pe, marked_g + ge
        pt = p.error_type if pe and p.error_type else None
        gt = g.error_type if ge and g.error_type else None
        for t, column in ((pt, 1), (gt, 2)):
            if t is not None:
                types.setdefault(t, [0, 0, 0, 0, 0])[column] += 1
        if pt is not None and pt == gt:
            types[pt][0] += 1
    pf, gf = first_error(pred, settings), first_error(gold, settings)
    near = pf == gf or (pf is not None and gf is not None and abs(pf - gf) <= within)
    if gf is not None:
        gold_first = next(s for s in gold.steps if s.step_index == gf)
        if gold_first.error_type:
            row = types.setdefault(gold_first.error_type, [0, 0, 0, 0, 0])
            row[3] += 1
            row[4] += near
    return [tp, marked_p, marked_g, 1, near]


def certify(pairs: list[tuple[AnnotationRecord, AnnotationRecord]], settings: AnalysisSettings, thresholds: Thresholds,
            *, within: int = 1, method: str = "wilson") -> Certification:
    """Each figure's interval against its threshold, overall and per error type (most GOLD steps first)."""
    overall_rows = []
    per_type: dict[str, list[list[int]]] = {}
    for p, g in pairs:
        types: dict = {}
        overall_rows.append(_trace_rows(p, g, settings, within, types))
        for t, counts in types.items():
            per_type.setdefault(t, []).append(counts)
    limits = thresholds.by_figure(within)
    fe = first_error_name(within)

    def scope(name: str, rows: list) -> Scope:
        a = np.asarray(rows, dtype=float).reshape(-1, 5)
        both, pred, gold, fe_units, fe_near = (a[:, i] for i in range(5))
        figures = {PRECISION: (both, pred), RECALL: (both, gold), fe: (fe_near, fe_units)}
        return Scope(name, [Check(f, proportion_interval(y, x, method), limits[f]) for f, (y, x) in figures.items()])

    # overall rows are (tp, PRED marks, GOLD marks, 1, near): the same columns as a type's
    scopes = [scope(OVERALL, overall_rows)]
    for t in sorted(per_type, key=lambda t: (-sum(r[2] for r in per_type[t]), t)):
        scopes.append(scope(t, per_type[t]))
    return Certification(within, method, thresholds, scopes)


def format_text(c: Certification) -> str:
    """The certification as a table: each scope's figures, their interval, the threshold and the verdict."""
    def f(x: float | None) -> str:
        return "–" if x is None or not math.isfinite(x) else f"{x:.3f}"

    judged = ", ".join(f"{k} {v:g}" for k, v in c.thresholds.by_figure(c.within).items() if v is not None)
    lines = [f"certify: lower ends of {c.level:.0%} {c.method} intervals against {judged}"]
    rows = []
    for s in c.scopes:
        for k in s.checks:
            p = k.proportion
            verdict = {None: "", True: "clears", False: "no evidence" if not math.isfinite(p.low) else "fails"}
            rows.append((s.name, k.figure, f(p.value), f"[{f(p.low)}, {f(p.high)}]",
                         f"{p.successes:g}/{p.trials:g}", f(k.threshold), verdict[k.clears]))
    head = ("scope", "figure", "value", "95% interval", "count", "threshold", "verdict")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines.append("  " + "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    passed = [s.name for s in c.scopes[1:] if s.certified]
    lines.append(f"overall: {'CERTIFIED' if c.overall.certified else 'NOT certified'}; error types certified: "
                 f"{', '.join(passed) if passed else 'none'} (of {len(c.scopes) - 1})")
    return "\n".join(lines)
