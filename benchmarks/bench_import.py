"""Import, export and report at scale on a Label Studio backed by PostgreSQL (started here, on 127.0.0.1).

    python benchmarks/bench_import.py --n 100000 --root /tmp/bench-scale

1. Generates N traces (5-200 steps, mean about 20).
2. Anchor: the same tasks, prepared beforehand (what our importer sends: data + meta), imported with bare
   ``label_studio_sdk`` calls (``projects.import_tasks`` per batch) into project A.
3. ``ls-trajeval import`` of the trace file into project B, in its own process: wall time and peak RSS.
   Prints the ratio B / A (the issue's bound: at most 1.15).
4. A rerun of the same import into B (everything skipped): the cost of the idempotency check.
5. Project C: the tasks with one annotation each (imported inline, bare SDK: creating 10^5 annotations one
   request at a time would measure the annotation API, not ours). ``ls-trajeval export`` of C in its own
   process: wall time, peak RSS, and completeness (line count and a checksum over the sorted trace ids).
6. ``ls-trajeval report`` on that export: wall time and peak RSS.

The order of steps 2 and 3 alternates with --cli-first, so that a growing database does not favour one side
(run both orders and take the geometric mean of the two ratios); a CHECKPOINT before each side keeps one side's
writes from being flushed during the other's run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pg"))

import tracegen  # noqa: E402
from pgserver import start_label_studio_on_postgres  # noqa: E402

from ls_trajeval import label_configs  # noqa: E402
from ls_trajeval.core import config as cfg  # noqa: E402
from ls_trajeval.core.fields import META_TRACE_ID  # noqa: E402
from ls_trajeval.core.tasks import task_data  # noqa: E402
from ls_trajeval.core.trace import parse_trace  # noqa: E402
from ls_trajeval.studio import client as studio  # noqa: E402

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
ANNOTATION = [{"id": "o", "from_name": "overall_success", "to_name": "te_task", "type": "choices",
               "value": {"choices": ["failure"]}},
              {"id": "r1", "from_name": "error_localization", "to_name": "te_trace", "type": "paragraphlabels",
               "value": {"start": "1", "end": "1", "startOffset": 0, "endOffset": 1, "paragraphlabels": ["incorrect"]}},
              {"id": "r1", "from_name": "error_localization_severity", "to_name": "te_trace", "type": "choices",
               "value": {"start": "1", "end": "1", "startOffset": 0, "endOffset": 1, "choices": ["major"]}}]


def measured(cmd: list[str], env: dict) -> tuple[float, float, str, str, int]:
    """Run ``cmd`` under a small wrapper process that reports the child's own peak RSS."""
    wrapper = ("import json, resource, subprocess, sys, time\n"
               "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "w = time.perf_counter() - t\n"
               "r = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
               "print(json.dumps({'wall': w, 'rss': r, 'out': p.stdout, 'err': p.stderr[-4000:], "
               "'rc': p.returncode}))\n")
    res = subprocess.run([sys.executable, "-c", wrapper, *cmd], env=env, capture_output=True, text=True)
    data = json.loads(res.stdout.strip().splitlines()[-1])
    return data["wall"], data["rss"], data["out"], data["err"], data["rc"]


def prepared_tasks(path: Path, out: Path, annotate: bool = False) -> int:
    """The tasks our importer would send, written out once (not timed)."""
    n = 0
    with open(path, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as dst:
        for line in src:
            t = parse_trace(json.loads(line))
            task = {"data": task_data(t, CONFIG), "meta": {META_TRACE_ID: t.trace_id}}
            if annotate:
                task["annotations"] = [{"result": ANNOTATION, "lead_time": 12.5}]
            dst.write(json.dumps(task, ensure_ascii=False) + "\n")
            n += 1
    return n


def bare_sdk_import(url: str, token: str, project_id: int, prepared: Path, batch_size: int) -> float:
    """The anchor: read prepared tasks, send them in batches with the SDK, nothing else."""
    from label_studio_sdk import LabelStudio

    client = LabelStudio(base_url=url, api_key=token, timeout=600)
    t0 = time.perf_counter()
    batch = []
    with open(prepared, encoding="utf-8") as fh:
        for line in fh:
            batch.append(json.loads(line))
            if len(batch) >= batch_size:
                client.projects.import_tasks(id=project_id, request=batch, return_task_ids=False)
                batch = []
    if batch:
        client.projects.import_tasks(id=project_id, request=batch, return_task_ids=False)
    return time.perf_counter() - t0


def ids_checksum(ids) -> str:
    h = hashlib.sha256()
    for i in sorted(ids):
        h.update(i.encode() + b"\n")
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--root", default="/tmp/ls-trajeval-bench-scale", help="PostgreSQL + Label Studio + files here "
                    "(reused when run again)")
    ap.add_argument("--cli-first", action="store_true")
    ap.add_argument("--skip-export", action="store_true")
    args = ap.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    files = root / "files"
    files.mkdir(exist_ok=True)
    os.chmod(root, 0o755)

    traces = files / f"traces-{args.n}.jsonl"
    if not traces.exists():
        t0 = time.perf_counter()
        tracegen.write(traces, args.n, seed=42)
        print(f"generated {args.n} traces ({traces.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f} s",
              flush=True)
    steps = [len(json.loads(x)["trace"]) for x in open(traces, encoding="utf-8")]
    print(f"steps per trace: min {min(steps)}, mean {sum(steps) / len(steps):.1f}, max {max(steps)}", flush=True)
    prepared = files / f"prepared-{args.n}.jsonl"
    if not prepared.exists():
        prepared_tasks(traces, prepared)
    prepared_ann = files / f"prepared-annotated-{args.n}.jsonl"
    if not args.skip_export and not prepared_ann.exists():
        prepared_tasks(traces, prepared_ann, annotate=True)

    pg, ls = start_label_studio_on_postgres(root / "server")
    try:
        client = studio.connect(ls.url, ls.credentials.token)
        env = dict(os.environ, LABEL_STUDIO_URL=ls.url, LABEL_STUDIO_API_KEY=ls.credentials.token)
        stamp = time.strftime("%H%M%S")
        pa = studio.create_project(client, CONFIG, "transcript", f"bench bare {args.n} {stamp}")["id"]
        pb = studio.create_project(client, CONFIG, "transcript", f"bench cli {args.n} {stamp}")["id"]
        cli = [sys.executable, "-m", "ls_trajeval", "import", str(traces), "--project", str(pb), "--quiet",
               "--batch-size", str(args.batch_size)]

        def run_bare():
            return bare_sdk_import(ls.url, ls.credentials.token, pa, prepared, args.batch_size)

        def run_cli():
            wall, rss, out, err, rc = measured(cli, env)
            assert rc == 0, err
            print(f"  cli: {out.strip()}", flush=True)
            return wall, rss

        def settle():
            # the first side's writes are otherwise flushed by a checkpoint during the second side's run
            # (PostgreSQL's log showed a 160 s checkpoint write), which charges one side for the other's work
            pg.psql("CHECKPOINT")
            time.sleep(5)

        if args.cli_first:
            settle()
            cli_wall, cli_rss = run_cli()
            settle()
            bare_wall = run_bare()
        else:
            settle()
            bare_wall = run_bare()
            settle()
            cli_wall, cli_rss = run_cli()
        for pid in (pa, pb):
            n = studio.get_project(client, pid)["task_number"]
            assert n == args.n, (pid, n)
        print(f"import {args.n} traces: bare SDK {bare_wall:.1f} s ({args.n / bare_wall:.0f} tasks/s); "
              f"ls-trajeval import {cli_wall:.1f} s ({args.n / cli_wall:.0f} traces/s), peak RSS {cli_rss:.0f} MB; "
              f"ratio {cli_wall / bare_wall:.3f}", flush=True)
        wall, rss, out, err, rc = measured(cli, env)
        assert rc == 0 and f"imported 0, skipped {args.n}" in out, out + err
        print(f"rerun (all {args.n} already there): {wall:.1f} s, peak RSS {rss:.0f} MB", flush=True)

        if args.skip_export:
            return
        pc = studio.create_project(client, CONFIG, "transcript", f"bench annotated {args.n} {stamp}")["id"]
        t0 = time.perf_counter()
        bare_sdk_import(ls.url, ls.credentials.token, pc, prepared_ann, args.batch_size)
        print(f"annotated project: {args.n} tasks + annotations imported in {time.perf_counter() - t0:.0f} s",
              flush=True)
        out_file = files / f"export-{args.n}.jsonl"
        wall, rss, out, err, rc = measured([sys.executable, "-m", "ls_trajeval", "export", "--project", str(pc),
                                            "-o", str(out_file)], env)
        assert rc == 0, err
        ids, lines = [], 0
        with open(out_file, encoding="utf-8") as fh:
            for line in fh:
                ids.append(json.loads(line)["trace_id"])
                lines += 1
        expected = [f"gen-{i:07d}" for i in range(args.n)]
        complete = lines == args.n and ids_checksum(ids) == ids_checksum(expected)
        print(f"export {lines} annotations ({out_file.stat().st_size / 1e6:.0f} MB): {wall:.1f} s "
              f"({lines / wall:.0f} records/s), peak RSS {rss:.0f} MB; complete (count + sha256 of trace ids): "
              f"{complete}", flush=True)
        assert complete
        rep = files / f"report-{args.n}"
        wall, rss, out, err, rc = measured([sys.executable, "-m", "ls_trajeval", "report", str(out_file), "-o",
                                            str(rep), "--quiet"], env)
        assert rc == 0, err
        print(f"report on the export: {wall:.1f} s, peak RSS {rss:.0f} MB", flush=True)
    finally:
        ls.stop()
        pg.stop()


if __name__ == "__main__":
    main()
