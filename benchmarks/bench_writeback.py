"""Write-back benchmark: the verdicts of 10,000 traces written to a real Phoenix, time and requests.

    .venv/bin/python benchmarks/bench_writeback.py [--traces 10000] [--sample 300]

Set-up: ``phoenix serve`` from the tests' cached venv (tests/tracing/phoenixserver.py); ``--traces`` runs of the test
agent (tests/tracing/agent.py, 4 spans and 4 steps each) exported to it by the real OpenTelemetry SDK; each trace
labelled by two annotators (annotator a marks step #2 wrong in every third trace, b in every second), so a trace has
14 to 18 verdicts (per annotator its final score, outcome and each step's correctness, a wrong step's type and
severity; the annotators' number and agreement). Label Studio is not part of this measurement: the labels are built
in memory in the shape :func:`ls_trajeval.flows.verdicts.labelled_traces` reads from a project (reading 10,000
annotated tasks is the export's cost, measured by the export benchmarks), and the write-back's delivery half
(:func:`ls_trajeval.flows.verdicts.deliver`) runs against Phoenix.

Runs: (1) everything new; (2) the same again: nothing changed, so nothing is sent; (3) a tenth of the traces
relabelled. The anchor: one request per verdict, as a client that sends each annotation by itself does (Phoenix's own
client, ``spans.add_span_annotation``), timed on ``--sample`` verdicts and scaled to all of them.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def record(trace_id: str, who: str, wrong: bool) -> dict:
    steps = [{"step_index": i, "step_type": t, "correctness": "correct", "error_category": None, "error_type": None,
              "severity": None, "rationale": None} for i, t in enumerate(["thought", "action", "observation",
                                                                        "message"])]
    if wrong:
        steps[1].update(correctness="incorrect", error_category="action", error_type="wrong_arguments",
                        severity="major", rationale="the city is passed as a number")
    return {"trace_id": trace_id, "annotator": who, "project_id": 1, "task_id": 1, "scheme": "error_localization",
            "error_localization": steps, "overall_success": "failure" if wrong else "success",
            "final_score": 95 if wrong else 100, "n_steps": 4}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--sample", type=int, default=300, help="verdicts sent one request each, for the anchor")
    args = ap.parse_args()

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from tracing import agent
    from tracing.conftest import wait_until
    from tracing.phoenixserver import PhoenixServer

    from ls_trajeval.flows.projects import load_config
    from ls_trajeval.flows.verdicts import TraceLabels, deliver, trace_verdicts
    from ls_trajeval.tracing.ledger import Ledger
    from ls_trajeval.tracing.phoenix import Phoenix

    config = load_config(None)
    with tempfile.TemporaryDirectory() as tmp:
        server = PhoenixServer(Path(tmp))
        server.start()
        try:
            mem = InMemorySpanExporter()
            tp = agent.provider(mem, max_queue_size=4 * args.traces + 16, max_export_batch_size=512)
            t0 = time.perf_counter()
            ids = agent.runs(tp, range(args.traces))
            tp.shutdown()
            finished = list(mem.get_finished_spans())
            exporter = OTLPSpanExporter(endpoint=server.url + "/v1/traces", timeout=60)
            for i in range(0, len(finished), 512):
                # Phoenix answers 503 while its insert queue is full; the exporter gives up after its retries
                while exporter.export(finished[i:i + 512]) is not SpanExportResult.SUCCESS:
                    time.sleep(5)
            phoenix = Phoenix(server.url)
            assert wait_until(lambda: len(phoenix.spans(ids[-20:])) == 80, 600), "Phoenix did not store the spans"
            print(f"{args.traces} traces ({4 * args.traces} spans) exported to and stored by Phoenix in "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
            spans: dict[str, dict[str, str]] = {}
            for span in sorted(finished, key=lambda sp: sp.start_time or 0):
                tid, sid = format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")
                names = spans.setdefault(tid, {})
                names[span.name + ("#1" if span.name in names else "")] = sid
            traces = [TraceLabels(tid, [spans[tid]["llm"], spans[tid]["weather"], spans[tid]["weather"],
                                        spans[tid]["llm#1"]],
                                  [record(tid, "a@bench", i % 3 == 0), record(tid, "b@bench", i % 2 == 0)])
                      for i, tid in enumerate(ids)]
            ledger = Ledger(Path(tmp) / "state.sqlite")
            rows = []
            for label, batch in (("all new", traces), ("unchanged", traces)):
                t0 = time.perf_counter()
                s = deliver(batch, config, phoenix, ledger, "bench")
                rows.append((label, time.perf_counter() - t0, s))
            changed = [TraceLabels(t.trace_id, t.links, [record(t.trace_id, "a@bench", True), t.records[1]])
                       if i % 10 == 0 else t for i, t in enumerate(traces)]
            t0 = time.perf_counter()
            s = deliver(changed, config, phoenix, ledger, "bench")
            rows.append(("a tenth relabelled", time.perf_counter() - t0, s))

            # the anchor: one request per verdict with Phoenix's own client
            sample = [v for t in traces[: args.sample] for v in trace_verdicts(t, config) if v.span_id][: args.sample]
            t0 = time.perf_counter()
            for v in sample:
                assert v.span_id is not None
                phoenix.client.spans.add_span_annotation(
                    span_id=v.span_id, annotation_name=v.name + "_anchor", annotator_kind="HUMAN", label=v.label,
                    score=v.score, explanation=v.explanation, identifier=v.identifier, sync=True)
            per_request = (time.perf_counter() - t0) / len(sample)
            phoenix.close()
        finally:
            server.stop()
    total = rows[0][2].verdicts
    print(f"\n{'run':22} {'seconds':>8} {'requests':>9} {'sent':>8} {'withdrawn':>9} {'unchanged':>9} "
          f"{'verdicts/s':>10}")
    for label, secs, s in rows:
        print(f"{label:22} {secs:8.1f} {s.requests:9d} {s.new + s.updated:8d} {s.withdrawn:9d} {s.unchanged:9d} "
              f"{(s.new + s.updated + s.withdrawn) / secs if secs else 0:10,.0f}" + ("" if s.ok else "  FAILED"))
    anchor = per_request * total
    print(f"\nanchor: one request per verdict, {per_request * 1000:.1f} ms each over {len(sample)} verdicts -> "
          f"{total} verdicts in {anchor:.0f} s and {total} requests; the first run took {rows[0][1] / anchor:.2f}x "
          f"the time and {rows[0][2].requests / total:.4f}x the requests")


if __name__ == "__main__":
    main()
