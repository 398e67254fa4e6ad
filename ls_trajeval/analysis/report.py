"""The error report: tables, plots and one self-contained HTML page from a trajectory_eval export.

Aggregation streams. Per annotation it keeps one row (scores, first error, outcome) and per
*error* step one row, with categorical columns held as integer codes; correct steps only bump
counters. Running-score curves are kept resampled on a fixed grid, so a 100k-trace export costs
a few tens of megabytes, not one Python object per step.

Units: every number here is per annotation line (a trace annotated by three people counts three
times), which is what a pandas analysis of the export computes.
"""
from __future__ import annotations

import base64
import io
import json
import math
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

import numpy as np
import pandas as pd

from ..core.labels import step_number
from ..core.records import AnnotationRecord
from ..core.trace import TraceError
from . import breakdown
from .agreement import AgreementCollector
from .codes import Codes
from .settings import MISSING, AnalysisSettings, read, running_curve, severity_rank_order

NONE_LABEL = "(none)"
#: grid for running-score curves against normalised position
POSITION_GRID = np.linspace(0.0, 1.0, 21)
#: step-index curves are kept up to this many steps (longer traces are cut there)
MAX_CURVE_STEPS = 50
_NAN_PAD = [math.nan] * MAX_CURVE_STEPS


def _categorical(codes: Codes, arr: array, missing: Optional[str] = None) -> pd.Categorical:
    """A column of codes as a pandas Categorical; with ``missing``, no label (-1) becomes that category."""
    cats = list(codes.values)
    a = np.frombuffer(arr, dtype=np.int32) if len(arr) else np.zeros(0, np.int32)
    if missing is not None:
        if missing not in codes.index:
            cats.append(missing)
        a = np.where(a < 0, cats.index(missing), a)
    return pd.Categorical.from_codes(a, categories=cats)


@dataclass
class ReportData:
    errors: pd.DataFrame  # one row per error step
    traces: pd.DataFrame  # one row per annotation
    step_types: pd.DataFrame  # steps and errors per step type
    curves_pos: np.ndarray  # annotations x len(POSITION_GRID)
    curves_step: np.ndarray  # annotations x MAX_CURVE_STEPS (NaN past a trace's end)
    severity_order: list
    outcome_key: str
    outcome_order: list
    errors_input: list = field(default_factory=list)
    score_mismatches: int = 0
    annotators: int = 0
    #: the record field or trace-metadata key the traces are grouped by (``report --by``), their column "group"
    by: Optional[str] = None


def group_value(value) -> str:
    """A metadata or field value as a group's name: text as is, other values as JSON, none as "(missing)"."""
    if value is None or value == "":
        return MISSING
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


class ReportAggregator:
    def __init__(self, settings: Optional[AnalysisSettings] = None, by: Optional[str] = None) -> None:
        self.s = settings or AnalysisSettings()
        self.by = by
        self.groups = Codes()
        self.trace_ids = Codes()
        self.annotators = Codes()
        self.outcomes = Codes()
        self.step_types = Codes()
        self.correctness = Codes()
        self.categories = Codes()
        self.types = Codes()
        self.severities = Codes()
        # per annotation
        self.t_trace = array("i")
        self.t_annot = array("i")
        self.t_nsteps = array("i")
        self.t_nerrors = array("i")
        self.t_final = array("d")
        self.t_first = array("i")
        self.t_outcome = array("i")
        self.t_worst = array("d")
        self.t_group = array("i")
        self.t_lead = array("d")
        self.t_project = array("q")
        self.t_task = array("q")
        # per error step
        self.e_row = array("i")
        self.e_step = array("i")
        self.e_pos = array("d")
        self.e_type = array("i")
        self.e_corr = array("i")
        self.e_cat = array("i")
        self.e_etype = array("i")
        self.e_sev = array("i")
        self.e_weight = array("d")
        self.steps_by_type: Counter = Counter()
        self.curves_pos = array("f")
        self.curves_step = array("f")
        self.weights_seen: dict = {}
        self.score_mismatches = 0
        self.input_errors: list = []
        self._grid: dict = {}

    def add_error(self, err: TraceError) -> None:
        self.input_errors.append(err)

    def add(self, rec: AnnotationRecord) -> None:
        s = self.s
        weights = s.weights_for(rec)
        for k, v in weights.items():
            self.weights_seen.setdefault(k, v)
        row = len(self.t_trace)
        denom = max(rec.n_steps - 1, 1)
        curve = running_curve(rec, s)
        n_err = 0
        first = -1
        worst = math.nan
        by_type = self.steps_by_type
        ok = s.correct_labels
        for st in rec.steps:
            by_type[st.step_type] += 1
            if st.correctness in ok:
                continue
            n_err += 1
            if first < 0:
                first = st.step_index
            w = weights.get(st.severity) if st.severity is not None else None
            w = abs(w) if w is not None else math.nan
            if not math.isnan(w) and not (w <= worst):
                worst = w
            self.e_row.append(row)
            self.e_step.append(st.step_index)
            self.e_pos.append(st.step_index / denom)
            self.e_type.append(self.step_types.code(st.step_type))
            self.e_corr.append(self.correctness.code(st.correctness))
            self.e_cat.append(self.categories.code(st.error_category))
            self.e_etype.append(self.types.code(st.error_type))
            self.e_sev.append(self.severities.code(st.severity))
            self.e_weight.append(w)
        final = curve[-1] if curve else s.initial_for(rec)
        if (
            rec.final_score is not None and s.severity_weights is None and s.score_initial is None
            and abs(rec.final_score - final) > 1e-9
        ):
            self.score_mismatches += 1
        self.t_trace.append(self.trace_ids.code(rec.trace_id))
        self.t_annot.append(self.annotators.code(rec.annotator))
        self.t_nsteps.append(rec.n_steps)
        self.t_nerrors.append(n_err)
        self.t_final.append(final)
        self.t_first.append(first)
        self.t_outcome.append(self.outcomes.code(rec.labels.get(s.outcome_key)))
        self.t_worst.append(worst)
        if self.by is not None:
            self.t_group.append(self.groups.code(group_value(rec.value(self.by))))
        f = rec.fields
        self.t_lead.append(_float(f.get("lead_time")))
        self.t_project.append(_int(f.get("project_id")))
        self.t_task.append(_int(f.get("task_id")))
        self._add_curves(rec, curve, s.initial_for(rec))

    def _add_curves(self, rec: AnnotationRecord, curve: list, initial: float) -> None:
        # Curves are indexed by step_index; a step missing from the list keeps the previous score.
        n = max(rec.n_steps, 1)
        if len(curve) == n and rec.steps[-1].step_index == n - 1:
            full = curve
        else:
            full = [initial] * n
            last = initial
            j = 0
            for i in range(n):
                if j < len(rec.steps) and rec.steps[j].step_index == i:
                    last = curve[j]
                    j += 1
                full[i] = last
        idx = self._grid.get(n)
        if idx is None:
            # the score at position p is the score after the last step at or before p
            idx = self._grid[n] = np.floor(POSITION_GRID * max(n - 1, 1) + 1e-9).astype(int).clip(0, n - 1).tolist()
        self.curves_pos.extend([full[k] for k in idx])
        if n >= MAX_CURVE_STEPS:
            self.curves_step.extend(full[:MAX_CURVE_STEPS])
        else:
            self.curves_step.extend(full)
            self.curves_step.extend(_NAN_PAD[: MAX_CURVE_STEPS - n])

    def finish(self) -> ReportData:
        s = self.s
        sev_order = severity_rank_order(s, self.weights_seen)
        sev_order += [v for v in self.severities.values if v not in sev_order]
        traces = pd.DataFrame({
            "trace_id": _categorical(self.trace_ids, self.t_trace),
            "annotator": _categorical(self.annotators, self.t_annot),
            "n_steps": np.frombuffer(self.t_nsteps, np.int32) if len(self.t_nsteps) else np.zeros(0, np.int32),
            "n_errors": np.frombuffer(self.t_nerrors, np.int32) if len(self.t_nerrors) else np.zeros(0, np.int32),
            "final_score": np.frombuffer(self.t_final, np.float64) if len(self.t_final) else np.zeros(0),
            "first_error_step": pd.array(
                [None if v < 0 else v for v in self.t_first], dtype="Int32"),
            "outcome": _categorical(self.outcomes, self.t_outcome, missing=MISSING),
            "worst_severity_weight": np.frombuffer(self.t_worst, np.float64) if len(self.t_worst) else np.zeros(0),
            "lead_time": np.frombuffer(self.t_lead, np.float64) if len(self.t_lead) else np.zeros(0),
            "project_id": _ids(self.t_project),
            "task_id": _ids(self.t_task),
        })
        if self.by is not None:
            traces["group"] = _categorical(self.groups, self.t_group)
        n_err = len(self.e_row)
        f64 = (lambda a: np.frombuffer(a, np.float64) if len(a) else np.zeros(0))
        i32 = (lambda a: np.frombuffer(a, np.int32) if len(a) else np.zeros(0, np.int32))
        errors = pd.DataFrame({
            "row": i32(self.e_row),
            "step_index": i32(self.e_step),
            "position": f64(self.e_pos),
            "step_type": _categorical(self.step_types, self.e_type, missing=NONE_LABEL),
            "correctness": _categorical(self.correctness, self.e_corr),
            "category": _categorical(self.categories, self.e_cat, missing=NONE_LABEL),
            "error_type": _categorical(self.types, self.e_etype, missing=NONE_LABEL),
            "severity": _categorical(self.severities, self.e_sev),
            "severity_weight": f64(self.e_weight),
        })
        if n_err:
            errors["trace_id"] = traces["trace_id"].to_numpy()[errors["row"].to_numpy()]
            errors["annotator"] = traces["annotator"].to_numpy()[errors["row"].to_numpy()]
        else:
            errors["trace_id"] = pd.Series([], dtype=object)
            errors["annotator"] = pd.Series([], dtype=object)
        err_by_type = errors.groupby("step_type", observed=True).agg(
            errors=("row", "size"), mean_severity_weight=("severity_weight", "mean"))
        st_rows = []
        for t, n in self.steps_by_type.items():
            name = NONE_LABEL if t is None else t
            e = int(err_by_type["errors"].get(name, 0)) if len(err_by_type) else 0
            m = float(err_by_type["mean_severity_weight"].get(name, math.nan)) if len(err_by_type) else math.nan
            st_rows.append({"step_type": name, "steps": n, "errors": e, "error_rate": e / n if n else math.nan,
                            "mean_severity_weight": m})
        step_types = pd.DataFrame(st_rows, columns=["step_type", "steps", "errors", "error_rate", "mean_severity_weight"])
        step_types = step_types.sort_values(["errors", "steps", "step_type"], ascending=[False, False, True], ignore_index=True)
        n_ann = len(self.t_trace)
        cp = np.frombuffer(self.curves_pos, np.float32).reshape(n_ann, len(POSITION_GRID)) if n_ann else np.zeros((0, len(POSITION_GRID)), np.float32)
        cs = np.frombuffer(self.curves_step, np.float32).reshape(n_ann, MAX_CURVE_STEPS) if n_ann else np.zeros((0, MAX_CURVE_STEPS), np.float32)
        seen_out = list(self.outcomes.values)
        outcome_order = [o for o in s.outcome_order if o in seen_out] + sorted(o for o in seen_out if o not in s.outcome_order)
        if (traces["outcome"] == MISSING).any():
            outcome_order.append(MISSING)
        return ReportData(
            errors=errors, traces=traces, step_types=step_types, curves_pos=cp, curves_step=cs,
            severity_order=sev_order, outcome_key=s.outcome_key, outcome_order=outcome_order,
            errors_input=list(self.input_errors), score_mismatches=self.score_mismatches,
            annotators=len(self.annotators.values), by=self.by,
        )


def _float(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else -1


def _ids(a: array) -> pd.array:
    return pd.array([None if v < 0 else v for v in a], dtype="Int64")


def aggregate(inputs: Iterable[str], settings: Optional[AnalysisSettings] = None,
              on_error=None, by: str | None = None, agreement: AgreementCollector | None = None) -> ReportData:
    """Everything the report shows, in one pass over the inputs; with ``by``, each annotation's group: the
    value of that trace-metadata key or record field (:meth:`AnnotationRecord.value`). ``agreement`` is fed the
    same lines (for :func:`.agreement.assess`), so the report's agreement takes no pass of its own."""
    agg = ReportAggregator(settings, by)
    for item in read(list(inputs), agg.s):
        if isinstance(item, TraceError):
            agg.add_error(item)
            if agreement is not None:
                agreement.input_errors.append(item)
            if on_error:
                on_error(item)
        else:
            agg.add(item)
            if agreement is not None:
                agreement.add(item)
    return agg.finish()


# ---------------------------------------------------------------- tables

def _share(counts: pd.Series) -> pd.Series:
    total = counts.sum()
    return counts / total if total else counts * 0.0


def _counts(errors: pd.DataFrame, col: str, order: Optional[list] = None) -> pd.DataFrame:
    vc = errors[col].value_counts(dropna=True)
    vc = vc[vc > 0]
    df = pd.DataFrame({col: vc.index.astype(str), "count": vc.to_numpy()})
    if order is not None:
        rank = {k: i for i, k in enumerate(order)}
        df = df.sort_values(col, key=lambda c: c.map(lambda v: rank.get(v, len(rank))), ignore_index=True)
    else:
        df = df.sort_values(["count", col], ascending=[False, True], ignore_index=True)
    df["share"] = _share(df["count"])
    return df


def _score_stats(scores: pd.Series) -> dict:
    sc = scores.astype(float)
    n = len(sc)
    return {
        "n": n,
        "mean": sc.mean() if n else math.nan,
        "std": sc.std() if n > 1 else math.nan,
        "min": sc.min() if n else math.nan,
        "q25": sc.quantile(0.25) if n else math.nan,
        "median": sc.median() if n else math.nan,
        "q75": sc.quantile(0.75) if n else math.nan,
        "max": sc.max() if n else math.nan,
    }


def build_tables(d: ReportData, top: int = 10) -> dict:
    e, t = d.errors, d.traces
    tables: dict = {}
    tables["errors_by_category"] = _counts(e, "category")
    et = (e.groupby(["category", "error_type"], observed=True).size().rename("count").reset_index())
    et = et[et["count"] > 0].astype({"category": str, "error_type": str})
    et = et.sort_values(["count", "category", "error_type"], ascending=[False, True, True], ignore_index=True)
    et["share"] = _share(et["count"])
    tables["error_types"] = et
    sev = _counts(e, "severity", order=d.severity_order)
    weights = e.dropna(subset=["severity"]).groupby("severity", observed=True)["severity_weight"].first()
    sev["weight"] = sev["severity"].map(lambda k: weights.get(k, math.nan))
    tables["severity_distribution"] = sev
    rows = [{"group": "all", **_score_stats(t["final_score"])}]
    for o in d.outcome_order:
        rows.append({"group": f"{d.outcome_key}={o}", **_score_stats(t.loc[t["outcome"] == o, "final_score"])})
    tables["final_score_stats"] = pd.DataFrame(rows)
    fm = e.groupby(["category", "error_type"], observed=True).agg(
        count=("severity_weight", "size"), mean_severity_weight=("severity_weight", "mean")).reset_index()
    fm = fm[fm["count"] > 0].astype({"category": str, "error_type": str})
    fm["impact"] = fm["count"] * fm["mean_severity_weight"]
    tables["failure_modes_by_frequency"] = fm.sort_values(
        ["count", "impact", "category", "error_type"], ascending=[False, False, True, True], ignore_index=True)
    tables["failure_modes_by_impact"] = fm.sort_values(
        ["impact", "count", "category", "error_type"], ascending=[False, False, True, True],
        na_position="last", ignore_index=True)
    has = t["first_error_step"].notna()
    fe = t.loc[has, "first_error_step"].astype(int)
    pos = (fe / (t.loc[has, "n_steps"] - 1).clip(lower=1)).astype(float)
    n = len(t)
    tables["first_error_summary"] = pd.DataFrame([
        {"metric": "annotations", "value": n},
        {"metric": "annotations with an error", "value": int(has.sum())},
        {"metric": "share with an error", "value": (has.sum() / n) if n else math.nan},
        # as the UI numbers steps (#1 is step_index 0)
        {"metric": "mean first error step (#N)", "value": fe.mean() + 1 if len(fe) else math.nan},
        {"metric": "median first error step (#N)", "value": fe.median() + 1 if len(fe) else math.nan},
        {"metric": "mean first error position (0-1)", "value": pos.mean() if len(pos) else math.nan},
        {"metric": "median first error position (0-1)", "value": pos.median() if len(pos) else math.nan},
    ])
    dist = fe.value_counts().sort_index()
    fed = pd.DataFrame({"first_error_step": [step_number(int(i)) for i in dist.index],
                        "step_index": dist.index.astype(int), "count": dist.to_numpy()})
    fed["share"] = _share(fed["count"])
    tables["first_error_position"] = fed
    tables["errors_by_step_type"] = d.step_types
    cs = e.dropna(subset=["severity"])
    ct = pd.crosstab(cs["category"].astype(str), cs["severity"].astype(str)) if len(cs) else pd.DataFrame()
    if len(ct):
        ct = ct[[c for c in d.severity_order if c in ct.columns]]
    ct.index.name = "category"
    tables["category_by_severity"] = ct.reset_index() if len(ct) else pd.DataFrame({"category": []})
    tables["_top"] = top
    return tables


# ---------------------------------------------------------------- plots

def figure(w: float = 8, h: float = 4):
    # The object API with an explicit Agg canvas: no pyplot global state, no backend switch.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def png(fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _empty(ax, msg: str = "no data") -> None:
    ax.text(0.5, 0.5, msg, ha="center", va="center", transform=ax.transAxes, color="grey")


def plot_error_positions(d: ReportData) -> bytes:
    fig = figure()
    ax = fig.add_subplot()
    pos = d.errors["position"].to_numpy()
    if len(pos):
        ax.hist(pos, bins=20, range=(0, 1), edgecolor="black", alpha=0.75)
    else:
        _empty(ax, "no errors")
    ax.set_xlim(0, 1)
    ax.set_xlabel("position in trace (0 = first step, 1 = last step)")
    ax.set_ylabel("errors")
    ax.set_title("Where errors occur")
    return png(fig)


def plot_final_scores(d: ReportData) -> bytes:
    fig = figure()
    ax = fig.add_subplot()
    t = d.traces
    if len(t):
        groups = [(o, t.loc[t["outcome"] == o, "final_score"].to_numpy()) for o in d.outcome_order]
        groups = [(o, g) for o, g in groups if len(g)]
        lo, hi = float(t["final_score"].min()), float(t["final_score"].max())
        bins = np.linspace(lo, hi if hi > lo else lo + 1, 21)
        ax.hist([g for _, g in groups], bins=bins, stacked=True, label=[str(o) for o, _ in groups], edgecolor="black")
        ax.legend(title=d.outcome_key)
    else:
        _empty(ax)
    ax.set_xlabel("final score")
    ax.set_ylabel("annotations")
    ax.set_title("Final-score distribution")
    return png(fig)


def plot_running_scores(d: ReportData, x: str = "position") -> bytes:
    fig = figure(8, 4.5)
    ax = fig.add_subplot()
    t = d.traces
    curves = d.curves_pos if x == "position" else d.curves_step
    xs = POSITION_GRID if x == "position" else np.arange(MAX_CURVE_STEPS)
    drawn = False
    import warnings

    for o in d.outcome_order:
        mask = (t["outcome"] == o).to_numpy()
        if not mask.any():
            continue
        c = curves[mask]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns past the longest trace
            q = np.nanpercentile(c, [25, 50, 75], axis=0)
        keep = ~np.isnan(q[1])
        line, = ax.plot(xs[keep], q[1][keep], label=f"{o} (n={int(mask.sum())})")
        ax.fill_between(xs[keep], q[0][keep], q[2][keep], alpha=0.15, color=line.get_color(), step=None)
        drawn = True
    if drawn:
        ax.legend(title=f"{d.outcome_key}: median, IQR")
    else:
        _empty(ax)
    ax.set_xlabel("position in trace (0 = start, 1 = end)" if x == "position" else "step index")
    ax.set_ylabel("running score")
    ax.set_title("Running score across traces")
    return png(fig)


def plot_heatmap(d: ReportData, table: pd.DataFrame) -> bytes:
    fig = figure(7, 0.5 + 0.45 * max(len(table), 3))
    ax = fig.add_subplot()
    if len(table) and table.shape[1] > 1:
        m = table.set_index("category")
        im = ax.imshow(m.to_numpy(), aspect="auto", cmap="Reds", vmin=0)
        ax.set_xticks(range(m.shape[1]), list(m.columns))
        ax.set_yticks(range(m.shape[0]), list(m.index))
        vmax = m.to_numpy().max() or 1
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                v = int(m.iat[i, j])
                ax.text(j, i, str(v), ha="center", va="center", color="white" if v > 0.6 * vmax else "black")
        fig.colorbar(im, ax=ax, label="errors")
    else:
        _empty(ax, "no errors with a severity")
    ax.set_title("Errors by category and severity")
    return png(fig)


# ---------------------------------------------------------------- output

TABLE_TITLES = {
    "errors_by_category": "Errors by category",
    "error_types": "Most common error types",
    "severity_distribution": "Severity distribution",
    "final_score_stats": "Final-score statistics",
    "failure_modes_by_frequency": "Failure modes by frequency",
    "failure_modes_by_impact": "Failure modes by impact (count × mean |severity weight|)",
    "first_error_summary": "First error",
    "first_error_position": "First-error step",
    "errors_by_step_type": "Errors by step type",
    "category_by_severity": "Category × severity",
    "groups": "By {by}: errors, scores and the first error",
    "group_error_rates": "By {by}: error rate per category",
    "traces_worst_first": "Traces, worst first",
    "annotators": "Annotators",
    "agreement": "Agreement between annotators",
    "first_error_agreement": "Agreement on the first error step",
    "agreement_per_annotator": "Each annotator against the majority of the others",
    "adjudication": "Adjudication list: the most disputed traces",
}
#: what a table's HTML view says under its title
TABLE_NOTES = {
    "groups": breakdown.INTERVAL_NOTE + ". first_error_position: 0 = first step, 1 = last; first_error_step: mean, "
              "as the UI numbers steps.",
    "group_error_rates": breakdown.INTERVAL_NOTE + "; error steps of the category per step.",
    "traces_worst_first": "Lowest mean final score first, then the most errors; first errors as the UI numbers steps.",
    "annotators": "Time from Label Studio's lead_time (opening the task to submitting), in seconds.",
    "agreement": "Traces with two or more annotators; one unit is one step of one trace. kappa: Cohen's for two "
                 "annotators, Fleiss' for more; the severity's alpha is ordinal.",
    "agreement_per_annotator": "Against the majority of the other annotators of each step; ties left out.",
    "adjudication": "Most disputed first (see docs/analysis.md); steps as the UI numbers them.",
}
#: tables whose HTML view shows only the first --top rows (the CSV holds all)
LIMITED = {"error_types", "failure_modes_by_frequency", "failure_modes_by_impact", "traces_worst_first"}


def comparison_tables(d: ReportData, *, task_link: Optional[Callable[[int, int], str]] = None,
                      agreement=None, resamples: int = 2000, seed: int = 0) -> dict:
    """The tables that compare: groups (with ``d.by``), traces worst first, annotators, and with an
    :class:`~.agreement.AgreementResult` the agreement and the adjudication list."""
    tables: dict = {}
    if d.by is not None:
        tables["groups"], tables["group_error_rates"] = breakdown.group_tables(
            d.traces, d.errors, d.by, resamples=resamples, seed=seed)
    tables["traces_worst_first"] = breakdown.trace_table(d.traces, task_link, d.by)
    tables["annotators"] = breakdown.annotator_table(d.traces)
    if agreement is not None and agreement.statistics:
        tables.update(_agreement_tables(agreement, d, task_link))
    return tables


def _agreement_tables(r, d: ReportData, task_link) -> dict:
    rows = []
    for key in ("correctness", "is_error", "error_category", "error_type", "severity"):
        b = r.statistics.get(key)
        if b:
            rows.append({"what": key, "units": b["units"],
                         "krippendorff_alpha": b.get("krippendorff_alpha", b.get("krippendorff_alpha_ordinal")),
                         "kappa": b.get("cohen_kappa", b.get("fleiss_kappa")),
                         "percent_agreement": b.get("percent_agreement")})
    fe = r.first_error
    first = pd.DataFrame([{"annotator_pairs": fe["pairs"], "exact": fe["exact"], f"within_{fe['k']}": fe[f"within_{fe['k']}"],
                           "both_no_error": fe["both_no_error"], "only_one_found_an_error": fe["only_one_found_an_error"]}])
    per = pd.DataFrame(r.per_annotator, columns=["annotator", "annotations", "steps_compared", "agreement_with_majority",
                                                 "kappa_with_majority", "error_rate", "majority_error_rate"])
    where = d.traces.drop_duplicates("trace_id").set_index("trace_id")[["project_id", "task_id"]] if len(d.traces) \
        else pd.DataFrame(columns=["project_id", "task_id"])

    def link(tid: str):
        if task_link is None or tid not in where.index:
            return None
        pid, task = where.at[tid, "project_id"], where.at[tid, "task_id"]
        return None if pd.isna(pid) or pd.isna(task) else task_link(int(pid), int(task))

    adj = pd.DataFrame([{k: x[k] for k in ("trace_id", "disputedness", "steps_in_dispute", "correctness_disputes",
                                           "error_type_disputes", "severity_disputes", "first_errors")}
                        | {"link": link(x["trace_id"])} for x in r.disagreements],
                       columns=["trace_id", "disputedness", "steps_in_dispute", "correctness_disputes",
                                "error_type_disputes", "severity_disputes", "first_errors", "link"])
    return {"agreement": pd.DataFrame(rows, columns=["what", "units", "krippendorff_alpha", "kappa",
                                                     "percent_agreement"]),
            "first_error_agreement": first, "agreement_per_annotator": per, "adjudication": adj}


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "–"
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(v):
            return str(v)
        text = f"{v:.3f}".rstrip("0").rstrip(".")
        return "0" if text == "-0" else text
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}" if abs(int(v)) >= 10000 else str(int(v))
    return str(v)


def _with_intervals(df: pd.DataFrame) -> pd.DataFrame:
    """A figure and its ``_low``/``_high`` bounds as one column: "0.25 [0.1, 0.4]"."""
    out = pd.DataFrame(index=df.index)
    for c in df.columns:
        if c.endswith(("_low", "_high")) and c.rsplit("_", 1)[0] in df.columns:
            continue
        if f"{c}_low" in df.columns and f"{c}_high" in df.columns:
            out[c] = [f"{_fmt(v)} [{_fmt(lo)}, {_fmt(hi)}]" if not pd.isna(v) else "–"
                      for v, lo, hi in zip(df[c], df[f"{c}_low"], df[f"{c}_high"])]
        else:
            out[c] = df[c]
    return out


def _table_view(df: pd.DataFrame, limit: Optional[int] = None) -> dict:
    """Cells for the HTML template: ``{"text"}``, and ``{"text", "href"}`` for a ``link`` column's addresses."""
    df = _with_intervals(df)
    rows = df.head(limit) if limit else df
    link = list(df.columns).index("link") if "link" in df.columns else -1

    def cell(i: int, v) -> dict:
        if i == link:
            return {"text": "open", "href": v} if isinstance(v, str) else {"text": "–"}
        return {"text": _fmt(v)}

    return {"columns": [str(c) for c in df.columns],
            "rows": [[cell(i, v) for i, v in enumerate(r)] for r in rows.itertuples(index=False, name=None)],
            "more": max(len(df) - len(rows), 0)}


@dataclass
class ReportOutput:
    directory: Path
    files: list
    tables: dict
    data: ReportData


def write_report(d: ReportData, out_dir: Union[str, Path], *, top: int = 10, curve_x: str = "position",
                 plots: bool = True, inputs: Iterable[str] = (), task_link: Optional[Callable[[int, int], str]] = None,
                 agreement=None, resamples: int = 2000, seed: int = 0) -> ReportOutput:
    """The tables (CSV, Parquet when pyarrow is there), the plots and report.html in ``out_dir``. ``task_link``
    (project id, task id -> address) links each trace to its Label Studio task; ``agreement`` (an
    :class:`~.agreement.AgreementResult`) adds the agreement and the adjudication list; ``resamples`` and ``seed``
    are the bootstrap's, for the group figures."""
    from jinja2 import Environment, PackageLoader

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = build_tables(d, top)
    top = tables.pop("_top")
    compare = comparison_tables(d, task_link=task_link, agreement=agreement, resamples=resamples, seed=seed)
    # what answers "which agent fails where" comes first; agreement after the error tables
    front = ("groups", "group_error_rates", "traces_worst_first", "annotators")
    tables = {**{k: compare[k] for k in front if k in compare}, **tables,
              **{k: v for k, v in compare.items() if k not in front}}
    files = []
    try:
        import pyarrow  # noqa: F401
        have_parquet = True
    except ImportError:
        have_parquet = False
    for name, df in tables.items():
        p = out / f"{name}.csv"
        df.to_csv(p, index=False)
        files.append(p)
        if have_parquet:
            q = out / f"{name}.parquet"
            df.to_parquet(q, index=False)
            files.append(q)
    images = {}
    if plots:
        pngs = {
            "error_positions": ("Where errors occur", plot_error_positions(d)),
            "final_scores": ("Final-score distribution", plot_final_scores(d)),
            "running_scores": ("Running score (median and interquartile range)", plot_running_scores(d, curve_x)),
            "category_severity": ("Category × severity", plot_heatmap(d, tables["category_by_severity"])),
        }
        for key, (title, data) in pngs.items():
            p = out / f"{key}.png"
            p.write_bytes(data)
            files.append(p)
            images[key] = {"title": title, "uri": "data:image/png;base64," + base64.b64encode(data).decode("ascii")}
    env = Environment(loader=PackageLoader("ls_trajeval", "templates"), autoescape=True)
    views = [
        {"key": k, "title": TABLE_TITLES.get(k, k).format(by=d.by), "note": TABLE_NOTES.get(k, ""),
         **_table_view(df, top if k in LIMITED else None)}
        for k, df in tables.items()
    ]
    html = env.get_template("report.html.j2").render(
        summary=summary_facts(d), tables=views, images=images, inputs=list(inputs),
        input_errors=[str(e) for e in d.errors_input[:200]], n_input_errors=len(d.errors_input),
    )
    p = out / "report.html"
    p.write_text(html, encoding="utf-8")
    files.append(p)
    return ReportOutput(out, files, tables, d)


def summary_facts(d: ReportData) -> list:
    t, e = d.traces, d.errors
    facts = [
        ("annotations", len(t)),
        ("traces", int(t["trace_id"].nunique()) if len(t) else 0),
        ("annotators", d.annotators),
        ("steps", int(t["n_steps"].sum()) if len(t) else 0),
        ("errors", len(e)),
        ("mean final score", float(t["final_score"].mean()) if len(t) else math.nan),
        ("median final score", float(t["final_score"].median()) if len(t) else math.nan),
    ]
    if len(e):
        cat = e["category"].value_counts()
        facts.append(("most common category", f"{cat.index[0]} ({int(cat.iloc[0])})"))
    if d.score_mismatches:
        facts.append(("final_score in file differs from recomputed", d.score_mismatches))
    if d.errors_input:
        facts.append(("rejected lines", len(d.errors_input)))
    return [(k, _fmt(v)) for k, v in facts]


def terminal_summary(out: ReportOutput, top: int = 5) -> str:
    d, tables = out.data, out.tables
    lines = ["Trajectory error report", ""]
    width = max(len(k) for k, _ in summary_facts(d))
    lines += [f"  {k:<{width}}  {v}" for k, v in summary_facts(d)]

    def block(title: str, df: pd.DataFrame, cols: list, limit: int) -> None:
        if not len(df):
            return
        lines.extend(["", title])
        sub = df[cols].head(limit)
        cells = [[_fmt(v) for v in r] for r in sub.itertuples(index=False, name=None)]
        widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(cols)]
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(cols, widths)))
        for r in cells:
            lines.append("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)))

    block("Errors by category", tables["errors_by_category"], ["category", "count", "share"], top)
    block("Top failure modes by impact", tables["failure_modes_by_impact"],
          ["category", "error_type", "count", "mean_severity_weight", "impact"], top)
    block("Final score", tables["final_score_stats"], ["group", "n", "mean", "median"], 20)
    if "groups" in tables:
        block(f"By {d.by} (95% intervals)", _with_intervals(tables["groups"]),
              [d.by, "annotations", "error_rate", "mean_final_score", "first_error_position"], 20)
    if len(tables.get("adjudication", ())):
        block("Most disputed traces", tables["adjudication"], ["trace_id", "disputedness", "steps_in_dispute"], top)
    lines += ["", f"Wrote {out.directory / 'report.html'} and {len(out.files) - 1} more files"]
    return "\n".join(lines)
