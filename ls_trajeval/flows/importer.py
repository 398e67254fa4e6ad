"""Traces → tasks of a Label Studio project: validated line by line, batched, idempotent by trace id."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import orjson
from tqdm import tqdm

from ..converters.base import ConvertWarning
from ..core.config import Config
from ..core.fields import HEADER, META_TRACE_ID, META_WINDOW, NUMBER_FIELDS
from ..core.labelconfig import shows_suggestions
from ..core.layouts import PAGED_MAX_STEPS, layout_of
from ..core.render import Relations, header_html, link_relations, relations, render_trace
from ..core.tasks import task_data, window_tasks
from ..core.trace import ReadResult, Trace, TraceError, blank_trace_error, read_traces
from ..core.windows import Window
from ..studio import client as studio
from .convert import FormatError, convert_inputs, detect_format
from .prelabels import Prelabeler
from .projects import load_config, project_config


@dataclass
class ImportSummary:
    imported: int = 0
    skipped: int = 0  # already in the project
    rejected: int = 0
    errors: list[TraceError] = field(default_factory=list)
    long_traces: int = 0  # longer than the paged layout handles well
    paged: bool = False
    max_steps: int = 0
    linked: int = 0  # tasks whose parent's or sub-agents' tasks were linked after the import
    windows: int = 0  # window tasks imported (long traces worked in windows of steps)
    window: int = 0  # the window size the import cut long traces at (0: it did not)

    @property
    def ok(self) -> bool:
        return self.rejected == 0


def read_inputs(paths: Iterable[str | Path], config: Config) -> Iterator[ReadResult]:
    """Trace JSONL files in order; a trace id seen in an earlier file counts as a duplicate too. A file that is an
    agent log, not trace JSONL, is one error saying which format it looks like, not one per line."""
    seen: dict[str, str] = {}
    for path in paths:
        for item in read_traces(path, id_key=config.id_key, text_key=config.text_key, trace_key=config.trace_key):
            if isinstance(item, TraceError) and item.field == config.id_key and item.message == "missing":
                log = _agent_log(path)
                if log is not None:
                    yield log
                    break
            if isinstance(item, Trace):
                if item.trace_id in seen:
                    yield TraceError(str(path), None, config.id_key,
                                     f"duplicate trace_id {item.trace_id!r} (first in {seen[item.trace_id]})",
                                     item.trace_id)
                    continue
                seen[item.trace_id] = str(path)
            yield item


def _agent_log(path: str | Path) -> TraceError | None:
    """The error of a file without trace ids that format detection knows as an agent log (None when it does not)."""
    try:
        fmt = detect_format(path).name
    except FormatError:
        return None
    if fmt == "trace_jsonl":
        return None
    return TraceError(str(path), None, None, f"not trace JSONL but an agent log in the {fmt} format: import it with "
                                             f"--format auto (or --format {fmt}), which converts it on the way")


#: Label Studio takes at most 250 MB in one request; stay well below it (JSON grows a little on the wire).
MAX_BATCH_BYTES = 100 * 1024 * 1024


def sized_batches(items: Iterable[tuple[dict, int]], size: int, max_bytes: int) -> Iterator[list[dict]]:
    """Batches of at most ``size`` tasks and about ``max_bytes`` (a task bigger than that goes alone)."""
    batch: list[dict] = []
    total = 0
    for task, nbytes in items:
        if batch and total + nbytes > max_bytes:
            yield batch
            batch, total = [], 0
        batch.append(task)
        total += nbytes
        if len(batch) >= size:
            yield batch
            batch, total = [], 0
    if batch:
        yield batch


def import_traces(client, project_id: int, items: Iterable[ReadResult], config: Config, *,
                  batch_size: int = 500, progress: bool = True, max_batch_bytes: int = MAX_BATCH_BYTES,
                  on_error: Callable[[TraceError], None] | None = None,
                  prelabel: Callable[..., list[dict]] | None = None, window: int | None = None) -> ImportSummary:
    """Import every valid trace that the project does not hold yet; report the rest.

    ``prelabel`` (see :mod:`prelabels`) turns labels that came with a trace into predictions. ``window``: a trace
    longer than that many steps becomes one task per window of steps (:mod:`~ls_trajeval.core.windows`); a trace
    whose windows were partly imported (an interrupted run) gets the missing ones. By default the config's
    ``annotator_config.window_steps`` (0: whole traces), so every import into a project, ``ingest`` too, cuts alike.
    """
    if window is None:
        window = config.window_steps
    if window < 0:
        raise ValueError(f"window: a number of steps (0 for whole traces), not {window}")
    summary = ImportSummary()
    project = studio.get_project(client, project_id)
    layout = layout_of(project.get("label_config") or "")
    paged = layout == "paged"
    # an empty project (the usual first import) needs no listing at all
    existing = studio.existing_tasks(client, project_id, config.id_key) if project.get("task_number") else {}
    this_run: dict[str, str] = {}
    related: list[tuple[Relations, Trace]] = []  # parents and sub-agents among the imported traces, linked at the end
    bar = tqdm(desc="importing", unit=" traces", disable=not progress, leave=False)

    def valid() -> Iterator[tuple[dict, int]]:
        for item in items:
            if isinstance(item, TraceError):
                reject(item)
                continue
            # the readers refuse these already (located at their line); a trace handed in by a caller is checked here
            blank = blank_trace_error(item.steps, str(item.metadata.get("source_file") or "<input>"),
                                      item.metadata.get("source_line"), config.trace_key, item.trace_id)
            if blank is not None:
                reject(blank)
                continue
            have = existing.get(item.trace_id)
            if have is not None and (None in have or not window):
                summary.skipped += 1
                bar.update(1)
                continue
            if item.trace_id in this_run:  # converted inputs are not checked for duplicates by the reader
                dup = TraceError(this_run[item.trace_id], None, config.id_key,
                                 f"duplicate trace_id {item.trace_id!r} in this import", item.trace_id)
                reject(dup)
                continue
            this_run[item.trace_id] = str(item.metadata.get("source_file") or "<input>")
            n = len(item.steps)
            summary.max_steps = max(summary.max_steps, n)
            if n > PAGED_MAX_STEPS:
                summary.long_traces += 1
            parts: list[tuple[Window | None, dict]] = (window_tasks(item, config, layout, window) if window
                                                       else [(None, task_data(item, config, layout))])
            if have:  # the windows an interrupted import left out
                if {None if w is None else w.index for w, _ in parts} <= have:
                    summary.skipped += 1
                    bar.update(1)
                    continue
                parts = [(w, data) for w, data in parts if w is not None and w.index not in have]
            rel = relations(item)
            if rel:
                related.append((rel, item))
            tasks = []
            for w, data in parts:
                task: dict = {"data": data, "meta": {META_TRACE_ID: item.trace_id}}
                if w is not None:
                    task["meta"][META_WINDOW] = w.index
                if prelabel is not None:
                    predictions = prelabel(item, data, w)
                    if predictions:
                        task["predictions"] = predictions
                try:
                    tasks.append((task, len(orjson.dumps(task))))
                except TypeError as exc:  # lone surrogates (a "\\ud800" escape) cannot be sent as UTF-8
                    reject(TraceError(this_run[item.trace_id], None, None, f"trace {item.trace_id!r} cannot be sent "
                                      f"to Label Studio: {exc}", item.trace_id))
                    break
            else:
                summary.windows += sum(1 for w, _ in parts if w is not None)
                yield from tasks

    lock = threading.Lock()  # refusals are reported from the sending thread

    def reject(err: TraceError) -> None:
        with lock:
            _reject(err)

    def _reject(err: TraceError) -> None:
        summary.rejected += 1
        summary.errors.append(err)
        if on_error:
            with tqdm.external_write_mode():  # the bar steps aside, or the message lands on its line
                on_error(err)

    def refused(r: studio.Rejected) -> None:
        tid = str((r.task.get("meta") or {}).get(META_TRACE_ID))
        reject(TraceError(this_run.get(tid, "<input>"), None, None,
                          f"Label Studio refused trace {tid!r}: {r.message}", tid))

    try:
        # tasks as {"data": ..., "meta": ..., "predictions"?: [...]}
        # one batch on the wire while the next one is built: building tasks is CPU work here, sending is
        # waiting on Label Studio, so the two overlap (one request at a time, in order, as exactly-once needs)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ls-import") as sender:
            pending = None
            for batch in sized_batches(valid(), batch_size, max_batch_bytes):
                if pending is not None:
                    summary.imported += pending.result()
                pending = sender.submit(studio.import_batch, client, project_id, batch, on_rejected=refused)
                pending.add_done_callback(partial(_advance, bar, len(batch)))
            if pending is not None:
                summary.imported += pending.result()
    finally:
        bar.close()
    if summary.imported:  # the tasks' columns exist now
        studio.number_columns(client, project_id, NUMBER_FIELDS)
    summary.paged = paged
    summary.window = window
    if related:
        summary.linked = link_subagents(client, project_id, related, config, window)
    return summary


def link_subagents(client, project_id: int, related: list[tuple[Relations, Trace]], config: Config,
                   window: int = 0) -> int:
    """Give the imported traces that have a parent or sub-agents a header linking those traces' tasks in the
    project (``te_header``); returns how many tasks were updated. A related trace the project does not hold stays
    named without a link, and a parent imported earlier keeps the header it had. A trace worked in windows (longer
    than ``window``) is linked to at its first window, and keeps its windows' headers."""
    ids = studio.task_ids_by_trace(client, project_id)
    traces = {rel.trace_id: t for rel, t in related}
    updated = 0
    for trace_id, links in link_relations([rel for rel, _ in related], ids).items():
        task_id = ids.get(trace_id)
        if task_id is None or not any(link["task_id"] is not None for link in links):
            continue  # refused by Label Studio, or nothing to link: the task keeps what import gave it
        t = traces[trace_id]
        if window and len(t.steps) > window:
            continue
        studio.update_task_data(client, task_id, {HEADER: header_html(t, render_trace(t, config), links)})
        updated += 1
    return updated


@dataclass
class ImportRun:
    """What an import did: into which project, what it imported, and what conversion and prelabels said."""

    project_id: int
    created: bool
    summary: ImportSummary
    #: conversion warnings (records converted with a loss worth telling)
    warnings: list[ConvertWarning] = field(default_factory=list)
    #: the predictions made from labels that came with the traces, when asked for
    prelabeler: Prelabeler | None = None

    @property
    def ok(self) -> bool:
        return self.summary.ok and not (self.prelabeler is not None and self.prelabeler.errors)


def import_files(client, inputs: Iterable[str | Path], *, project_id: int | None = None,
                 create_title: str | None = None, config: Config | None = None, layout: str = "transcript",
                 fmt: str | None = None, prelabels: bool = False, prelabel_exports: Iterable[str | Path] = (),
                 batch_size: int = 500, jobs: int | None = None, progress: bool = True, window: int | None = None,
                 on_error: Callable[[TraceError], None] | None = None,
                 on_created: Callable[[int], None] | None = None) -> ImportRun:
    """Import trace JSONL files, or agent logs converted on the fly (``fmt``: a format name or ``auto``), into
    project ``project_id``, or into a new project ``create_title`` in ``layout``.

    ``create_title`` is used when ``project_id`` is None. ``config`` defaults to the project's embedded one (the
    shipped default for a new project). ``prelabels`` (or ``prelabel_exports``, previous exports) adds the labels
    that came with the traces as predictions. ``jobs`` processes convert files at once (default: one per CPU).
    ``window``: traces longer than that many steps are worked in windows (default: the config's, see
    :func:`import_traces`).
    Rejections go to ``on_error`` as they happen; ``on_created`` hears
    the new project's id before anything is imported.
    """
    created = project_id is None
    if project_id is None:
        config = config or load_config()
        project = studio.create_project(client, config, layout, create_title)
        project_id = int(project["id"])
        if on_created:
            on_created(project_id)
    else:
        project = studio.get_project(client, project_id)
        config = project_config(project, config)
    warnings: list[ConvertWarning] = []
    if fmt:
        items = _without_warnings(convert_inputs(list(inputs), fmt, jobs=jobs), warnings)
    else:
        items = read_inputs(inputs, config)
    prelabeler = None
    if prelabels or prelabel_exports:
        xml = project.get("label_config") or ""
        prelabeler = Prelabeler(config, layout_of(xml), list(prelabel_exports), shows_suggestions(xml, config))
        for err in prelabeler.errors:
            if on_error:
                on_error(err)
    summary = import_traces(client, project_id, items, config, batch_size=batch_size, progress=progress,
                            on_error=on_error, prelabel=prelabeler, window=window)
    return ImportRun(project_id, created, summary, warnings, prelabeler)


def _advance(bar: tqdm, n: int, _done) -> None:
    bar.update(n)


def _without_warnings(items, warnings: list) -> Iterator:
    for item in items:
        if isinstance(item, ConvertWarning):
            warnings.append(item)
        else:
            yield item
