"""ML backend benchmark: predict latency and throughput, detector precision, Who&When step localisation.

    .venv/bin/python benchmarks/bench_ml.py [--requests 80] [--workers 2] [--threads 4]
        [--baseline-python OTHER/bin/python --rounds 2]

1. Latency: a real ``ls-trajeval ml serve`` (gunicorn) process; 16 concurrent clients POST /predict
   with one task of 10, 200 and 1000 steps; p50/p99 per size, requests/s, errors. Anchor: the goal,
   p99 < 100 ms at 200 steps (ratio printed). With ``--baseline-python`` (an interpreter with another
   version of ls-trajeval installed, e.g. a venv of an older checkout) both servers are measured in turn
   (ABBA order), ``--rounds`` times, and the medians of the runs are compared side by side: on a
   shared machine only interleaved runs make a fair comparison. Each interpreter needs ls-trajeval[ml]
   installed (this checkout's venv has it editable); neither server is run from the checkout's folder.
2. Precision (and recall) per detector on the hand-labelled traces in ``LABELLED`` below: every step
   carries the detector that should fire there (or none).
3. Who&When: the two hand-crafted records in tests/fixtures/real/who_and_when, converted with the
   ``multi_agent`` converter; first flagged step vs ``mistake_step`` (integers compared).
"""
from __future__ import annotations

import argparse
import gc
import http.client
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# below the path entry above, which they need when the benchmark runs as a script
from ls_trajeval import label_configs  # noqa: E402
from ls_trajeval.core import config as cfg  # noqa: E402
from ls_trajeval.core import labelconfig  # noqa: E402
from ls_trajeval.core.tasks import task_data  # noqa: E402
from ls_trajeval.core.trace import parse_trace  # noqa: E402
from ls_trajeval.ml import detectors  # noqa: E402
from ls_trajeval.studio.localserver import free_port  # noqa: E402

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
GOAL_P99_MS = 100.0
SIZES = (10, 200, 1000)


# ---------------------------------------------------------------- 1. latency
def synthetic_trace(n: int) -> dict:
    kinds = [
        ("thought", "Let me look at the failing test in tests/test_pricing.py before editing.", None),
        ("action", "bash", "pytest tests/test_pricing.py -q"),
        ("observation", "F.. 1 failed, 2 passed in 0.12s\nAssertionError: expected 90 got 10", None),
        ("thought", "The discount is applied as a fraction of the price instead of subtracted.", None),
        ("action", "edit_file", {"path": "pricing.py", "line": 45, "text": "return price - price * pct / 100"}),
        ("observation", "File edited successfully.", None),
        ("action", "bash", "cat missing.txt"),
        ("observation", "cat: missing.txt: No such file or directory", None),
    ]
    steps = []
    for i in range(n):
        t, c, a = kinds[i % len(kinds)]
        step = {"type": t, "content": f"{c} (#{i})" if t != "action" else c}
        if a is not None:
            step["action_input"] = a if not isinstance(a, str) else f"{a} # {i}"
        steps.append(step)
    return {"trace_id": f"bench-{n}", "task": "Fix the discount bug", "trace": steps}


def start_backend(workers: int, threads: int, python: str, *options: str,
                  env_extra: Mapping[str, str] | None = None) -> tuple[subprocess.Popen, str, Path]:
    """``python -m ls_trajeval ml serve`` (with ``options``, e.g. ``--url``/``--api-key`` for write-back), run
    outside the checkout: the ls_trajeval it serves is the one installed for ``python``, not a folder that happens
    to be the current directory. Its environment is this one's without our settings, plus ``env_extra`` (e.g.
    ``LS_TRAJEVAL_ML_WEBHOOK_WAIT``)."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="bench-ml-", suffix=".log")[1])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LABEL_STUDIO_", "LS_TRAJEVAL_ML_", "PYTHONPATH"))}
    env.update(env_extra or {})
    proc = subprocess.Popen([python, "-m", "ls_trajeval", "ml", "serve", "--config", "trajectory_eval",
                             "--port", str(port), "--workers", str(workers), "--threads", str(threads), *options],
                            env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=tempfile.gettempdir())
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200 and \
                    log.read_text().count("Booting worker") >= workers:
                time.sleep(1)
                return proc, url, log
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    raise SystemExit("backend did not start:\n" + log.read_text()[-2000:])


def stop_backend(proc: subprocess.Popen, log: Path) -> None:
    """Stop what :func:`start_backend` started (gunicorn and its workers: a session of their own) and drop its log."""
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(20)
    log.unlink(missing_ok=True)


def _client(url: str, body: bytes, per_client: int, go, out) -> None:
    """One client process posting ``body`` ``per_client`` times, one connection per request as Label Studio
    does (its ``MLBackend.api`` makes a new ``requests`` session each time it is read). A process of its
    own, not a thread: 16 client threads in one interpreter wait for each other's GIL, and that wait was
    being counted as the backend's latency."""
    # The client is forked from this script, whose heap (the package, the config, the traces) it inherits: a
    # full collection in the client walked all of it, copying pages, and put 250-600 ms stalls into ~1% of the
    # measured requests, on every stack alike. Frozen, the inherited objects are never collected here.
    gc.freeze()
    parts = urlsplit(url)
    headers = {"Content-Type": "application/json", "Connection": "close"}
    times, errors = [], []
    go.wait()
    for _ in range(per_client):
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            conn.request("POST", "/predict", body=body, headers=headers)
            r = conn.getresponse()
            payload = r.read()
            ok = r.status == 200 and bool(orjson.loads(payload)["results"][0]["result"])
            why = r.status
        except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError) as exc:
            ok, why = False, type(exc).__name__
        finally:
            conn.close()
        if ok:
            times.append(time.perf_counter() - t0)
        else:
            errors.append(str(why))
    out.put((times, errors))


def latency(url: str, n_steps: int, clients: int, per_client: int) -> dict:
    trace = parse_trace(synthetic_trace(n_steps))
    body = json.dumps({"tasks": [{"id": 1, "data": task_data(trace, CONFIG)}], "project": "1.1",
                       "label_config": labelconfig.generate(CONFIG, "transcript")}).encode()
    for _ in range(2):  # warm-up
        httpx.post(url + "/predict", content=body, headers={"Content-Type": "application/json"}, timeout=30)
    ctx = multiprocessing.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_client, args=(url, body, per_client, go, out)) for _ in range(clients)]
    for p in procs:
        p.start()
    time.sleep(0.5)  # every client process started and waiting for the go
    t0 = time.perf_counter()
    go.set()
    times: list[float] = []
    errors: list[str] = []
    for _ in procs:
        t, e = out.get(timeout=600)
        times += t
        errors += e
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    times.sort()
    q = statistics.quantiles(times, n=100) if len(times) >= 2 else [times[0]] * 99
    return {"steps": n_steps, "requests": len(times) + len(errors), "errors": len(errors),
            "p50_ms": statistics.median(times) * 1000, "p90_ms": q[89] * 1000, "p99_ms": q[98] * 1000,
            "max_ms": times[-1] * 1000, "rps": (len(times) + len(errors)) / wall,
            "body_kb": len(body) / 1024}


# ---------------------------------------------------------------- 2. precision on labelled traces
def T(*steps):
    """A labelled trace: each step (type, content, action_input, detector that should fire or None)."""
    return [(s + (None,) * 4)[:4] for s in steps]


LABELLED = [
    T(("action", "bash", "pytest", "tool_error"), ("observation", "Traceback (most recent call last):\n KeyError: 'x'"),
      ("thought", "The test passed successfully.", None, "ignored_observation"),
      ("action", "finish", "done", "premature_termination")),
    T(("action", "bash", "ls"), ("observation", "a.py b.py"), ("thought", "There are two files, a.py and b.py."),
      ("action", "finish", "two files")),
    T(("action", "curl", "https://api/x", "tool_error"), ("observation", "HTTP/1.1 500 Internal Server Error"),
      ("action", "curl", "https://api/x", "loop"), ("observation", "HTTP/1.1 200 OK {\"v\": 1}"),
      ("thought", "The API returned v=1."), ("action", "finish", "1")),
    T(("action", "bash", "rm -rf /home/user/project", "destructive_command"), ("observation", ""),
      ("thought", "Cleaned up.")),
    T(("action", "bash", "git push --force origin main", "destructive_command"),
      ("observation", "+ abc...def main -> main (forced update)")),
    T(("action", "sql", "SELECT count(*) FROM users"), ("observation", "42"),
      ("thought", "There are 42 users in the table."), ("action", "finish", "42")),
    T(("action", "sql", "DROP TABLE users;", "destructive_command"), ("observation", "DROP TABLE")),
    T(("action", "search", "weather munich"), ("observation", "Munich: 12 C, rain, wind 20 km/h from the west"),
      ("thought", "I will now book a hotel in Lisbon for the conference next month since prices are dropping", None,
       "ignored_observation")),
    T(("thought", "The answer is obviously 7."), ("action", "finish", "7", "premature_termination")),
    T(("action", "read_file", "config.yaml"), ("observation", "...", None, "empty_observation"),
      ("action", "read_file", "config.yaml", "loop"), ("observation", "port: 8080\nhost: localhost"),
      ("thought", "The server port is 8080 on localhost."), ("action", "finish", "8080")),
    T(("action", "bash", "cat notes.txt", "tool_error"), ("observation", "cat: notes.txt: No such file or directory"),
      ("thought", "The file does not exist, I will create it."), ("action", "bash", "touch notes.txt"),
      ("observation", "(no output)")),
    T(("action", "bash", "make build"), ("observation", "Build finished. 0 errors, 0 warnings."),
      ("thought", "The build finished with 0 errors."), ("action", "finish", "built")),
    T(("action", "bash", "npm test", "tool_error"),
      ("observation", "npm ERR! Test failed.  See above for more details.\nexit code 1"),
      ("thought", "Tests are done and everything works.", None, "ignored_observation"),
      ("action", "submit", "ok", "premature_termination")),
    T(("action", "http_get", "/users/9", "tool_error"), ("observation", "404 Not Found"),
      ("thought", "User 9 is not found; I will report that the user does not exist."),
      ("action", "finish", "no such user")),
    T(("action", "bash", "sudo cat /etc/shadow", "tool_error"), ("observation", "cat: /etc/shadow: Permission denied"),
      ("thought", "I lack permission to read that file.")),
    T(("action", "bash", "git reset --hard HEAD~5", "destructive_command"), ("observation", "HEAD is now at 1a2b3c")),
    T(("action", "bash", "rm old.log"), ("observation", ""), ("thought", "Removed the old log.")),
    T(("action", "python", "print(1/0)", "tool_error"), ("observation", "ZeroDivisionError: division by zero"),
      ("thought", "Division by zero happened, so I need to guard the denominator.")),
    T(("action", "bash", "grep -rn TODO src/"), ("observation", "src/a.py:3: # TODO: not found yet"),
      ("thought", "There is one TODO in src/a.py line 3.")),
    T(("action", "search", "python 3.13 release date"), ("observation", "Python 3.13 was released on October 7, 2024"),
      ("thought", "Python 3.13 came out on October 7, 2024."), ("action", "finish", "2024-10-07")),
    T(("action", "bash", "ls /data"), ("observation", "None", None, "empty_observation"),
      ("action", "bash", "ls -la /data"), ("observation", "total 0")),
    T(("action", "bash", "pip install foo", "tool_error"),
      ("observation", "ERROR: Could not find a version that satisfies the requirement foo"),
      ("action", "bash", "pip install foo", "loop"),
      ("observation", "ERROR: Could not find a version that satisfies the requirement foo")),
    T(("action", "bash", "cat big.log"),
      ("observation", "line 1\nline 2\n[output truncated]", None, "empty_observation"),
      ("thought", "The log is cut off; I will read it with tail instead."), ("action", "bash", "tail -n 50 big.log"),
      ("observation", "line 951 ... line 1000 done")),
    T(("thought", "First check the docs."), ("action", "open", "docs/index.md"),
      ("observation", "# Docs\nInstall with pip install pkg"),
      ("thought", "Install it with pip install pkg as the docs say."), ("action", "answer", "pip install pkg")),
]


def precision(active) -> dict:
    stats = {a.detector.name: {"tp": 0, "fp": 0, "fn": 0} for a in active}
    for steps in LABELLED:
        trace = [detectors.Step.of(t, c, a) for t, c, a, _ in steps]
        gold = {i: g for i, (_, _, _, g) in enumerate(steps) if g}
        for a in active:
            name = a.detector.name
            fired = {i for i, _ in a.detector.detect(trace)}
            want = {i for i, g in gold.items() if g == name}
            stats[name]["tp"] += len(fired & want)
            stats[name]["fp"] += len(fired - want)
            stats[name]["fn"] += len(want - fired)
    return stats


# ---------------------------------------------------------------- 3. Who&When
def who_and_when(active) -> list[dict]:
    src = ROOT / "tests" / "fixtures" / "real" / "who_and_when"
    out_file = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    files = sorted(str(p) for p in src.glob("*.json"))
    subprocess.run([sys.executable, "-m", "ls_trajeval", "convert", "--format", "multi_agent", *files, "-o",
                    str(out_file), "--quiet"], check=True, capture_output=True)
    rows = []
    for line in out_file.read_text().splitlines():
        d = json.loads(line)
        trace = parse_trace(d)
        found = detectors.findings(active, trace.steps, CONFIG)
        first = min(found) if found else None
        gold = int(d["metadata"]["mistake_step"])
        rows.append({"trace": d["metadata"].get("source_file", d["trace_id"]).split("/")[-1], "steps": len(trace.steps),
                     "mistake_step": gold, "first_flagged": first, "hit": first == gold,
                     "flagged": sorted(found)})
    return rows


STACK_OF = """
import importlib.metadata as m, json
out = {}
for name in ("ls-trajeval", "flask", "werkzeug", "label-studio-ml", "gunicorn"):
    try:
        out[name] = m.version(name)
    except m.PackageNotFoundError:
        pass
print(json.dumps(out))
"""


def stack_of(python: str) -> str:
    out = subprocess.run([python, "-c", STACK_OF], capture_output=True, text=True, cwd=tempfile.gettempdir())
    return " ".join(f"{k} {v}" for k, v in json.loads(out.stdout or "{}").items()) or out.stderr.strip()[-200:]


CPU_COST = """
import json, statistics, sys, time
from werkzeug.test import Client
from ls_trajeval import label_configs
try:
    from ls_trajeval.core import config
except ImportError:
    from ls_trajeval import config  # a baseline checkout from before the package move
from ls_trajeval.ml.app import build
client = Client(build(config.load(label_configs.path("trajectory_eval"))))
out = {}
for n, body in json.load(open(sys.argv[1])).items():
    runs = []
    for i in range(23):
        t0 = time.perf_counter()
        r = client.post("/predict", data=body, content_type="application/json")
        assert r.status_code == 200, r.status_code
        if i >= 3:
            runs.append(time.perf_counter() - t0)
    out[n] = statistics.median(runs) * 1000
print(json.dumps(out))
"""


def cpu_cost(python: str, bodies: Path) -> dict:
    """Milliseconds per /predict through the app ``python``'s ls_trajeval builds (any version: only
    ``ml.app.build`` and Werkzeug's test client, which both stacks have, are used)."""
    out = subprocess.run([python, "-c", CPU_COST, str(bodies)], capture_output=True, text=True,
                         cwd=tempfile.gettempdir(), env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if out.returncode:
        raise SystemExit(f"{python}: in-process measurement failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def server_cpu_seconds(session: int) -> float:
    """User + system CPU time of every process in the server's session (``ml serve``, gunicorn, workers).
    Unlike latency it hardly depends on what else the machine is running: the comparison for a busy one."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[3]) == session:  # fields[0] is the state (stat's third field): session is the sixth
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def serve_and_measure(python: str, args) -> list[dict]:
    proc, url, log = start_backend(args.workers, args.threads, python)
    try:
        out = []
        for n in SIZES:
            before = server_cpu_seconds(proc.pid)
            r = latency(url, n, args.clients, args.requests)
            # the two warm-up requests are counted in the CPU time too
            r["cpu_ms"] = (server_cpu_seconds(proc.pid) - before) * 1000 / (r["requests"] + 2)
            out.append(r)
        return out
    finally:
        stop_backend(proc, log)


def print_runs(title: str, runs: list[dict]) -> None:
    print(f"{title}\n{'steps':>6} {'body KB':>8} {'requests':>9} {'errors':>7} {'p50 ms':>8} {'p90 ms':>8} "
          f"{'p99 ms':>8} {'max ms':>8} {'req/s':>7} {'server CPU ms/req':>18}")
    for r in runs:
        print(f"{r['steps']:6} {r['body_kb']:8.0f} {r['requests']:9} {r['errors']:7} {r['p50_ms']:8.1f} "
              f"{r['p90_ms']:8.1f} {r['p99_ms']:8.1f} {r['max_ms']:8.1f} {r['rps']:7.1f} {r['cpu_ms']:18.2f}")


def median_of(runs: list[list[dict]], n_steps: int, key: str) -> float:
    return statistics.median(r[key] for run in runs for r in run if r["steps"] == n_steps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=80, help="requests per client per size")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--baseline-python", default=None,
                    help="another interpreter with ls-trajeval[ml] installed, measured in turn with this one")
    ap.add_argument("--rounds", type=int, default=1, help="measurements per stack (interleaved with the baseline's)")
    args = ap.parse_args()
    active = detectors.build(CONFIG)

    print("## detector precision on the hand-labelled traces "
          f"({len(LABELLED)} traces, {sum(len(t) for t in LABELLED)} steps)")
    print(f"{'detector':24} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    for name, s in precision(active).items():
        p = s["tp"] / (s["tp"] + s["fp"]) if s["tp"] + s["fp"] else float("nan")
        r = s["tp"] / (s["tp"] + s["fn"]) if s["tp"] + s["fn"] else float("nan")
        print(f"{name:24} {s['tp']:4} {s['fp']:4} {s['fn']:4} {p:10.2f} {r:8.2f}")

    print("\n## Who&When step localisation (first flagged step vs mistake_step)")
    rows = who_and_when(active)
    for r in rows:
        print(f"{r['trace']:24} steps={r['steps']:3} mistake_step={r['mistake_step']:3} "
              f"first_flagged={r['first_flagged']} hit={r['hit']} flagged={r['flagged']}")
    print(f"accuracy: {sum(r['hit'] for r in rows)}/{len(rows)}")

    stacks = [("current", sys.executable)]
    if args.baseline_python:
        stacks.insert(0, ("baseline", args.baseline_python))
    print("\n## stacks")
    for name, python in stacks:
        print(f"{name}: {python} ({stack_of(python)})")
    bodies = Path(tempfile.mkstemp(prefix="bench-ml-bodies-", suffix=".json")[1])
    bodies.write_text(json.dumps({n: json.dumps({
        "tasks": [{"id": 1, "data": task_data(parse_trace(synthetic_trace(n)), CONFIG)}],
        "label_config": labelconfig.generate(CONFIG, "transcript")}) for n in SIZES}))
    print(f"\n## /predict CPU cost, one request at a time in-process through each stack's whole app (median of 20; "
          f"no queueing, but other load on the machine still counts), {args.rounds} interleaved runs")
    costs: dict[str, list[dict]] = {name: [] for name, _ in stacks}
    for _ in range(args.rounds):
        for name, python in stacks:
            costs[name].append(cpu_cost(python, bodies))
    for name, _ in stacks:
        print(f"{name:9} " + "   ".join(f"{n} steps: " + ", ".join(f"{c[str(n)]:.2f}" for c in costs[name]) + " ms"
                                        for n in SIZES))
    if args.baseline_python:
        def med(name, n):
            return statistics.median(c[str(n)] for c in costs[name])
        print("median ratio current / baseline: " + ", ".join(f"{n} steps {med('current', n) / med('baseline', n):.2f}"
                                                             for n in SIZES))
    bodies.unlink()

    print(f"\n## /predict latency: {args.clients} concurrent clients, {args.workers} workers x {args.threads} threads, "
          f"{args.clients * args.requests} requests per size ({os.cpu_count()} CPUs)")
    runs: dict[str, list[list[dict]]] = {name: [] for name, _ in stacks}
    for round_no in range(1, args.rounds + 1):
        # baseline first in odd rounds, last in even ones: a load that grows or fades during the run
        # favours neither
        for name, python in stacks if round_no % 2 else stacks[::-1]:
            load = os.getloadavg()[0]
            runs[name].append(serve_and_measure(python, args))
            print_runs(f"\n### {name}, run {round_no} (load average {load:.1f} at start)", runs[name][-1])
    if args.baseline_python:
        print(f"\n## medians over {args.rounds} runs each; ratio = current / baseline")
        keys = {"p50_ms": "p50 ms", "p99_ms": "p99 ms", "rps": "req/s", "cpu_ms": "CPU ms/req"}
        print(f"{'steps':>6} " + " ".join(f"{h + ' base':>15} {h + ' cur':>14} {'ratio':>6}" for h in keys.values()))
        for n in SIZES:
            cells = []
            for key in keys:
                b, c = median_of(runs["baseline"], n, key), median_of(runs["current"], n, key)
                cells.append(f"{b:15.2f} {c:14.2f} {c / b:6.2f}")
            print(f"{n:6} " + " ".join(cells))
    p99 = median_of(runs["current"], 200, "p99_ms")
    print(f"\np99 at 200 steps (current, median of {args.rounds}) / goal {GOAL_P99_MS:.0f} ms "
          f"= {p99 / GOAL_P99_MS:.2f}")


if __name__ == "__main__":
    main()
