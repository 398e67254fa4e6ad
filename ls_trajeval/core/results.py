"""The one place that knows Label Studio result shapes: results ⇄ per-step labels, both layouts.

Transcript layout (the workbench): a wrong step is a ParagraphLabels region ``{"start": "3", "end":
"3", ..., "paragraphlabels": ["incorrect"]}`` (step indices as strings); its severity is a second
labels result on the same region (``"paragraphlabels": ["major"]``), its error type a per-region
Choices result (``"choices": ["wrong_tool"]``) and its rationale a per-region TextArea result, all
sharing the region's ``id``. Transcript projects made before the workbench saved the type as a
Taxonomy path and the severity as Choices; both still decode. Paged layout: Repeater-expanded names,
``<scheme>_correctness_3``, ``<scheme>_type_3``, ... Whole-trace Choices are named after their
scheme in both. Decoding recognises every shape, so the same labels made in either layout give
the same :class:`TraceLabels`.
"""
from __future__ import annotations

import itertools
import re
import secrets
from collections.abc import Mapping
from typing import Any, Sequence

from .config import Config, ErrorType
from .fields import Names
from .labelconfig import REVIEWED_TEXT, severity_label
from .labels import StepLabel, TraceLabels


class _Vocab:
    """Maps whatever a result holds (alias or shown label) back to config names."""

    def __init__(self, config: Config):
        scheme = config.trajectory
        self.types: dict[str, ErrorType] = {}
        for t in scheme.types:
            self.types[t.name] = t
            self.types.setdefault(t.label, t)
        self.categories: dict[str, str] = {}
        for c in scheme.categories:
            self.categories[c.category] = c.category
            self.categories.setdefault(c.label, c.category)
        self.severities: dict[str, str] = {}
        for s in scheme.severities:
            self.severities[s.name] = s.name
            self.severities.setdefault(severity_label(s), s.name)
        self.correctness = set(scheme.correctness_labels)


def _first(values: Any) -> Any:
    """The first of a result's values, or None when it is not a value Label Studio would save."""
    if isinstance(values, list):
        values = values[0] if values else None
    return values if isinstance(values, (str, list)) else None


def _text(value: Mapping) -> str | None:
    text = value.get("text")
    if isinstance(text, list):
        parts = [t for t in text if isinstance(t, str)]
        return "\n".join(parts) if parts else None
    return text if isinstance(text, str) else None


def _step_range(value: Mapping) -> range | None:
    try:
        start, end = int(value.get("start")), int(value.get("end", value.get("start")))
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite float
        return None
    if end < start:
        start, end = end, start
    return range(start, end + 1)


class _Decoder:
    """What decoding needs to know of a config, worked out once per config (an export decodes every annotation of
    a project with the same one)."""

    def __init__(self, config: Config):
        scheme = config.trajectory
        self.config = config
        self.names = Names(scheme.name)
        self.vocab = _Vocab(config)
        self.paged = re.compile(rf"^{re.escape(scheme.name)}_(correctness|type|severity|rationale)_(\d+)$")
        self.per_region = {self.names.type: "type", self.names.severity: "severity",
                           self.names.rationale: "rationale"}
        self.rank = {s.name: s.deduction for s in scheme.severities}


_last_decoder: _Decoder | None = None


def _decoder(config: Config) -> _Decoder:
    global _last_decoder
    last = _last_decoder
    if last is None or last.config is not config:
        last = _last_decoder = _Decoder(config)
    return last


def decode(result: list[Mapping], config: Config, n_steps: int) -> TraceLabels:
    """Per-step labels (one per step, correct ones included) and whole-trace values of one annotation."""
    scheme = config.trajectory
    known = _decoder(config)
    names, vocab, paged, per_region = known.names, known.vocab, known.paged, known.per_region
    warnings: list[str] = []
    correctness: dict[int, str] = {}
    details: dict[int, dict] = {}
    regions: dict[str, dict] = {}  # transcript: region id -> {"steps", "label", details}
    whole: dict[str, str | None] = {r.name: None for r in config.whole_trace}

    def put(target: dict, kind: str, value: Mapping, where: str) -> None:
        if kind == "correctness":
            label = _first(value.get("choices"))
            if isinstance(label, str) and label in vocab.correctness:
                target["correctness"] = label
            elif label is not None:
                warnings.append(f"{where}: unknown correctness {label!r}")
        elif kind == "label":
            label = _first(value.get("paragraphlabels") or value.get("labels"))
            if isinstance(label, str) and label in vocab.correctness:
                target["correctness"] = label
            elif label is not None:
                warnings.append(f"{where}: unknown label {label!r}")
        elif kind == "type":
            path = _first(value.get("taxonomy") or value.get("choices")) or []
            if isinstance(path, str):
                path = [path]
            path = [p for p in path if isinstance(p, str)]
            leaf = path[-1] if path else None
            etype = vocab.types.get(leaf) if isinstance(leaf, str) else None
            if etype is not None:
                target["error_type"], target["error_category"] = etype.name, etype.category
            elif path and isinstance(path[0], str) and path[0] in vocab.categories and len(path) == 1:
                target["error_category"] = vocab.categories[path[0]]
            elif path:
                warnings.append(f"{where}: unknown error type {path!r}")
        elif kind == "severity":
            sev = _first(value.get("choices") or value.get("paragraphlabels") or value.get("labels"))
            if isinstance(sev, str) and sev in vocab.severities:
                target["severity"] = vocab.severities[sev]
            elif sev is not None:
                warnings.append(f"{where}: unknown severity {sev!r}")
        elif kind == "rationale":
            text = _text(value)
            if text:
                target["rationale"] = text

    if not isinstance(result, (list, tuple)):
        warnings.append(f"the result is {type(result).__name__}, not a list of results: nothing decoded")
        result = ()
    for item in result:
        if not isinstance(item, Mapping) or not isinstance(item.get("from_name"), str):
            continue
        name = item["from_name"]
        value = item.get("value") if isinstance(item.get("value"), Mapping) else {}
        m = paged.match(name)
        if m:
            kind, idx = m.group(1), int(m.group(2))
            if idx >= n_steps:
                warnings.append(f"{name}: step {idx} is beyond the trace's {n_steps} steps")
                continue
            target: dict = {}
            put(target, kind, value, name)
            if "correctness" in target:
                correctness[idx] = target.pop("correctness")
            details.setdefault(idx, {}).update(target)
        elif name == names.marks or name in per_region:
            rid = str(item.get("id") or f"_anon{len(regions)}")
            region = regions.setdefault(rid, {"steps": None})
            steps = _step_range(value)
            if steps is not None:
                region["steps"] = steps
            kind = "label" if name == names.marks else per_region[name]
            put(region, kind, value, f"region {rid}")
            if kind == "severity" and "severity" in region and item.get("type") in ("paragraphlabels", "labels"):
                region["severity_label"] = True
        elif name in whole:
            choice = _first(value.get("choices"))
            whole[name] = choice if isinstance(choice, str) else None

    # a region marks every step it spans; where regions overlap, the more severe one wins
    rank = known.rank
    for rid, region in regions.items():
        if region.pop("severity_label", False) and "correctness" not in region:
            region["correctness"] = scheme.error_labels[0]  # a mark made with a severity alone is still a mark
        if region["steps"] is None or "correctness" not in region:
            continue  # per-region values of a region that was deleted
        span = region["steps"]
        inside = range(max(span.start, 0), min(span.stop, max(n_steps, 0)))
        if span.start < 0 or span.stop > max(n_steps, 0):  # not len(): a range of 10^400 steps has none
            warnings.append(f"region {rid}: steps {span.start}-{span.stop - 1} reach beyond the trace's "
                            f"{n_steps} steps")
        for idx in inside:
            if idx in correctness:
                warnings.append(f"step {idx}: marked by more than one region; kept the more severe")
                if rank.get(details[idx].get("severity"), -1) >= rank.get(region.get("severity"), -1):
                    continue
            correctness[idx] = region["correctness"]
            details[idx] = {k: v for k, v in region.items() if k not in ("steps", "correctness")}

    default = scheme.correctness_default
    steps = [StepLabel(idx, default, None, None, None, None) for idx in range(n_steps)]
    for idx, label in correctness.items():
        d = details.get(idx, {}) if label in scheme.error_labels else {}
        steps[idx] = StepLabel(idx, label, d.get("error_category"), d.get("error_type"), d.get("severity"),
                               d.get("rationale"))
    return TraceLabels(steps, whole, warnings)


def encode(labels: TraceLabels, config: Config, layout: str, transcript: Sequence[Mapping] | None = None,
           origin: str = "manual", confirm_review: bool = True) -> list[dict]:
    """Label Studio results for ``labels``, in the shapes the labeling UI itself saves.

    ``transcript`` is the task's ``te_transcript`` (the transcript layout's regions carry text offsets).
    ``confirm_review`` ticks the transcript's "reviewed every step" box (an annotator's statement,
    so predictions leave it to the annotator).
    """
    scheme = config.trajectory
    names = Names(scheme.name)
    # looked up once, not per step (they are properties)
    marks, correctness, type_, severity, rationale = (names.marks, names.correctness, names.type, names.severity,
                                                      names.rationale)
    errors, with_rationale = scheme.error_labels, scheme.rationale.enabled
    out: list[dict] = []
    # ids need only be unique within the result (and unlikely to repeat in another): one random prefix
    # per call and a counter after it, far cheaper than a uuid4 a region on long traces
    prefix, counter = secrets.token_hex(4), itertools.count()

    def new_id() -> str:
        return f"{prefix}{next(counter):02x}"

    def item(from_name: str, to_name: str, rtype: str, value: dict, rid: str | None = None) -> dict:
        return {"id": rid or new_id(), "from_name": from_name, "to_name": to_name, "type": rtype,
                "origin": origin, "value": value}

    for step in labels.steps:
        wrong = step.correctness in errors
        if layout == "paged":
            i = step.step_index
            to_name = "te_task"  # every per-step control names the task text (see the paged template)
            out.append(item(f"{correctness}_{i}", to_name, "choices", {"choices": [step.correctness]}))
            if not wrong:
                continue
            if step.error_type:
                out.append(item(f"{type_}_{i}", to_name, "taxonomy",
                                {"taxonomy": [[step.error_category, step.error_type]]}))
            if step.severity:
                out.append(item(f"{severity}_{i}", to_name, "choices", {"choices": [step.severity]}))
            if step.rationale and with_rationale:
                out.append(item(f"{rationale}_{i}", to_name, "textarea", {"text": [step.rationale]}))
        elif layout == "transcript":
            if not wrong:
                continue
            text = transcript[step.step_index]["text"] if transcript else ""
            i = str(step.step_index)
            span = {"start": i, "end": i, "startOffset": 0, "endOffset": len(text)}
            rid = new_id()
            out.append(item(marks, "te_trace", "paragraphlabels", {**span, "paragraphlabels": [step.correctness]}, rid))
            if step.severity:
                out.append(item(severity, "te_trace", "paragraphlabels", {**span, "paragraphlabels": [step.severity]},
                                rid))
            if step.error_type:
                out.append(item(type_, "te_trace", "choices", {**span, "choices": [step.error_type]}, rid))
            if step.rationale and with_rationale:
                out.append(item(rationale, "te_trace", "textarea", {**span, "text": [step.rationale]}, rid))
        else:
            raise ValueError(f"unknown layout {layout!r}")
    for name, value in labels.whole_trace.items():
        if value is not None:
            out.append(item(name, "te_task", "choices", {"choices": [value]}))
    if config.require_all_steps and confirm_review:
        out.append(item(names.reviewed, "te_trace" if layout == "transcript" else "te_task", "choices",
                        {"choices": [REVIEWED_TEXT]}))
    return out
