"""OTLP receiver benchmark: the spans per second ``ingest otlp``'s receiver takes in on this machine (2 cores), beside
Phoenix's own OTLP/HTTP endpoint fed the very same requests.

    .venv/bin/python benchmarks/bench_otlp_receiver.py [--spans 40960] [--batch 512] [--clients 4] [--rounds 3]
        [--no-phoenix]

The requests: runs of the test agent (tests/tracing/agent.py: 4 spans each, OpenInference attributes, markup and
non-ASCII text) made by the real OpenTelemetry SDK and encoded by the OTLP exporter's own encoder into
ExportTraceServiceRequest protobuf bodies of ``--batch`` spans (512 is the BatchSpanProcessor's default).
The load: ``--clients`` processes POST their share of the bodies in turn over keep-alive connections (httpx).
Ours: this checkout's receiver (waitress, 4 threads) in a process of its own over a fresh spool; a 200 means the
spans are committed to disk (SQLite, WAL, synchronous=FULL); the same with synchronous=NORMAL is shown beside it,
for what the fsync per request costs (the command always runs durable). Phoenix: ``phoenix serve`` from the tests'
cached venv (tests/tracing/phoenixserver.py), a fresh working directory each round; it answers 200 before it
stores them (its insert is queued), so its figure is how fast it accepts, not how fast it stores. Rounds alternate
the servers (ABBA) and the medians are compared.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def make_bodies(spans: int, batch: int) -> list[bytes]:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from tracing import agent

    mem = InMemorySpanExporter()
    tp = agent.provider(mem, max_queue_size=spans + 16, max_export_batch_size=batch)
    agent.runs(tp, range(spans // 4))
    tp.force_flush()
    finished = list(mem.get_finished_spans())
    return [encode_spans(finished[i:i + batch]).SerializeToString() for i in range(0, len(finished), batch)]


def serve_receiver(port: int, spool: str, durable: bool) -> None:
    import logging

    from ls_trajeval.tracing.receiver import Server, create_app
    from ls_trajeval.tracing.spool import Spool

    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth" at every burst: the load's
    s = Spool(spool, durable=durable)
    Server(create_app(s), port=port, threads=4).run()


def _client(url: str, bodies: list[bytes], out) -> None:
    import httpx

    with httpx.Client(timeout=120) as c:
        for body in bodies:
            r = c.post(url, content=body, headers={"Content-Type": "application/x-protobuf"})
            if r.status_code != 200:
                out.put(f"{r.status_code} {r.text[:100]}")
                return
    out.put(None)


def load(url: str, bodies: list[bytes], clients: int) -> float:
    """Seconds until every body was answered 200, ``clients`` processes at once."""
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    shares = [bodies[i::clients] for i in range(clients)]
    procs = [ctx.Process(target=_client, args=(url, share, out)) for share in shares]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    errors = [out.get() for _ in procs]
    elapsed = time.perf_counter() - t0
    for p in procs:
        p.join()
    bad = [e for e in errors if e]
    if bad:
        raise SystemExit(f"refused: {bad[0]}")
    return elapsed


def wait_up(url: str, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{url} did not answer")


def run_ours(bodies: list[bytes], clients: int, durable: bool, spans: int) -> float:
    from ls_trajeval.studio.localserver import free_port

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, __file__, "--serve-receiver", str(port), str(Path(tmp) / "s.sqlite"),
                                 "--durable" if durable else "--not-durable"])
        try:
            wait_up(f"http://127.0.0.1:{port}/health")
            elapsed = load(f"http://127.0.0.1:{port}/v1/traces", bodies, clients)
        finally:
            proc.terminate()
            proc.wait(30)
        from ls_trajeval.tracing.spool import Spool

        stored = Spool(Path(tmp) / "s.sqlite").counts()["spans"]
    if stored != spans:
        raise SystemExit(f"the spool holds {stored} spans, not {spans}")
    return elapsed


def run_phoenix(bodies: list[bytes], clients: int) -> float:
    from tracing.phoenixserver import PhoenixServer

    with tempfile.TemporaryDirectory() as tmp:
        server = PhoenixServer(Path(tmp))
        server.start()
        try:
            return load(server.url + "/v1/traces", bodies, clients)
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spans", type=int, default=40960)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-phoenix", action="store_true", help="leave Phoenix out")
    ap.add_argument("--serve-receiver", nargs=2, metavar=("PORT", "SPOOL"), help=argparse.SUPPRESS)
    ap.add_argument("--durable", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--not-durable", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_receiver:
        serve_receiver(int(args.serve_receiver[0]), args.serve_receiver[1], durable=not args.not_durable)
        return
    bodies = make_bodies(args.spans, args.batch)
    n = args.spans // 4 * 4  # whole agent runs
    print(f"{n} spans in {len(bodies)} requests of up to {args.batch} ({sum(map(len, bodies)) / 1e6:.1f} MB), "
          f"{args.clients} client processes, {os.cpu_count()} CPUs, {args.rounds} rounds", flush=True)
    results: dict[str, list[float]] = {"ours (durable)": [], "ours (synchronous=NORMAL)": [], "phoenix": []}
    for r in range(args.rounds):
        order = ["ours", "phoenix"] if r % 2 == 0 else ["phoenix", "ours"]
        for who in order:
            if who == "ours":
                results["ours (durable)"].append(n / run_ours(bodies, args.clients, True, n))
                results["ours (synchronous=NORMAL)"].append(n / run_ours(bodies, args.clients, False, n))
            elif not args.no_phoenix:
                results["phoenix"].append(n / run_phoenix(bodies, args.clients))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in results.items() if v) + " spans/s",
              flush=True)
    anchor = statistics.median(results["phoenix"]) if results["phoenix"] else None
    print("\nmedian spans/s" + (" (ratio to Phoenix's acceptance)" if anchor else ""))
    for k, v in results.items():
        if v:
            med = statistics.median(v)
            print(f"  {k:28} {med:>10,.0f}" + (f"   {med / anchor:.2f}x" if anchor else ""))


if __name__ == "__main__":
    main()
