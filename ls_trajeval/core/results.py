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

Suggestions: a prediction for a workbench that has the config's suggestion label marks each step it suggests with
that label (the correctness it suggests on the mark result as ``correctness``); its confidence is each region
result's ``score`` and the judge that made it the mark's ``judge``. An annotation's provenance (``source``,
``suggested_by``, ``confidence``, ``rejected_suggestions``) comes from comparing its results with its parent
prediction's by result id (:func:`decode`'s ``parent``, found by :func:`parent_prediction`).
"""
from __future__ import annotations

import itertools
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Sequence

from .config import Config, ErrorType
from .fields import Names
from .labelconfig import REVIEWED_TEXT, severity_label
from .labels import StepLabel, TraceLabels, step_number
from .suggestions import is_suggestion


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


def _suggestion(item: Mapping, target: dict) -> None:
    """A suggestion's confidence (the per-region ``score``, a number in [0, 1]) and judge, where a result has them."""
    score = item.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 1:
        target["confidence"] = float(score)
    judge = item.get("judge")
    if isinstance(judge, str) and judge:
        target["suggested_by"] = judge


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass
class _Reading:
    """One result list read step by step, with what provenance needs besides the labels."""

    steps: list[StepLabel]
    whole: dict[str, str | None]
    warnings: list[str]
    #: step -> ids of the results its label was read from (transcript: its region's id; paged: its own results')
    ids: dict[int, frozenset[str]] = field(default_factory=dict)
    #: step -> where its region lies, ``(first step, last step, startOffset, endOffset)`` (transcript)
    spans: dict[int, tuple] = field(default_factory=dict)
    #: step -> the origins Label Studio gave the results it was read from (``manual``, ``prediction``, ...)
    origins: dict[int, frozenset[str]] = field(default_factory=dict)
    #: ids of the results of every mark (also one that lost an overlap) and of every undecided suggestion
    kept: set[str] = field(default_factory=set)


def decode(result: list[Mapping], config: Config, n_steps: int, *, prediction: bool = False,
           parent: Mapping | None = None) -> TraceLabels:
    """Per-step labels (one per step, correct ones included) and whole-trace values of one annotation, or of a
    prediction with ``prediction``.

    A mark still labelled as a suggestion (the config's ``suggestions.label``) is a suggestion nobody decided: in a
    prediction it is the suggestion it carries (its ``correctness``, else the first error label), with the
    confidence and judge of its results (``score``, ``judge``); in an annotation it is no label of the annotator's
    (a warning says so). ``parent`` is the prediction the annotation started from (:func:`parent_prediction`):
    then each step's provenance is decided by result id (see :func:`_provenance`).
    """
    reading = _read(result, config, n_steps, prediction=prediction)
    labels = TraceLabels(reading.steps, reading.whole, reading.warnings)
    if parent is not None and not prediction:
        suggested = _read(parent.get("result") or [], config, n_steps, prediction=True)
        version = parent.get("model_version")
        labels.rejected_suggestions = _provenance(reading, suggested, version if isinstance(version, str) else None,
                                                  config)
    return labels


def _read(result: list[Mapping], config: Config, n_steps: int, *, prediction: bool) -> _Reading:
    scheme = config.trajectory
    names = Names(scheme.name)
    vocab = _Vocab(config)
    suggestion_label = config.suggestions.label
    warnings: list[str] = []
    correctness: dict[int, str] = {}
    details: dict[int, dict] = {}
    regions: dict[str, dict] = {}  # transcript: region id -> {"steps", "label", details}
    paged_ids: dict[int, set[str]] = {}
    paged_origins: dict[int, set[str]] = {}
    whole: dict[str, str | None] = {r.name: None for r in config.whole_trace}
    paged = re.compile(rf"^{re.escape(scheme.name)}_(correctness|type|severity|rationale)_(\d+)$")
    per_region = {names.type: "type", names.severity: "severity", names.rationale: "rationale"}

    def put(target: dict, kind: str, value: Mapping, where: str, item: Mapping) -> None:
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
            elif label == suggestion_label:
                if prediction:  # the suggestion it stands for
                    said = item.get("correctness")
                    target["correctness"] = said if said in scheme.error_labels else scheme.error_labels[0]
                else:
                    target["undecided"] = True
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
        if prediction:  # an annotation's confidence and judge come from its parent (provenance), not its results
            _suggestion(item, target)

    if not isinstance(result, (list, tuple)):
        warnings.append(f"the result is {type(result).__name__}, not a list of results: nothing decoded")
        result = ()
    for item in result:
        if not isinstance(item, Mapping) or not isinstance(item.get("from_name"), str):
            continue
        name = item["from_name"]
        raw_value, raw_id, raw_origin = item.get("value"), item.get("id"), item.get("origin")
        value: Mapping = raw_value if isinstance(raw_value, Mapping) else {}
        rid = raw_id if isinstance(raw_id, str) and raw_id else None
        origin = raw_origin if isinstance(raw_origin, str) else "manual"
        m = paged.match(name)
        if m:
            kind, idx = m.group(1), int(m.group(2))
            if idx >= n_steps:
                warnings.append(f"{name}: step {idx} is beyond the trace's {n_steps} steps")
                continue
            target: dict = {}
            put(target, kind, value, name, item)
            if "correctness" in target:
                correctness[idx] = target.pop("correctness")
            details.setdefault(idx, {}).update(target)
            if rid is not None:
                paged_ids.setdefault(idx, set()).add(rid)
            paged_origins.setdefault(idx, set()).add(origin)
        elif name == names.marks or name in per_region:
            key = rid or f"_anon{len(regions)}"
            region = regions.setdefault(key, {"steps": None, "origins": set()})
            steps = _step_range(value)
            if steps is not None:
                region["steps"] = steps
            kind = "label" if name == names.marks else per_region[name]
            put(region, kind, value, f"region {key}", item)
            region["origins"].add(origin)
            if steps is not None:  # every result of a region repeats where it lies
                region.setdefault("span", (_int(value.get("start")), _int(value.get("end")),
                                           _int(value.get("startOffset")), _int(value.get("endOffset"))))
            if kind == "severity" and "severity" in region and item.get("type") in ("paragraphlabels", "labels"):
                region["severity_label"] = True
        elif name in whole:
            choice = _first(value.get("choices"))
            whole[name] = choice if isinstance(choice, str) else None

    reading = _Reading([], whole, warnings)
    # a region marks every step it spans; where regions overlap, the more severe one wins
    rank = {s.name: s.deduction for s in scheme.severities}
    region_of: dict[int, str] = {}
    for rid, region in regions.items():
        undecided = region.pop("undecided", False)
        if region.pop("severity_label", False) and "correctness" not in region and not undecided:
            region["correctness"] = scheme.error_labels[0]  # a mark made with a severity alone is still a mark
        if region["steps"] is None or not ("correctness" in region or undecided):
            continue  # per-region values of a region that was deleted
        reading.kept.add(rid)
        span = region["steps"]
        if undecided:
            warnings.append(f"region {rid}: step {step_number(span.start)} is still a suggestion (labelled "
                            f"{suggestion_label!r}), not a label of the annotator's")
            continue
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
            details[idx] = {k: v for k, v in region.items() if k not in ("steps", "correctness", "origins", "span")}
            region_of[idx] = rid

    default = scheme.correctness_default
    labels = [StepLabel(idx, default, None, None, None, None) for idx in range(n_steps)]
    for idx, label in correctness.items():
        d = details.get(idx, {})
        suggestion = d.get("confidence"), d.get("suggested_by")  # a paged correct step's too
        if label not in scheme.error_labels:
            d = {}
        labels[idx] = StepLabel(idx, label, d.get("error_category"), d.get("error_type"), d.get("severity"),
                                d.get("rationale"), confidence=suggestion[0], suggested_by=suggestion[1])
        if idx in region_of:
            region = regions[region_of[idx]]
            reading.ids[idx] = frozenset({region_of[idx]})
            reading.spans[idx] = region.get("span", (None,) * 4)
            reading.origins[idx] = frozenset(region["origins"])
        elif idx in paged_ids or idx in paged_origins:
            reading.ids[idx] = frozenset(paged_ids.get(idx, ()))
            reading.origins[idx] = frozenset(paged_origins.get(idx, ()))
            if label in scheme.error_labels:
                reading.kept |= reading.ids[idx]
    reading.steps = labels
    return reading


def _same_label(a: StepLabel, b: StepLabel) -> bool:
    return (a.correctness, a.error_category, a.error_type, a.severity, a.rationale) == \
        (b.correctness, b.error_category, b.error_type, b.severity, b.rationale)


def _provenance(mine: _Reading, parent: _Reading, version: str | None, config: Config) -> list[dict]:
    """Set each step's provenance in ``mine`` (an annotation) against ``parent`` (the prediction it started from);
    return the parent's suggestions the annotator removed.

    A step whose label was read from results carrying a parent result's id comes from that suggestion: ``accepted``
    when it says what the suggestion said (a relabel of an undecided mark to the error label it stood for is
    acceptance), ``edited`` when its correctness, type, severity, rationale or span differ; both name the
    suggestion's judge (else the prediction's model version) and its confidence. A step read from results Label
    Studio marks as loaded from a prediction (``origin``) whose ids match nothing is matched to the parent's
    suggestion on the same step, when no other step claimed that one. Every other step is ``human``. A parent
    mark none of whose results the annotation keeps (as a mark, or still undecided) was rejected."""
    errors = config.trajectory.error_labels
    by_id: dict[str, int] = {rid: k for k, ids in parent.ids.items() for rid in ids}
    claimed = {k for ids in mine.ids.values() for rid in ids if (k := by_id.get(rid)) is not None}

    def by_origin(i: int) -> bool:  # the prediction had no ids Label Studio could keep: origin is the hint
        return bool(mine.origins.get(i, frozenset()) & {"prediction", "prediction-changed"}) and i in parent.ids \
            and i not in claimed

    for step in mine.steps:
        i = step.step_index
        found = sorted({by_id[rid] for rid in mine.ids.get(i, ()) if rid in by_id})
        k = i if i in found or (not found and by_origin(i)) else (found[0] if found else None)
        if k is None or not is_suggestion(parent.steps[k], config.trajectory):
            continue
        suggested = parent.steps[k]
        if (step.correctness in errors) != (suggested.correctness in errors):
            continue  # a suggested mark turned correct was rejected; a step suggested correct, marked, is a new mark
        same = _same_label(step, suggested) and mine.spans.get(i) == parent.spans.get(k)
        step.source = "accepted" if same else "edited"
        step.suggested_by = suggested.suggested_by or version
        step.confidence = suggested.confidence
    rejected = []
    for k, ids in sorted(parent.ids.items()):
        suggested = parent.steps[k]
        if suggested.correctness not in errors or ids & mine.kept:
            continue
        if by_origin(k) and mine.steps[k].correctness in errors:
            continue
        rejected.append({"step_index": k, "error_type": suggested.error_type, "severity": suggested.severity,
                         "suggested_by": suggested.suggested_by or version})
    return rejected


def accepted(result: Sequence[Mapping], config: Config) -> list[dict]:
    """A prediction's results as an annotator leaves them who accepts every suggestion: each mark still labelled as a
    suggestion relabelled to the correctness it carries (else the first error label); ids and all else kept."""
    scheme = config.trajectory
    marks, suggestion = Names(scheme.name).marks, config.suggestions.label
    out = []
    for item in result:
        item = dict(item)
        value = item.get("value")
        if item.get("from_name") == marks and isinstance(value, Mapping) and \
                _first(value.get("paragraphlabels")) == suggestion:
            said = item.pop("correctness", None)
            label = said if said in scheme.error_labels else scheme.error_labels[0]
            item["value"] = {**value, "paragraphlabels": [label]}
        out.append(item)
    return out


def parent_prediction(annotation: Mapping, predictions: Sequence[Mapping],
                      model_version: str | None = None) -> Mapping | None:
    """The prediction an annotation started from, for its provenance: its ``parent_prediction``; else (Label Studio
    loses the parent when it rebuilds an annotation from a draft) the prediction whose result ids it carries the most
    of; else the latest prediction of ``model_version`` (the project's: the one the label stream prefills from);
    else None (every step is the annotator's own)."""
    found = [p for p in predictions if isinstance(p, Mapping)]
    parent = annotation.get("parent_prediction")
    for p in found:
        if parent is not None and p.get("id") == parent:
            return p
    mine = {r.get("id") for r in annotation.get("result") or [] if isinstance(r, Mapping)}
    best, shared = None, 0
    for p in sorted(found, key=lambda p: p.get("id") or 0):
        n = len(mine & {r.get("id") for r in p.get("result") or [] if isinstance(r, Mapping)} - {None})
        if n and n >= shared:
            best, shared = p, n
    if best is not None:
        return best
    if model_version:
        versions = [p for p in found if p.get("model_version") == model_version]
        return max(versions, key=lambda p: p.get("id") or 0) if versions else None
    return None


def encode(labels: TraceLabels, config: Config, layout: str, transcript: Sequence[Mapping] | None = None,
           origin: str = "manual", confirm_review: bool = True, suggested: bool = False) -> list[dict]:
    """Label Studio results for ``labels``, in the shapes the labeling UI itself saves.

    ``transcript`` is the task's ``te_transcript`` (the transcript layout's regions carry text offsets, in UTF-16
    code units as Label Studio counts them). ``confirm_review`` ticks the transcript's "reviewed every step" box (an
    annotator's statement, so predictions leave it to the annotator). ``suggested`` (a prediction for a workbench
    whose label config has the suggestion label, :func:`~.labelconfig.shows_suggestions`) labels each mark as an
    undecided suggestion, the correctness it suggests kept on the mark result as ``correctness``.
    """
    scheme = config.trajectory
    names = Names(scheme.name)
    # looked up once, not per step (they are properties)
    marks, correctness, type_, severity, rationale = (names.marks, names.correctness, names.type, names.severity,
                                                      names.rationale)
    errors, with_rationale = scheme.error_labels, scheme.rationale.enabled
    suggestion = config.suggestions.label
    out: list[dict] = []
    # ids need only be unique within the result (and unlikely to repeat in another): one random prefix
    # per call and a counter after it, far cheaper than a uuid4 a region on long traces
    prefix, counter = secrets.token_hex(4), itertools.count()

    def new_id() -> str:
        return f"{prefix}{next(counter):02x}"

    def item(from_name: str, to_name: str, rtype: str, value: dict, rid: str | None = None,
             step: StepLabel | None = None, mark: bool = False) -> dict:
        out = {"id": rid or new_id(), "from_name": from_name, "to_name": to_name, "type": rtype, "origin": origin,
               "value": value}
        # a suggestion's confidence is Label Studio's per-region score, on each of the region's results; the
        # judge that made it (merged predictions) on its mark
        if step is not None and step.confidence is not None:
            out["score"] = step.confidence
        if mark and step is not None and step.suggested_by is not None:
            out["judge"] = step.suggested_by
        return out

    for step in labels.steps:
        wrong = step.correctness in errors
        if layout == "paged":
            i = step.step_index
            to_name = "te_task"  # every per-step control names the task text (see the paged template)
            out.append(item(f"{correctness}_{i}", to_name, "choices", {"choices": [step.correctness]}, step=step,
                            mark=True))
            if not wrong:
                continue
            if step.error_type:
                out.append(item(f"{type_}_{i}", to_name, "taxonomy",
                                {"taxonomy": [[step.error_category, step.error_type]]}, step=step))
            if step.severity:
                out.append(item(f"{severity}_{i}", to_name, "choices", {"choices": [step.severity]}, step=step))
            if step.rationale and with_rationale:
                out.append(item(f"{rationale}_{i}", to_name, "textarea", {"text": [step.rationale]}, step=step))
        elif layout == "transcript":
            if not wrong:
                continue
            text = transcript[step.step_index]["text"] if transcript else ""
            i = str(step.step_index)
            span = {"start": i, "end": i, "startOffset": 0, "endOffset": len(text.encode("utf-16-le")) // 2}
            rid = new_id()
            mark = item(marks, "te_trace", "paragraphlabels",
                        {**span, "paragraphlabels": [suggestion if suggested else step.correctness]}, rid, step,
                        mark=True)
            if suggested:
                mark["correctness"] = step.correctness
            out.append(mark)
            if step.severity:
                out.append(item(severity, "te_trace", "paragraphlabels", {**span, "paragraphlabels": [step.severity]},
                                rid, step))
            if step.error_type:
                out.append(item(type_, "te_trace", "choices", {**span, "choices": [step.error_type]}, rid, step))
            if step.rationale and with_rationale:
                out.append(item(rationale, "te_trace", "textarea", {**span, "text": [step.rationale]}, rid, step))
        else:
            raise ValueError(f"unknown layout {layout!r}")
    for name, value in labels.whole_trace.items():
        if value is not None:
            out.append(item(name, "te_task", "choices", {"choices": [value]}))
    if config.require_all_steps and confirm_review:
        out.append(item(names.reviewed, "te_trace" if layout == "transcript" else "te_task", "choices",
                        {"choices": [REVIEWED_TEXT]}))
    return out
