"""The report's aggregation: one streaming pass over the export into per-annotation and per-error tables.

Per annotation it keeps one row (scores, first error, outcome) and per *error* step one row, with categorical
columns held as integer codes; correct steps only bump counters. Running-score curves are kept resampled on a fixed
grid, so a 100k-trace export costs a few tens of megabytes, not one Python object per step.

Units: every number here is per annotation line (a trace annotated by three people counts three times), which is
what a pandas analysis of the export computes.
"""
from __future__ import annotations

import json
import math
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...core.records import AnnotationRecord
from ...core.trace import TraceError
from .. import causes
from ..codes import Codes
from ..settings import MISSING, AnalysisSettings, read, running_curve, severity_rank_order

NONE_LABEL = "(none)"
#: grid for running-score curves against normalised position
POSITION_GRID = np.linspace(0.0, 1.0, 21)
#: step-index curves are kept up to this many steps (longer traces are cut there)
MAX_CURVE_STEPS = 50
_NAN_PAD = [math.nan] * MAX_CURVE_STEPS


def _categorical(codes: Codes, arr: array, missing: str | None = None) -> pd.Categorical:
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
    """Everything the report shows, as the aggregation leaves it: per-error and per-annotation tables, curves."""
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
    by: str | None = None
    #: with ``by``: the annotations that have the key, and the trace-metadata keys seen (to suggest one)
    by_found: int = 0
    metadata_keys: list = field(default_factory=list)
    #: origin and propagated errors, root causes (:mod:`..causes`)
    causes: causes.CauseData | None = None

    def by_warning(self) -> str | None:
        """What to tell about ``by`` when some annotations lack the key (they are grouped under "(missing)")."""
        if self.by is None or self.by_found == len(self.traces):
            return None
        if self.by_found:
            return (f"{len(self.traces) - self.by_found} of {len(self.traces)} annotations have no {self.by!r}: "
                    f"they are grouped under {MISSING}")
        seen = ", ".join(self.metadata_keys[:12]) or "none"
        return (f"no annotation has {self.by!r}, in its trace metadata or as a field of its line (the trace "
                f"metadata keys there are: {seen}; or a field such as annotator): every one is under {MISSING}")


def group_value(value) -> str:
    """A metadata or field value as a group's name: text as is, other values as JSON, none as "(missing)"."""
    if value is None or value == "":
        return MISSING
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


class ReportAggregator:
    """The one pass over the export: :meth:`add` each record, then :meth:`finish`."""
    def __init__(self, settings: AnalysisSettings | None = None, by: str | None = None) -> None:
        self.s = settings or AnalysisSettings()
        self.by = by
        self.causes = causes.CauseCollector(self.s)
        self.groups = Codes()
        self.by_found = 0
        self.metadata_keys: Counter = Counter()
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
        """Keep a rejected input line (the report lists them)."""
        self.input_errors.append(err)

    def add(self, rec: AnnotationRecord) -> None:
        """Count one annotation line: a row for it, one for each of its error steps, its curves."""
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
            group = group_value(rec.value(self.by))
            self.t_group.append(self.groups.code(group))
            if group != MISSING:
                self.by_found += 1
            self.metadata_keys.update(rec.metadata.keys())
        f = rec.fields
        self.t_lead.append(_float(f.get("lead_time")))
        self.t_project.append(_int(f.get("project_id")))
        self.t_task.append(_int(f.get("task_id")))
        self._add_curves(rec, curve, s.initial_for(rec))
        self.causes.add(rec)

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
        """The tables and curves of everything added."""
        s = self.s
        sev_order = severity_rank_order(s, self.weights_seen)
        sev_order += [v for v in self.severities.values if v not in sev_order]
        traces = pd.DataFrame({
            "trace_id": _categorical(self.trace_ids, self.t_trace),
            "annotator": _categorical(self.annotators, self.t_annot),
            "n_steps": _i32(self.t_nsteps),
            "n_errors": _i32(self.t_nerrors),
            "final_score": _f64(self.t_final),
            "first_error_step": pd.array(
                [None if v < 0 else v for v in self.t_first], dtype="Int32"),
            "outcome": _categorical(self.outcomes, self.t_outcome, missing=MISSING),
            "worst_severity_weight": _f64(self.t_worst),
            "lead_time": _f64(self.t_lead),
            "project_id": _ids(self.t_project),
            "task_id": _ids(self.t_task),
        })
        if self.by is not None:
            traces["group"] = _categorical(self.groups, self.t_group)
        n_err = len(self.e_row)
        errors = pd.DataFrame({
            "row": _i32(self.e_row),
            "step_index": _i32(self.e_step),
            "position": _f64(self.e_pos),
            "step_type": _categorical(self.step_types, self.e_type, missing=NONE_LABEL),
            "correctness": _categorical(self.correctness, self.e_corr),
            "category": _categorical(self.categories, self.e_cat, missing=NONE_LABEL),
            "error_type": _categorical(self.types, self.e_etype, missing=NONE_LABEL),
            "severity": _categorical(self.severities, self.e_sev),
            "severity_weight": _f64(self.e_weight),
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
        step_types = pd.DataFrame(st_rows, columns=["step_type", "steps", "errors", "error_rate",
                                                    "mean_severity_weight"])
        step_types = step_types.sort_values(["errors", "steps", "step_type"], ascending=[False, False, True],
                                            ignore_index=True)
        n_ann = len(self.t_trace)
        cp = np.frombuffer(self.curves_pos, np.float32).reshape(n_ann, len(POSITION_GRID)) if n_ann \
            else np.zeros((0, len(POSITION_GRID)), np.float32)
        cs = np.frombuffer(self.curves_step, np.float32).reshape(n_ann, MAX_CURVE_STEPS) if n_ann \
            else np.zeros((0, MAX_CURVE_STEPS), np.float32)
        seen_out = list(self.outcomes.values)
        outcome_order = [o for o in s.outcome_order if o in seen_out] + \
            sorted(o for o in seen_out if o not in s.outcome_order)
        if (traces["outcome"] == MISSING).any():
            outcome_order.append(MISSING)
        return ReportData(
            errors=errors, traces=traces, step_types=step_types, curves_pos=cp, curves_step=cs,
            severity_order=sev_order, outcome_key=s.outcome_key, outcome_order=outcome_order,
            errors_input=list(self.input_errors), score_mismatches=self.score_mismatches,
            annotators=len(self.annotators.values), by=self.by, by_found=self.by_found,
            metadata_keys=[k for k, _ in self.metadata_keys.most_common()], causes=self.causes.finish(),
        )


def _f64(a: array) -> np.ndarray:
    """An array of doubles as a numpy array (without a copy)."""
    return np.frombuffer(a, np.float64) if len(a) else np.zeros(0)


def _i32(a: array) -> np.ndarray:
    """An array of ints as a numpy array (without a copy)."""
    return np.frombuffer(a, np.int32) if len(a) else np.zeros(0, np.int32)


def _float(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else -1


def _ids(a: array) -> pd.array:
    return pd.array([None if v < 0 else v for v in a], dtype="Int64")


def aggregate(inputs: Iterable[str], settings: AnalysisSettings | None = None,
              on_error=None, by: str | None = None) -> ReportData:
    """Everything the report shows, in one pass over the inputs; with ``by``, each annotation's group: the
    value of that trace-metadata key or record field (:meth:`AnnotationRecord.value`)."""
    agg = ReportAggregator(settings, by)
    for item in read(list(inputs), agg.s):
        if isinstance(item, TraceError):
            agg.add_error(item)
            if on_error:
                on_error(item)
        else:
            agg.add(item)
    return agg.finish()
