"""One gold label set per trace from several annotators' ``trajectory_eval`` records (pure).

Per trace, in this order:

1. **adjudicated** — an adjudicator's record, when the trace has one (the latest, if several). Who is an
   adjudicator is a parameter: any callable on a record, such as :class:`Adjudicator` (by annotator, by
   project — the review project whose annotations are the adjudicator's — or by a record flag);
2. **unanimous** — every annotator gave every step the same correctness, category, type, severity, cause
   links and evidence (and the same whole-trace labels); **single** when only one annotator labelled the trace;
3. otherwise an aggregate by the stated method, per step and per whole-trace label:
   ``majority`` — the most common label; ties go to an error over the default, to the stricter error
   label over a partial one, to the more severe severity, and otherwise to the first in sorted order;
   every tie is listed in the line's ``gold.ties``;
   ``dawid-skene`` — crowd-kit's ``DawidSkene``, fitted on all traces at once, so an annotator's
   reliability is learnt from every trace they labelled (adjudicated ones included; the adjudication
   itself is not fed in as known truth: crowd-kit 1.4.2's ``true_labels`` turned a 21-step case into
   "every step an error"). Correctness is aggregated first; the error type (category and type together) and severity
   only over the annotators who marked the step an error, and used where the gold marks one (the majority
   counts the votes of the annotators who gave the gold's correctness label, else of all who saw an error).

Each gold line has the record shape the analysis reads, with ``annotator: "gold"`` and
``gold: {method, annotators, ties}``; the rationale of a gold error step joins the rationales of the
annotators whose correctness matches it. A step no annotator lists is the default label.

The added keys: an adjudicated, single or unanimous gold carries its record's evidence, cause links and
corrections as given. An aggregate takes them, for a gold error step, from the annotators who gave the gold's
correctness label: the cause links most of them gave and the evidence most of them gave (each compared whole;
a tie goes to the first annotator's and is listed in ``ties``, as ``#4 caused_by``), and the correction most of
them wrote (a tie: the first one's). The roles and the root cause follow from the gold's own steps and links, as
in any record (the root cause is the earliest origin).
"""
from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..core.labels import StepLabel, step_number
from ..core.records import AnnotationRecord, assemble
from ..core.scoring import ScoreSummary
from .settings import AnalysisSettings, running_curve, severity_rank_order
from .trace_groups import first_error, step_labels

METHODS = ("majority", "dawid-skene")
GOLD_ANNOTATOR = "gold"


@dataclass(frozen=True)
class Adjudicator:
    """Recognises an adjudicator's record: by annotator (email or id), by project, or by a true record flag."""

    annotators: frozenset = frozenset()
    project_ids: frozenset = frozenset()
    flag: str | None = None

    def __call__(self, rec: AnnotationRecord) -> bool:
        f = rec.fields
        if rec.annotator in self.annotators or str(f.get("annotator_id")) in self.annotators:
            return True
        if f.get("project_id") is not None and f.get("project_id") in self.project_ids:
            return True
        return self.flag is not None and f.get(self.flag) is True


@dataclass
class Gold:
    """The gold record of one trace and how it was made."""

    record: AnnotationRecord
    method: str  # adjudicated | unanimous | single | majority | dawid-skene
    annotators: list
    ties: list = field(default_factory=list)  # "#N field" (majority only)
    base: AnnotationRecord | None = None  # the record whose trace fields (task, ids, metadata) the line keeps


def _step_key(st: StepLabel) -> tuple:
    return (st.correctness, st.error_category, st.error_type, st.severity, tuple(st.caused_by), tuple(st.evidence))


def _unanimous(recs: list, settings: AnalysisSettings) -> bool:
    labels = [[_step_key(s) for s in step_labels(r, settings)] for r in recs]
    whole = [r.labels for r in recs]
    return all(x == labels[0] for x in labels) and all(w == whole[0] for w in whole)


class _Ranks:
    """Tie-breaking preferences for the majority vote (lower sorts first)."""

    def __init__(self, settings: AnalysisSettings, severity_order: list):
        self.s = settings
        self.sev = {name: -i for i, name in enumerate(severity_order)}  # most severe first

    def correctness(self, label: str) -> tuple:
        return (not self.s.is_error(label), label in self.s.partial_labels, label)

    def severity(self, label) -> tuple:
        return (self.sev.get(label, 1), str(label))

    @staticmethod
    def plain(label) -> tuple:
        return (0, str(label))


def _vote(votes: list, prefer: Callable) -> tuple:
    """(winner, tied) for a list of labels."""
    counts = Counter(votes)
    top = max(counts.values())
    best = sorted((v for v, c in counts.items() if c == top), key=prefer)
    return best[0], len(best) > 1


def _dawid_skene(rows: list) -> dict:
    """task -> label from crowd-kit's DawidSkene over (task, worker, label) rows."""
    # here, not at the top: a dependency boundary. `export --gold` by majority runs on the base install, and only
    # this method needs the analysis extra (crowd-kit brings scikit-learn and transformers with it)
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    if not rows:
        return {}
    values = sorted({r[2] for r in rows}, key=repr)
    if len(values) == 1:
        return {r[0]: values[0] for r in rows}
    code = {v: i for i, v in enumerate(values)}
    tasks = sorted({r[0] for r in rows}, key=repr)
    tcode = {t: i for i, t in enumerate(tasks)}
    df = pd.DataFrame({"task": [tcode[r[0]] for r in rows], "worker": [r[1] for r in rows],
                       "label": [code[r[2]] for r in rows]})
    with warnings.catch_warnings():
        # crowd-kit 1.4 still uses pandas keywords (inplace=, copy=) that pandas 3 deprecates; harmless here
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        labels = DawidSkene(n_iter=100).fit_predict(df)
    return {tasks[int(t)]: values[int(v)] for t, v in labels.items()}


def build_gold(groups: Iterable[tuple], settings: AnalysisSettings, *, method: str = "majority",
               adjudicator: Callable[[AnnotationRecord], bool] | None = None) -> list:
    """A :class:`Gold` per (trace_id, records) group (records: one per annotator, see ``trace_groups``).

    Dawid–Skene is fitted over every group at once, so all groups are held in memory.
    """
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    groups = list(groups)
    weights: dict = {}
    for _, recs in groups:
        for r in recs:
            for k, v in settings.weights_for(r).items():
                weights.setdefault(k, v)
    ranks = _Ranks(settings, severity_rank_order(settings, weights))
    plan = []  # (trace_id, adjudicated record or None, other records)
    for tid, recs in groups:
        adj, others = None, []
        for r in recs:
            if adjudicator is not None and adjudicator(r):
                adj = r  # the latest adjudication wins
            else:
                others.append(r)
        plan.append((tid, adj, others))
    fitted = _fit_dawid_skene(plan, settings) if method == "dawid-skene" else None
    out = []
    for tid, adj, others in plan:
        base = others[0] if others else adj
        if adj is not None:
            out.append(Gold(adj, "adjudicated", [adj.annotator], base=base))
        elif len(others) == 1:
            out.append(Gold(others[0], "single", [others[0].annotator], base=base))
        elif _unanimous(others, settings):
            out.append(Gold(others[0], "unanimous", [r.annotator for r in others], base=base))
        else:
            out.append(_aggregate(tid, others, settings, ranks, fitted, method))
    return out


def _fit_dawid_skene(plan: list, settings: AnalysisSettings) -> dict:
    """field -> {task: label} from Dawid–Skene over the annotators (not the adjudicators) of every trace."""
    rows: dict = {"correctness": [], "error_type": [], "severity": [], "whole": []}
    for tid, _, others in plan:
        for r in others:
            for st in step_labels(r, settings):
                task = (tid, st.step_index)
                rows["correctness"].append((task, r.annotator, st.correctness))
                if settings.is_error(st.correctness):
                    rows["error_type"].append((task, r.annotator, (st.error_category, st.error_type)))
                    if st.severity is not None:
                        rows["severity"].append((task, r.annotator, st.severity))
            for key, value in r.labels.items():
                if value is not None:
                    rows["whole"].append(((tid, key), r.annotator, value))
    fitted = {f: _dawid_skene(rows[f]) for f in ("correctness", "error_type", "severity")}
    # whole-trace labels are fitted per scheme, so one scheme's labels never stand for another's
    fitted["whole"] = {}
    for key in sorted({t[1] for t, _, _ in rows["whole"]}):
        fitted["whole"].update(_dawid_skene([r for r in rows["whole"] if r[0][1] == key]))
    return fitted


def _aggregate(tid: str, recs: list, settings: AnalysisSettings, ranks: _Ranks, fitted: dict | None,
               method: str) -> Gold:
    per = [step_labels(r, settings) for r in recs]
    n = max(len(p) for p in per)
    ties: list = []

    def pick(field: str, task, votes: list, prefer: Callable):
        if fitted is not None and task in fitted[field]:
            return fitted[field][task]
        if not votes:  # Dawid–Skene can mark an error nobody typed: its type stays open
            return None
        winner, tied = _vote(votes, prefer)
        if tied:
            ties.append(f"{step_number(task[1])} {field}" if field != "whole" else f"{task[1]}")
        return winner

    def first_of_most(field: str | None, i: int, votes: list):
        """The most common vote, a tie going to the first annotator's (listed under ``field``, when named)."""
        if not votes:
            return None
        winner, tied = _vote(votes, lambda v: 0)  # a stable sort: the tied values in the annotators' order
        if tied and field is not None:
            ties.append(f"{step_number(i)} {field}")
        return winner

    steps = []
    for i in range(n):
        labs = [p[i] for p in per if i < len(p)]
        corr = pick("correctness", (tid, i), [s.correctness for s in labs], ranks.correctness)
        if not settings.is_error(corr):
            steps.append(StepLabel(i, corr, step_type=_first_text(labs, "step_type"),
                                   step_text=_first_text(labs, "step_text") or ""))
            continue
        # the type and severity of those who gave the gold's own label (else of anyone who saw an error)
        wrong = [s for s in labs if s.correctness == corr] or [s for s in labs if settings.is_error(s.correctness)]
        cat, typ = pick("error_type", (tid, i), [(s.error_category, s.error_type) for s in wrong], ranks.plain) \
            or (None, None)
        sevs = [s.severity for s in wrong if s.severity is not None]
        sev = pick("severity", (tid, i), sevs, ranks.severity) if sevs else None
        agree = [(r.annotator, p[i].rationale) for r, p in zip(recs, per)
                 if i < len(p) and p[i].correctness == corr and p[i].rationale]
        why = "; ".join(f"{who}: {text}" for who, text in agree) or None
        same = [s for s in labs if s.correctness == corr]
        steps.append(StepLabel(i, corr, cat, typ, sev, why, step_type=_first_text(labs, "step_type"),
                               step_text=_first_text(labs, "step_text") or "",
                               caused_by=first_of_most("caused_by", i, [tuple(s.caused_by) for s in same]) or (),
                               evidence=first_of_most("evidence", i, [tuple(s.evidence) for s in same]) or (),
                               correction=first_of_most(None, i, [s.correction for s in same if s.correction])))
    whole = {}
    for key in dict.fromkeys(k for r in recs for k in r.labels):
        votes = [r.labels.get(key) for r in recs if r.labels.get(key) is not None]
        whole[key] = pick("whole", (tid, key), votes, ranks.plain) if votes else None
    base = recs[0]
    rec = AnnotationRecord(
        source=base.source, line=base.line, trace_id=tid, task=base.task, annotator=GOLD_ANNOTATOR,
        annotation_id=None, scheme=base.scheme, steps=steps, n_steps=n, labels=whole,
        severity_weights=base.severity_weights, score_initial=base.score_initial, score_min=base.score_min,
        final_score=None)
    return Gold(rec, method, [r.annotator for r in recs], ties, base=base)


def _first_text(labs: list, attr: str) -> str | None:
    return next((getattr(s, attr) for s in labs if getattr(s, attr)), None)


def gold_line(gold: Gold, settings: AnalysisSettings) -> dict:
    """The gold as one ``trajectory_eval`` JSONL line (the record shape the export writes), pointing at the
    original task (the first annotator's line), with ``gold: {method, annotators, ties}``."""
    rec, base = gold.record, gold.base or gold.record
    steps = step_labels(rec, settings)
    curve = running_curve(rec, settings)
    weights = settings.weights_for(rec)
    wrong = [s for s in steps if settings.is_error(s.correctness)]
    order = severity_rank_order(settings, weights)
    score = ScoreSummary(
        curve=curve, final=curve[-1] if curve else settings.initial_for(rec), n_errors=len(wrong),
        first_error_step=first_error(rec, settings),
        worst_severity=max((s.severity for s in wrong if s.severity in order), key=order.index, default=None))
    f = base.fields
    head = {"trace_id": rec.trace_id, "task": base.task, "project_id": f.get("project_id"),
            "task_id": f.get("task_id"), "annotator": GOLD_ANNOTATOR, "layout": f.get("layout"),
            "metadata": base.metadata}
    line = assemble(head, rec.scheme, steps, rec.labels, score, rec.n_steps, weights, settings.initial_for(rec),
                    settings.min_for(rec), is_error=settings.is_error)
    line["gold"] = {"method": gold.method, "annotators": gold.annotators, "ties": gold.ties}
    return line
