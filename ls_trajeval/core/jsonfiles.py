"""JSON files in and output files out: the one reading layer and the one writer.

:class:`TraceError` is what a reader (or a converter) yields for input it rejects: where it is and why.

Reading: :func:`open_bytes` / :func:`open_text` open a plain or gzipped file, :func:`loads` decodes one JSON text
and :func:`dumps_line` encodes one JSONL line (orjson, with the standard library where orjson refuses: integers
beyond 64 bits, lone surrogates, and for its clearer error messages). :func:`iter_lines` streams a JSONL file line
by line, :func:`load_located` reads one JSON document, :func:`documents` reads a file that may be either; each
yields a located :class:`~ls_trajeval.core.trace.TraceError` (file, line) for what it cannot read and goes on.
:func:`expand_inputs` turns a command's paths into files: records files only, or every file recursively.

JSONL is read as bytes, 64 KiB at a time, one line at a time, decoded by orjson: memory stays bounded by the
longest line whatever the file size, and orjson decodes about twice as fast as the standard library.

Writing: :func:`atomic_output` is how every output file is written: beside the target, renamed over it at the
end, so a failed or interrupted write leaves the target as it was and no partial file.
"""
from __future__ import annotations

import errno
import gzip
import io
import json
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO

import orjson

#: bytes read from a file at a time: a line-by-line reader over the default 8 KiB makes a system call every few lines
READ_BUFFER = 1 << 16
#: names of JSONL files, whatever their first line looks like
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
#: the records files a directory holds for commands that read records (import, report, ...)
RECORDS_SUFFIXES = (".jsonl", ".jsonl.gz")
#: the most of one line read at a time when telling JSONL from JSON (a one-line export of gigabytes is not held)
_LONG_LINE = 1 << 20


@dataclass(frozen=True)
class TraceError:
    """A rejected record, or a file that cannot be read: where it is (file, line, field) and why."""

    source: str
    line: int | None
    field: str | None
    message: str
    trace_id: str | None = None

    @property
    def detail(self) -> str:
        """The field and the message, without the place: ``trace[2].type: missing``."""
        return f"{self.field}: {self.message}" if self.field else self.message

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.detail}"


# ---------------------------------------------------------------- opening

def open_bytes(path: str | Path) -> BinaryIO:
    """A plain or gzipped (``.gz``) file, opened for reading bytes."""
    p = Path(path)
    if p.suffix == ".gz":
        return gzip.open(p, "rb")  # type: ignore[return-value]
    return open(p, "rb", buffering=READ_BUFFER)


def open_text(path: str | Path) -> io.TextIOWrapper:
    """A plain or gzipped file, opened for reading text: lines end as written, and bytes that are not UTF-8
    become lone surrogates (``surrogateescape``), so a bad line stays one bad line."""
    return io.TextIOWrapper(open_bytes(path), encoding="utf-8", errors="surrogateescape", newline="")


# ---------------------------------------------------------------- decoding and encoding

def loads(raw: bytes | str, nan_as_null: bool = False) -> Any:
    """One JSON text decoded; ValueError (or RecursionError) with a readable message when it is not JSON.

    NaN and Infinity (not JSON) are refused, or read as null with ``nan_as_null``: Python's ``json.dumps`` writes
    them for a float nan, and some tools' logs hold them (a pandas cell of a benchmark's output)."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    try:
        return orjson.loads(raw)
    except ValueError:
        pass  # redo with the standard library: clearer messages, big integers and lone surrogates accepted
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start}") from None
    return json.loads(text, parse_constant=_null if nan_as_null else _refuse)


def _null(_constant: str) -> None:
    return None


def _refuse(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def dumps_line(value: Any) -> bytes:
    """One JSONL line (UTF-8, compact, text as written rather than \\u-escaped, newline-terminated)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # integers beyond 64 bits, lone surrogates: the standard library writes them
        pass
    try:
        return (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8: escaped, the line stays valid JSON
        return (json.dumps(value) + "\n").encode("ascii")


def _invalid(source: str, line: int | None, exc: Exception) -> TraceError:
    msg = str(exc)
    if isinstance(exc, json.JSONDecodeError) and line is None:  # a whole document: the line the error is on
        return TraceError(source, exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
    return TraceError(source, line, None, msg if msg.startswith("invalid UTF-8") else f"invalid JSON: {msg}")


# ---------------------------------------------------------------- reading

def iter_lines(path: str | Path, nan_as_null: bool = False, *, located: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value or TraceError) for each non-blank line of a JSONL file, streamed
    (``nan_as_null``: see :func:`loads`). Raises OSError (EOFError for a truncated gzip file) when the file
    cannot be read (:func:`read_lines` says so as a located error instead), or, ``located``, ends with
    ``(None, TraceError)`` saying so."""
    source = str(path)
    try:
        with open_bytes(path) as fh:
            for n, raw in enumerate(fh, 1):
                try:
                    # the usual line, decoded without a call to loads() around it: this loop runs once per line of
                    # every JSONL input (benchmarks/bench_converters.py, every JSONL case)
                    yield n, orjson.loads(raw)
                    continue
                except ValueError:
                    if not raw.strip():
                        continue
                try:
                    yield n, loads(raw, nan_as_null)
                except (ValueError, RecursionError) as exc:
                    yield n, _invalid(source, n, exc)
    except (OSError, EOFError) as exc:
        if not located:
            raise
        # the one pair without a line, and only when asked for (documents() asks; other readers get the exception)
        yield None, TraceError(source, None, None, f"cannot read: {exc}")  # type: ignore[misc]


def read_lines(path: str | Path) -> Iterator[tuple[int, Any] | TraceError]:
    """(line number, decoded JSON) for each non-blank line of a (possibly gzipped) JSONL file, or a located error
    for a line that is not JSON or a file that cannot be read."""
    try:
        for n, value in iter_lines(path):
            yield value if isinstance(value, TraceError) else (n, value)
    except (OSError, EOFError) as exc:
        yield TraceError(str(path), None, None, f"cannot read: {exc}")


def load_located(path: str | Path, nan_as_null: bool = False) -> Any:
    """The whole file as one JSON value, or a TraceError that names the line (``nan_as_null``: see :func:`loads`)."""
    try:
        with open_bytes(path) as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:
        return TraceError(str(path), None, None, f"cannot read: {exc}")
    try:
        return loads(raw, nan_as_null)
    except (ValueError, RecursionError) as exc:
        return _invalid(str(path), None, exc)


def is_jsonl(path: str | Path) -> bool:
    """JSONL when named so, or when the first non-blank line is a whole JSON value and more lines follow.

    So a pretty-printed or one-line JSON document is read whole, while a log is streamed line by line;
    a broken first line that looks like an object does not hide the good lines after it. A first line
    too long to try (a one-line export of gigabytes) is skipped over, not held: then more lines mean JSONL.
    """
    if Path(path).name.lower().endswith(JSONL_SUFFIXES):
        return True
    with open_bytes(path) as fh:
        first = _next_line(fh)
        if first is None:
            return False
        if len(first) >= _LONG_LINE and not first.endswith(b"\n"):
            while True:  # skip the rest of the line, a chunk at a time
                chunk = fh.readline(_LONG_LINE)
                if not chunk:
                    return False
                if chunk.endswith(b"\n"):
                    break
            return _next_line(fh) is not None
        second = _next_line(fh)
    if second is None:
        return False
    if _decodes(first):
        return True
    s = first.strip()
    # a broken first record: JSONL when the next line is a good one
    return s.startswith(b"{") and s.endswith(b"}") and _decodes(second)


def _decodes(raw: bytes) -> bool:
    try:
        loads(raw)
        return True
    except (ValueError, RecursionError):
        return False


def _next_line(fh: IO[bytes]) -> bytes | None:
    """The next non-blank line (its first ``_LONG_LINE`` bytes), None at the end."""
    while True:
        ln = fh.readline(_LONG_LINE)
        if not ln:
            return None
        if ln.strip():
            return ln


def documents(
    path: str | Path, nan_as_null: bool = False, jsonl: bool | None = None
) -> Iterator[tuple[int | None, Any]]:
    """(line, value or TraceError) for each line of a JSONL file, or (None, value or TraceError) once for a JSON
    document (``jsonl`` says which, else :func:`is_jsonl` tells; ``nan_as_null``: see :func:`loads`). Never raises
    for a file that cannot be read: that is a located error too."""
    if jsonl is None:
        try:
            jsonl = is_jsonl(path)
        except (OSError, EOFError) as exc:
            return iter(((None, TraceError(str(path), None, None, f"cannot read: {exc}")),))
    # a JSONL file's lines come straight from iter_lines, with no generator of its own around them: this runs once
    # per line of every JSONL input (benchmarks/converter_instructions.py, every JSONL case)
    return iter_lines(path, nan_as_null, located=True) if jsonl else _document(path, nan_as_null)


def _document(path: str | Path, nan_as_null: bool) -> Iterator[tuple[int | None, Any]]:
    yield None, load_located(path, nan_as_null)


# ---------------------------------------------------------------- inputs

def expand_inputs(inputs: Iterable[str | Path], *, records_only: bool = False) -> Iterator[Path | TraceError]:
    """The files a command's inputs name, in order, each directory's files sorted by name.

    ``records_only`` (commands that read trace or record JSONL): a directory gives its own ``*.jsonl`` and
    ``*.jsonl.gz`` files. Otherwise (agent logs): every file under it, recursively. Hidden files (an output being
    written, ``.NAME.*.partial``) are skipped. A path that does not exist, or a directory with nothing to read, is a
    located error in its place.
    """
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            if records_only:
                found = sorted(q for q in p.iterdir()
                               if q.is_file() and q.name.endswith(RECORDS_SUFFIXES) and not q.name.startswith("."))
            else:
                found = sorted(f for f in p.rglob("*")
                               if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts))
            if not found:
                what = "no *.jsonl or *.jsonl.gz files" if records_only else "no files"
                yield TraceError(str(p), None, None, f"directory holds {what}")
            yield from found
        elif p.is_file():
            yield p
        else:
            yield TraceError(str(p), None, None, "no such file or directory")


# ---------------------------------------------------------------- writing

@contextmanager
def atomic_output(path: str | Path, mode: str = "w", *, buffering: int = -1,
                  make_folder: bool = False) -> Iterator[IO[Any]]:
    """An output file written beside ``path`` (``.NAME.*.partial`` in its folder; ``make_folder``: the folder is
    created when missing) and renamed over it when the ``with`` block ends; ``mode`` is ``"w"`` (UTF-8 text,
    ``\\n`` line ends) or ``"wb"``.

    When the block raises (an error, Ctrl-C), the partial file is removed and ``path`` is left as it was. An
    error of the file itself (the folder cannot be written, the target is a directory) names ``path``, not the
    partial file. The file gets the permissions a new file would (or those of the file it replaces). A symbolic
    link is followed (the file it names is replaced); a path that is no regular file (``/dev/null``, a pipe) is
    written in place: there is no file to replace.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', not {mode!r}")
    target = Path(os.path.realpath(path))
    try:
        kind = os.stat(target).st_mode
    except FileNotFoundError:
        kind = None
    except OSError as exc:
        raise _naming(exc, Path(path)) from None
    if kind is not None and not stat.S_ISREG(kind):
        if stat.S_ISDIR(kind):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        with _open(target, mode, buffering) as fh:
            yield fh
        return
    try:
        if make_folder:
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _partial(target)
    except OSError as exc:
        raise _naming(exc, Path(path)) from None
    try:
        os.chmod(tmp, 0o666 & ~_umask() if kind is None else stat.S_IMODE(os.stat(target).st_mode))
        fh = _open(fd, mode, buffering)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    try:
        yield fh
    except BaseException:  # the caller's failure (an error, Ctrl-C) passes on as it is
        _discard(fh, tmp)
        raise
    try:
        fh.close()  # flushes: a full disk shows here
        os.replace(tmp, target)
    except OSError as exc:
        _discard(fh, tmp)
        raise _naming(exc, Path(path)) from None
    except BaseException:
        _discard(fh, tmp)
        raise


def _partial(target: Path) -> tuple[int, str]:
    """A new empty file beside ``target`` to write into, as ``tempfile.mkstemp`` makes one: (descriptor, path).
    Not mkstemp itself: importing tempfile (random, shutil and the compression modules) costs every convert that writes
    a file 10 M instructions, a twentieth of its start-up (benchmarks/converter_instructions.py, start-up)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}.partial")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:  # taken (one chance in 2**48): another name
            continue


def _open(file: int | Path, mode: str, buffering: int) -> IO[Any]:
    if mode == "w":
        return open(file, "w", encoding="utf-8", newline="\n", buffering=buffering)
    return open(file, "wb", buffering=buffering)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _discard(fh: IO[Any], tmp: str) -> None:
    try:
        fh.close()
    except OSError:
        pass  # what could not be flushed is thrown away anyway
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def _naming(exc: OSError, target: Path) -> OSError:
    """``exc`` saying ``target`` where it said the partial file (or nothing)."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(target))
