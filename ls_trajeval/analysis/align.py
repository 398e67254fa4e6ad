"""How well one set of step labels (an LLM judge, a detector, an annotator: PRED) matches another (GOLD).

Traces are paired by ``trace_id``. A step is an error when its correctness is not a correct label; a step a
record does not list is the default label. Figures, each with a bootstrap 95% interval:

- ``step_accuracy``, ``error_precision``, ``error_recall``, ``error_f1`` and ``cohen_kappa`` of the error flag
  over all paired steps (κ by :func:`.stats.cohen_kappa_table`);
- ``first_error_exact`` and ``first_error_within_K``: the share of traces whose first error steps are equal /
  at most K steps apart; a trace without errors has none, and none matches only none;
- ``category_accuracy`` and ``type_accuracy`` over the steps both mark as errors;
- ``root_cause_exact`` and ``root_cause_within_1``: the share of traces whose root-cause steps
  (:func:`.trace_groups.root_cause`) are equal / at most one step apart, none matching only none;
- ``evidence_f1``: character overlap of the evidence on the steps both mark as errors, pooled
  (2 |P ∩ G| / (|P| + |G|) summed over those steps; a whole-step mark is the step's whole text, :mod:`.spans`);
- a confusion matrix of categories over all paired steps, ``(no error)`` included.

Intervals resample traces (steps of one trace are not independent), by :func:`.stats.bootstrap_intervals`.
Traces only in one file and traces whose step counts differ are reported with their locations and left out of
every figure. The result also keeps each trace's counts of the error flag and of each category in both (``to_json``:
``per_trace_counts``): what a judge's sensitivity and specificity, and their uncertainty, are computed from
(:mod:`.correction`). :func:`pair` is the pairing alone, for :mod:`.certify`.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.jsonfiles import atomic_output
from ..core.labels import step_number
from ..core.records import AnnotationRecord
from .figures import figure, png
from .settings import AnalysisSettings
from .spans import marked, pair_counts
from .stats import bootstrap_intervals, cohen_kappa_table, ratio
from .trace_groups import first_error, root_cause, step_labels

NO_ERROR = "(no error)"
NO_CATEGORY = "(no category)"
# per-trace counts; every figure is a function of their sums over the traces
#: the root-cause and evidence figures' counts: root causes equal / within one step, 2 |P ∩ G| and |P| + |G|
_CAUSE_COLS = ("rc_exact", "rc_within", "ev_match", "ev_total")
_COLS = ("steps", "tp", "fp", "fn", "tn", "both", "cat", "type", "fe_exact", "fe_within", "traces", *_CAUSE_COLS)
_C = {name: i for i, name in enumerate(_COLS)}


@dataclass(frozen=True)
class Metric:
    value: float
    low: float
    high: float
    #: how many units the figure is over (steps, traces, or steps both mark as errors)
    n: int
    unit: str

    def to_json(self) -> dict:
        def num(x):
            return None if x is None or not math.isfinite(x) else round(float(x), 6)
        return {"value": num(self.value), "ci_low": num(self.low), "ci_high": num(self.high),
                "n": self.n, "unit": self.unit}


@dataclass
class Pairing:
    """PRED and GOLD records paired by trace id, and what could not be paired."""

    pairs: list  # (pred, gold) records with the same step count, in GOLD's order
    pred_only: list  # (trace_id, file:line)
    gold_only: list
    mismatches: list  # dicts, located
    duplicates: list  # "file:line: ..." messages


@dataclass
class AlignResult:
    within: int
    traces: int
    steps: int
    metrics: dict  # name -> Metric
    confusion: pd.DataFrame  # rows GOLD category, columns PRED category
    per_trace: list
    pred_only: list = field(default_factory=list)  # (trace_id, file:line)
    gold_only: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)  # dicts, located
    duplicates: list = field(default_factory=list)  # "file:line: ..." messages
    resamples: int = 0
    #: per paired trace: [trace_id, steps, tp, fp, fn, tn, then per category gold, pred, both]; see ``to_json``
    trace_counts: list = field(default_factory=list)
    categories: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "traces": self.traces, "steps": self.steps, "within": self.within,
            **{k: m.to_json() for k, m in self.metrics.items()},
            "confusion_categories": {"gold_rows": [str(x) for x in self.confusion.index],
                                     "pred_columns": [str(x) for x in self.confusion.columns],
                                     "counts": self.confusion.to_numpy().tolist()},
            "only_in_pred": [{"trace_id": t, "at": w} for t, w in self.pred_only],
            "only_in_gold": [{"trace_id": t, "at": w} for t, w in self.gold_only],
            "step_count_mismatches": self.mismatches, "duplicates": self.duplicates,
            "bootstrap_resamples": self.resamples, "interval": "percentile bootstrap over traces, 95%",
            # steps each trace has, and how many PRED and GOLD mark (tp: both; fp: PRED only; fn: GOLD only; tn:
            # neither) as errors and as each category (gold:C, pred:C, both:C)
            "per_trace_counts": {"columns": ["trace_id", *COUNT_COLUMNS,
                                             *[f"{w}:{c}" for c in self.categories for w in ("gold", "pred", "both")]],
                                 "rows": self.trace_counts},
        }


def _where(rec: AnnotationRecord) -> str:
    return f"{rec.source}:{rec.line}"


def _one_per_trace(records: Iterable[AnnotationRecord], what: str, duplicates: list) -> dict:
    """trace_id -> record; a trace labelled twice in one input keeps its later line, and that is reported."""
    out: dict = {}
    for rec in records:
        old = out.get(rec.trace_id)
        if old is not None:
            duplicates.append(f"{_where(rec)}: {what} labels trace {rec.trace_id!r} again (also at {_where(old)}); "
                              f"the later line is used")
        out[rec.trace_id] = rec
    return out


def _category(st, settings: AnalysisSettings) -> str:
    if not settings.is_error(st.correctness):
        return NO_ERROR
    return st.error_category or NO_CATEGORY


def _trace_counts(pred: AnnotationRecord, gold: AnnotationRecord, settings: AnalysisSettings, within: int,
                  confusion: dict) -> tuple:
    counts = np.zeros(len(_COLS), dtype=np.int64)
    p_steps, g_steps = step_labels(pred, settings), step_labels(gold, settings)
    by_category: dict = {}  # category -> [gold, pred, both]
    for p, g in zip(p_steps, g_steps):
        pe, ge = settings.is_error(p.correctness), settings.is_error(g.correctness)
        counts[_C["tp" if pe and ge else "fp" if pe else "fn" if ge else "tn"]] += 1
        if pe and ge:
            counts[_C["both"]] += 1
            counts[_C["cat"]] += p.error_category == g.error_category
            counts[_C["type"]] += p.error_type == g.error_type
        key = (_category(g, settings), _category(p, settings))
        confusion[key] = confusion.get(key, 0) + 1
        for which, cat in enumerate(key):
            if cat != NO_ERROR:
                by_category.setdefault(cat, [0, 0, 0])[which] += 1
        if key[0] == key[1] != NO_ERROR:
            by_category[key[0]][2] += 1
    pf, gf = first_error(pred, settings), first_error(gold, settings)
    exact = pf == gf
    near = exact or (pf is not None and gf is not None and abs(pf - gf) <= within)
    counts[_C["steps"]] = len(g_steps)
    counts[_C["fe_exact"]], counts[_C["fe_within"]], counts[_C["traces"]] = exact, near, 1
    row = {
        "trace_id": gold.trace_id, "steps": len(g_steps),
        "gold_errors": " ".join(step_number(s.step_index) for s in g_steps if settings.is_error(s.correctness)),
        "pred_errors": " ".join(step_number(s.step_index) for s in p_steps if settings.is_error(s.correctness)),
        "gold_first_error": step_number(gf) if gf is not None else "none",
        "pred_first_error": step_number(pf) if pf is not None else "none",
        "first_error_distance": abs(pf - gf) if pf is not None and gf is not None else None,
        "tp": int(counts[_C["tp"]]), "fp": int(counts[_C["fp"]]), "fn": int(counts[_C["fn"]]),
    }
    _cause_counts(pred, gold, p_steps, g_steps, settings, counts, row)
    return counts, row, by_category


def _cause_counts(pred: AnnotationRecord, gold: AnnotationRecord, p_steps: list, g_steps: list,
                  settings: AnalysisSettings, counts: np.ndarray, row: dict) -> None:
    """Fill the trace's root-cause and evidence counts (and its per-trace row's root causes)."""
    pr, gr = root_cause(pred, settings), root_cause(gold, settings)
    counts[_C["rc_exact"]] = pr == gr
    counts[_C["rc_within"]] = pr == gr or (pr is not None and gr is not None and abs(pr - gr) <= 1)
    for p, g in zip(p_steps, g_steps):
        if settings.is_error(p.correctness) and settings.is_error(g.correctness):
            match, total = pair_counts(marked(p, g.step_text), marked(g, p.step_text))
            counts[_C["ev_match"]] += match
            counts[_C["ev_total"]] += total
    row["gold_root_cause"] = step_number(gr) if gr is not None else "none"
    row["pred_root_cause"] = step_number(pr) if pr is not None else "none"


def _cause_statistics(s: dict) -> dict:
    return {"root_cause_exact": ratio(s["rc_exact"], s["traces"]),
            "root_cause_within_1": ratio(s["rc_within"], s["traces"]),
            "evidence_f1": ratio(s["ev_match"], s["ev_total"])}


def _kappa(tp, fp, fn, tn) -> float:
    return cohen_kappa_table(np.array([[tp, fn], [fp, tn]], dtype=float))  # rows GOLD error/not, columns PRED


def _statistics(sums: np.ndarray, within: int) -> dict:
    """Every figure from summed counts; ``sums`` is (k,) or (resamples, k)."""
    s = {name: sums[..., i].astype(float) for name, i in _C.items()}
    kappa = np.vectorize(_kappa, otypes=[float])(s["tp"], s["fp"], s["fn"], s["tn"])
    return {
        "step_accuracy": ratio(s["tp"] + s["tn"], s["steps"]),
        "error_precision": ratio(s["tp"], s["tp"] + s["fp"]),
        "error_recall": ratio(s["tp"], s["tp"] + s["fn"]),
        "error_f1": ratio(2 * s["tp"], 2 * s["tp"] + s["fp"] + s["fn"]),
        "cohen_kappa": kappa,
        "first_error_exact": ratio(s["fe_exact"], s["traces"]),
        f"first_error_within_{within}": ratio(s["fe_within"], s["traces"]),
        "category_accuracy": ratio(s["cat"], s["both"]),
        "type_accuracy": ratio(s["type"], s["both"]),
        **_cause_statistics(s),
    }


_UNITS = {"step_accuracy": ("steps", "steps"), "error_precision": ("steps PRED marks", None),
          "error_recall": ("steps GOLD marks", None), "error_f1": ("steps", "steps"), "cohen_kappa": ("steps", "steps"),
          "first_error_exact": ("traces", "traces"), "category_accuracy": ("steps both mark", "both"),
          "type_accuracy": ("steps both mark", "both"), "evidence_f1": ("steps both mark", "both")}


#: the error flag's counts of a trace in ``per_trace_counts``
COUNT_COLUMNS = ("steps", "tp", "fp", "fn", "tn")


def pair(pred: Iterable[AnnotationRecord], gold: Iterable[AnnotationRecord]) -> Pairing:
    """PRED and GOLD paired by trace_id; a trace in one only, or with another step count, is listed instead."""
    duplicates: list = []
    p_by = _one_per_trace(pred, "PRED", duplicates)
    g_by = _one_per_trace(gold, "GOLD", duplicates)
    pairs, mismatches = [], []
    for tid, g in g_by.items():
        p = p_by.get(tid)
        if p is None:
            continue
        if p.n_steps != g.n_steps:
            mismatches.append({"trace_id": tid, "pred_steps": p.n_steps, "gold_steps": g.n_steps,
                               "pred_at": _where(p), "gold_at": _where(g)})
            continue
        pairs.append((p, g))
    return Pairing(pairs, [(t, _where(r)) for t, r in p_by.items() if t not in g_by],
                   [(t, _where(r)) for t, r in g_by.items() if t not in p_by], mismatches, duplicates)


def align(pred: Iterable[AnnotationRecord], gold: Iterable[AnnotationRecord], settings: AnalysisSettings, *,
          within: int = 1, resamples: int = 2000, seed: int = 0) -> AlignResult:
    """Pair PRED and GOLD records by trace_id and measure PRED against GOLD (see the module docstring)."""
    return measure(pair(pred, gold), settings, within=within, resamples=resamples, seed=seed)


def measure(paired: Pairing, settings: AnalysisSettings, *, within: int = 1, resamples: int = 2000,
            seed: int = 0) -> AlignResult:
    """Every figure of PRED against GOLD over the traces :func:`pair` paired."""
    confusion: dict[tuple[str, str], int] = {}  # (gold category, pred category) -> steps
    rows, per_trace, by_category = [], [], []
    for p, g in paired.pairs:
        counts, row, cats = _trace_counts(p, g, settings, within, confusion)
        rows.append(counts)
        per_trace.append(row)
        by_category.append(cats)
    categories = sorted({c for cats in by_category for c in cats})
    trace_counts = [[row["trace_id"], *(int(c[_C[k]]) for k in COUNT_COLUMNS),
                     *(n for cat in categories for n in cats.get(cat, (0, 0, 0)))]
                    for row, c, cats in zip(per_trace, rows, by_category)]
    counts = np.array(rows, dtype=np.int64).reshape(-1, len(_COLS))
    total = counts.sum(axis=0)
    point = _statistics(total, within)
    n = len(counts)
    low, high = bootstrap_intervals(counts, lambda sums: np.stack(list(_statistics(sums, within).values())),
                                    resamples, seed)
    metrics = {}
    for (name, value), lo, hi in zip(point.items(), low, high):
        unit, col = _UNITS.get(name, ("traces", "traces"))
        if col is None:  # a count of marked steps, not a column
            size = {"steps PRED marks": total[_C["tp"]] + total[_C["fp"]],
                    "steps GOLD marks": total[_C["tp"]] + total[_C["fn"]]}[unit]
        else:
            size = total[_C[col]]
        size = int(size) if n else 0
        metrics[name] = Metric(float(value), float(lo), float(hi), size, unit)
    labels = sorted({k[0] for k in confusion} | {k[1] for k in confusion}, key=lambda c: (c == NO_ERROR, c))
    matrix = pd.DataFrame(0, index=pd.Index(labels, name="gold"), columns=pd.Index(labels, name="pred"), dtype=int)
    for (g_cat, p_cat), c in confusion.items():
        matrix.loc[g_cat, p_cat] = c
    return AlignResult(within=within, traces=n, steps=int(total[_C["steps"]]) if n else 0, metrics=metrics,
                       confusion=matrix, per_trace=per_trace, pred_only=paired.pred_only, gold_only=paired.gold_only,
                       mismatches=paired.mismatches, duplicates=paired.duplicates, resamples=resamples if n else 0,
                       trace_counts=trace_counts, categories=categories)


def plot_confusion(result: AlignResult) -> bytes:
    """The confusion matrix of categories as a PNG heatmap."""
    m = result.confusion
    fig = figure(1.5 + 0.9 * max(len(m.columns), 3), 1.0 + 0.5 * max(len(m), 3))
    ax = fig.add_subplot()
    values = m.to_numpy()
    im = ax.imshow(values, cmap="Blues", vmin=0)
    ax.set_xticks(range(len(m.columns)), [str(c) for c in m.columns], rotation=35, ha="right")
    ax.set_yticks(range(len(m.index)), [str(c) for c in m.index])
    vmax = values.max() if values.size else 1
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            ax.text(j, i, str(int(values[i, j])), ha="center", va="center",
                    color="white" if values[i, j] > 0.6 * vmax else "black")
    ax.set_xlabel("PRED category")
    ax.set_ylabel("GOLD category")
    ax.set_title("Error categories per step, GOLD vs PRED")
    fig.colorbar(im, ax=ax, label="steps")
    return png(fig)


def write_outputs(result: AlignResult, out_dir: str | Path, doc: dict | None = None,
                  plots: bool = True) -> list:
    """confusion_categories.csv / .png, per_trace.csv and align.json (``doc``, by default ``result.to_json()``) in
    ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "confusion_categories.csv", out / "per_trace.csv", out / "align.json"]
    with atomic_output(files[0]) as fh:
        result.confusion.to_csv(fh, index_label="gold \\ pred")
    with atomic_output(files[1]) as fh:
        pd.DataFrame(result.per_trace, columns=["trace_id", "steps", "gold_errors", "pred_errors", "gold_first_error",
                                                "pred_first_error", "first_error_distance", "tp", "fp", "fn",
                                                "gold_root_cause", "pred_root_cause"]
                     ).to_csv(fh, index=False)
    with atomic_output(files[2]) as fh:
        fh.write(json.dumps(doc if doc is not None else result.to_json(), indent=2, ensure_ascii=False) + "\n")
    if plots:
        files.append(out / "confusion_categories.png")
        with atomic_output(files[-1], "wb") as fh:
            fh.write(plot_confusion(result))
    return files


def format_text(result: AlignResult) -> str:
    def f(x: float | None) -> str:
        return "–" if x is None or not math.isfinite(x) else f"{x:.3f}"

    lines = [f"align: {result.traces} traces paired ({result.steps} steps)"
             + (f"; {len(result.pred_only)} only in PRED" if result.pred_only else "")
             + (f"; {len(result.gold_only)} only in GOLD" if result.gold_only else "")
             + (f"; {len(result.mismatches)} with different step counts (left out)" if result.mismatches else "")]
    width = max(len(k) for k in result.metrics)
    spans = {name: f"[{f(m.low)}, {f(m.high)}]" for name, m in result.metrics.items()}
    span_width = max(len("95% interval"), *map(len, spans.values()))
    lines.append(f"  {'figure':<{width}}  {'value':>6}  {'95% interval':<{span_width}}  over")
    for name, m in result.metrics.items():
        lines.append(f"  {name:<{width}}  {f(m.value):>6}  {spans[name]:<{span_width}}  {m.n} {m.unit}")
    return "\n".join(lines)
