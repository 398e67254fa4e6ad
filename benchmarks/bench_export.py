"""Export on a PostgreSQL-backed Label Studio: ours against Label Studio's own JSON export, in one run.

    python benchmarks/bench_export.py --n 10000
    python benchmarks/bench_export.py --n 100000 --root /tmp/ls-trajeval-bench-export [--build-only]

1. Starts PostgreSQL and a Label Studio on it in ``--root`` (tests/pg/pgserver.py). The first run for a size
   builds its project there: N generated traces (10-200 steps, tests/pg/tracegen.py), each annotated by one
   annotator and a share of them by a second, in the shapes the labeling UI saves (tests/studio/uishapes.py), a
   few skipped; imported with their annotations in batches through the bare SDK (not timed). Later runs reuse it.
2. Times, each in its own process, ``--repeats`` rounds (the order rotates every round):
   - ``ls-trajeval export --project P -o FILE``
   - ``ls-trajeval export --project P --gold -o FILE``
   - Label Studio's synchronous JSON export, ``GET /api/projects/P/export?exportType=JSON`` (what the open-source
     Data Manager's Export button calls), streamed to a file
   - Label Studio's export snapshot (what Label Studio Enterprise's Export button makes): create
     (``POST /api/projects/P/exports/``), wait until it is completed, download it as JSON to a file, delete it
   - with ``--baseline SRC``, ``export`` as an earlier version (another source tree) does it
   Label Studio's two are called with plain httpx (the transport the SDK uses), the least a client can do.
   Label Studio is restarted after its sync export, which leaves it holding the whole project in memory.
   For each: wall time; the CPU seconds of the client, of Label Studio and of PostgreSQL (where the time goes); the
   client's peak RSS, and how far Label Studio's RSS rose during it.
3. Checks every output: ours has one line per submitted annotation (count and sha256 of the sorted
   (trace id, annotator) pairs against what was built), every round's file (and the earlier version's) is byte for
   byte the first; Label Studio's files hold N tasks.
4. Prints the medians and the ratios ours / Label Studio's.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURE = Path(__file__).resolve().parent / "measure.py"
sys.path.insert(0, str(ROOT / "tests"))

from pg import tracegen  # noqa: E402
from pg.pgserver import start_label_studio_on_postgres  # noqa: E402
from studio.uishapes import NASTY, ui_marks  # noqa: E402

from ls_trajeval import label_configs  # noqa: E402
from ls_trajeval.core import config as cfg  # noqa: E402
from ls_trajeval.core.fields import META_TRACE_ID  # noqa: E402
from ls_trajeval.core.tasks import task_data  # noqa: E402
from ls_trajeval.core.trace import parse_trace  # noqa: E402
from ls_trajeval.studio import client as studio  # noqa: E402

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
ANNOTATORS = ("bench-a@example.com", "bench-b@example.com")
SECOND_ANNOTATOR = 0.3  # share of the tasks a second annotator labelled too
SKIPPED = 0.02  # share of first annotations that are skips (was_cancelled, no result)
MIN_STEPS = 10
BATCH = 250
OURS = ("export", "export --gold")
THEIRS = ("Label Studio sync JSON", "Label Studio snapshot")
METHODS = OURS + THEIRS


# ---------------------------------------------------------------- building the project (once per size)
def _marks(rng: random.Random, n_steps: int) -> dict:
    """{step: (category, type, severity, rationale)}: 0-3 wrong steps, as an annotator marks them."""
    scheme = CONFIG.trajectory
    k = rng.choices((0, 1, 2, 3), (30, 35, 20, 15))[0]
    out = {}
    for step in rng.sample(range(n_steps), k):
        etype = rng.choice(scheme.types)
        why = " ".join(rng.choice(tracegen.WORDS) for _ in range(rng.randint(3, 20)))
        out[step] = (etype.category, etype.name, rng.choice(scheme.severities).name,
                     why + (f" {NASTY}" if rng.random() < 0.1 else ""))
    return out


def _second_opinion(rng: random.Random, marks: dict, n_steps: int) -> dict:
    """The second annotator agrees on most traces and differs on some steps of the others."""
    if rng.random() < 0.6:
        return dict(marks)
    other = {s: m for s, m in marks.items() if rng.random() < 0.5}
    other.update(_marks(rng, n_steps))
    return other


def built_tasks(n: int, users: dict, seed: int = 42):
    """(task to import, its submitted annotations' annotators) for N generated traces."""
    rng = random.Random(seed + 1)
    for raw in tracegen.traces(n, seed=seed, min_steps=MIN_STEPS):
        trace = parse_trace(raw)
        data = task_data(trace, CONFIG)
        transcript = data["te_transcript"]
        n_steps = len(trace.steps)
        first = _marks(rng, n_steps)
        outcome = rng.choice(("success", "partial", "failure"))
        annotations, submitted = [], []
        if rng.random() < SKIPPED:
            annotations.append({"completed_by": users[ANNOTATORS[0]], "was_cancelled": True, "result": [],
                                "ground_truth": False})
        else:
            annotations.append({"completed_by": users[ANNOTATORS[0]], "result": ui_marks("transcript", transcript,
                                first, outcome), "lead_time": round(rng.uniform(20, 600), 3), "ground_truth": False})
            submitted.append(ANNOTATORS[0])
        if rng.random() < SECOND_ANNOTATOR:
            second = _second_opinion(rng, first, n_steps)
            annotations.append({"completed_by": users[ANNOTATORS[1]], "result": ui_marks("transcript", transcript,
                                second, outcome), "lead_time": round(rng.uniform(20, 600), 3), "ground_truth": False})
            submitted.append(ANNOTATORS[1])
        yield {"data": data, "meta": {META_TRACE_ID: trace.trace_id}, "annotations": annotations}, \
            [(trace.trace_id, who) for who in submitted]


def pairs_checksum(pairs) -> str:
    h = hashlib.sha256()
    for tid, who in sorted(pairs):
        h.update(f"{tid}\t{who}\n".encode())
    return h.hexdigest()


def ensure_users(client) -> dict:
    return {email: studio.ensure_user(client, email)["id"] for email in ANNOTATORS}


def build(client, pg, n: int, state_file: Path) -> dict:
    """The annotated project of size N: made once, recorded in ``state_file``, reused."""
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    known = state.get(str(n))
    if known and studio.get_project(client, known["project"]).get("task_number") == n:
        return known
    users = ensure_users(client)
    pid = studio.create_project(client, CONFIG, "transcript", f"bench export {n} {time.strftime('%H%M%S')}")["id"]
    t0 = time.perf_counter()
    pairs, batch, skipped = [], [], 0
    for task, submitted in built_tasks(n, users):
        batch.append(task)
        pairs += submitted
        skipped += sum(1 for a in task["annotations"] if a.get("was_cancelled"))
        if len(batch) == BATCH:
            studio.call(client.projects.import_tasks, id=pid, request=batch, return_task_ids=False,
                        what="importing a batch")
            batch = []
            done = len(pairs)
            print(f"\r  building project {pid}: {done} annotations", end="", flush=True)
    if batch:
        studio.call(client.projects.import_tasks, id=pid, request=batch, return_task_ids=False,
                    what="importing a batch")
    pg.psql("VACUUM ANALYZE")
    known = {"project": pid, "tasks": n, "annotations": len(pairs), "skipped": skipped,
             "traces_annotated": len({t for t, _ in pairs}), "checksum": pairs_checksum(pairs)}
    print(f"\r  built project {pid}: {n} tasks, {len(pairs)} submitted annotations, {skipped} skipped, in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    state[str(n)] = known
    state_file.write_text(json.dumps(state, indent=1))
    return known


# ---------------------------------------------------------------- Label Studio's own export, as a client calls it
#: Run as ``python -c LS_CLIENT sync|snapshot URL PROJECT OUT`` (token in $LABEL_STUDIO_API_KEY): a process that
#: imports httpx and nothing else, so its peak RSS is the least any client of these endpoints needs.
LS_CLIENT = """
import os, sys, time
import httpx

how, url, project, out = sys.argv[1:]
with httpx.Client(base_url=url, headers={"Authorization": "Token " + os.environ["LABEL_STUDIO_API_KEY"]},
                  timeout=None) as http:
    if how == "sync":  # GET /api/projects/P/export?exportType=JSON
        path, params = f"/api/projects/{project}/export", {"exportType": "JSON"}
    else:  # an export snapshot: create, wait until completed, download as JSON (then delete it)
        snap = http.post(f"/api/projects/{project}/exports/", json={}).raise_for_status().json()
        while snap.get("status") not in ("completed", "failed"):
            time.sleep(0.5)
            snap = http.get(f"/api/projects/{project}/exports/{snap['id']}").raise_for_status().json()
        if snap["status"] != "completed":
            sys.exit(f"snapshot {snap['id']} failed")
        path, params = f"/api/projects/{project}/exports/{snap['id']}/download", {"exportType": "JSON"}
    with http.stream("GET", path, params=params) as r, open(out, "wb") as fh:
        r.raise_for_status()
        for chunk in r.iter_bytes(1 << 20):
            fh.write(chunk)
    if how != "sync":
        http.delete(f"/api/projects/{project}/exports/{snap['id']}")
"""


# ---------------------------------------------------------------- measuring
def _server_rss(pid: int) -> tuple[float, float]:
    """The process's (current, peak) RSS in MB."""
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _cpu(pids: list[int], children: bool = False) -> float:
    """CPU seconds these processes used (with ``children``, also their children that have exited)."""
    total = 0
    for pid in pids:
        try:
            stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # a database connection that has ended since it was listed
        total += sum(int(x) for x in stat[11:15 if children else 13])  # utime stime [cutime cstime]
    return total / os.sysconf("SC_CLK_TCK")


def _postgres_cpu(postmaster: int) -> float:
    """CPU seconds of the whole PostgreSQL server: its processes and the connections that have ended."""
    backends = [int(p) for p in open(f"/proc/{postmaster}/task/{postmaster}/children").read().split()]
    return _cpu([postmaster], children=True) + _cpu(backends)


def measured(cmd: list[str], env: dict, server_pid: int, postmaster: int) -> dict:
    """Wall time, CPU time and peak RSS of ``cmd`` (benchmarks/measure.py); the CPU seconds Label Studio and
    PostgreSQL spent meanwhile; and how far Label Studio's RSS rose above what it held before (its peak, VmHWM,
    reset to the current RSS first: Python keeps what it once took, so the peak alone would mostly say what earlier
    runs left behind)."""
    with open(f"/proc/{server_pid}/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM to the current RSS
    before, _ = _server_rss(server_pid)
    cpu = _cpu([server_pid]), _postgres_cpu(postmaster)
    proc = subprocess.run([sys.executable, str(MEASURE), "--", *cmd], env=env, capture_output=True, text=True)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    if r["rc"]:
        raise SystemExit(f"{' '.join(cmd)} exited {r['rc']}:\n{r['out'][-2000:]}\n{r['err']}")
    _, peak = _server_rss(server_pid)
    return {**r, "server_rise": peak - before, "server_peak": peak, "server_cpu": _cpu([server_pid]) - cpu[0],
            "pg_cpu": _postgres_cpu(postmaster) - cpu[1]}


def kept_exports(ls_dir: Path, tmp: Path) -> set[Path]:
    """The files Label Studio's own exports leave behind: a copy of every sync export in its data dir's export/, every
    snapshot's file in media/export/ (kept after the snapshot is deleted), a conversion's temporary file in ``tmp``
    (its TMPDIR): 1.8 GB each at 100,000 tasks, which filled this machine's disk within two rounds."""
    return {p for d in (ls_dir / "export", ls_dir / "media" / "export", tmp) if d.is_dir()
            for p in d.rglob("*") if p.is_file()}


def first_to_go(pid: int) -> None:
    """Label Studio's synchronous export holds the whole project in memory: on a shared machine, should memory run
    out, its server is the process the kernel ends, not someone else's."""
    with open(f"/proc/{pid}/oom_score_adj", "w") as fh:
        fh.write("1000")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_ours(path: Path, known: dict) -> None:
    pairs = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            pairs.append((rec["trace_id"], rec["annotator"]))
    if len(pairs) != known["annotations"] or pairs_checksum(pairs) != known["checksum"]:
        raise SystemExit(f"{path}: {len(pairs)} records, expected {known['annotations']} (or the pairs differ)")


def check_gold(path: Path, known: dict) -> None:
    with open(path, encoding="utf-8") as fh:
        ids = {json.loads(line)["trace_id"] for line in fh}
    if len(ids) != known["traces_annotated"]:
        raise SystemExit(f"{path}: {len(ids)} gold traces, expected {known['traces_annotated']}")


def check_label_studio(path: Path, known: dict) -> None:
    import ijson

    with open(path, "rb") as fh:
        n = sum(1 for _ in ijson.items(fh, "item.id"))
    if n != known["tasks"]:
        raise SystemExit(f"{path}: {n} tasks, expected {known['tasks']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="annotated tasks (the project is built once per size)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build-only", action="store_true", help="build the project of size N (if not built) and stop: "
                    "at 100,000 the build is long, and can run at a low priority before the timed rounds")
    ap.add_argument("--root", default="/tmp/ls-trajeval-bench-export",
                    help="PostgreSQL, Label Studio and the outputs live here (reused when run again)")
    ap.add_argument("--methods", default=",".join(METHODS), help="a comma-separated subset of: " + ", ".join(METHODS))
    ap.add_argument("--baseline", metavar="SRC", help="also time `export` from this ls-trajeval source tree (an "
                    "earlier version, e.g. `git archive main | tar -x -C SRC`), as \"export (SRC)\"")
    args = ap.parse_args()
    methods = [m.strip() for m in args.methods.split(",")]
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise SystemExit(f"unknown methods: {sorted(unknown)}")
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)  # PostgreSQL runs as its own user under root
    files = root / "files"
    files.mkdir(exist_ok=True)

    tmp = root / "tmp"  # the servers' temporary files, which Label Studio's exports leave behind
    tmp.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(tmp)
    pg, ls = start_label_studio_on_postgres(root / "server")
    try:
        first_to_go(ls.proc.pid)
        client = studio.connect(ls.url, ls.credentials.token)
        known = build(client, pg, args.n, root / "projects.json")
        pid = known["project"]
        if args.build_only:
            print(f"project {pid}: {known['tasks']} tasks, {known['annotations']} submitted annotations")
            return
        env = dict(os.environ, LABEL_STUDIO_URL=ls.url, LABEL_STUDIO_API_KEY=ls.credentials.token)
        theirs = [sys.executable, "-c", LS_CLIENT]
        ours = [sys.executable, "-m", "ls_trajeval", "export", "--project", str(pid), "-o"]
        baseline = f"export ({args.baseline})" if args.baseline else None
        if baseline:
            methods.append(baseline)
        outs = {m: files / f"{args.n}-{i}.{'json' if m in THEIRS else 'jsonl'}" for i, m in enumerate(methods)}
        cmds = {
            "export": ours + [str(outs["export"])],
            "export --gold": ours + [str(outs["export --gold"]), "--gold"],
            "Label Studio sync JSON": theirs + ["sync", ls.url, str(pid), str(outs["Label Studio sync JSON"])],
            "Label Studio snapshot": theirs + ["snapshot", ls.url, str(pid), str(outs["Label Studio snapshot"])],
        }
        envs = {m: env for m in methods}
        checks = {"export": check_ours, "export --gold": check_gold, "Label Studio sync JSON": check_label_studio,
                  "Label Studio snapshot": check_label_studio}
        if baseline:
            cmds[baseline], checks[baseline] = ours + [str(outs[baseline])], check_ours
            envs[baseline] = dict(env, PYTHONPATH=str(Path(args.baseline).resolve()))
        print(f"project {pid}: {known['tasks']} tasks, {known['annotations']} submitted annotations, "
              f"{known['skipped']} skipped; PostgreSQL, Label Studio {ls.url} (pid {ls.proc.pid})", flush=True)
        postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
        runs: dict = {m: [] for m in methods}
        first: dict = {}
        for rnd in range(args.repeats):
            order = methods[rnd % len(methods):] + methods[:rnd % len(methods)]
            for m in order:
                before = kept_exports(ls.data_dir, tmp)
                r = measured(cmds[m], envs[m], ls.proc.pid, postmaster)
                for left in kept_exports(ls.data_dir, tmp) - before if m in THEIRS else ():
                    left.unlink()
                checks[m](outs[m], known)
                if m not in THEIRS:  # every round gives the same file, and the earlier version the same as ours
                    same = "export --gold" if m == "export --gold" else "export"
                    digest = sha256(outs[m])
                    if first.setdefault(same, digest) != digest:
                        raise SystemExit(f"{m}: round {rnd + 1}'s file differs from the first {same}'s")
                runs[m].append(r)
                print(f"  round {rnd + 1} {m}: {r['wall']:.1f} s; CPU s: client {r['cpu']:.1f}, Label Studio "
                      f"{r['server_cpu']:.1f}, PostgreSQL {r['pg_cpu']:.1f}; peak RSS {r['rss']:.0f} MB; Label "
                      f"Studio's RSS +{r['server_rise']:.0f} MB (to {r['server_peak']:.0f}); "
                      f"{outs[m].stat().st_size / 1e6:.0f} MB", flush=True)
                if m == "Label Studio sync JSON":
                    # its export leaves the server holding the whole project (+13 GB at 100,000 tasks): what ran
                    # after it ran on a swollen server, and once failed (a 500 on the next snapshot's download)
                    ls.stop()
                    ls.start(timeout=300)
                    first_to_go(ls.proc.pid)
        print(f"\n{args.n} annotated tasks, medians of {args.repeats}:")
        keys = ("wall", "cpu", "server_cpu", "pg_cpu", "rss", "server_rise")
        med = {m: {k: statistics.median(r[k] for r in rs) for k in keys} for m, rs in runs.items()}
        for m in methods:
            x = med[m]
            print(f"  {m:32s} {x['wall']:8.1f} s  CPU s: client {x['cpu']:6.1f}, Label Studio {x['server_cpu']:6.1f}"
                  f", PostgreSQL {x['pg_cpu']:5.1f}  peak RSS {x['rss']:6.0f} MB  Label Studio's RSS "
                  f"+{x['server_rise']:.0f} MB")
        for mine in [m for m in methods if m not in THEIRS]:
            for anchor in THEIRS:
                if anchor in med:
                    print(f"  {mine} / {anchor}: {med[mine]['wall'] / med[anchor]['wall']:.2f}")
    finally:
        ls.stop()
        pg.stop()


if __name__ == "__main__":
    main()
