"""Files converted in worker processes, a few ahead of the one being read, with the same output as one process.

Each worker converts one file (:func:`~.detection.convert_file`) and spools its items to a temporary file: a trace
as its JSONL line (with its format, id and place, so the reading process can count it and check its id without
decoding it), an error or warning pickled, each framed by a tag and a length. The spools are streamed back in file
order and deleted, so the items, their order and the trace ids are those of one process, and memory stays bounded.

Most runs start no worker (one file, or little input): the modules only workers need (the process pool,
multiprocessing, pickle, tempfile and shutil, with the compression modules shutil brings) are imported where they
are used. At the top they made an empty ``convert`` 304 M instructions instead of 246 M
(benchmarks/converter_instructions.py, start-up).
"""
from __future__ import annotations

import contextlib
import os
import struct
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import dumps_line, loads
from ls_trajeval.core.trace import Step, Trace, TraceError

from .base import ConvertItem, Origin, TraceIds
from .detection import convert_file


class SpooledTrace(Trace):
    """A trace converted in a worker process, kept as its JSONL line until something reads its fields
    (writing it needs none of them, so ``convert`` copies the line as the worker wrote it)."""

    _FIELDS = frozenset({"task", "steps", "metadata", "extra"})

    def __init__(self, json_line: bytes, source_format: str, trace_id: str, source: str, line: int | None,
                 index: int | None, place: str | None):  # noqa: D107 - the fields are decoded when first read
        self.json_line = json_line
        self.source_format = source_format
        self.trace_id = trace_id
        #: the record the worker's converter made it of (file, JSONL line, place in the document): for the run's
        #: id check
        self.origin = Origin(source_format, source, line, index, place=place)

    def __getattr__(self, name: str) -> Any:
        if name not in SpooledTrace._FIELDS:
            raise AttributeError(name)
        obj = loads(self.json_line)
        steps = []
        for s in obj.pop("trace"):
            steps.append(Step.of(s.pop("type"), s.pop("content"), s.pop("action_input", None), s))
        obj.pop("trace_id")
        self.task, self.steps = obj.pop("task"), steps
        self.metadata = obj.pop("metadata", {})
        self.extra = obj
        return getattr(self, name)


_FRAME = struct.Struct("<cQ")


def _spool(path: str, fmt: str, spool: str) -> str:
    """Convert one file in a worker, writing its items to ``spool``. Returns ``spool``."""
    import pickle

    ids = TraceIds()  # the file's own: the reading process checks them against the other files'
    with open(spool, "wb") as out:
        for item in convert_file(path, fmt, ids):
            if isinstance(item, Trace):
                at = ids.given_at(item.trace_id) or Origin(fmt, path)
                head = [
                    str(item.metadata.get("source_format", fmt)),
                    item.trace_id,
                    at.source,
                    at.line,
                    at.index,
                    at.place,
                ]
                payload = dumps_line(head) + dumps_line(item.to_json())
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
                    first, _, line = payload.partition(b"\n")
                    yield SpooledTrace(line, *loads(first))
                else:
                    yield pickle.loads(payload)
    finally:
        with contextlib.suppress(FileNotFoundError):  # the run may have been stopped and its directory removed
            os.unlink(spool)


def _context() -> Any:
    import multiprocessing

    # fork where there is one: a worker starts as a copy with the converters imported, and nothing of the
    # caller's __main__ is re-run (a script without a __main__ guard, a notebook). The pool forks all
    # its workers at the first submit, before the caller has written anything through this generator.
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def in_workers(paths: list[Path], fmt: str, jobs: int) -> Iterator[Iterator[ConvertItem]]:
    """Each file's items, in file order, converted by ``jobs`` processes a few files ahead."""
    import shutil
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

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
                yield iter(
                    [
                        TraceError(
                            str(p), None, None, f"conversion failed in a worker process: {type(exc).__name__}: {exc}"
                        )
                    ]
                )
                continue
            yield _unspool(spool)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(tmp, ignore_errors=True)
