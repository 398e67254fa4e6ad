"""What the analysis commands need to know about the config, with fallbacks from the export records themselves,
and the record stream they read through it."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.config import DEFAULT_SEVERITIES, Config
from ..core.config import load as load_config
from ..core.records import AnnotationRecord, read_records
from ..core.scoring import running_scores
from ..core.trace import TraceError

DEFAULT_SEVERITY_WEIGHTS = {name: weight for name, weight, _ in DEFAULT_SEVERITIES}
DEFAULT_CORRECT_LABELS = ("correct",)
DEFAULT_PARTIAL_LABELS = ("partially_correct",)
DEFAULT_OUTCOME_KEY = "overall_success"
MISSING = "(missing)"


@dataclass
class AnalysisSettings:
    """What the analysis needs to know about the config; all of it has export-file fallbacks."""

    correct_labels: tuple = DEFAULT_CORRECT_LABELS
    partial_labels: tuple = DEFAULT_PARTIAL_LABELS
    #: None means "use each line's own ``severity_weights``" (then the defaults).
    severity_weights: dict | None = None
    #: severity names in config order, used to order tables when known
    severity_order: tuple = ()
    score_initial: float | None = None
    score_min: float | None = None
    outcome_key: str = DEFAULT_OUTCOME_KEY
    #: outcome labels in config order, when known
    outcome_order: tuple = ()
    scheme: str | None = None
    categories: tuple = ()
    source: str | None = None

    def weights_for(self, rec: AnnotationRecord) -> dict:
        if self.severity_weights is not None:
            return self.severity_weights
        if rec.severity_weights:
            return rec.severity_weights
        return DEFAULT_SEVERITY_WEIGHTS

    def initial_for(self, rec: AnnotationRecord) -> float:
        if self.score_initial is not None:
            return self.score_initial
        return rec.score_initial if rec.score_initial is not None else 100.0

    def min_for(self, rec: AnnotationRecord) -> float:
        if self.score_min is not None:
            return self.score_min
        return rec.score_min if rec.score_min is not None else 0.0

    def is_error(self, correctness: str) -> bool:
        return correctness not in self.correct_labels


def load_settings(config_path: str | None, **overrides: Any) -> AnalysisSettings:
    """What the analysis needs from a trajectory_eval config (either dialect), loaded and validated by
    :mod:`ls_trajeval.core.config` (a ConfigError names every problem); ``overrides`` (command-line options)
    win over it."""
    s = from_config(load_config(config_path), source=str(config_path)) if config_path else AnalysisSettings()
    for k, v in overrides.items():
        if v is not None and v != ():
            setattr(s, k, v)
    return s


def from_config(c: Config, source: str | None = None) -> AnalysisSettings:
    """What the analysis needs from a loaded config (a project's embedded one, for the commands that read Label
    Studio)."""
    s = AnalysisSettings(source=source)
    t = c.trajectory
    s.scheme = t.name
    s.correct_labels = (t.correctness_default,)
    # partially_correct stays a partial label even when the config omits it: data may still carry it
    s.partial_labels = tuple(dict.fromkeys(
        [lab for lab in t.correctness_labels if lab.startswith("partial")] + list(DEFAULT_PARTIAL_LABELS)))
    s.severity_weights = dict(t.weights)
    s.severity_order = tuple(t.weights)
    s.score_initial, s.score_min = t.running_score.initial, t.running_score.min
    s.categories = tuple(cat.category for cat in t.categories)
    outcome = next((r for r in c.whole_trace if r.name == DEFAULT_OUTCOME_KEY),
                   c.whole_trace[0] if c.whole_trace else None)
    if outcome is not None:
        s.outcome_key = outcome.name
        s.outcome_order = tuple(lb.name for lb in outcome.labels)
    return s


def read(inputs: Sequence[str], settings: AnalysisSettings) -> Iterator[AnnotationRecord | TraceError]:
    """The export records of ``inputs`` as these settings read them (scheme, the label of an unmarked step)."""
    return read_records(inputs, scheme=settings.scheme, default_correctness=settings.correct_labels[0])


def running_curve(rec: AnnotationRecord, settings: AnalysisSettings) -> list:
    """Score after each annotated step, by the one score function
    (:func:`ls_trajeval.core.scoring.running_scores`)."""
    errors = tuple({st.correctness for st in rec.steps if settings.is_error(st.correctness)})
    return running_scores(rec.steps, settings.weights_for(rec), errors, settings.initial_for(rec),
                          settings.min_for(rec))


def severity_rank_order(settings: AnalysisSettings, seen_weights: dict) -> list:
    """Severity names from least to most severe (by |weight|, then config order)."""
    order = list(settings.severity_order) + [k for k in seen_weights if k not in settings.severity_order]
    pos = {k: i for i, k in enumerate(order)}
    return sorted(order, key=lambda k: (abs(seen_weights.get(k, 0.0)), pos[k]))
