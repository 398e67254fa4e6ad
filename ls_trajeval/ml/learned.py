"""The learned judge: a per-step classifier trained on a project's own submitted labels (scikit-learn, CPU).

Every step of a labelled trace is one row: its type and agent, where it sits in the trace (index, share of the
trace, the agent's how-manieth turn), what the rule detectors and the tool-error patterns say of it and of its
neighbours, what came before it (failed tool calls so far, the previous step's type and agent), its length, and
its words (TF-IDF). A logistic regression over those rows says how likely a step is wrong; its probabilities are
calibrated by Platt scaling on traces it was not fitted on (``CalibratedClassifierCV`` over folds grouped by
trace, so no trace is on both sides of a fold). Two smaller logistic regressions over the same rows, trained on the
wrong steps only, choose the error type and the severity.

The judge marks a step wrong when its calibrated probability reaches the threshold that gave the best F1 on
those held-out folds, and names the single most likely step of a trace for "the decisive step". Its rationale
says that it is the learned model, the probability, what it was trained on and which features weighed most.

Everything here is pure (no Label Studio, no files): :mod:`ls_trajeval.ml.training` feeds it labels, persists it
and swaps it in; ``benchmarks/bench_attribution.py`` cross-validates it on Who&When.
"""
from __future__ import annotations

import hashlib
import math
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.sparse import csr_matrix, hstack
from sklearn.calibration import CalibratedClassifierCV
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import precision_recall_curve
from sklearn.model_selection import StratifiedGroupKFold, cross_val_predict

from ..core.labels import StepLabel, TraceLabels
from ..core.tasks import step_text
from ..core.trace import Step, Trace
from .detectors import tool_error_reason

#: fewer labelled traces than this (or fewer with a wrong step than the next) and the judge does not train
MIN_TRACES = 3
MIN_TRACES_WITH_ERRORS = 2
#: folds of the calibration (fewer when fewer traces have a wrong step)
CALIBRATION_FOLDS = 3
#: a step's text beyond this many characters adds little and costs time
TEXT_CHARS = 3000
#: position one-hots up to this index, then one bucket
POSITIONS = 12
#: an agent's turns counted one by one up to this, then one bucket
TURNS = 5


class NotEnoughLabels(ValueError):
    """Too few labelled traces to train on: the message says how many there are and how many it takes."""


@dataclass(frozen=True)
class Example:
    """One labelled trace. ``group`` names the trace (a task): two annotations of it share it, and no fold
    splits a group."""

    trace: Trace
    labels: TraceLabels
    group: str
    #: step index -> the rule detector that flags it (the detectors' verdicts are features)
    flagged: Mapping[int, str] = field(default_factory=dict)


def agent_of(step: Step) -> str:
    """The agent a step belongs to (converters keep it in the step's metadata), lower-cased; "" when none."""
    meta = step.get("metadata")
    if isinstance(meta, Mapping):
        for key in ("agent", "name", "role"):
            value = meta.get(key)
            if isinstance(value, str) and value:
                return value.strip().lower()
    return ""


#: words that say something did not work, in any step (a tool's output or an agent's message)
FAILURE_WORDS = re.compile(r"\b(error|exception|failed|failure|unable|cannot|can't|could not|sorry|not found|"
                           r"no results?|invalid|incorrect)\b", re.I)
CODE_BLOCK = re.compile(r"```|^\s*(def|import|from \S+ import) ", re.M)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
LINK = re.compile(r"https?://")


def step_features(steps: Sequence[Step], flagged: Mapping[int, str]) -> list[dict[str, float]]:
    """One feature dict per step (names are readable: they appear in rationales). ``flagged``: step index ->
    the rule detector that flags it."""
    n = len(steps)
    agents = [agent_of(s) for s in steps]
    kinds = [str(s.type).lower() for s in steps]
    texts = [step_text(s)[:TEXT_CHARS] for s in steps]
    failed = [tool_error_reason(t) is not None for t in texts]
    failing = [FAILURE_WORDS.search(t) is not None for t in texts]
    code = [CODE_BLOCK.search(t) is not None for t in texts]
    first_code = code.index(True) if True in code else n
    turns: Counter[str] = Counter()
    failures_before = 0
    rows = []
    for i, step in enumerate(steps):
        agent, kind, text = agents[i], kinds[i], texts[i]
        turn = turns[agent]
        row = {
            f"step type {kind}": 1.0,
            f"agent {agent or '(none)'}": 1.0,
            f"agent {agent or '(none)'}, turn {min(turn, TURNS)}": 1.0,
            f"agent {agent or '(none)'}, {kind}": 1.0,
            f"step {i}" if i < POSITIONS else f"step {POSITIONS} or later": 1.0,
            f"in tenth {int(10 * i / n) + 1} of the trace": 1.0,
            "share of the trace before it": i / n,
            "log index": math.log1p(i) / 5,
            "log trace length": math.log1p(n) / 5,
            "log text length": math.log1p(len(step_text(step))) / 10,
            "agent's first turn": float(turn == 0),
            "same agent as the step before": float(i > 0 and agents[i - 1] == agent),
            "same agent as the step after": float(i + 1 < n and agents[i + 1] == agent),
            f"step before: {kinds[i - 1] if i else '(none)'}": 1.0,
            f"step after: {kinds[i + 1] if i + 1 < n else '(none)'}": 1.0,
            "a tool error here": float(failed[i]),
            "a tool error in the step after": float(i + 1 < n and failed[i + 1]),
            "a tool error in the step before": float(i > 0 and failed[i - 1]),
            "tool errors before it": min(failures_before, 5) / 5,
            "words of failure": float(failing[i]),
            "words of failure in the step after": float(i + 1 < n and failing[i + 1]),
            "code": float(code[i]),
            "the trace's first code": float(i == first_code),
            "before the trace's first code": float(i < first_code),
            "numbers": min(len(NUMBER.findall(text)), 50) / 50,
            "a link": float(LINK.search(text) is not None),
        }
        for offset, where in ((0, "here"), (-1, "on the step before"), (1, "on the step after")):
            name = flagged.get(i + offset)
            if name:
                row[f"rule {name} {where}"] = 1.0
        rows.append(row)
        failures_before += failed[i]
        turns[agent] += 1
    return rows


def step_texts(steps: Sequence[Step]) -> list[str]:
    # the trailing token keeps an empty step a document TF-IDF accepts
    return [step_text(s)[:TEXT_CHARS] + " __" for s in steps]


def fingerprint(examples: Sequence[Example]) -> str:
    """The same labels on the same traces give the same string (the judge's version is made from it)."""
    h = hashlib.sha1()
    for ex in sorted(examples, key=lambda e: (e.group, e.trace.trace_id)):
        h.update(f"{ex.group}\x00{ex.trace.trace_id}\x00{len(ex.trace.steps)}\x00".encode())
        for s in ex.labels.steps:
            h.update(f"{s.correctness}|{s.error_type}|{s.severity}\x00".encode())
    return h.hexdigest()


def _choice_model(rows, values: list[str | None]):
    """A classifier of ``values`` (error types, severities) over the wrong steps' rows; a constant when there is
    only one value (or none)."""
    known = [(i, v) for i, v in enumerate(values) if v]
    counts = Counter(v for _, v in known)
    if len(counts) < 2:
        return next(iter(counts), None)
    idx = [i for i, _ in known]
    model = LogisticRegression(C=1.0, max_iter=1000)
    model.fit(rows[idx], [v for _, v in known])
    return model


@dataclass
class LearnedJudge:
    """A trained judge (picklable: vectorizers, models and plain data)."""

    version: str
    features: DictVectorizer
    words: TfidfVectorizer
    wrong: CalibratedClassifierCV
    types: object  # a classifier, a constant error type, or None
    severities: object
    threshold: float
    #: the wrong label and each error type's category, from the labels it learned
    wrong_label: str
    correct_label: str
    categories: dict[str, str | None]
    trained: dict = field(default_factory=dict)

    # ------------------------------------------------------------ training
    @classmethod
    def train(cls, examples: Sequence[Example], *, base_version: str, error_labels: Sequence[str],
              seed: int = 0) -> LearnedJudge:
        """Fit on ``examples``; raises :class:`NotEnoughLabels` when they are too few. ``error_labels``: the
        correctness labels that mean wrong (the config's)."""
        started, cpu = time.monotonic(), time.process_time()
        errors = set(error_labels)
        with_errors = {ex.group for ex in examples if any(s.correctness in errors for s in ex.labels.steps)}
        groups_all = {ex.group for ex in examples}
        if len(groups_all) < MIN_TRACES or len(with_errors) < MIN_TRACES_WITH_ERRORS:
            raise NotEnoughLabels(
                f"too few labels to learn from: {len(groups_all)} labelled trace(s), {len(with_errors)} with a wrong "
                f"step; it takes {MIN_TRACES} and {MIN_TRACES_WITH_ERRORS}")
        dicts: list[dict[str, float]] = []
        texts: list[str] = []
        y: list[int] = []
        groups: list[str] = []
        types: list[str | None] = []
        severities: list[str | None] = []
        wrong_labels: Counter[str] = Counter()
        correct_labels: Counter[str] = Counter()
        categories: dict[str, str | None] = {}
        for ex in examples:
            steps = ex.trace.steps
            dicts += step_features(steps, ex.flagged)
            texts += step_texts(steps)
            for i in range(len(steps)):
                label = ex.labels.steps[i] if i < len(ex.labels.steps) else None
                y.append(int(label is not None and label.correctness in errors))
                groups.append(ex.group)
                if label is not None and label.correctness in errors:
                    wrong_labels[label.correctness] += 1
                    types.append(label.error_type or label.error_category)
                    severities.append(label.severity)
                    if label.error_type:
                        categories[label.error_type] = label.error_category
                else:
                    if label is not None:
                        correct_labels[label.correctness] += 1
                    types.append(None)
                    severities.append(None)
        features = DictVectorizer()
        words = TfidfVectorizer(min_df=2 if len(groups_all) >= 10 else 1, max_features=20000, sublinear_tf=True,
                                ngram_range=(1, 2))
        X = hstack([features.fit_transform(dicts), words.fit_transform(texts)]).tocsr()
        target = np.array(y)
        folds = min(CALIBRATION_FOLDS, len(with_errors))
        splits = list(StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
                      .split(X, target, groups))
        base = LogisticRegression(C=1.0, solver="liblinear", class_weight="balanced")
        # one regression fitted on every trace, its scores mapped to probabilities by a sigmoid fitted on the
        # scores of regressions that had not seen the trace (ensemble=False): a monotone map, so the ranking of
        # a trace's steps is the full regression's
        wrong = CalibratedClassifierCV(base, method="sigmoid", cv=splits, ensemble=False).fit(X, target)
        # the threshold is chosen on those held-out scores, calibrated the same way
        held_out = cross_val_predict(base, X, target, cv=splits, method="decision_function")
        held_out = wrong.calibrated_classifiers_[0].calibrators[0].predict(held_out)
        wrong_rows = np.flatnonzero(target)
        judge = cls(
            version="", features=features, words=words, wrong=wrong,
            types=_choice_model(X[wrong_rows], [types[i] for i in wrong_rows]),
            severities=_choice_model(X[wrong_rows], [severities[i] for i in wrong_rows]),
            threshold=_best_threshold(target, held_out),
            wrong_label=wrong_labels.most_common(1)[0][0],
            correct_label=correct_labels.most_common(1)[0][0] if correct_labels else "correct",
            categories=categories)
        judge.version = f"{base_version}-learned-{fingerprint(examples)[:8]}"
        judge.trained = {"traces": len(groups_all), "annotations": len(examples), "steps": len(target),
                         "wrong_steps": int(target.sum()), "threshold": round(judge.threshold, 4),
                         "seconds": round(time.monotonic() - started, 3),
                         "cpu_seconds": round(time.process_time() - cpu, 3)}
        return judge

    # ------------------------------------------------------------ predicting
    def _rows(self, steps: Sequence[Step], flagged: Mapping[int, str]) -> csr_matrix:
        return hstack([self.features.transform(step_features(steps, flagged)),
                       self.words.transform(step_texts(steps))]).tocsr()

    def probabilities(self, steps: Sequence[Step], flagged: Mapping[int, str] | None = None) -> np.ndarray:
        """Each step's calibrated probability of being wrong."""
        if not steps:
            return np.zeros(0)
        return self.wrong.predict_proba(self._rows(steps, flagged or {}))[:, 1]

    def decisive_step(self, steps: Sequence[Step], flagged: Mapping[int, str] | None = None) -> int | None:
        """The step most likely wrong (the earliest of equals): the judge's answer to "which step decided it"."""
        p = self.probabilities(steps, flagged)
        return int(np.argmax(p)) if len(p) else None

    def responsible_agent(self, steps: Sequence[Step], flagged: Mapping[int, str] | None = None) -> str | None:
        """The agent whose steps together hold the most probability of being wrong: with one decisive step per
        trace, the agent most likely to have made it (not always the agent of the single likeliest step)."""
        mass: dict[str, float] = {}
        for step, p in zip(steps, self.probabilities(steps, flagged)):
            agent = agent_of(step)
            if agent:
                mass[agent] = mass.get(agent, 0.0) + float(p)
        return max(mass, key=mass.__getitem__) if mass else None

    def suggest(self, steps: Sequence[Step], flagged: Mapping[int, str] | None = None) -> TraceLabels:
        """A label for every step: wrong where the calibrated probability reaches the threshold, each with its
        confidence (the probability that the label given is right) and a rationale."""
        flagged = flagged or {}
        if not steps:
            return TraceLabels([])
        X = self._rows(steps, flagged)
        p = self.wrong.predict_proba(X)[:, 1]
        marked = np.flatnonzero(p >= self.threshold)
        etypes = _choose(self.types, X, marked)
        sevs = _choose(self.severities, X, marked)
        out = [StepLabel(i, self.correct_label, confidence=round(float(1 - p[i]), 4), suggested_by=self.version)
               for i in range(len(steps))]
        for k, i in enumerate(marked):
            etype = etypes[k]
            out[i] = StepLabel(int(i), self.wrong_label, self.categories.get(etype) if etype else None, etype,
                               sevs[k], self.rationale(X, int(i), float(p[i])), confidence=round(float(p[i]), 4),
                               suggested_by=self.version)
        return TraceLabels(out)

    def rationale(self, X: csr_matrix, i: int, p: float, top: int = 3) -> str:
        """"[ls-trajeval learned <version>] ...": the probability, what the judge learned from, and the features
        that weighed most towards "wrong" for this step."""
        weights = self.wrong.calibrated_classifiers_[0].estimator.coef_[0]
        row = X.getrow(i)
        contributions = sorted(((row.data[k] * weights[j], j) for k, j in enumerate(row.indices)), reverse=True)
        names = self.feature_names
        said = [names[j] for w, j in contributions[:top] if w > 0]
        t = self.trained
        return (f"[ls-trajeval learned {self.version}] wrong with probability {p:.2f} (calibrated on held-out "
                f"traces; learned from {t.get('traces')} labelled traces, {t.get('wrong_steps')} wrong steps)"
                + (f"; weighed most: {', '.join(said)}" if said else ""))

    @cached_property
    def feature_names(self) -> list[str]:
        return list(self.features.get_feature_names_out()) + [
            f"the word{'s' if ' ' in w else ''} '{w}'" for w in self.words.get_feature_names_out()]


def _choose(model, X: csr_matrix, rows: np.ndarray) -> list:
    if len(rows) == 0:
        return []
    if model is None or isinstance(model, str):
        return [model] * len(rows)
    return [str(v) for v in model.predict(X[rows])]


def _best_threshold(y: np.ndarray, p: np.ndarray) -> float:
    """The probability from which marking a step wrong gave the best F1 on held-out steps (0.5 when none did)."""
    precision, recall, thresholds = precision_recall_curve(y, p)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)[:-1]
    if not len(thresholds) or f1.max() <= 0:
        return 0.5
    return float(thresholds[int(np.argmax(f1))])
