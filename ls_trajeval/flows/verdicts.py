"""Verdicts back out: a project's labels written to the tracing tool the traces came from, step by step.

Per trace: the final score, the whole-trace labels (e.g. ``overall_success``), the number of annotators and their
agreement (the share of steps whose correctness every annotator gave alike, from
:func:`ls_trajeval.analysis.disagreement.find_disagreements`). Per step, on the span or observation the step came
from (the ``span_id`` / ``observation_id`` its metadata kept at import): its correctness with the rationale, and for
a wrong step its error type and severity. From the gold labels (``gold``: adjudicated, else unanimous, else the
aggregate, as ``export --gold``) or per annotator.

Idempotent: a local ledger (:class:`~ls_trajeval.tracing.ledger.Ledger`) remembers what each destination was sent;
an unchanged verdict is not sent again, a changed one is sent under the same identity (the tool replaces it), and
one that no longer exists (a step marked correct again, an annotation deleted) is withdrawn. A request that fails
is retried with backoff; what still fails is reported at the end and sent again by the next run.

Not to be confused with :mod:`ls_trajeval.ml.writeback`, which writes running scores into Label Studio's tasks.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from ..core.config import Config
from ..core.labels import step_number
from ..core.records import AnnotationRecord
from ..core.trace import Trace, parse_trace
from ..tracing.ledger import Ledger
from ..tracing.verdict import DeliveryError, Verdict

#: the step metadata key that holds the id of a step's span or observation, per destination
LINK_FIELD = {"phoenix": "span_id", "langfuse": "observation_id"}
GOLD = "gold"
#: who the verdicts about all annotators at once (their number and agreement) are by
EVERYONE = "ls-trajeval"
BATCH = 500


class Sink(Protocol):
    """What write-back needs of a tool's client (:class:`~ls_trajeval.tracing.phoenix.Phoenix`,
    :class:`~ls_trajeval.tracing.langfuse.Langfuse`)."""

    name: str
    requests: int

    @property
    def destination(self) -> str: ...

    def send(self, verdicts: Sequence[Verdict]) -> None: ...

    def withdraw(self, verdicts: Sequence[Verdict]) -> None: ...


@dataclass
class WritebackSummary:
    traces: int = 0  # labelled traces
    unlinked: int = 0  # labelled traces whose steps carry no id of this tool (not ingested from it)
    verdicts: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    withdrawn: int = 0
    failed: int = 0
    requests: int = 0
    failures: list[str] = field(default_factory=list)
    #: with ``dry_run``: (action, verdict) for everything that would be sent or withdrawn
    planned: list[tuple[str, Verdict]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed == 0


# ---------------------------------------------------------------- the project's labels as verdicts

@dataclass
class TraceLabels:
    """One labelled trace: its id, each step's span or observation id (None where a step has none), each
    annotator's export record (latest per annotator), with gold the gold line, and the annotators' labels as the
    analysis reads them (for their number and agreement; read from ``records`` when not given)."""

    trace_id: str
    links: list
    records: list[dict]
    gold: dict | None = None
    annotations: list[AnnotationRecord] | None = None


def labelled_traces(client: Any, project_id: int, link_field: str, *, gold: bool = False, method: str = "majority",
                    review: list[int] | None = None, config: Config | None = None) -> tuple[Config, list[TraceLabels]]:
    """The project's labelled traces with their step links (read in one pass over the project's tasks)."""
    from ..studio import client as studio
    from .export import iter_records, project_gold
    from .projects import project_config

    cfg = project_config(studio.get_project(client, project_id), config)
    links: dict[str, list] = {}

    def on_task(task: dict) -> None:
        if not task.get("annotations"):
            return
        parsed = parse_trace(task.get("data") or {}, source=f"task {task.get('id')}", id_key=cfg.id_key,
                             text_key=cfg.text_key, trace_key=cfg.trace_key)
        if isinstance(parsed, Trace):
            links[parsed.trace_id] = [_link(s, link_field) for s in parsed.steps]

    if gold:
        from ..analysis.gold import gold_line

        found = project_gold(client, project_id, cfg, method=method, review=review, on_task=on_task)
        out = []
        for g in found.judged:
            line = gold_line(g, found.settings)
            tid = line["trace_id"]
            # the annotators of this project (adjudicators sit in the review projects)
            annotations = [r for r in found.groups.get(tid, []) if r.fields.get("project_id") == project_id]
            out.append(TraceLabels(tid, links.get(tid, []), [], line, annotations))
        return cfg, out
    grouped: dict[str, dict[str, dict]] = {}
    for rec in iter_records(client, project_id, cfg, on_task=on_task):
        grouped.setdefault(rec["trace_id"], {})[_who(rec)] = rec  # the later annotation of one annotator wins
    return cfg, [TraceLabels(tid, links.get(tid, []), list(by.values())) for tid, by in grouped.items()]


def _link(step: Any, link_field: str) -> str | None:
    meta = step.get("metadata")
    value = meta.get(link_field) if isinstance(meta, dict) else None
    return str(value) if value not in (None, "") else None


def trace_verdicts(t: TraceLabels, config: Config) -> list[Verdict]:
    """Every verdict of one trace: per labelling (each annotator's, or the gold) its trace and step verdicts, and
    the number of annotators and their agreement."""
    from ..analysis.settings import from_config

    settings = from_config(config)
    labellings = [(GOLD, t.gold)] if t.gold is not None else [(_who(r), r) for r in t.records]
    out: list[Verdict] = []
    for who, rec in labellings:
        out.extend(_record_verdicts(t, who, rec, config, settings))
    annotations = t.annotations if t.annotations is not None else _read(t.records, config)
    n = len(annotations)
    out.append(Verdict(f"{t.trace_id}/{EVERYONE}/annotators", t.trace_id, None, "annotators", EVERYONE, score=float(n)))
    if n >= 2:
        out.append(_agreement(t.trace_id, annotations, settings))
    return out


def _read(records: list[dict], config: Config) -> list[AnnotationRecord]:
    from .export import read_back

    return [rec for rec in (read_back(r, config) for r in records) if isinstance(rec, AnnotationRecord)]


def _who(rec: dict) -> str:
    return str(rec.get("annotator") or f"annotator_{rec.get('annotator_id')}")


def _record_verdicts(t: TraceLabels, who: str, rec: dict, config: Config, settings: Any) -> Iterator[Verdict]:
    scheme = config.trajectory
    weights = scheme.weights
    where = {"project_id": rec.get("project_id"), "task_id": rec.get("task_id")}
    if rec.get("final_score") is not None:
        yield Verdict(f"{t.trace_id}/{who}/final_score", t.trace_id, None, "final_score", who,
                      score=float(rec["final_score"]), metadata=where)
    for radio in config.whole_trace:
        value = rec.get(radio.name)
        if isinstance(value, str) and value:
            yield Verdict(f"{t.trace_id}/{who}/{radio.name}", t.trace_id, None, radio.name, who, label=value,
                          metadata=where)
    for e in rec.get(rec.get("scheme") or scheme.name) or []:
        i = e["step_index"]
        span = t.links[i] if i < len(t.links) else None
        if span is None:
            continue
        correctness = e.get("correctness") or scheme.correctness_default
        wrong = settings.is_error(correctness)
        meta = {**where, "step_index": i, "step": step_number(i), "step_type": e.get("step_type")}
        base = f"{t.trace_id}/{who}/{step_number(i)}"
        yield Verdict(f"{base}/correctness", t.trace_id, span, "correctness", who, label=correctness,
                      score=0.0 if wrong and correctness not in settings.partial_labels else
                      0.5 if wrong else 1.0, explanation=e.get("rationale") or None, metadata=meta)
        if wrong and e.get("error_type"):
            yield Verdict(f"{base}/error_type", t.trace_id, span, "error_type", who, label=e["error_type"],
                          explanation=e.get("rationale") or None,
                          metadata={**meta, "error_category": e.get("error_category")})
        if wrong and e.get("severity"):
            weight = weights.get(e["severity"])
            yield Verdict(f"{base}/severity", t.trace_id, span, "severity", who, label=e["severity"],
                          score=None if weight is None else float(weight), metadata=meta)


def _agreement(trace_id: str, records: list[AnnotationRecord], settings: Any) -> Verdict:
    from ..analysis.disagreement import find_disagreements

    d = find_disagreements(records, settings)
    disputed = d.count("correctness")
    share = 1.0 - disputed / d.n_steps if d.n_steps else 1.0
    steps = ", ".join(s.number for s in d.steps if "correctness" in s.kinds)
    why = (f"{d.n_steps - disputed} of {d.n_steps} steps judged alike by all {len(records)} annotators"
           + (f"; correctness disputed at {steps}" if steps else ""))
    return Verdict(f"{trace_id}/{EVERYONE}/agreement", trace_id, None, "agreement", EVERYONE, score=round(share, 4),
                   explanation=why, metadata={"disputedness": round(d.score, 4), "disputed_steps": len(d.steps),
                                              "first_error_disputed": d.first_error_disputed})


def taxonomy_categories(config: Config) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The categorical verdicts' label sets, from the taxonomy (Langfuse's score configs), and their descriptions."""
    scheme = config.trajectory
    cats = {"correctness": list(scheme.correctness_labels), "error_type": [t.name for t in scheme.types],
            "severity": [s.name for s in scheme.severities]}
    about = {"correctness": f"ls-trajeval: a step's correctness ({scheme.name})",
             "error_type": "ls-trajeval: the error type of a wrong step", "severity": "ls-trajeval: its severity"}
    for radio in config.whole_trace:
        cats[radio.name] = [lab.name for lab in radio.labels]
        about[radio.name] = f"ls-trajeval: {radio.description or radio.name}"
    return cats, about


# ---------------------------------------------------------------- delivery

def write_back(client: Any, project_id: int, sink: Sink, ledger: Ledger, *, gold: bool = False,
               method: str = "majority", review: list[int] | None = None, config: Config | None = None,
               dry_run: bool = False, retries: int = 4, backoff: float = 1.0,
               sleep: Callable[[float], None] = time.sleep) -> WritebackSummary:
    """Send the project's verdicts that the destination does not have yet (or has in an older form), withdraw the
    ones that no longer exist; with ``dry_run`` only plan it."""
    config, traces = labelled_traces(client, project_id, LINK_FIELD[sink.name], gold=gold, method=method,
                                     review=review, config=config)
    # the ledger keeps the gold and the per-annotator verdicts apart: sending one set withdraws nothing of the other
    destination = f"{sink.destination} ({'gold' if gold else 'per annotator'}) from project {project_id}"
    return deliver(traces, config, sink, ledger, destination, dry_run=dry_run, retries=retries, backoff=backoff,
                   sleep=sleep)


def deliver(traces: Sequence[TraceLabels], config: Config, sink: Sink, ledger: Ledger, destination: str, *,
            dry_run: bool = False, retries: int = 4, backoff: float = 1.0,
            sleep: Callable[[float], None] = time.sleep) -> WritebackSummary:
    """The delivery half of :func:`write_back`: these traces' verdicts against what the ledger says ``destination``
    has."""
    summary = WritebackSummary()
    todo: list[Verdict] = []
    gone: list[Verdict] = []
    linked = [t for t in traces if any(t.links)]
    summary.traces = len(traces)
    summary.unlinked = len(traces) - len(linked)
    delivered = ledger.delivered(destination, [t.trace_id for t in linked])
    by_trace: dict[str, list[str]] = {}
    for key, (tid, _, _) in delivered.items():
        by_trace.setdefault(tid, []).append(key)
    for t in linked:
        verdicts = trace_verdicts(t, config)
        summary.verdicts += len(verdicts)
        keys = set()
        for v in verdicts:
            keys.add(v.key)
            before = delivered.get(v.key)
            if before is not None and before[1] == v.digest():
                summary.unchanged += 1
                continue
            todo.append(v)
            if dry_run:
                summary.planned.append(("update" if before is not None else "new", v))
        for key in by_trace.get(t.trace_id, ()):
            if key not in keys:
                gone.append(_from_payload(key, delivered[key][2]))
                if dry_run:
                    summary.planned.append(("withdraw", gone[-1]))
    if dry_run:
        summary.new = sum(a == "new" for a, _ in summary.planned)
        summary.updated = sum(a == "update" for a, _ in summary.planned)
        summary.withdrawn = len(gone)
        return summary
    ensure = getattr(sink, "ensure_configs", None)  # Langfuse's score configs, made from the taxonomy
    if todo and ensure is not None:
        cats, about = taxonomy_categories(config)
        error = _retrying(lambda: ensure(cats, about), retries, backoff, sleep)
        if error is not None:  # the scores go without their configs: worth telling, not worth stopping for
            summary.failures.append(f"score configs: {error}")
    start = sink.requests
    for chunk in _taken(todo, sink.send, "sending", summary, retries, backoff, sleep):
        ledger.record(destination, [(v.key, v.trace_id, v.digest(), json.dumps(v.payload())) for v in chunk])
        for v in chunk:
            if v.key in delivered:
                summary.updated += 1
            else:
                summary.new += 1
    for chunk in _taken(gone, sink.withdraw, "withdrawing", summary, retries, backoff, sleep):
        ledger.forget(destination, [v.key for v in chunk])
        summary.withdrawn += len(chunk)
    summary.requests = sink.requests - start
    return summary


def _taken(verdicts: list[Verdict], action: Callable[[Sequence[Verdict]], None], what: str,
           summary: WritebackSummary, retries: int, backoff: float,
           sleep: Callable[[float], None]) -> Iterator[list[Verdict]]:
    """The batches of ``verdicts`` that ``action`` took (retried); the others are counted and reported as failed."""
    for i in range(0, len(verdicts), BATCH):
        chunk = verdicts[i:i + BATCH]
        error = _retrying(partial(action, chunk), retries, backoff, sleep)
        if error is None:
            yield chunk
        else:
            summary.failed += len(chunk)
            summary.failures.append(f"{what} {len(chunk)} verdicts of {len({v.trace_id for v in chunk})} traces: "
                                    f"{error}")


def _from_payload(key: str, payload: str) -> Verdict:
    p = json.loads(payload)
    return Verdict(key, p["trace_id"], p["span_id"], p["name"], p["who"], p.get("label"), p.get("score"),
                   p.get("explanation"), p.get("metadata") or {})


def _retrying(fn: Callable[[], Any], retries: int, backoff: float, sleep: Callable[[float], None]) -> str | None:
    """Run ``fn``, again after 1, 2, 4, ... x ``backoff`` seconds while it fails in a way worth retrying; None when it
    succeeded, else the last error."""
    for attempt in range(retries + 1):
        try:
            fn()
            return None
        except DeliveryError as exc:
            if not exc.retry or attempt == retries:
                return str(exc)
            sleep(min(60.0, backoff * 2 ** attempt))
    return None
