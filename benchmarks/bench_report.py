"""The analysis commands on an export, beside plain pandas reading the same file, in one run.

    python benchmarks/bench_report.py --input /tmp/ls-trajeval-bench-export/files/100000-0.jsonl
    python benchmarks/bench_report.py --traces 100000 --steps 20 --annotators 1 --out /tmp/bench

``--input`` times the commands on an export you have (the file ``bench_export.py`` writes); without it a synthetic
export is generated into ``--out``. Each command and the anchor, ``pandas.read_json(path, lines=True)`` (what a user
would write to load the export into a table), run in processes of their own, ``--repeats`` rounds in rotating
order; wall time and each process's peak RSS, medians and the ratio to pandas. ``--max-memory`` caps every
process's address space (GB); should memory run out all the same, the measured process is the one the kernel ends.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

MEASURE = Path(__file__).resolve().parent / "measure.py"
TAXONOMY = {
    "reasoning": ["logical_error", "incorrect_assumption", "over_generalization", "incorrect_calculation"],
    "perception": ["missed_element", "misidentified_element", "hallucinated_element"],
    "action": ["wrong_tool", "wrong_arguments", "premature_termination", "unnecessary_action"],
    "communication": ["unclear_explanation", "missing_context", "overconfident_claim"],
}
WEIGHTS = {"minor": -1, "major": -5, "critical": -10}
TYPES = ["thought", "action", "observation", "code"]


def make_line(rng: random.Random, i: int, n_steps: int, annotator: str, base_errors=None) -> dict:
    steps = []
    score = 100
    curve = []
    n_err = 0
    first = None
    worst = None
    errs = base_errors if base_errors is not None else {
        k: None for k in range(n_steps) if rng.random() < 0.12}
    for k in range(n_steps):
        entry = {"step_index": k, "step_type": TYPES[k % 4], "step_text": f"step {k} of trace {i}: " + "x" * 40,
                 "correctness": "correct", "error_category": None, "error_type": None, "severity": None,
                 "rationale": None}
        flip = rng.random() < 0.1  # annotators disagree on some steps
        if (k in errs) != flip:
            cat = rng.choice(list(TAXONOMY))
            sev = rng.choice(list(WEIGHTS))
            entry.update(correctness=rng.choice(["incorrect", "incorrect", "partially_correct"]),
                         error_category=cat, error_type=rng.choice(TAXONOMY[cat]), severity=sev,
                         rationale="because")
            score = max(0, score + WEIGHTS[sev])
            n_err += 1
            first = k if first is None else first
            worst = sev if worst is None or abs(WEIGHTS[sev]) > abs(WEIGHTS[worst]) else worst
        entry["score"] = score
        curve.append(score)
        steps.append(entry)
    return {"trace_id": f"trace_{i:06d}", "task": f"task {i}", "project_id": 1, "task_id": i,
            "annotation_id": hash((i, annotator)) & 0xFFFFFFF, "annotator": annotator, "annotator_id": 1,
            "created_at": "2026-12-02T15:00:00.000000Z", "updated_at": "2026-12-02T15:03:00.000000Z",
            "lead_time": 30.0, "layout": "transcript", "error_localization": steps,
            "overall_success": rng.choice(["success", "partial", "failure", None]),
            "running_score": curve, "final_score": score, "n_steps": n_steps, "n_errors": n_err,
            "first_error_step": first, "worst_severity": worst, "severity_weights": WEIGHTS,
            "score_initial": 100, "score_min": 0, "scheme": "error_localization"}


def generate(out: Path, traces: int, steps: int, annotators: int, seed: int = 0) -> list:
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    files = []
    handles = []
    for a in range(annotators):
        p = out / f"annotator_{a}.jsonl"
        files.append(p)
        handles.append(open(p, "w"))
    for i in range(traces):
        n = max(2, int(rng.gauss(steps, steps / 4)))
        errs = {k: None for k in range(n) if rng.random() < 0.12}
        for a, fh in enumerate(handles):
            fh.write(json.dumps(make_line(rng, i, n, f"annotator{a}@example.com", errs)) + "\n")
    for fh in handles:
        fh.close()
    return files


def run(cmd: list, max_memory: float | None) -> tuple:
    """Wall time, peak RSS (MiB) and exit code of ``cmd``, in its own process (benchmarks/measure.py), the first
    the kernel ends should memory run out on a machine shared with other work."""
    cap = ["--max-memory", str(max_memory)] if max_memory else []
    proc = subprocess.run([sys.executable, str(MEASURE), "--oom-first", *cap, "--", *cmd], capture_output=True,
                          text=True)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    if r["rc"]:
        print(r["out"][-2000:], r["err"][-2000:], file=sys.stderr)
    return r["wall"], r["rss"], r["rc"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", help="an export (a file or a directory of them) to time the commands on")
    ap.add_argument("--traces", type=int, default=100_000, help="without --input: traces to generate")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--annotators", type=int, default=1)
    ap.add_argument("--out", default="/tmp/ls_trajeval_bench")
    ap.add_argument("--commands", default="report")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-memory", type=float, metavar="GB")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.input:
        inputs = [Path(args.input)]
    else:
        t0 = time.perf_counter()
        inputs = generate(out / "export", args.traces, args.steps, args.annotators)
        print(f"generated {args.traces} traces x {args.annotators} annotators in {time.perf_counter() - t0:.1f}s")
    files = [f for p in inputs for f in (sorted(p.glob("*.jsonl")) if p.is_dir() else [p])]
    print(f"input: {sum(f.stat().st_size for f in files) / 2**20:.0f} MiB in {len(files)} file(s)", flush=True)
    code = ("import sys; from ls_trajeval.cli.analysis import {0}_command as c; "
            "c.main(sys.argv[1:], standalone_mode=True)")
    cmds = {}
    for name in args.commands.split(","):
        extra = {"report": ["-o", str(out / "report"), "--quiet"], "agreement": ["-o", str(out / "agreement.json")],
                 "prm": ["-o", str(out / "prm.jsonl")]}[name]
        cmds[name] = [sys.executable, "-c", code.format(name), *map(str, inputs), *extra]
    # the anchor reads one file: a directory's files are read one after the other, as pandas users would
    cmds["pandas.read_json(lines=True)"] = [sys.executable, "-c", "import sys, pandas; [print(pandas.read_json(p, "
                                            "lines=True).shape) for p in sys.argv[1:]]", *map(str, files)]
    names = list(cmds)
    runs: dict = {n: [] for n in names}
    for rnd in range(args.repeats):
        for name in names[rnd % len(names):] + names[:rnd % len(names)]:
            dt, peak, rc = run(cmds[name], args.max_memory)
            runs[name].append((dt, peak, rc))
            print(f"  round {rnd + 1} {name}: {dt:.1f} s, peak RSS {peak:.0f} MiB, exit {rc}", flush=True)
    print(f"medians of {args.repeats}:")
    med = {n: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs), max(r[2] for r in rs))
           for n, rs in runs.items()}
    anchor = med["pandas.read_json(lines=True)"]
    for name in names:
        dt, peak, rc = med[name]
        ratio = "" if name.startswith("pandas") or anchor[2] else f"  {dt / anchor[0]:.2f}x pandas' time, " \
            f"{peak / anchor[1]:.2f}x its memory"
        print(f"  {name}: {dt:.1f} s, peak RSS {peak:.0f} MiB{'' if rc == 0 else f', exit {rc}'}{ratio}")


if __name__ == "__main__":
    main()
