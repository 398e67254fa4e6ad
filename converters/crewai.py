"""CrewAI ``output_log_file`` logs: the text form (``<YYYY-mm-dd HH:MM:SS>: task_name="…", task="…",
agent="…", status="started"`` then ``… status="completed", output="…"``, appended run after run) and the
JSON form (a list of ``{timestamp, task_name, task, agent, status, output}``, for a ``.json`` path).

Values are written unescaped (quotes, newlines, whole JSON documents inside), so a text entry starts at
a line ``<time>: task_name="`` and its fields are cut at the literal ``", task="``, ``", agent="``,
``", status="`` and ``", output="`` markers. The log holds no tool calls, model messages or ids: a
trace is one kickoff of the crew (a new one begins when a task starts again), and each task gives its
description (a ``message`` step with role ``task``, the trace's task being the first) and the agent's
final output (a ``message`` with role ``agent`` and the agent's role as ``agent``).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import load_located, open_text
from ls_trajeval.core.trace import TraceError, describe

from .base import Converter, Gather, Sample, Unit
from .support.errors import BadRecord, expect, guarded, record_error
from .support.files import Origin, read_head
from .support.steps import dumps, finish, stable_id, step

NAME = "crewai"
ENTRY = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}): task_name=\"")
_JSON_KEYS = frozenset({"timestamp", "task", "agent", "status"})


def _is_json_entry(o: Any) -> bool:
    return isinstance(o, dict) and _JSON_KEYS <= set(o) and "task_name" in o


def detect(sample: Sample) -> float:
    fj = sample.first_json
    if isinstance(fj, list) and fj and all(_is_json_entry(o) for o in fj[:5]):
        return 0.95
    if fj is None and not sample.first_records and ENTRY.match(sample.head):
        return 0.95
    return 0.0


def _cut(body: str, line: int) -> dict:
    """The fields of one text entry (what follows ``<time>: ``)."""
    fields = {}
    pos = len('task_name="')
    for key, marker in (("task_name", '", task="'), ("task", '", agent="'), ("agent", '", status="')):
        end = body.find(marker, pos)
        if end < 0:
            raise BadRecord(key, f"no {marker[3:-2]!r} field after it (line {line})")
        fields[key] = body[pos:end]
        pos = end + len(marker)
    rest = body[pos:].rstrip("\r\n")
    status, sep, output = rest.partition('", output="')
    fields["status"] = status[:-1] if not sep and status.endswith('"') else status
    if sep:
        fields["output"] = output[:-1] if output.endswith('"') else output
    return fields


def _text_entries(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, fields or TraceError) of each entry of a text log, streamed."""
    source = str(path)
    start: int = 0  # the first line of the entry being read (0: none yet)
    ts: str | None = None
    buf: list[str] = []

    def flush() -> tuple[int, Any]:
        got = guarded(Origin(NAME, source, start), lambda: [_cut("".join(buf), start)])
        fields = got[0]
        if not isinstance(fields, TraceError):
            fields["timestamp"] = ts
        return start, fields

    with open_text(path) as fh:
        for n, ln in enumerate(fh, 1):
            m = ENTRY.match(ln)
            if m:
                if start:
                    yield flush()
                start, ts, buf = n, m.group(1), [ln[m.end(1) + 2:]]
            elif start:
                buf.append(ln)
            elif ln.strip():
                yield n, TraceError(source, n, None, "text before the first log entry (expected '<date> <time>: "
                                                     "task_name=\"…')")
    if start:
        yield flush()


def _json_entries(path: Path) -> Iterator[tuple[int, Any]]:
    val = load_located(path)
    if isinstance(val, TraceError):
        yield 0, val
        return
    if not isinstance(val, list):
        yield 0, TraceError(str(path), None, None, f"expected a list of log entries, got {describe(val)}")
        return
    yield from enumerate(val)


class _Kickoff:
    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.steps: list = []
        self.started: set = set()
        self.task: str | None = None
        self.times: list = []

    def add(self, e: dict, place: dict) -> None:
        status = expect(e.get("status"), str, "status")
        name = e.get("task_name")
        agent = e.get("agent")
        agent = agent.strip() if isinstance(agent, str) else agent
        meta = {"task_name": name, "agent": agent, "status": status, "timestamp": e.get("timestamp"), **place}
        if e.get("timestamp") is not None:
            self.times.append(e["timestamp"])
        if status == "started" or name not in self.started:
            task = expect(e.get("task"), str, "task")
            if self.task is None:
                self.task = task
            self.started.add(name)
            self.steps.append(step("message", task, None, {"role": "task", **meta}))
        if status == "completed":
            self.steps.append(
                step(
                    "message",
                    e.get("output") if isinstance(e.get("output"), str) else dumps(e.get("output")),
                    None,
                    {"role": "agent", **meta},
                )
            )
        elif status != "started":  # a status this converter does not know: kept whole
            self.steps.append(step("other", dumps({k: v for k, v in e.items() if k != "task"}), None, meta))

    def trace(self, name: str) -> list:
        tid = stable_id(name, self.origin.position)
        return [
            finish(
                self.origin,
                tid,
                self.task,
                self.steps,
                {
                    "started_at": self.times[0] if self.times else None,
                    "ended_at": self.times[-1] if self.times else None,
                    "task_names": sorted(
                        {m["task_name"] for s in self.steps if (m := s.get("metadata", {})).get("task_name")}
                    )
                    or None,
                },
            )
        ]


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """The log's entries (a JSON list's, with their index; the text log's, with their first line)."""
    source = str(path)
    is_json = read_head(path).lstrip()[:1] in ("[", "{")
    for pos, e in (_json_entries(path) if is_json else _text_entries(path)):
        origin = Origin(fmt, source, None, pos) if is_json else Origin(fmt, source, pos)
        if not isinstance(e, TraceError) and not isinstance(e, dict):
            e = TraceError(source, None, f"[{pos}]", f"expected a log entry object, got {describe(e)}")
        yield origin, e


def one(kickoff: _Kickoff, origin: Origin) -> list:
    """One kickoff of the crew (gathered by :class:`_Kickoffs`) to its trace."""
    return kickoff.trace(origin.file_name)


class _Kickoffs(Gather):
    """Entries into kickoffs: a new one begins when a task starts again; each converted when the next begins, the
    last at the end of the file. A bad entry is its own located error; its kickoff goes on."""

    def __init__(self, path: Path) -> None:
        self.cur: _Kickoff | None = None

    def add(self, e: dict, origin: Origin) -> list:
        out: list = []
        cur = self.cur
        if cur is None or e.get("status") == "started" and e.get("task_name") in cur.started:
            if cur is not None:
                out.append(Unit(cur.origin, cur))
            cur = self.cur = _Kickoff(origin)
        place = {"source_line": origin.line} if origin.index is None else {"source_record": origin.index}
        try:
            cur.add(e, place)
        except Exception as exc:  # noqa: BLE001 - the entry's error; the kickoff it began, or goes on, stays
            out.append(record_error(origin, exc, "", e))
        return out

    def end(self) -> Iterable:
        return [] if self.cur is None else [Unit(self.cur.origin, self.cur)]


CONVERTER = Converter(
    name=NAME,
    description="CrewAI output_log_file logs (text '<time>: task_name=\"…\", task=\"…\", agent=\"…\", status=\"…\"' "
                "lines, or their JSON list), one trace per kickoff",
    shapes='2025-06-26 13:20:28: task_name="…", task="…", agent="…", status="started" | status="completed", output="…" '
           '(text), or [{"timestamp", "task_name", "task", "agent", "status", "output"}] (JSON)',
    detect=detect,
    one=one,
    read=_read,
    gather=_Kickoffs,
)
