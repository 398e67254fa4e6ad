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

Deeper marks: a workbench mark made by selecting words inside a step is a region whose ``startOffset``/``endOffset``
count UTF-16 code units into the step's card text (``te_transcript``'s ``text``; a region may cross steps, its
``start``/``end`` naming the first and last); it decodes to an evidence :class:`~.labels.Span` in code points of the
step's own ``content`` (:class:`StepText` maps one into the other). Two marks linked by a relation (``{"from_id",
"to_id", "type": "relation", "direction"}``: the arrow points at the cause) give the effect's ``caused_by``; a
per-region TextArea holds the correction. The paged layout has a "caused by step #" and a correction TextArea per
step.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import Config, ErrorType
from .fields import TRANSCRIPT, Names
from .labelconfig import REVIEWED_TEXT, severity_label
from .labels import Span, StepLabel, TraceLabels, step_number
from .suggestions import is_suggestion
from .tasks import step_text
from .trace import Step


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
        start, end = int(value.get("start")), int(value.get("end", value.get("start")))  # type: ignore[arg-type]
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
        self.paged = re.compile(
            rf"^{re.escape(scheme.name)}_(correctness|type|severity|rationale|correction|caused_by)_(\d+)$")
        self.per_region = {self.names.type: "type", self.names.severity: "severity",
                           self.names.rationale: "rationale", self.names.correction: "correction"}
        self.rank = {s.name: s.deduction for s in scheme.severities}


_last_decoder: _Decoder | None = None


def _decoder(config: Config) -> _Decoder:
    global _last_decoder
    last = _last_decoder
    if last is None or last.config is not config:
        last = _last_decoder = _Decoder(config)
    return last


def _suggestion(item: Mapping, target: dict) -> None:
    """A suggestion's confidence (the per-region ``score``, a number in [0, 1]) and judge, where a result has them."""
    score = item.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 1:
        target["confidence"] = float(score)
    judge = item.get("judge")
    if isinstance(judge, str) and judge:
        target["suggested_by"] = judge


@dataclass(frozen=True, slots=True)
class StepText:
    """A workbench card's text (what a selection's offsets count in) and the step's own ``content`` in it.

    ``at`` is where ``content`` starts verbatim in ``text`` (code points), or None where the card shows a derived
    view of the step instead; the rule is the task's (see :mod:`.tasks`): a selection ``[s, e)`` of ``text`` is
    ``content[s - at : e - at]``, clipped to the content."""

    text: str
    content: str
    at: int | None

    def to_units(self, code_points: int) -> int:
        """A code-point offset into ``text`` as UTF-16 code units (how Label Studio's Paragraphs counts)."""
        return len(self.text[:code_points].encode("utf-16-le")) // 2

    def to_code_points(self, units: int) -> int:
        """A UTF-16 offset into ``text`` as code points (half a surrogate pair rounds down)."""
        if units <= 0:
            return 0
        return len(self.text.encode("utf-16-le")[:2 * units].decode("utf-16-le", errors="ignore"))

    @property
    def units(self) -> int:
        """The card text's length in UTF-16 code units (a whole-step mark's ``endOffset``)."""
        return len(self.text.encode("utf-16-le")) // 2

    def span(self, start: int, end: int) -> Span | None:
        """The part of ``content`` the code-point selection ``[start, end)`` of ``text`` covers (clipped to it), or
        None when it covers none of it."""
        if self.at is None:
            return None
        s, e = max(start - self.at, 0), min(end - self.at, len(self.content))
        return Span(s, e, self.content[s:e]) if s < e else None


def step_texts(data: Mapping, config: Config) -> list[StepText] | None:
    """Each step's :class:`StepText` from a task's ``data`` (its ``te_transcript`` and its trace), or None when the
    task has no transcript matching its trace. An entry's ``content_at`` says where the content starts; tasks made
    before it was written had the step's text (content, then an action's input) at the end of the card text."""
    transcript, steps = data.get(TRANSCRIPT), data.get(config.trace_key)
    if not isinstance(transcript, list) or not isinstance(steps, list) or len(transcript) != len(steps):
        return None
    out = []
    for entry, step in zip(transcript, steps):
        text = entry.get("text") if isinstance(entry, Mapping) else None
        content = step.get("content") if isinstance(step, Mapping) else None
        if not isinstance(text, str) or not isinstance(content, str):
            return None
        if "content_at" in entry:
            at = entry["content_at"]
            at = at if isinstance(at, int) and not isinstance(at, bool) else None
        else:
            shown = step_text(Step(step))
            at = len(text) - len(shown) if text.endswith(shown) else None
        if at is not None and text[at:at + len(content)] != content:
            at = None
        out.append(StepText(text, content, at))
    return out


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
    #: step -> ids of the results its label was read from (transcript: its regions', one per span; paged: its own)
    ids: dict[int, frozenset[str]] = field(default_factory=dict)
    #: step -> where its region lies, ``(first step, last step, startOffset, endOffset)`` (transcript)
    spans: dict[int, tuple] = field(default_factory=dict)
    #: step -> the origins Label Studio gave the results it was read from (``manual``, ``prediction``, ...)
    origins: dict[int, frozenset[str]] = field(default_factory=dict)
    #: ids of the results of every mark (also one that lost an overlap) and of every undecided suggestion
    kept: set[str] = field(default_factory=set)


def decode(result: list[Mapping], config: Config, n_steps: int, *, prediction: bool = False,
           parent: Mapping | None = None, texts: Sequence[StepText] | None = None, first_step: int = 0) -> TraceLabels:
    """Per-step labels (one per step, correct ones included) and whole-trace values of one annotation, or of a
    prediction with ``prediction``.

    A mark still labelled as a suggestion (the config's ``suggestions.label``) is a suggestion nobody decided: in a
    prediction it is the suggestion it carries (its ``correctness``, else the first error label), with the
    confidence and judge of its results (``score``, ``judge``); in an annotation it is no label of the annotator's
    (a warning says so). ``parent`` is the prediction the annotation started from (:func:`parent_prediction`):
    then each step's provenance is decided by result id (see :func:`_provenance`).

    ``texts`` (:func:`step_texts`) maps a mark on selected words to its evidence span in the step's ``content``: a
    mark covering the whole card is a whole-step mark (no span); a selection partly outside the content (in the
    card's header line, in a derived view of an action's arguments) is clipped to it; one wholly outside it is kept
    as a whole-step mark, with a warning. A region crossing steps gives each step its part. Without ``texts`` a
    mark gives no span. Relations give ``caused_by`` (their arrow points at the cause; a "bi" link takes the
    earlier mark as the cause); :func:`~.labels.resolve_causes` checks them when the record is made. A window task's
    steps (``first_step``: the index of its first step in the whole trace) are numbered from 0 as the task holds them,
    and a step number typed as a cause ("#205") is the whole trace's, as the cards show it: it is decoded to the
    window's numbering (negative for a step before the window).
    """
    reading = _read(result, config, n_steps, prediction=prediction, texts=texts, first_step=first_step)
    labels = TraceLabels(reading.steps, reading.whole, reading.warnings)
    if parent is not None and not prediction:
        suggested = _read(parent.get("result") or [], config, n_steps, prediction=True, first_step=first_step)
        version = parent.get("model_version")
        labels.rejected_suggestions = _provenance(reading, suggested, version if isinstance(version, str) else None,
                                                  config)
    return labels


def _read(result: list[Mapping], config: Config, n_steps: int, *, prediction: bool,
          texts: Sequence[StepText] | None = None, first_step: int = 0) -> _Reading:
    scheme = config.trajectory
    known = _decoder(config)
    names, vocab, paged, per_region = known.names, known.vocab, known.paged, known.per_region
    suggestion_label = config.suggestions.label
    warnings: list[str] = []
    correctness: dict[int, str] = {}
    details: dict[int, dict] = {}
    regions: dict[str, dict] = {}  # transcript: region id -> {"steps", "label", details}
    paged_ids: dict[int, set[str]] = {}
    paged_origins: dict[int, set[str]] = {}
    whole: dict[str, str | None] = {r.name: None for r in config.whole_trace}
    relations: list[Mapping] = []

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
        elif kind in ("rationale", "correction"):
            text = _text(value)
            if text:
                target[kind] = text
        elif kind == "caused_by":
            text = _text(value) or ""
            causes = []
            for token in re.split(r"[\s,;]+", text.strip()):
                number = re.fullmatch(r"#?(\d{1,9})", token)
                if number:
                    causes.append(int(number.group(1)) - 1 - first_step)  # people see #1 for step_index 0
                elif token:
                    warnings.append(f"{where}: {token!r} is not a step number (#N); ignored")
            if causes:
                target["caused_by"] = causes
        if prediction:  # an annotation's confidence and judge come from its parent (provenance), not its results
            _suggestion(item, target)

    if not isinstance(result, (list, tuple)):
        warnings.append(f"the result is {type(result).__name__}, not a list of results: nothing decoded")
        result = ()
    for item in result:
        if isinstance(item, Mapping) and item.get("type") == "relation":
            relations.append(item)
            continue
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
    # a region marks every step it spans; where regions on one step disagree, the more severe one wins
    rank = known.rank
    region_of: dict[int, str] = {}
    covering: dict[int, list[str]] = {}
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
        region["mark"] = True
        inside = range(max(span.start, 0), min(span.stop, max(n_steps, 0)))
        if span.start < 0 or span.stop > max(n_steps, 0):  # not len(): a range of 10^400 steps has none
            warnings.append(f"region {rid}: steps {span.start}-{span.stop - 1} reach beyond the trace's "
                            f"{n_steps} steps")
        for idx in inside:
            covering.setdefault(idx, []).append(rid)
            if idx in correctness:
                if _label_of(details[idx], correctness[idx]) != _label_of(region, region["correctness"]):
                    warnings.append(f"step {idx}: marked by more than one region; kept the more severe")
                if rank.get(details[idx].get("severity") or "", -1) >= rank.get(region.get("severity") or "", -1):
                    continue
            correctness[idx] = region["correctness"]
            details[idx] = {k: v for k, v in region.items() if k not in _REGION_KEYS}
            region_of[idx] = rid
    evidence = _evidence(covering, regions, texts, warnings) if texts is not None else {}
    causes = _relations(relations, regions, n_steps, warnings)

    default = scheme.correctness_default
    labels = [StepLabel(idx, default, None, None, None, None) for idx in range(n_steps)]
    for idx, label in correctness.items():
        d = details.get(idx, {})
        suggestion = d.get("confidence"), d.get("suggested_by")  # a paged correct step's too
        if label not in scheme.error_labels:
            d = {}
        # a step's other marks (more spans of it) lend what the chosen one lacks
        extra = {k: v for rid in reversed(covering.get(idx, [])) for k, v in regions[rid].items()
                 if k in ("rationale", "correction")}
        caused = sorted(set(d.get("caused_by", ())) | causes.get(idx, set())) if label in scheme.error_labels else ()
        labels[idx] = StepLabel(idx, label, d.get("error_category"), d.get("error_type"), d.get("severity"),
                                d.get("rationale") or extra.get("rationale"), confidence=suggestion[0],
                                suggested_by=suggestion[1], evidence=tuple(evidence.get(idx, ())),
                                caused_by=tuple(caused), correction=d.get("correction") or extra.get("correction"))
        if idx in region_of:
            region = regions[region_of[idx]]
            reading.ids[idx] = frozenset(covering[idx])
            reading.spans[idx] = region.get("span", (None,) * 4)
            reading.origins[idx] = frozenset(region["origins"])
        elif idx in paged_ids or idx in paged_origins:
            reading.ids[idx] = frozenset(paged_ids.get(idx, ()))
            reading.origins[idx] = frozenset(paged_origins.get(idx, ()))
            if label in scheme.error_labels:
                reading.kept |= reading.ids[idx]
    reading.steps = labels
    return reading


#: a region's keys that are not its label's details
_REGION_KEYS = frozenset({"steps", "correctness", "origins", "span", "mark"})


def _label_of(details: Mapping, correctness: str) -> tuple:
    return correctness, details.get("error_type"), details.get("severity")


def _evidence(covering: Mapping[int, list[str]], regions: Mapping[str, dict], texts: Sequence[StepText],
              warnings: list[str]) -> dict[int, list[Span]]:
    """Each marked step's evidence spans, from where its marks lie (see :func:`decode`)."""
    out: dict[int, list[Span]] = {}
    for idx, rids in covering.items():
        if idx >= len(texts):
            continue
        card = texts[idx]
        spans: set[Span] = set()
        for rid in rids:
            first, last, start, end = regions[rid].get("span", (None,) * 4)
            if first is None or start is None or end is None:
                continue
            # the selection's part on this step: from its start on its first step, to its end on its last
            s = card.to_code_points(start) if idx == first else 0
            e = card.to_code_points(end) if idx == last else len(card.text)
            if s <= 0 and e >= len(card.text):
                continue  # the whole card: a whole-step mark
            piece = card.span(s, e)
            if piece is not None:
                spans.add(piece)
            else:
                where = "a view derived from the step" if card.at is None else \
                    "the card's header or a view derived from the step"
                warnings.append(f"region {rid}: step {step_number(idx)}: the selected text {card.text[s:e]!r} is not "
                                f"in the step's own content but in {where}; kept as a whole-step mark")
        if spans:
            out[idx] = sorted(spans)
    return out


def _relations(relations: Sequence[Mapping], regions: Mapping[str, dict], n_steps: int,
               warnings: list[str]) -> dict[int, set[int]]:
    """Cause links between marks: effect step -> the steps it was caused by (each mark's first step). The arrow
    points at the cause ("right": ``to_id``; "left": ``from_id``; "bi": the mark that starts earlier)."""
    out: dict[int, set[int]] = {}
    for rel in relations:
        a, b = regions.get(str(rel.get("from_id"))), regions.get(str(rel.get("to_id")))
        if a is None or b is None or not a.get("mark") or not b.get("mark"):
            warnings.append(f"relation {rel.get('from_id')!r} -> {rel.get('to_id')!r}: links a region that is not "
                            "a mark; dropped")
            continue
        direction = rel.get("direction", "right")
        if direction == "left":
            a, b = b, a
        elif direction == "bi" and b["steps"].start > a["steps"].start:
            a, b = b, a
        for idx in a["steps"]:
            if 0 <= idx < n_steps:
                out.setdefault(idx, set()).add(b["steps"].start)
    return out


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
           origin: str = "manual", confirm_review: bool = True, suggested: bool = False,
           texts: Sequence[StepText] | None = None, first_step: int = 0) -> list[dict]:
    """Label Studio results for ``labels``, in the shapes the labeling UI itself saves (a window task's with
    ``first_step``, see :func:`decode`).

    ``transcript`` is the task's ``te_transcript`` (the transcript layout's regions carry text offsets, in UTF-16
    code units as Label Studio counts them). ``confirm_review`` ticks the transcript's "reviewed every step" box (an
    annotator's statement, so predictions leave it to the annotator). ``suggested`` (a prediction for a workbench
    whose label config has the suggestion label, :func:`~.labelconfig.shows_suggestions`) labels each mark as an
    undecided suggestion, the correctness it suggests kept on the mark result as ``correctness``.

    Evidence spans, cause links and corrections: in the transcript layout a step with spans is one mark per span
    (each with the step's labels; its rationale and correction on the first), placed through ``texts``
    (:func:`step_texts`; without them the marks cover the whole step), a cause link a relation from the step's first
    mark to its cause's, pointing at the cause; in the paged layout the "caused by step #" and correction boxes.
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
    first_id: dict[int, str | None] = {}  # transcript: a wrong step's first mark, what relations link

    def new_id() -> str:
        return f"{prefix}{next(counter):02x}"

    def item(from_name: str, to_name: str, rtype: str, value: dict, rid: str | None = None,
             step: StepLabel | None = None, mark: bool = False) -> dict:
        out: dict[str, Any] = {"id": rid or new_id(), "from_name": from_name, "to_name": to_name, "type": rtype,
                               "origin": origin, "value": value}
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
            if step.caused_by:
                out.append(item(f"{names.caused_by}_{i}", to_name, "textarea",
                                {"text": [", ".join(step_number(c + first_step) for c in step.caused_by)]}, step=step))
            if step.correction:
                out.append(item(f"{names.correction}_{i}", to_name, "textarea", {"text": [step.correction]},
                                step=step))
        elif layout == "transcript":
            if not wrong:
                continue
            card = texts[step.step_index] if texts is not None and step.step_index < len(texts) else None
            text = card.text if card else transcript[step.step_index]["text"] if transcript else ""
            index = str(step.step_index)
            whole = (0, len(text.encode("utf-16-le")) // 2)
            places = [(card.to_units(card.at + sp.start), card.to_units(card.at + sp.end))
                      for sp in step.evidence] if card is not None and card.at is not None else []
            first_id[step.step_index] = None
            for n, (start, end) in enumerate(places or [whole]):
                span = {"start": index, "end": index, "startOffset": start, "endOffset": end}
                rid = new_id()
                if n == 0:
                    first_id[step.step_index] = rid
                mark = item(marks, "te_trace", "paragraphlabels",
                            {**span, "paragraphlabels": [suggestion if suggested else step.correctness]}, rid, step,
                            mark=True)
                if suggested:
                    mark["correctness"] = step.correctness
                out.append(mark)
                if step.severity:
                    out.append(item(severity, "te_trace", "paragraphlabels",
                                    {**span, "paragraphlabels": [step.severity]}, rid, step))
                if step.error_type:
                    out.append(item(type_, "te_trace", "choices", {**span, "choices": [step.error_type]}, rid, step))
                if n == 0 and step.rationale and with_rationale:
                    out.append(item(rationale, "te_trace", "textarea", {**span, "text": [step.rationale]}, rid, step))
                if n == 0 and step.correction:
                    out.append(item(names.correction, "te_trace", "textarea", {**span, "text": [step.correction]},
                                    rid, step))
        else:
            raise ValueError(f"unknown layout {layout!r}")
    if layout == "transcript":  # a relation as the UI saves it: no id, no names, the arrow at the cause
        for step in labels.steps:
            effect = first_id.get(step.step_index)
            for c in step.caused_by:
                cause = first_id.get(c)
                if effect and cause:
                    out.append({"from_id": effect, "to_id": cause, "type": "relation", "direction": "right"})
    for name, value in labels.whole_trace.items():
        if value is not None:
            out.append(item(name, "te_task", "choices", {"choices": [value]}))
    if config.require_all_steps and confirm_review:
        out.append(item(names.reviewed, "te_trace" if layout == "transcript" else "te_task", "choices",
                        {"choices": [REVIEWED_TEXT]}))
    return out
