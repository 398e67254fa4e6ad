"""Converting agent logs to trace JSONL: the Python API behind ``ls-trajeval convert``.

>>> for item in convert_inputs(["logs/"], "auto"):
...     if isinstance(item, Trace): ...

``convert_inputs`` is a plain generator of :class:`Trace`, :class:`TraceError` and
:class:`ConvertWarning` values, file by file and record by record, so memory stays bounded by
one record (one session for formats that must reorder a file, such as Claude Code).

With ``jobs`` above 1 and several files, files are converted in worker processes, a few ahead of
the one being read; each worker spools its file's output to a temporary file that is streamed
back in file order and deleted, so the items, their order and the trace ids are the same as with
one process, and memory stays bounded as well.
"""
from __future__ import annotations

import contextlib
import json
import os
import struct
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Iterator, Union

import orjson

from ls_trajeval.converters.base import Converter, ConvertWarning
from ls_trajeval.converters.registry import MIN_CONFIDENCE, closest, closest_text, confidence, detect, get_converter, names
from ls_trajeval.converters.support import files
from ls_trajeval.core.trace import Step, Trace, TraceError, blank_steps, is_blank

ConvertItem = Union[Trace, TraceError, ConvertWarning]

#: two candidates closer than this are ambiguous
AMBIGUITY_MARGIN = 0.05
#: below this much input in all, starting worker processes costs more than it saves
PARALLEL_MIN_BYTES = 1 << 20


class FormatError(ValueError):
    """The format of a file cannot be told (unknown or ambiguous); the message names the candidates."""


@dataclass
class ConvertStats:
    files: int = 0
    converted: int = 0
    rejected: int = 0
    warnings: int = 0
    by_format: Counter = field(default_factory=Counter)

    def count(self, item: ConvertItem) -> None:
        if isinstance(item, Trace):
            self.converted += 1
        elif isinstance(item, TraceError):
            self.rejected += 1
        else:
            self.warnings += 1


def detect_format(path: str | Path) -> Converter:
    """The one converter for a file, or FormatError naming the candidates."""
    p = Path(path)
    try:
        sample = files.make_sample(p)
    except OSError as exc:
        raise FormatError(f"cannot read: {exc}") from None
    scored = detect(sample)
    known = ", ".join(names())
    good = [(s, c) for s, c in scored if s >= MIN_CONFIDENCE]
    if not good:
        raise FormatError(f"unknown format: the file holds {files.sample_shape(sample)}; "
                          f"{closest_text(closest(sample))}; use --format NAME (one of {known})")
    if len(good) > 1 and good[0][0] - good[1][0] < AMBIGUITY_MARGIN:
        cands = ", ".join(f"{c.name} ({s:.2f})" for s, c in good if good[0][0] - s < AMBIGUITY_MARGIN)
        raise FormatError(f"ambiguous format: candidates {cands}; use --format NAME")
    return good[0][1]


def _broken_json(p: Path) -> TraceError | None:
    """For a file no detector claims: the located JSON error when it is JSON that does not parse
    (a truncated log), which says more than "unknown format"."""
    try:
        if p.stat().st_size > files.SMALL_FILE or files.is_zip(p) or files.is_jsonl(p):
            return None
        if files.read_head(p).lstrip()[:1] not in ("{", "["):
            return None
    except OSError:
        return None
    err = files.load_json_located(p)
    if not isinstance(err, TraceError):
        return None
    return TraceError(err.source, err.line, err.field, f"{err.message}; the format cannot be told from a broken file")


def convert_file(path: str | Path, fmt: str | Converter = "auto") -> Iterator[ConvertItem]:
    """Traces, located errors and warnings of one file; never raises for bad input."""
    p = Path(path)
    if not p.exists():
        yield TraceError(str(p), None, None, "no such file")
        return
    if isinstance(fmt, Converter):
        conv = fmt
    elif fmt in (None, "", "auto"):
        try:
            conv = detect_format(p)
        except FormatError as exc:
            yield _broken_json(p) or TraceError(str(p), None, None, str(exc))
            return
    else:
        conv = get_converter(fmt)
    try:
        yield from (conv.convert(p) if fmt is conv or fmt in (None, "", "auto") else _forced(conv, p))
    except (OSError, EOFError) as exc:
        yield TraceError(str(p), None, None, f"cannot read: {exc}")
    except Exception as exc:  # a converter bug must cost one file, not the run
        yield TraceError(str(p), None, None, f"{conv.name} converter failed: {type(exc).__name__}: {exc}")


def _not_recognised(conv: Converter, p: Path) -> str | None:
    """None when ``conv``'s detector knows the file, else what the file holds and what it looks like."""
    try:
        sample = files.make_sample(p)
    except OSError:
        return None
    scored = detect(sample)
    if any(c.name == conv.name for _, c in scored):
        return None
    sure = [c.name for s, c in scored if s >= MIN_CONFIDENCE]
    near = f"it looks like {' or '.join(sure[:2])}" if sure else closest_text(closest(sample, (conv.name,)))
    return f"{near}; it holds {files.sample_shape(sample)}"


def _mostly_blank(steps: list[Step]) -> bool:
    """At least half the steps without any text (stops as soon as more than half have some)."""
    need = len(steps) // 2 + 1
    for s in steps:
        if not is_blank(s):
            need -= 1
            if not need:
                return False
    return True


def _known_by_its_head(conv: Converter, p: Path) -> bool:
    """Whether ``conv``'s detector claims the file from its first bytes alone (no second parse of the file)."""
    try:
        return confidence(conv, files.make_sample(p, whole_up_to=files.HEAD_BYTES)) > 0
    except (OSError, EOFError):
        return False


def _forced(conv: Converter, p: Path) -> Iterator[ConvertItem]:
    """A converter run by ``--format`` on a file: when its detector does not know the file and the output is
    errors or traces of mostly empty steps, nothing meaningful came out: such traces are rejected, and a
    warning says what the file looks like. (Wholly empty traces are rejected anyway, by ``finish``.)

    A file the detector knows from its head (the usual forced run, a big log) is converted with no check."""
    if _known_by_its_head(conv, p):
        yield from conv.convert(p)
        return
    source = str(p)
    unknown: str | None | bool = False  # False: not asked yet; asked at the first sign of trouble only
    hollow = errors = 0
    for item in conv.convert(p):
        if item.__class__ is TraceError:
            errors += 1
        elif isinstance(item, Trace) and _mostly_blank(item.steps):
            if unknown is False:
                unknown = _not_recognised(conv, p)
            if unknown is not None:
                hollow += 1
                rec = item.metadata.get("source_record")
                yield TraceError(source, item.metadata.get("source_line"), None if rec is None else f"[{rec}]",
                                 f"{blank_steps(item.steps)} of {len(item.steps)} steps are empty: nothing "
                                 f"meaningful came out of this record with --format {conv.name}", item.trace_id)
                continue
        yield item
    if errors and unknown is False:
        unknown = _not_recognised(conv, p)
    if unknown and (hollow or errors):
        lost = ([f"{hollow} trace(s) of mostly empty steps rejected"] if hollow else []) + (
            [f"{errors} record(s) refused"] if errors else [])
        yield ConvertWarning(source, None, f"--format {conv.name} does not recognise this file: {', '.join(lost)} "
                                           f"({unknown})")


def convert_inputs(
    inputs: Iterable[str | Path],
    fmt: str = "auto",
    stats: ConvertStats | None = None,
    jobs: int | None = None,
) -> Iterator[ConvertItem]:
    """Every file of the inputs (directories recursively, ``.gz`` and ``.eval`` zips included).

    ``fmt`` is a format name or ``"auto"`` (detected per file). Unknown names raise KeyError
    up front, before any file is read. ``jobs`` is the number of processes (default: one per
    CPU); the output is the same whatever it is.
    """
    if fmt not in (None, "", "auto"):
        get_converter(fmt)
    paths = list(files.expand_inputs(list(inputs)))
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs > 1 and len(paths) > 1 and _total_size(paths) >= PARALLEL_MIN_BYTES:
        per_file = _in_workers(paths, fmt or "auto", min(jobs, len(paths)))
    else:
        per_file = (convert_file(p, fmt) for p in paths)
    for items in per_file:
        if stats is not None:
            stats.files += 1
        for item in items:
            if stats is not None:
                stats.count(item)
                if isinstance(item, Trace):
                    stats.by_format[item.source_format if isinstance(item, SpooledTrace) else
                                    item.metadata.get("source_format", fmt)] += 1
            yield item


def _total_size(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def trace_line(trace: Trace) -> bytes:
    """A trace as its line of trace JSONL (UTF-8, newline-terminated)."""
    if trace.__class__ is SpooledTrace:
        return trace.json_line
    obj = trace.to_json()
    try:
        return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # ints beyond 64 bits, lone surrogates: the standard library writes them
        pass
    try:
        return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8: escaped, the line stays valid JSON
        return (json.dumps(obj) + "\n").encode("ascii")


def write_traces(items: Iterable[ConvertItem], fh: IO[str], on_problem=None) -> ConvertStats:
    """Write the traces as trace JSONL; pass errors and warnings to ``on_problem``; return counts."""
    stats = ConvertStats()
    # the bytes go straight to the binary buffer when there is one (no decode and re-encode)
    raw = getattr(fh, "buffer", None)
    if raw is not None:
        fh.flush()
    for item in items:
        stats.count(item)
        if isinstance(item, Trace):
            if raw is not None:
                raw.write(trace_line(item))
            else:
                fh.write(trace_line(item).decode("utf-8"))
        elif on_problem is not None:
            on_problem(item)
    return stats


# ---------------------------------------------------------------- worker processes

class SpooledTrace(Trace):
    """A trace converted in a worker process, kept as its JSONL line until something reads its fields
    (writing it needs none of them, so ``convert`` copies the line as the worker wrote it)."""

    _FIELDS = frozenset({"trace_id", "task", "steps", "metadata", "extra"})

    def __init__(self, json_line: bytes, source_format: str):  # noqa: D107 - fields are decoded lazily
        self.json_line = json_line
        self.source_format = source_format

    def __getattr__(self, name: str):
        if name not in SpooledTrace._FIELDS:
            raise AttributeError(name)
        try:
            obj = orjson.loads(self.json_line)
        except ValueError:  # what only the standard library writes and reads (lone surrogates, huge ints)
            obj = json.loads(self.json_line)
        steps = []
        for s in obj.pop("trace"):
            steps.append(Step.of(s.pop("type"), s.pop("content"), s.pop("action_input", None), s))
        self.trace_id, self.task, self.steps = obj.pop("trace_id"), obj.pop("task"), steps
        self.metadata = obj.pop("metadata", {})
        self.extra = obj
        return getattr(self, name)


_FRAME = struct.Struct("<cQ")


def _spool(path: str, fmt: str, spool: str) -> str:
    """Convert one file in a worker, writing its items to ``spool``: traces as their JSONL line, errors
    and warnings pickled, each framed by a tag and a length. Returns ``spool``."""
    import pickle  # here: only runs with worker processes need it (start-up of every other run)

    with open(spool, "wb") as out:
        for item in convert_file(path, fmt):
            if isinstance(item, Trace):
                payload = str(item.metadata.get("source_format", fmt)).encode("utf-8", "replace") + b"\0" + trace_line(item)
                out.write(_FRAME.pack(b"T", len(payload)) + payload)
            else:
                payload = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
                out.write(_FRAME.pack(b"P", len(payload)) + payload)
    return spool


def _unspool(spool: str) -> Iterator[ConvertItem]:
    import pickle

    try:
        with open(spool, "rb") as fh:
            while head := fh.read(_FRAME.size):
                tag, n = _FRAME.unpack(head)
                payload = fh.read(n)
                if tag == b"T":
                    fmt, _, line = payload.partition(b"\0")
                    yield SpooledTrace(line, fmt.decode("utf-8"))
                else:
                    yield pickle.loads(payload)
    finally:
        with contextlib.suppress(FileNotFoundError):  # the run may have been stopped and its directory removed
            os.unlink(spool)


def _context():
    import multiprocessing

    # fork where there is one: a worker starts as a copy with the converters imported, and nothing of the
    # caller's __main__ is re-run (a script without a __main__ guard, a notebook). The pool forks all
    # its workers at the first submit, before the caller has written anything through this generator.
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _in_workers(paths: list[Path], fmt: str, jobs: int) -> Iterator[Iterator[ConvertItem]]:
    """Each file's items, in file order, converted by ``jobs`` processes a few files ahead."""
    import shutil
    import tempfile
    from concurrent.futures import ProcessPoolExecutor  # here: most runs have no workers and skip its imports

    tmp = tempfile.mkdtemp(prefix="ls-trajeval-convert-")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_context())
    try:
        todo = iter(enumerate(paths))
        running: deque = deque()

        def submit() -> None:
            for i, p in todo:
                running.append((p, pool.submit(_spool, str(p), fmt, os.path.join(tmp, f"{i}.spool"))))
                return

        for _ in range(2 * jobs):
            submit()
        while running:
            p, fut = running.popleft()
            submit()
            try:
                spool = fut.result()
            except Exception as exc:  # noqa: BLE001 - a dead worker costs its file, not the run
                yield iter([TraceError(str(p), None, None, f"conversion failed in a worker process: {type(exc).__name__}: {exc}")])
                continue
            yield _unspool(spool)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(tmp, ignore_errors=True)
