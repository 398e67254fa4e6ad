"""Generate a synthetic trajectory_eval export and time/measure the analysis commands on it.

    python benchmarks/bench_report.py --traces 100000 --steps 20 --annotators 1 --out /tmp/bench

Each command runs in its own process; peak memory is that process's max RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

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


def run(cmd: list) -> tuple:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait4 gives this child's own peak RSS (RUSAGE_CHILDREN would be the max over all children so far)
    _, status, usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    out, err = proc.stdout.read(), proc.stderr.read()
    rc = os.waitstatus_to_exitcode(status)
    if rc:
        print(out[-2000:], err[-2000:], file=sys.stderr)
    return dt, usage.ru_maxrss / 1024, rc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--annotators", type=int, default=1)
    ap.add_argument("--out", default="/tmp/ls_trajeval_bench")
    ap.add_argument("--commands", default="report")
    args = ap.parse_args()
    out = Path(args.out)
    t0 = time.perf_counter()
    files = generate(out / "export", args.traces, args.steps, args.annotators)
    size = sum(f.stat().st_size for f in files) / 2**20
    print(f"generated {args.traces} traces x {args.annotators} annotators ({size:.0f} MiB) "
          f"in {time.perf_counter() - t0:.1f}s")
    code = ("import sys; from ls_trajeval.cli.analysis import {0}_command as c; "
            "c.main(sys.argv[1:], standalone_mode=True)")
    for name in args.commands.split(","):
        extra = {"report": ["-o", str(out / "report")], "agreement": ["-o", str(out / "agreement.json")],
                 "prm": ["-o", str(out / "prm.jsonl")]}[name]
        dt, peak, rc = run([sys.executable, "-c", code.format(name), str(out / "export"), *extra])
        print(f"{name}: {dt:.1f}s, peak RSS {peak:.0f} MiB, exit {rc}")


if __name__ == "__main__":
    main()
