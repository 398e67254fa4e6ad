"""aider chat history markdown (``.aider.chat.history.md``).

Each ``# aider chat started at <time>`` heading starts a session: one trace per session,
``trace_id`` = stable id of the file name and the session's start time (its index when the
heading has no time; the time and the index when a session before it started at the same time).
``#### `` lines are the user's messages (consecutive ones are one message);
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import open_text
from ls_trajeval.core.trace import TraceError

from .base import Converter, Sample
from .support.files import Origin
from .support.steps import StepList, finish, stable_id, step

NAME = "aider"

SESSION = re.compile(r"^# aider chat started at[ \t]*(.*)$")
# The file-name line is "a line whose first non-blank character is not ` < > =", written with
# possessive quantifiers: the same matches as before, without backtracking over every long line.
EDIT = re.compile(
    r"(?:^(?P<file>[^\S\n]*+[^\s`<>=][^\n]*+)\n)?(?:^```[^\n]*\n)?"
    r"^<<<<<<< SEARCH[ \t]*\n(?P<search>.*?)^=======[ \t]*\n(?P<replace>.*?)^>>>>>>> REPLACE[ \t]*(?:\n|$)"
    r"(?:^```[ \t]*(?:\n|$))?",
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


def _edits(body: str) -> Iterator[re.Match]:
    """``EDIT.finditer(body)``, found faster: the regular expression is tried only from two lines before each
    ``<<<<<<< SEARCH`` line (an edit block is that line with at most a file-name line and a fence line before
    it, neither of which can be such a line), instead of at every position of the reply."""
    pos = 0
    while True:
        p = body.find("<<<<<<< SEARCH", pos)
        while p > 0 and body[p - 1] != "\n":
            p = body.find("<<<<<<< SEARCH", p + 1)
        if p < 0:
            return
        start = p
        for _ in range(2):
            if start <= pos:
                break
            start = body.rfind("\n", 0, start - 1) + 1
        m = EDIT.search(body, max(start, pos))
        if m is None:
            return
        yield m
        pos = m.end()


def _reply(body: str, out: StepList, n: int, line: int) -> str | None:
    """Steps of one assistant reply; return the call id of its last edit (None when it has none)."""
    last = None
    pos = 0
    for m in _edits(body):
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


HEADER = "# aider chat started at"
# a user or aider-output line with the "\n" before it (a literal first character: the search skips from line
# end to line end), for the fast reading of a session written with "\n" line ends (see _fast_blocks)
_MARKED = re.compile(r"\n(?:(####)(?: ([^\n]*))?|(>)(?: ([^\n]*))?)(?=\n|\Z)")
# whitespace-only lines at the start of a text (str.isspace's whitespace, as the line-by-line reading's strip())
_BLANK_LINES = re.compile(r"(?:[^\S\n]*\n)*")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _blocks(lines: list[tuple[int, str]]) -> Iterator[tuple[str, int, str]]:
    """(kind, first line, text) runs: 'user', 'tool' or 'assistant', line by line (any line ends)."""
    kind: str | None = None
    start = 0
    buf: list[str] = []
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


def _fast_blocks(text: str, first: int) -> Iterator[tuple[str, int, str]]:
    """The runs of :func:`_blocks` for a session's text whose lines all end in "\n" (the last may have none),
    line ``first`` first: only the user and aider-output lines are visited one by one; the assistant's text
    between them (most of a session) is sliced whole."""
    kind: str | None = None  # the user or aider-output run being gathered
    start = 0
    buf: list[str] = []
    pos, line = 0, first  # the text before ``pos`` is handled; ``line`` is the number of the line at ``pos``
    end = len(text)
    # searched in the text after a "\n": each match's span then is its line's span in ``text``, minus one
    for m in _MARKED.finditer("\n" + text):
        gap_end = m.start()
        if gap_end > pos:  # assistant lines between the previous marked line and this one: a run of their own
            if kind is not None:  # blank lines after a user or aider block are dropped
                blank = _BLANK_LINES.match(text, pos, gap_end)  # (always a match, maybe empty; written out per block)
                skip = pos if blank is None else blank.end()
                line += text.count("\n", pos, skip)
                pos = skip
            if gap_end > pos:
                if kind is not None:
                    yield kind, start, "\n".join(buf)
                    kind = None
                yield "assistant", line, text[pos:gap_end - 1]  # its lines, the last one's "\n" off
                line += text.count("\n", pos, gap_end)
        user, user_text, _, tool_text = m.groups()
        k = "user" if user else "tool"
        if k != kind:
            if kind is not None:
                yield kind, start, "\n".join(buf)
            kind, start, buf = k, line, []
        buf.append((user_text if user else tool_text) or "")
        pos = m.end()  # past the line's "\n" (the match ends before it, one position further in ``text``)
        line += 1
    if end > pos:  # assistant lines after the last marked line
        if kind is not None:
            blank = _BLANK_LINES.match(text, pos, end)
            pos = pos if blank is None else blank.end()
            if pos < end and text[pos:].isspace():  # a last blank line without its "\n"
                pos = end
            line = first + text.count("\n", 0, pos)
        if end > pos:
            if kind is not None:
                yield kind, start, "\n".join(buf)
                kind = None
            yield "assistant", line, text[pos:end - 1] if text.endswith("\n") else text[pos:end]
    if kind is not None:
        yield kind, start, "\n".join(buf)


class _Text:
    """One session's text as read: its heading's time ("" for text before the first heading), its number in the file,
    its runs of user, aider and assistant lines (:func:`_blocks`), and whether a session before it started at the
    same time (then its number tells their ids apart)."""

    __slots__ = ("started", "index", "blocks", "again")

    def __init__(self, started: str, index: int, blocks: Iterator[tuple[str, int, str]], again: bool) -> None:
        self.started, self.index, self.blocks, self.again = started, index, blocks, again


def one(part: _Text, origin: Origin) -> list:
    """One session's steps: the user's messages and commands, aider's output, the assistant's replies and edits."""
    s = _Session(part.started, origin.line or 1, part.index)
    for kind, n, body in part.blocks:
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
    meta = {"started_at": s.started or None, "session_index": s.index}
    key = (s.started, s.index) if part.again else s.started or s.index
    return [finish(origin, stable_id(origin.file_name, key), s.task or "", s.out.steps(), meta)]


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # a line as text mode reads it: "\r\n", "\r" or "\n" ends it
# SESSION with the "\n" before it, found in text with "\n" line ends (a literal start: the search skips ahead fast)
_HEADER_LINE = re.compile(r"\n# aider chat started at[ \t]*(.*)")


def _session(path: Path, fmt: str, header: re.Match | None, first: int, text: str, index: int,
             seen: set) -> Iterator[tuple[Origin, Any]]:
    """The errors and the text of one session: its heading (None for text before the first one) and its text
    (whole lines), the first line numbered ``first``. Text before the first heading makes no session when it is
    blank. A session with undecodable bytes or a "\r" line end is read line by line (each bad line an error, the
    rest converted); the usual one is sliced whole."""
    started = header.group(1).strip() if header else ""
    origin = Origin(fmt, str(path), first - 1 if header else 1)
    again = bool(started) and started in seen
    if "\r" not in text and _SURROGATE.search(text) is None:
        if header is not None or text and not text.isspace():
            seen.add(started)
            yield origin, _Text(started, index, _fast_blocks(text, first), again)
        return
    good = []
    for n, ln in enumerate(_LINE.findall(text), first):
        try:
            ln.encode("utf-8")
        except UnicodeEncodeError:
            yield Origin(fmt, str(path), n), TraceError(str(path), n, None, "invalid UTF-8 (line skipped)")
            continue
        good.append((n, ln))
    if header is not None or any(ln.strip() for _, ln in good):
        seen.add(started)
        yield origin, _Text(started, index, _blocks(good), again)


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """Each session of the history file (one per ``# aider chat started at`` heading, and the text before the first
    one when it is not blank), with the located errors of its undecodable lines."""
    header: re.Match | None = None  # the current session's heading
    first, parts, index = 1, [], 0  # its first line's number, its text so far (whole lines), sessions so far
    seen: set = set()  # the sessions' start times so far
    n = 1  # the number of the next line read
    with open_text(path) as fh:
        # whole lines about a MiB at a time; headings are found by a search over the batch, not line by line
        while batch := fh.readlines(1 << 20):
            text = "".join(batch)
            if "\r" in text:  # a bare "\r" ends a line too: these batches are read line by line
                spans, at = [], 0
                for k, ln in enumerate(batch):
                    if ln.startswith(HEADER) and _SURROGATE.search(ln) is None:
                        m = SESSION.match(ln.rstrip("\r\n"))
                        if m:
                            spans.append((at, k, m))
                    at += len(ln)
            else:
                spans, k, at = [], 0, 0
                # searched after a "\n": a match's start is its line's start in ``text``
                for m in _HEADER_LINE.finditer("\n" + text):
                    if _SURROGATE.search(m.group(0)) is None:  # a line with undecodable bytes is no heading
                        k += text.count("\n", at, m.start())
                        at = m.start()
                        spans.append((m.start(), k, m))
            prev = 0
            for start, k, m in spans:
                parts.append(text[prev:start])
                if header is not None or any(parts):
                    for item in _session(path, fmt, header, first, "".join(parts), index, seen):
                        index += isinstance(item[1], _Text)
                        yield item
                header, first, parts = m, n + k + 1, []
                prev = start + len(batch[k])
            parts.append(text[prev:])
            n += len(batch)
    if header is not None or any(parts):
        yield from _session(path, fmt, header, first, "".join(parts), index, seen)


CONVERTER = Converter(
    name=NAME,
    description="aider chat history markdown (.aider.chat.history.md), one trace per session",
    shapes="markdown with '# aider chat started at', '#### ' user lines, '> ' aider output, SEARCH/REPLACE blocks",
    detect=detect,
    one=one,
    read=_read,
)
