"""The model: pre-annotations from the detectors, and the live running score.

Everything is decided by the YAML config the model is built from at process start, never by ``/setup``
state, so every worker process of the server answers the same. It needs no ``label-studio-ml``: our
app calls :class:`TrajevalModel` directly, and :mod:`ls_trajeval.ml.compat` hands it to label-studio-ml's
own server where that is installed.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core import results, scoring
from ..core.config import Config, humanize
from ..core.fields import Names, n_steps
from ..core.labelconfig import shows_suggestions
from ..core.labels import StepLabel, TraceLabels, step_number
from ..core.layouts import layout_of
from ..core.trace import Trace, parse_trace
from ..core.windows import Window, window_of
from . import detectors

if TYPE_CHECKING:  # scikit-learn loads only where a judge is trained or loaded
    from .learned import LearnedJudge

log = logging.getLogger(__name__)


def model_version(config: Config, active: Sequence[detectors.ActiveDetector]) -> str:
    """Changes whenever the taxonomy or the detectors change, so Label Studio re-predicts then only."""
    blob = json.dumps([config.to_dict(), [(a.detector.name, a.error_type, a.severity,
                                            sorted(getattr(a.detector, "options", {}).items())) for a in active]],
                      sort_keys=True, default=str)
    return f"ls-trajeval-{__version__}-{hashlib.sha1(blob.encode()).hexdigest()[:8]}"


class Predictor:
    """Pure prediction logic over one config (no Label Studio, no HTTP)."""

    def __init__(self, config: Config):
        self.config = config
        self.active = detectors.build(config)
        self.version = model_version(config, self.active)
        self.names = Names(config.trajectory.name)
        self.types = {t.name: t for t in config.trajectory.types}

    # ------------------------------------------------------------ helpers
    def trace_of(self, task: Mapping) -> Trace | None:
        data = raw if isinstance(raw := task.get("data"), Mapping) else {}
        c = self.config
        parsed = parse_trace(dict(data), source=f"task {task.get('id')}", id_key=c.id_key, text_key=c.text_key,
                             trace_key=c.trace_key)
        return parsed if isinstance(parsed, Trace) else None

    def n_steps(self, task: Mapping) -> int:
        return n_steps(raw if isinstance(raw := task.get("data"), Mapping) else {})

    def suggestions(self, trace: Trace, judge: LearnedJudge | None = None) -> TraceLabels:
        """The rule detectors' marks, or with a learned ``judge`` its marks (the detectors' findings among its
        features)."""
        scheme = self.config.trajectory
        wrong = scheme.error_labels[-1] if "incorrect" not in scheme.error_labels else "incorrect"
        found = detectors.findings(self.active, trace.steps, self.config)
        if judge is not None:
            return judge.suggest(trace.steps, {i: f.detector for i, f in found.items()})
        steps = []
        for i in range(len(trace.steps)):
            f = found.get(i)
            if f is None:
                steps.append(StepLabel(i, scheme.correctness_default))
                continue
            etype = self.types[f.error_type]
            steps.append(StepLabel(i, wrong, etype.category, etype.name, f.severity,
                                   f"[ls-trajeval rule {f.detector}] {f.reason}"))
        return TraceLabels(steps)

    # ------------------------------------------------------------ the two answers
    def predict(self, task: Mapping, layout: str, judge: LearnedJudge | None = None, suggested: bool = False) -> dict:
        """A pre-annotation in ``layout`` marking suspect steps (the rule detectors', or a learned ``judge``'s;
        ``suggested``: as undecided suggestions, for a workbench with the suggestion label); its score is the running
        score it gives."""
        version = judge.version if judge is not None else self.version
        trace = self.trace_of(task)
        if trace is None:
            return {"result": [], "score": float(self.config.trajectory.running_score.initial),
                    "model_version": version}
        labels = self.suggestions(trace, judge)
        data = task.get("data") or {}
        transcript = data.get("te_transcript") if isinstance(data.get("te_transcript"), list) else None
        if layout == "transcript" and (transcript is None or len(transcript) != len(trace.steps)):
            transcript = None  # offsets then default to 0..0; the region still names the step
        # no "reviewed every step" tick: the annotator confirms that, not the model
        result = results.encode(labels, self.config, layout, transcript, origin="prediction", confirm_review=False,
                                suggested=suggested, texts=results.step_texts(data, self.config))
        if layout == "transcript" and self.config.trajectory.running_score.display:
            # a task opens with the live score of its marks; undecided suggestions are none of the annotator's yet
            # (the live score counts the marks the editor sends: those with the error label), each listed with what
            # it would cost
            if suggested:
                blank = TraceLabels([StepLabel(i, self.config.trajectory.correctness_default)
                                     for i in range(len(labels.steps))])
                result += self.live_score(task, blank, pending=labels.steps)["result"]
            else:
                result += self.live_score(task, labels)["result"]
        summary = scoring.summarize(labels.steps, self.config.trajectory)
        return {"result": result, "score": summary.final, "model_version": version}

    def live_text(self, labels: TraceLabels, authors: Sequence[str] = (), pending: Sequence[StepLabel] = (),
                  window: Window | None = None) -> tuple[str, scoring.ScoreSummary]:
        """The score now, then each marked step as "#N · <step type>: <deduction> (<severity>) · <error type>", then
        each suggested mark still ``pending`` as "#N · <step type>: suggested, <deduction> (<severity>) · <type>".
        In a window task (``window``), the score of the window's marks, its steps numbered as in the whole trace."""
        scheme = self.config.trajectory
        first = window.start if window else 0
        summary = scoring.summarize(labels.steps, scheme)
        sev = {s.name: s for s in scheme.severities}

        def line(step: StepLabel, delta: float, said: str = "") -> str:
            i = step.step_index
            where = f"{step_number(first + i)} · {authors[i]}" if i < len(authors) else step_number(first + i)
            label = humanize(step.severity) if step.severity in sev else "no severity yet"
            kind = self.types[step.error_type].label if step.error_type in self.types else "no error type yet"
            shown = f"{delta:+g}".replace("-", "\u2212")  # a real minus sign; labels keep their hyphens
            return f"{where}: {said}{shown} ({label}) · {kind}"

        lines = [f"Running score now: {summary.final:g} of {scheme.running_score.initial:g}" + (
            f" (the marks of steps {step_number(window.start)}–{step_number(window.end - 1)}; the export scores the "
            "whole trace)" if window else "")]
        for step, before, after in zip(labels.steps, [scheme.running_score.initial] + summary.curve, summary.curve):
            if step.correctness in scheme.error_labels:
                lines.append(line(step, after - before))
        lines += [line(step, -sev[step.severity].deduction if step.severity in sev else 0, "suggested, ")
                  for step in pending if step.correctness in scheme.error_labels]
        return "\n".join(lines), summary

    def live(self, task: Mapping, context: Mapping) -> dict:
        """The current score of the regions in the editor, for the transcript layout's live-score TextArea."""
        regions = result if isinstance(result := context.get("result"), list) else []
        return self.live_score(task, results.decode(regions, self.config, self.n_steps(task)))

    def live_score(self, task: Mapping, labels: TraceLabels, pending: Sequence[StepLabel] = ()) -> dict:
        """The live-score TextArea's result for ``labels`` (decoded from the editor, or just suggested) and the
        suggested marks still ``pending``."""
        data = raw if isinstance(raw := task.get("data"), Mapping) else {}
        transcript = te_transcript if isinstance(te_transcript := data.get("te_transcript"), list) else []
        authors = [str(e.get("author", "")) if isinstance(e, Mapping) else "" for e in transcript]
        text, summary = self.live_text(labels, authors, pending, window_of(data))
        # it names the task text: a suggestion naming the marks' object would take on the selected labels
        item = {"id": self.names.live_score, "from_name": self.names.live_score, "to_name": "te_task",
                "type": "textarea", "value": {"text": [text]}}
        return {"result": [item], "score": summary.final, "model_version": self.version}


class TrajevalModel:
    """label-studio-ml's model protocol (one prediction per task) over :class:`Predictor`: a pre-annotation,
    or, when the editor sends its current regions as ``context``, the live score."""

    def __init__(self, predictor: Predictor):
        self.predictor = predictor

    def predict(self, tasks: list, *, label_config: str = "", context: Any = None,
                judge: LearnedJudge | None = None) -> list[dict]:
        p = self.predictor
        layout, suggested = layout_of(label_config), shows_suggestions(label_config, p.config)
        out: list[dict] = []
        for task in tasks or []:
            if not isinstance(task, Mapping):
                out.append({"result": [], "score": None, "model_version": p.version})
                continue
            try:
                if isinstance(context, Mapping) and isinstance(context.get("result"), list):
                    if layout == "transcript":
                        out.append(p.live(task, context))
                    else:  # the paged layout has no live control: the saved score shows in its header instead
                        out.append({"result": [], "score": None, "model_version": p.version})
                else:
                    out.append(p.predict(task, layout, judge, suggested))
            except Exception as exc:  # one bad task must not fail the batch; log no payload
                log.warning("task %s: prediction failed (%s)", task.get("id"), type(exc).__name__)
                out.append({"result": [], "score": None, "model_version": p.version})
        return out
