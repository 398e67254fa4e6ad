"""Inspect AI eval logs: ``.json`` logs and ``.eval`` archives (zip: ``header.json``, ``samples/*.json``).

One trace per sample and epoch, ``trace_id`` = ``<eval_id or run_id>:<sample id>:<epoch>``. Steps come
from the sample's ``messages`` (system / user / assistant with ``tool_calls`` / tool results, a tool
``error`` making an ``error`` step); a sample without messages falls back to its ``model`` and
``tool`` events. ``attachment://`` references are resolved from the sample's ``attachments``. A sample
``error`` ends the trace as an ``error`` step. Large ``.json`` logs are streamed sample by sample.
"""
from __future__ import annotations

import lzma
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import load_located, loads
from ls_trajeval.core.trace import TraceError

from .base import Converter, Sample
from .support.chat import call_id, content_text, openai_messages
from .support.errors import BadRecord, expect
from .support.files import STREAM_ABOVE, Origin, first_item, is_zip, iter_items, zip_names
from .support.steps import StepList, finish, render_args, step, text

NAME = "inspect_ai"


def detect(sample: Sample) -> float:
    if sample.path.suffix == ".eval" or not sample.head and is_zip(sample.path):
        names = zip_names(sample.path)
        if "header.json" in names or any(n.startswith("samples/") for n in names) or "_journal/start.json" in names:
            return 0.95
        return 0.0
    doc = sample.first_json
    if (
        isinstance(doc, dict)
        and isinstance(doc.get("eval"), dict)
        and ("samples" in doc or "plan" in doc or "results" in doc)
    ):
        return 0.95
    if (
        doc is None
        and not sample.first_records
        and '"eval"' in sample.head[:4096]
        and ('"plan"' in sample.head or '"samples"' in sample.head)
    ):
        return 0.8
    return 0.0


def _resolve(value: Any, att: dict) -> Any:
    if not att:
        return value
    if isinstance(value, str):
        if value.startswith("attachment://"):
            return att.get(value[len("attachment://"):], value)
        return value
    if isinstance(value, list):
        return [_resolve(v, att) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, att) for k, v in value.items()}
    return value


def _from_events(events: list, out: StepList) -> None:
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            continue
        kind = ev.get("event")
        if kind == "model":
            choices = ((ev.get("output") or {}).get("choices")) or []
            if choices and isinstance(choices[0], dict) and isinstance(choices[0].get("message"), dict):
                openai_messages([choices[0]["message"]], out, where=f"events[{i}].output.choices[0]")
        elif kind == "tool":
            cid = call_id(ev.get("id"))
            if not out.has_call(cid):
                out.call(cid, step("action", ev.get("function"), render_args(ev.get("arguments")),
                                   {"timestamp": ev.get("timestamp"), "tool_call_id": cid}))
            err = ev.get("error")
            if err:
                out.result(
                    cid,
                    step(
                        "error",
                        text(err.get("message") if isinstance(err, dict) else err),
                        None,
                        {"error_type": err.get("type") if isinstance(err, dict) else None, "tool_call_id": cid},
                    ),
                )
            else:
                out.result(cid, step("observation", content_text(ev.get("result")), None, {"tool_call_id": cid}))


class _Log:
    """The eval log a sample comes from: its path and header (``eval``, ``status``)."""

    __slots__ = ("path", "header")

    def __init__(self, path: Path, header: dict) -> None:
        self.path, self.header = path, header


def one(s: Any, origin: Origin) -> Iterator:
    """One sample (and epoch) of an eval log; ``origin.document`` is its log."""
    path, header = origin.document.path, origin.document.header
    expect(s, dict, None)
    ev = header.get("eval") if isinstance(header.get("eval"), dict) else {}
    att = s.get("attachments") if isinstance(s.get("attachments"), dict) else {}
    msgs = _resolve(s.get("messages"), att)
    out = StepList()
    task = None
    if msgs:
        task = openai_messages(expect(msgs, list, "messages"), out)
    elif isinstance(s.get("events"), list):
        _from_events(_resolve(s["events"], att), out)
    inp = _resolve(s.get("input"), att)
    if isinstance(inp, str):
        task = inp
    elif not task and isinstance(inp, list):
        task = next(
            (content_text(m.get("content")) for m in inp if isinstance(m, dict) and m.get("role") == "user"), ""
        )
    err = s.get("error")
    if err:
        out.add(step("error", text(err.get("message") if isinstance(err, dict) else err), None,
                     {"traceback": err.get("traceback") if isinstance(err, dict) else None, "sample_error": True}))
    sid, epoch = s.get("id"), s.get("epoch", 1)
    if sid is None:
        raise BadRecord("id", "missing")
    run = ev.get("eval_id") or ev.get("run_id") or path.stem
    meta = {
        "eval_id": ev.get("eval_id"),
        "run_id": ev.get("run_id"),
        "task_name": ev.get("task"),
        "model": ev.get("model"),
        "sample_id": sid,
        "epoch": epoch,
        "target": s.get("target"),
        "scores": s.get("scores"),
        "model_usage": s.get("model_usage"),
        "total_time": s.get("total_time"),
        "sample_metadata": s.get("metadata") or None,
        "status": header.get("status"),
    }
    yield finish(origin, f"{run}:{sid}:{epoch}", task or "", out.steps(), meta)


#: what reading a damaged archive (or one of its members) raises: bad CRC or header, truncation, a seek past
#: the end, an unknown or encrypted compression, a corrupt deflate/bzip2/lzma stream
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError,
              RuntimeError, zlib.error, lzma.LZMAError)


def _member(zf: zipfile.ZipFile, path: Path, name: str) -> Any:
    """The JSON value of one archive member, or a TraceError naming ``path!name`` (damaged or invalid)."""
    try:
        raw = zf.read(name)
    except ZIP_ERRORS as exc:
        return TraceError(f"{path}!{name}", None, None, f"damaged archive member: {type(exc).__name__}: {exc}")
    try:
        return loads(raw)
    except (ValueError, RecursionError) as exc:
        return TraceError(f"{path}!{name}", None, None, f"invalid JSON: {exc}")


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """Each sample of a log: an .eval archive's members, or a .json log's samples (streamed with ijson when the log
    is too big to parse whole). Errors of the log itself end it."""
    if is_zip(path):
        yield from _zip_samples(path, fmt)
        return
    source = str(path)
    origin = Origin(fmt, source)
    if path.stat().st_size > STREAM_ABOVE:
        header: dict = {}
        for key in ("status", "eval"):  # what one() reads of the header (Inspect writes both before the samples)
            val = first_item(path, key)
            if isinstance(val, TraceError):
                yield origin, val
                return
            if val is not None:
                header[key] = val
        log = _Log(path, header)
        for i, s in iter_items(path, "samples.item"):
            yield Origin(fmt, source, place=f"samples[{i}]", document=log), s
        return
    doc = load_located(path)
    if isinstance(doc, TraceError):
        yield origin, doc
    elif not isinstance(doc, dict):
        yield origin, TraceError(source, None, None, "expected an Inspect log object")
    elif doc.get("samples") is None:
        yield (
            origin,
            TraceError(source, None, "samples", "missing: the log holds no samples (written with --no-log-samples?)"),
        )
    elif not isinstance(doc["samples"], list):
        yield origin, TraceError(source, None, "samples", f"expected a list, got {type(doc['samples']).__name__}")
    else:
        log = _Log(path, doc)
        for i, s in enumerate(doc["samples"]):
            yield Origin(fmt, source, place=f"samples[{i}]", document=log), s


def _zip_samples(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """The samples of an .eval archive, each located by its member (``path!samples/….json``)."""
    origin = Origin(fmt, str(path))
    try:
        zf = zipfile.ZipFile(path)
        names = zf.namelist()
    except ZIP_ERRORS as exc:
        yield origin, TraceError(str(path), None, None, f"not a valid .eval archive: {type(exc).__name__}: {exc}")
        return
    with zf:
        header: Any = {}
        for hname in ("header.json", "_journal/start.json"):
            if hname in names:
                header = _member(zf, path, hname)
                if isinstance(header, TraceError):
                    yield origin, header
                    header = {}  # the samples still convert, without the eval's ids
                break
        if not isinstance(header, dict):
            yield origin, TraceError(f"{path}!header.json", None, None, "expected a JSON object")
            header = {}
        samples = sorted(n for n in names if n.startswith("samples/") and n.endswith(".json"))
        if not samples:
            yield origin, TraceError(str(path), None, "samples", "the archive holds no samples/*.json")
        log = _Log(path, header)
        for name in samples:
            # the member is the sample: its errors name it
            yield Origin(fmt, f"{path}!{name}", document=log), _member(zf, path, name)


CONVERTER = Converter(
    name=NAME,
    description="Inspect AI eval logs (.json and .eval archives), one trace per sample and epoch",
    shapes='.json {"eval", "plan", "samples": [{id, epoch, messages, events}]}; .eval zip (header.json, '
           'samples/*.json)',
    detect=detect,
    one=one,
    read=_read,
)
