"""Inter-annotator agreement on a trajectory_eval export.

The unit of the step-level statistics is one step of one trace. Every annotation is kept as one
row plus its error steps (correct steps are implicit: an annotation covering n steps rates every
step it does not mark as an error with the default label), so the memory cost follows the
number of errors, not the number of steps.

If one annotator annotated the same trace twice, the later line wins (it is the newer decision).
"""
from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ..core.records import AnnotationRecord
from ..core.trace import TraceError
from .codes import Codes
from .disagreement import Thresholds, disagreements_in
from .settings import AnalysisSettings, read, severity_rank_order
from .spans import evidence_agreement, marked
from .stats import cohen_kappa, counts_table, fleiss_kappa, krippendorff_alpha
from .trace_groups import root_cause

# ---------------------------------------------------------------- collection

class AgreementCollector:
    def __init__(self, settings: AnalysisSettings | None = None) -> None:
        self.s = settings or AnalysisSettings()
        self.traces = Codes()
        self.annotators = Codes()
        self.corr = Codes()
        for lab in self.s.correct_labels:
            self.corr.code(lab)
        self.cats = Codes()
        self.types = Codes()
        self.sevs = Codes()
        self.latest: dict = {}  # (trace code, annotator code) -> annotation row
        self.a_trace = array("i")
        self.a_annot = array("i")
        self.a_n = array("i")
        self.a_first = array("i")
        self.a_root = array("i")
        #: row -> (step, marked characters, whether the label had spans) per error step, for the evidence
        self.evidence: dict = {}
        self.gaps: dict = {}  # row -> explicit step indices, for the rare annotation not covering 0..n-1
        self.e_row = array("i")
        self.e_step = array("i")
        self.e_corr = array("i")
        self.e_cat = array("i")
        self.e_type = array("i")
        self.e_sev = array("i")
        self.weights_seen: dict = {}
        self.input_errors: list = []

    def add(self, rec: AnnotationRecord) -> None:
        s = self.s
        for k, v in s.weights_for(rec).items():
            self.weights_seen.setdefault(k, v)
        row = len(self.a_trace)
        tc, ac = self.traces.code(rec.trace_id), self.annotators.code(rec.annotator)
        self.latest[(tc, ac)] = row
        idx = [st.step_index for st in rec.steps]
        if idx != list(range(len(idx))):
            self.gaps[row] = np.array(idx, dtype=np.int64)
        first = -1
        for st in rec.steps:
            if not s.is_error(st.correctness):
                continue
            if first < 0:
                first = st.step_index
            self.e_row.append(row)
            self.e_step.append(st.step_index)
            self.e_corr.append(self.corr.code(st.correctness))
            self.e_cat.append(self.cats.code(st.error_category))
            self.e_type.append(self.types.code(st.error_type))
            self.e_sev.append(self.sevs.code(st.severity))
            self.evidence.setdefault(row, []).append((st.step_index, marked(st), bool(st.evidence)))
        self.a_trace.append(tc)
        self.a_annot.append(ac)
        # only the steps listed count as rated: a step missing from the list is missing data
        self.a_n.append(idx[-1] + 1 if idx else 0)
        self.a_first.append(first)
        root = root_cause(rec, s)
        self.a_root.append(-1 if root is None else root)

    def trace_lines(self) -> dict:
        """trace_id -> valid lines read, and the ids of traces with two or more annotators: what
        ``disagreement.disagreements_in`` needs to skip its counting pass."""
        counts = np.bincount(_np(self.a_trace, np.int32), minlength=len(self.traces.values))
        return {t: int(n) for t, n in zip(self.traces.values, counts)}

    def multi_annotator_traces(self) -> set:
        per_trace = np.bincount([t for t, _ in self.latest], minlength=len(self.traces.values))
        return {self.traces.values[i] for i in np.flatnonzero(per_trace >= 2)}


def _np(a: array, dtype) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype).astype(np.int64) if len(a) else np.zeros(0, np.int64)


@dataclass
class AgreementResult:
    n_annotations: int
    n_traces: int
    n_traces_multi: int
    annotators: list
    statistics: dict
    per_annotator: list
    first_error: dict
    #: agreement on the root-cause step, as on the first error (exact, within ±1)
    root_cause: dict = field(default_factory=dict)
    #: the adjudication list (``TraceDisagreement.to_json()`` of :mod:`.disagreement`), most disputed first;
    #: :func:`assess` fills it
    disagreements: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def to_json(self) -> dict:
        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            if isinstance(v, (np.integer,)):
                return int(v)
            if isinstance(v, (np.floating,)):
                return clean(float(v))
            return v

        return clean({
            "n_annotations": self.n_annotations, "n_traces": self.n_traces,
            "n_traces_with_2plus_annotators": self.n_traces_multi, "annotators": self.annotators,
            "statistics": self.statistics, "per_annotator": self.per_annotator,
            "first_error_step": self.first_error, "root_cause_step": self.root_cause,
            "most_disagreement": self.disagreements, "notes": self.notes,
        })


def compute(c: AgreementCollector, k: int = 2) -> AgreementResult:
    """All agreement statistics over traces that have two or more annotators."""
    keep_rows = np.array(sorted(c.latest.values()), dtype=np.int64)
    a_trace = _np(c.a_trace, np.int32)[keep_rows]
    a_annot = _np(c.a_annot, np.int32)[keep_rows]
    a_n = _np(c.a_n, np.int32)[keep_rows]
    a_first = _np(c.a_first, np.int32)[keep_rows]
    a_root = _np(c.a_root, np.int32)[keep_rows]
    n_ann_total = len(c.a_trace)
    raters_per_trace = np.bincount(a_trace, minlength=len(c.traces.values))
    multi = raters_per_trace[a_trace] >= 2
    notes = []
    if n_ann_total > len(keep_rows):
        notes.append(f"{n_ann_total - len(keep_rows)} earlier annotation(s) replaced by the same annotator's later one")
    annotators = list(c.annotators.values)
    A = len(annotators)
    stats: dict = {}
    result = partial(AgreementResult, n_annotations=n_ann_total, n_traces=len(c.traces.values),
                     n_traces_multi=int((raters_per_trace >= 2).sum()), annotators=annotators)
    if not multi.any():
        notes.append("no trace has two or more annotators: nothing to compare")
        return result(statistics=stats, per_annotator=[], first_error={}, notes=notes)

    rows = keep_rows[multi]
    tr, an, nn, fe = a_trace[multi], a_annot[multi], a_n[multi], a_first[multi]
    # Step units: trace t's steps get ids base[t] .. base[t] + max_n(t) - 1.
    n_trace = len(c.traces.values)
    max_n = np.zeros(n_trace, np.int64)
    np.maximum.at(max_n, tr, nn)
    unit_base = np.concatenate([[0], np.cumsum(max_n)[:-1]])
    n_units = int(max_n.sum())
    row_pos = {int(r): i for i, r in enumerate(rows)}

    def matrix(fill: int) -> np.ndarray:
        return np.full((n_units, A), fill, dtype=np.int16)

    # correctness: every covered step gets the default label, then error steps overwrite it
    corr = matrix(-1)
    for i, r in enumerate(rows):
        steps = c.gaps.get(int(r))
        if steps is None:
            corr[unit_base[tr[i]]:unit_base[tr[i]] + nn[i], an[i]] = 0
        else:
            corr[unit_base[tr[i]] + steps, an[i]] = 0
    cat, typ, sev = matrix(-1), matrix(-1), matrix(-1)
    e_row = _np(c.e_row, np.int32)
    if len(e_row):
        sel = np.array([row_pos.get(int(r), -1) for r in e_row])
        ok = sel >= 0
        sel = sel[ok]
        u = unit_base[tr[sel]] + _np(c.e_step, np.int32)[ok]
        who = an[sel]
        corr[u, who] = _np(c.e_corr, np.int32)[ok]
        cat[u, who] = _np(c.e_cat, np.int32)[ok]
        typ[u, who] = _np(c.e_type, np.int32)[ok]
        # severity as its rank by |weight|, so the ordinal metric sees the intended order
        order = severity_rank_order(c.s, c.weights_seen)
        order += [v for v in c.sevs.values if v not in order]
        rank = np.array([order.index(v) for v in c.sevs.values] + [-1], dtype=np.int64)
        sev[u, who] = rank[_np(c.e_sev, np.int32)[ok]]
    else:
        order = severity_rank_order(c.s, c.weights_seen)

    rated = corr >= 0
    n_raters = rated.sum(axis=1)
    units = n_raters >= 2
    corr_u = corr[units]
    # the correct labels were coded first, so any higher code is an error label
    err_u = np.where(corr_u < 0, -1, (corr_u >= len(c.s.correct_labels)).astype(np.int16))
    n_corr = len(c.corr.values)

    def nominal_block(m: np.ndarray, n_values: int, label: str) -> dict:
        vc = counts_table(m, n_values)
        out: dict[str, object] = {"units": int((vc.sum(axis=1) >= 2).sum()),
                                  "krippendorff_alpha": krippendorff_alpha(vc, "nominal"),
                                  "percent_agreement": _pairwise_agreement(m)}
        kappas = _pairwise_kappas(m, annotators)
        if A == 2 or len(kappas) == 1:
            out["cohen_kappa"] = kappas[0]["kappa"] if kappas else math.nan
        else:
            out["cohen_kappa_pairwise"] = kappas
            out["fleiss_kappa"], out["fleiss_units"], out["fleiss_raters"] = _fleiss(vc)
        return out

    stats["correctness"] = nominal_block(corr_u, n_corr, "correctness")
    stats["correctness"]["labels"] = list(c.corr.values)
    stats["is_error"] = nominal_block(err_u, 2, "is_error")

    # category / type: only among raters who marked the step wrong and named a category
    both_wrong = (err_u == 1).sum(axis=1) >= 2
    for name, m in (("error_category", cat[units]), ("error_type", typ[units])):
        sub = np.where(err_u == 1, m, -1)[both_wrong]
        n_vals = len(c.cats.values if name == "error_category" else c.types.values)
        vc = counts_table(sub, n_vals)
        stats[name] = {"units_marked_wrong_by_2plus": int(both_wrong.sum()),
                       "units": int((vc.sum(axis=1) >= 2).sum()),
                       "krippendorff_alpha": krippendorff_alpha(vc, "nominal"),
                       "percent_agreement": _pairwise_agreement(sub)}
    sub = np.where(err_u == 1, sev[units], -1)[both_wrong]
    vc = counts_table(sub, len(order))
    stats["severity"] = {"order": order, "units": int((vc.sum(axis=1) >= 2).sum()),
                         "krippendorff_alpha_ordinal": krippendorff_alpha(vc, "ordinal",
                                                                          value_domain=list(range(len(order)))),
                         "percent_agreement": _pairwise_agreement(sub)}

    stats["evidence"] = evidence_agreement(((t, step), a, chars, has_span) for r, t, a in zip(rows, tr, an)
                                           for step, chars, has_span in c.evidence.get(int(r), ()))
    first = _first_error_agreement(tr, an, fe, k, annotators)
    root = _first_error_agreement(tr, an, a_root[multi], 1, annotators)
    per_annot = _vs_majority(err_u, annotators, an, tr)
    return result(statistics=stats, per_annotator=per_annot, first_error=first, root_cause=root, notes=notes)


def _pairwise_agreement(m: np.ndarray) -> float:
    """Share of agreeing pairs over all rater pairs that rated the same unit."""
    agree = total = 0
    for i, j in itertools.combinations(range(m.shape[1]), 2):
        both = (m[:, i] >= 0) & (m[:, j] >= 0)
        total += int(both.sum())
        agree += int((m[both, i] == m[both, j]).sum())
    return agree / total if total else math.nan


def _pairwise_kappas(m: np.ndarray, annotators: list) -> list:
    out = []
    for i, j in itertools.combinations(range(m.shape[1]), 2):
        both = (m[:, i] >= 0) & (m[:, j] >= 0)
        if both.any():
            out.append({"a": annotators[i], "b": annotators[j], "units": int(both.sum()),
                        "kappa": cohen_kappa(m[both, i], m[both, j])})
    return out


def _fleiss(vc: np.ndarray) -> tuple:
    """Fleiss needs the same number of raters per unit: use the most common count (>= 2)."""
    sums = vc.sum(axis=1).astype(int)
    cand = sums[sums >= 2]
    if not len(cand):
        return math.nan, 0, 0
    counts = np.bincount(cand)
    m = int(np.flatnonzero(counts == counts.max())[-1])
    sel = vc[sums == m]
    return fleiss_kappa(sel[:, sel.sum(axis=0) > 0]), int(len(sel)), m


def _first_error_agreement(tr, an, fe, k: int, annotators: list) -> dict:
    order = np.lexsort((an, tr))
    tr, an, fe = tr[order], an[order], fe[order]
    bounds = np.flatnonzero(np.diff(tr)) + 1
    pairs = exact = within = both_none = one_none = 0
    diffs = []
    for g in np.split(np.arange(len(tr)), bounds):
        for i, j in itertools.combinations(g, 2):
            pairs += 1
            a, b = fe[i], fe[j]
            if a < 0 and b < 0:
                both_none += 1
                exact += 1
                within += 1
            elif a < 0 or b < 0:
                one_none += 1
            else:
                d = abs(int(a) - int(b))
                diffs.append(d)
                exact += d == 0
                within += d <= k
    return {"k": k, "pairs": pairs, "exact": exact / pairs if pairs else math.nan,
            f"within_{k}": within / pairs if pairs else math.nan,
            "both_no_error": both_none, "only_one_found_an_error": one_none,
            "mean_abs_difference_when_both_found_one": float(np.mean(diffs)) if diffs else math.nan}


def _vs_majority(err_u: np.ndarray, annotators: list, an, tr) -> list:
    """Each annotator against the majority of the *other* annotators of the same step.

    Steps where the others tie are left out (there is no majority to compare with).
    """
    rated = err_u >= 0
    n = rated.sum(axis=1)
    errs = np.where(rated, err_u, 0).sum(axis=1)
    out = []
    for a, name in enumerate(annotators):
        mine = rated[:, a]
        o_n = n - mine
        o_err = errs - np.where(mine, err_u[:, a], 0)
        ok = mine & (o_n >= 1) & (2 * o_err != o_n)
        maj = (2 * o_err > o_n)[ok].astype(int)
        me = err_u[ok, a].astype(int)
        out.append({
            "annotator": name, "annotations": int((an == a).sum()), "steps_compared": int(ok.sum()),
            "agreement_with_majority": float((maj == me).mean()) if ok.any() else math.nan,
            "kappa_with_majority": cohen_kappa(me, maj) if ok.any() else math.nan,
            "error_rate": float(err_u[mine, a].mean()) if mine.any() else math.nan,
            "majority_error_rate": float(maj.mean()) if ok.any() else math.nan,
        })
    return out


def collect(inputs: Iterable[str], settings: AnalysisSettings | None = None, on_error=None) -> AgreementCollector:
    col = AgreementCollector(settings)
    for item in read(list(inputs), col.s):
        if isinstance(item, TraceError):
            col.input_errors.append(item)
            if on_error:
                on_error(item)
        else:
            col.add(item)
    return col


def assess(inputs: Sequence[str], settings: AnalysisSettings | None = None, *, k: int = 2, top: int = 20,
           on_error=None) -> AgreementResult:
    """Everything ``agreement`` reports: the statistics (:func:`compute`) and the adjudication list, the ``top``
    traces the disagreement finder ranks most disputed (first errors more than ``k`` steps apart disputed).
    ``n_annotations`` is 0 when the inputs hold no valid line."""
    col = collect(inputs, settings, on_error=on_error)
    result = compute(col, k=k)
    if col.multi_annotator_traces():
        result.disagreements = [d.to_json() for d in disagreements_in(
            inputs, col.s, Thresholds(first_error_steps=k), top, lines=col.trace_lines(),
            wanted=col.multi_annotator_traces())]
    return result


def _f(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def format_table(r: AgreementResult) -> str:
    lines = [f"Agreement: {r.n_annotations} annotations, {r.n_traces} traces, "
             f"{r.n_traces_multi} with 2+ annotators, {len(r.annotators)} annotators"]
    for n in r.notes:
        lines.append(f"  note: {n}")
    s = r.statistics
    if s:
        lines += ["", f"  {'what':<16} {'units':>8} {'alpha':>7} {'kappa':>7} {'agree%':>7}"]
        for key in ("correctness", "is_error", "error_category", "error_type", "severity"):
            b = s.get(key)
            if not b:
                continue
            alpha = b.get("krippendorff_alpha", b.get("krippendorff_alpha_ordinal"))
            kappa = b.get("cohen_kappa", b.get("fleiss_kappa"))
            pa = b.get("percent_agreement")
            lines.append(f"  {key:<16} {b['units']:>8} {_f(alpha):>7} {_f(kappa):>7} "
                         f"{(_f(pa * 100) if pa is not None and not math.isnan(pa) else '–'):>7}")
        lines.append("  (kappa: Cohen's for two annotators, Fleiss' for more; severity alpha is ordinal)")
    if r.first_error:
        fe = r.first_error
        k = fe["k"]
        lines += ["", f"  first error step: {fe['pairs']} annotator pairs, exact {_f(fe['exact'])}, "
                      f"within ±{k} {_f(fe[f'within_{k}'])}, only one found an error {fe['only_one_found_an_error']}"]
    if r.root_cause:
        rc = r.root_cause
        lines.append(f"  root-cause step: {rc['pairs']} annotator pairs, exact {_f(rc['exact'])}, "
                     f"within ±1 {_f(rc['within_1'])}")
    ev = s.get("evidence") if s else None
    if ev:
        lines.append(f"  evidence: {ev['step_pairs']} annotator pairs on steps both mark wrong "
                     f"({ev['pairs_with_a_span']} with a span), character F1 {_f(ev['char_f1'])}, "
                     f"mean F1 {_f(ev['mean_f1'])}, same characters {_f(ev['exact'])}")
    if r.per_annotator:
        lines += ["", f"  {'annotator':<28} {'steps':>8} {'agree':>7} {'kappa':>7} {'err%':>6}"]
        for p in r.per_annotator:
            er = p["error_rate"]
            lines.append(f"  {p['annotator'][:28]:<28} {p['steps_compared']:>8} {_f(p['agreement_with_majority']):>7} "
                         f"{_f(p['kappa_with_majority']):>7} {(_f(er * 100) if er == er else '–'):>6}")
        lines.append("  (against the majority of the other annotators of each step; ties left out)")
    if r.disagreements:
        lines += ["", "  most disagreement (for adjudication; steps as the UI numbers them):"]
        for d in r.disagreements[:10]:
            lines.append(f"    {d['trace_id']}: disputedness {d['disputedness']:.2f}, "
                         f"steps {d['steps_in_dispute'] or '–'}, first errors {d['first_errors']}")
    return "\n".join(lines)
