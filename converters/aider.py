"""aider chat history markdown (``.aider.chat.history.md``).

Each ``# aider chat started at <time>`` heading starts a session: one trace per session,
``trace_id`` = stable id of the file name and the session's start time (its index when the
heading has no time). ``#### `` lines are the user's messages (consecutive ones are one message);
``> `` lines are aider's own output (tool output: edits applied, commits, command output, lint
and test results); everything else is the assistant's reply. In a reply, each SEARCH/REPLACE
edit block (with the file name line and fence before it) becomes an ``action`` step ``edit`` whose
``action_input`` is the block exactly as written, the text around it ``message`` steps. aider's
output after a reply is the observation of the reply's last edit; after a ``/command`` typed by
the user (``/run``, ``/test``, ``/add``, ...) it is that command's observation, the command being an
``action``. aider's output before the first user message (version, model, repo) is a ``system`` step.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from ls_trajeval.core.trace import TraceError, open_text

from .base import Converter, Sample
from .support.errors import guarded
from .support.files import Origin
from .support.steps import StepList, finish, stable_id, step

NAME = "aider"

SESSION = re.compile(r"^# aider chat started at[ \t]*(.*)$")
# The file-name line is "a line whose first non-blank character is not ` < > =", written with
# possessive quantifiers: the same matches as before, without backtracking over every long line.
EDIT = re.compile(
    r"(?:^(?P<file>[^\S\n]*+[^\s`<>=][^\n]*+)\n)?(?:^```[^\n]*\n)?^<<<<<<< SEARCH[ \t]*\n(?P<search>.*?)^=======[ \t]*\n(?P<replace>.*?)^>>>>>>> REPLACE[ \t]*(?:\n|$)(?:^```[ \t]*(?:\n|$))?",
    re.M | re.S,
)


def detect(sample: Sample) -> float:
    if sample.first_json is not None or sample.first_records:
        return 0.0
    head = sample.head
    if re.search(r"^# aider chat started at", head, re.M):
        return 0.95
    if sample.path.name.endswith(".aider.chat.history.md"):
        return 0.8
    return 0.0


def _reply(body: str, out: StepList, n: int, line: int) -> str | None:
    """Steps of one assistant reply; return the call id of its last edit (None when it has none)."""
    last = None
    pos = 0
    for m in EDIT.finditer(body):
        before = body[pos:m.start()]
        if before.strip():
            out.add(step("message", before.strip("\n"), None, {"role": "assistant", "source_line": line}))
        last = f"edit-{n}-{m.start()}"
        out.call(last, step("action", "edit", m.group(0).rstrip("\n"),
                            {"file": (m.group("file") or "").strip() or None, "source_line": line}))
        pos = m.end()
    rest = body[pos:]
    if rest.strip():
        out.add(step("message", rest.strip("\n"), None, {"role": "assistant", "source_line": line}))
    return last


class _Session:
    def __init__(self, started: str, line: int, index: int) -> None:
        self.started, self.line, self.index = started, line, index
        self.out = StepList()
        self.task: str | None = None
        self.pending: str | None = None  # call id the next tool output answers
        self.seen_user = False


def _blocks(lines: list[tuple[int, str]]) -> Iterator[tuple[str, int, str]]:
    """(kind, first line, text) runs: 'user', 'tool' or 'assistant'."""
    kind, start, buf = None, 0, []
    for n, ln in lines:
        body = ln.rstrip("\r\n")
        if body.startswith("#### ") or body == "####":
            k, t = "user", body[5:]
        elif body.startswith("> ") or body == ">":
            k, t = "tool", body[2:]
        else:
            k, t = "assistant", body
            if kind in ("user", "tool") and not body.strip():
                continue  # the blank line aider writes after its own blocks
        if k != kind:
            if kind is not None:
                yield kind, start, "\n".join(buf)
            kind, start, buf = k, n, []
        buf.append(t)
    if kind is not None:
        yield kind, start, "\n".join(buf)


def _finish(path: Path, s: _Session) -> list:
    origin = Origin(NAME, str(path), s.line)
    meta = {"started_at": s.started or None, "session_index": s.index}
    return guarded(origin, lambda: [finish(origin, stable_id(path.name, s.started or s.index), s.task or "", s.out.steps(), meta)])


def _session(path: Path, s: _Session, lines: list) -> Iterator:
    for kind, n, body in _blocks(lines):
        if kind == "user":
            s.pending = None
            if body.startswith("/"):
                cmd, _, arg = body.partition(" ")
                s.pending = f"cmd-{n}"
                s.out.call(s.pending, step("action", cmd, arg, {"role": "user", "source_line": n}))
            else:
                if s.task is None:
                    s.task = body
                s.out.add(step("message", body, None, {"role": "user", "source_line": n}))
            s.seen_user = True
        elif kind == "tool":
            if not s.seen_user:
                s.out.add(step("system", body, None, {"role": "aider", "source_line": n}))
            elif s.pending:
                s.out.result(s.pending, step("observation", body, None, {"role": "aider", "source_line": n}))
                s.pending = None
            else:
                s.out.add(step("observation", body, None, {"role": "aider", "source_line": n}))
        else:
            if not body.strip():
                continue
            last = _reply(body, s.out, n, n)
            s.pending = last
    yield from _finish(path, s)


def convert(path: Path) -> Iterator:
    with open_text(path) as fh:
        session = None
        lines: list = []
        index = 0
        for n, ln in enumerate(fh, 1):
            try:
                ln.encode("utf-8")
            except UnicodeEncodeError:
                yield TraceError(str(path), n, None, "invalid UTF-8 (line skipped)")
                continue
            m = SESSION.match(ln.rstrip("\r\n"))
            if m:
                if session is not None or any(x.strip() for _, x in lines):
                    yield from _session(path, session or _Session("", 1, index), lines)
                    index += 1
                session, lines = _Session(m.group(1).strip(), n, index), []
                continue
            lines.append((n, ln))
        if session is not None or any(ln.strip() for _, ln in lines):
            yield from _session(path, session or _Session("", 1, index), lines)


CONVERTER = Converter(
    name=NAME,
    description="aider chat history markdown (.aider.chat.history.md), one trace per session",
    shapes="markdown with '# aider chat started at', '#### ' user lines, '> ' aider output, SEARCH/REPLACE blocks",
    detect=detect,
    convert=convert,
)
