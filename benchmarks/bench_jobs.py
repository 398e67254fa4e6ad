"""`convert -j N` on many files: wall time at 1, 2 and every CPU, and that the output is the same.

    python benchmarks/bench_jobs.py [--files 48] [--mb 1.5] [--repeat 3]

Writes ``--files`` files of about ``--mb`` MB each, cycling through six formats with the converter
benchmark's generators (OpenAI Chat, Anthropic, LangChain, structured ReAct, SWE-agent steps, Claude
Code), then runs ``python -m ls_trajeval convert DIR -o OUT -j N`` as a fresh process per run, the job
counts in turn (``--repeat`` rounds), and prints the median wall time per job count with its speed-up
over ``-j 1``. Every run's output must equal the ``-j 1`` output byte for byte, or the script fails.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_converters as bc  # noqa: E402  the generators of the converter benchmark

GENERATORS = [("openai_chat", bc.gen_openai), ("anthropic", bc.gen_anthropic), ("langchain", bc.gen_langchain),
              ("react", bc.gen_react_structured), ("swe_agent", bc.gen_swe_steps), ("claude_code", None)]


def write_inputs(folder: Path, files: int, mb: float) -> float:
    for i in range(files):
        name, gen = GENERATORS[i % len(GENERATORS)]
        if gen is None:
            bc.write_claude(folder / f"{i:03d}-{name}.jsonl", mb)
        else:
            bc.write_jsonl(folder / f"{i:03d}-{name}.jsonl", gen, mb)
    return sum(p.stat().st_size for p in folder.iterdir()) / 1e6


def run(folder: Path, out: Path, jobs: int) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "ls_trajeval", "convert", str(folder), "-o", str(out), "-q",
                        "-j", str(jobs)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"-j {jobs} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return wall, hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=48)
    ap.add_argument("--mb", type=float, default=1.5, help="size of each file")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cpus = os.cpu_count() or 1
    counts = sorted({1, 2, cpus})
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        folder = Path(tmp) / "in"
        folder.mkdir()
        total = write_inputs(folder, args.files, args.mb)
        walls: dict[int, list[float]] = {n: [] for n in counts}
        reference = None
        for _ in range(args.repeat):
            for n in counts:
                wall, digest = run(folder, Path(tmp) / f"out-{n}.jsonl", n)
                reference = reference or digest
                if digest != reference:
                    raise SystemExit(f"-j {n} wrote a different output than -j {counts[0]}")
                walls[n].append(wall)
        load = os.getloadavg()[0]
    print(f"{args.files} files, {total:.0f} MB, {cpus} CPUs, load average {load:.1f} at the end; "
          f"median of {args.repeat} runs each, outputs identical")
    print("| jobs | wall s (median) | speed-up over -j 1 |")
    print("|---|---|---|")
    base = statistics.median(walls[1])
    for n in counts:
        med = statistics.median(walls[n])
        print(f"| {n}{' (all CPUs)' if n == cpus else ''} | {med:.2f} | {base / med:.2f}× |")


if __name__ == "__main__":
    main()
