"""Every converter's output on a set of inputs, written to a folder, and two such folders compared byte for
byte: the check that a speed-up (or any refactoring) changed no output.

    python benchmarks/converter_outputs.py write /tmp/after                 # tests/fixtures/**, every converter
    python benchmarks/converter_outputs.py write /tmp/after --fuzz 300 \
        --extra /work/staging/fixtures ~/.cache/ls-trajeval-bench/inputs
    PYTHONPATH=/tmp/main-pkg python benchmarks/converter_outputs.py write /tmp/before ...  # that version
    python benchmarks/converter_outputs.py compare /tmp/before /tmp/after

What is written, one file per input and converter: each trace's JSONL line exactly as ``convert`` writes it,
and each located error and warning as its text, in the order the converter yields them; the format
``--format auto`` picks (or its refusal) per input. Run from the same directory both times, one run after
the other: inputs under it are named by their relative path, which is what ends up in ``source_file``, and
the fuzz inputs are written to ``./converter-outputs-fuzz/``.

- ``tests/fixtures/**``: every converter on every file (forced formats that do not fit exercise the error
  paths, and their messages are output too).
- ``--extra PATH``: files or folders (big ones, such as the benchmark's inputs), with the converters whose
  detector claims the file.
- ``--fuzz N``: N seeded hostile inputs per converter from the fuzz tests' generator (tests/fuzz/fuzzlib.py),
  the same inputs on every run with the same seed.

``--compare``-style runs of another version (``PYTHONPATH=DIR``) need that version's ``ls_trajeval`` package
with its converters inside, as benchmarks/bench_converters.py describes.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the fuzz generator lives with the tests


def _encode(text: str) -> bytes:
    """Message text as bytes: undecodable input bytes back as they were, and any other lone surrogate (a
    hostile input's ``\\ud800`` that a message quotes) kept as its code point, so every message can be compared."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _render(items) -> bytes:
    from ls_trajeval.converters.base import ConvertWarning
    from ls_trajeval.core.trace import Trace, TraceError
    from ls_trajeval.flows.convert import trace_line

    out = []
    for item in items:
        if isinstance(item, Trace):
            out.append(trace_line(item))
        elif isinstance(item, TraceError):
            out.append(_encode(f"ERROR {item.source}|{item.line}|{item.field}|{item.trace_id}|{item.message}\n"))
        elif isinstance(item, ConvertWarning):
            out.append(_encode(f"WARNING {item}\n"))
        else:
            out.append(_encode(f"UNEXPECTED {type(item).__name__} {item!r}\n"))
    return b"".join(out)


def _slug(p: Path) -> str:
    return str(p).strip("/").replace("/", "__")


def _rel(p: Path) -> Path:
    try:
        return p.resolve().relative_to(Path.cwd())
    except ValueError:
        return p


def _files(root: Path) -> list[Path]:
    try:
        from ls_trajeval.core.jsonfiles import expand_inputs
    except ImportError:  # a version from before the one reading layer
        from ls_trajeval.converters.support.files import expand_inputs

    return [_rel(p) for p in expand_inputs([root]) if isinstance(p, Path)]


def _one(out: Path, path: Path, conv_names) -> int:
    from ls_trajeval.flows.convert import FormatError, convert_file, detect_format

    try:
        auto = detect_format(path).name
    except FormatError as exc:
        auto = f"refused: {exc}"
    (out / f"{_slug(path)}.auto").write_bytes(_encode(auto + "\n"))
    for name in conv_names:
        (out / f"{_slug(path)}.{name}.out").write_bytes(_render(convert_file(path, name)))
    return len(conv_names)


def write(out: Path, extra: list[Path], fuzz: int, seed: int) -> None:
    from ls_trajeval.converters.registry import all_converters, detect
    from ls_trajeval.converters.support.files import make_sample
    from ls_trajeval.flows.convert import convert_file

    out.mkdir(parents=True, exist_ok=True)
    every = [c.name for c in all_converters()]
    n = 0
    for p in _files(ROOT / "tests" / "fixtures"):
        n += _one(out, p, every)
    for root in extra:
        for p in _files(root):
            n += _one(out, p, [c.name for _, c in detect(make_sample(p))])
    if fuzz:
        from fuzz import fuzzlib

        seeds = fuzzlib.converter_seeds()
        work = Path("converter-outputs-fuzz")  # relative: its name is in the output's source_file
        work.mkdir(exist_ok=True)
        for name in every:
            rng = fuzzlib.RandomChooser(random.Random(f"{seed}:{name}"))
            chunks = []
            for i in range(fuzz):
                suffix, data = fuzzlib.generic_input(rng, seeds.get(name) or seeds["trace_jsonl"], giants=False)
                p = work / f"input{suffix}"
                p.write_bytes(data)
                chunks.append(f"#{i}\n".encode() + _render(convert_file(p, name)))
                p.unlink()
                n += 1
            (out / f"fuzz.{name}.out").write_bytes(b"".join(chunks))
        os.rmdir(work)
    print(f"{n} conversions written to {out}")


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    bad = 0
    for name in names:
        pa, pb = a / name, b / name
        if not pa.exists() or not pb.exists():
            print(f"only in {b if pb.exists() else a}: {name}")
            bad += 1
            continue
        da, db = pa.read_bytes(), pb.read_bytes()
        if da == db:
            continue
        bad += 1
        la, lb = da.split(b"\n"), db.split(b"\n")
        k = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
        print(f"DIFFERS {name}: line {k + 1}")
        print(f"  - {la[k][:400]!r}" if k < len(la) else "  - <end>")
        print(f"  + {lb[k][:400]!r}" if k < len(lb) else "  + <end>")
    print(f"{len(names)} outputs compared, {bad} differ")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="convert the inputs and write every output to DIR")
    w.add_argument("dir", type=Path)
    w.add_argument("--extra", type=Path, nargs="*", default=[],
                   help="more files or folders (detecting converters only)")
    w.add_argument("--fuzz", type=int, default=0, help="seeded hostile inputs per converter")
    w.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("compare", help="compare two folders written by `write`")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "write":
        write(args.dir, args.extra, args.fuzz, args.seed)
    else:
        sys.exit(compare(args.a, args.b))


if __name__ == "__main__":
    main()
