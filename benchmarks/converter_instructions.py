"""Instructions a conversion executes, counted by valgrind: the noise-free before/after figure for a change
to a converter (CPU time on a shared 2-core machine wanders by ±10%; an instruction count does not move).

    python benchmarks/converter_instructions.py                              # every benchmark case, 2 MB each
    python benchmarks/converter_instructions.py --only aider,mcp --compare /tmp/main-pkg

Each case converts the first ``--mb`` MB (whole lines) of bench_converters.py's 10 MB input for it, in a fresh
``python -m ls_trajeval convert`` run under ``valgrind --tool=callgrind``, after an uncounted run on its first
50 kB that caches the bytecode; an empty input gives the start-up alone. ``--compare DIR`` counts another version of
ours the same way (DIR first on PYTHONPATH, holding that version's ``ls_trajeval`` package with its converters inside,
as bench_converters.py describes). Needs ``valgrind`` (Debian: ``apt-get install valgrind``); about 10 s a run.

Instructions are not time: Potato's converter (another program, another memory profile) is compared by
bench_converters.py in CPU time; this counts ours against ours.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_converters import CACHE, CASES  # noqa: E402 - the benchmark's cases and inputs, one list of them


def count(cmd: list[str], pythonpath: Path | None, cwd: str, warm: list[str] | None = None) -> int:
    """Instructions of ``cmd``; ``warm`` (the same command on a small input) runs first, uncounted, so that the
    bytecode of what it imports is cached, as an installed package has it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(CACHE / "pycache")
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    subprocess.run(warm or cmd, env=env, cwd=cwd, capture_output=True)
    run = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd]
    out = subprocess.run(run, env=env, cwd=cwd, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", out.stderr)
    if m is None:
        raise SystemExit(f"valgrind gave no count:\n{out.stderr[-1000:]}")
    return int(m.group(1))


def head(src: Path, dst: Path, size: int) -> None:
    """The first ``size`` bytes of ``src`` that end a line (JSONL, Markdown), or ``src`` whole if smaller."""
    with open(src, "rb") as fh:
        data = fh.read(size)
    if len(data) == size:
        data = data[: data.rfind(b"\n") + 1]
    dst.write_bytes(data)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=2, help="MB of each case's input to convert")
    ap.add_argument("--only", help="comma-separated case names (first word of the row, e.g. aider,mcp)")
    ap.add_argument("--compare", type=Path, metavar="DIR",
                    help="also count the version of ours whose ls_trajeval package is in DIR")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    only = set(args.only.split(",")) if args.only else None
    ours = [sys.executable, "-m", "ls_trajeval", "convert"]
    with tempfile.TemporaryDirectory() as tmp:  # also the working directory: a checkout's folder must not shadow DIR
        empty = Path(tmp) / "empty.jsonl"
        empty.touch()
        versions = [("ours", None)] + ([("compared", args.compare)] if args.compare else [])
        start = {name: count([*ours, str(empty), "--format", "react", "-o", os.devnull, "-q"], pp, tmp)
                 for name, pp in versions}
        print("start-up (empty input): " + ", ".join(f"{n} {v / 1e6:.0f} M" for n, v in start.items()), flush=True)
        print("| case | MB | ours M instructions (past start-up) |"
              + (" compared | ours / compared |" if args.compare else ""))
        print("|---|---|---|" + ("---|---|" if args.compare else ""))
        for case in CASES:
            if only and case.row.split()[0] not in only or case.ours_kind == "otlp" or not case.suffix:
                continue  # an OTLP document or a directory cannot be cut at a line: bench_converters.py times them
            variant = "-" + case.row.split("(")[1].split()[0].strip(".)") if "(" in case.row else ""
            slug = case.row.split()[0] + variant
            src = CACHE / "inputs" / f"{slug}-10{case.suffix}"
            if not src.exists():
                print(f"| {case.row} | – | no input: run bench_converters.py --mb 10 first |")
                continue
            part = Path(tmp) / f"{slug}{case.suffix}"
            head(src, part, int(args.mb * 1e6))
            small = Path(tmp) / f"small-{slug}{case.suffix}"
            head(src, small, 50_000)
            cells = [case.row, f"{part.stat().st_size / 1e6:.1f}"]
            cmd = [*ours, str(part), "--format", case.ours_fmt, "-o", os.devnull, "-q"]
            warm = [*ours, str(small), "--format", case.ours_fmt, "-o", os.devnull, "-q"]
            got = {n: count(cmd, pp, tmp, warm) - start[n] for n, pp in versions}
            cells.append(f"{got['ours'] / 1e6:.0f}")
            if args.compare:
                cells += [f"{got['compared'] / 1e6:.0f}", f"{got['ours'] / got['compared']:.2f}"]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
