"""The long fuzz run: ≥100,000 generated inputs per entry point (trace reader, config loader, results decoder,
format detection, every converter), each counted, failures grouped by where they were raised.

    python benchmarks/fuzz_all.py                      # 100,000 per entry point, seeded random mutation
    python benchmarks/fuzz_all.py --n 20000 --only converter:react trace_reader
    python benchmarks/fuzz_all.py --atheris --n 100000 --only converter:react   # coverage-guided (pip install atheris)
    python benchmarks/fuzz_all.py --seconds 60         # a time budget per entry point instead

The inputs and contracts are the CI property tests' own (tests/fuzz/fuzzlib.py). A failure is any exception the
contract does not allow; each kind is printed once with the input number that reproduces it
(``--repro NAME NUMBER`` reruns that one input and shows the traceback).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # the fuzz library and the UI result shapes it uses live with the tests
from fuzz import fuzzlib  # noqa: E402

#: contract exceptions: the convert_file level treats unreadable files as located errors
ALLOWED: tuple[type, ...] = ()


def where(exc: BaseException) -> tuple[str, str, int]:
    # the innermost frame in the code under test; a contract's own assertion (no such frame) names fuzzlib's line
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "/tests/fuzz/" not in f.filename and f.filename != __file__]
    f = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    short = f.filename.split("site-packages/")[-1].replace(str(Path(__file__).resolve().parents[1]) + "/", "")
    return type(exc).__name__, short, f.lineno


def run_random(name: str, fn, n: int | None, seconds: float | None, seed: int) -> dict:
    fails: dict = {}
    count = 0
    t0 = time.perf_counter()
    while (n is None or count < n) and (seconds is None or time.perf_counter() - t0 < seconds):
        ch = fuzzlib.RandomChooser(random.Random(f"{seed}:{name}:{count}"))
        try:
            fn(ch)
        except RecursionError as exc:
            fails.setdefault(("RecursionError",) + where(exc)[1:], [count, str(exc)[:160], 0])[2] += 1
        except Exception as exc:  # noqa: BLE001 - that is what we are looking for
            fails.setdefault(where(exc), [count, str(exc)[:160], 0])[2] += 1
        count += 1
    return {"entry": name, "inputs": count, "seconds": round(time.perf_counter() - t0, 1),
            "failures": [{"where": f"{k[1]}:{k[2]} {k[0]}", "first_input": v[0], "message": v[1], "count": v[2]}
                         for k, v in fails.items()]}


def run_atheris(name: str, n: int) -> dict:
    """One entry point under atheris (one process each: atheris.Fuzz runs once per process)."""
    code = f"""
import sys, atheris
sys.path.insert(0, {str(TESTS)!r})
with atheris.instrument_imports(include=["ls_trajeval", "converters", "ls_trajeval.converters"]):
    from fuzz import fuzzlib
fn = fuzzlib.entry_points()[{name!r}]
def one(data):
    fn(fuzzlib.FdpChooser(atheris.FuzzedDataProvider(data)))
atheris.Setup([sys.argv[0], "-runs={n}", "-rss_limit_mb=4096", "-timeout=60", "-print_final_stats=1"], one)
atheris.Fuzz()
"""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    stats = {line.split(":")[0].strip(): line.split(":", 1)[1].strip() for line in proc.stderr.splitlines()
             if line.startswith("stat::")}
    failures = []
    if proc.returncode != 0:
        tail = [x for x in proc.stderr.splitlines() if "Error" in x or "Exception" in x][-3:]
        failures.append({"where": "atheris", "message": " | ".join(tail)[:300], "count": 1, "first_input": None})
    return {"entry": name, "inputs": int(stats.get("stat::number_of_executed_units", 0) or 0),
            "seconds": round(time.perf_counter() - t0, 1), "failures": failures, "engine": "atheris"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="inputs per entry point")
    ap.add_argument("--seconds", type=float, help="a time budget per entry point instead of --n")
    ap.add_argument("--only", nargs="*", help="entry point names (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--atheris", action="store_true", help="coverage-guided, with atheris")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--repro", nargs=2, metavar=("NAME", "NUMBER"))
    ap.add_argument("--giant-one-in", type=int, default=100, help="rarer giants than in CI (10 MB steps, 10^5 "
                    "steps, 10^5 nesting: seconds each; the CI tests run each of them on every converter anyway)")
    args = ap.parse_args()
    fuzzlib.GIANT_ONE_IN = args.giant_one_in
    eps = fuzzlib.entry_points()
    if args.repro:
        name, i = args.repro
        eps[name](fuzzlib.RandomChooser(random.Random(f"{args.seed}:{name}:{i}")))
        print("no failure")
        return
    names = args.only or list(eps)
    results = []
    for name in names:
        if args.atheris:
            res = run_atheris(name, args.n)
        else:
            res = run_random(name, eps[name], None if args.seconds else args.n, args.seconds, args.seed)
        results.append(res)
        rate = res["inputs"] / res["seconds"] if res["seconds"] else 0
        print(f"{name:30s} {res['inputs']:>8} inputs {res['seconds']:>8.1f} s {rate:>7.0f}/s  "
              f"{len(res['failures'])} failure kinds", flush=True)
        for f in res["failures"]:
            print(f"    {f['where']}: {f['count']}x, first input #{f['first_input']}: {f['message']}", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    total = sum(r["inputs"] for r in results)
    bad = sum(len(r["failures"]) for r in results)
    print(f"total: {total} inputs over {len(results)} entry points; {bad} failure kinds")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
