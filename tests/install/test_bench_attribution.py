"""bench_attribution runs end to end on a small slice of the vendored Who&When data (the full run is by hand)."""
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_attribution.py"


def test_the_attribution_benchmark_runs_on_a_slice(tmp_path):
    out = tmp_path / "figures.json"
    r = subprocess.run([sys.executable, str(BENCH), "--subsets", "algorithm_generated", "--limit", "12", "--folds", "3",
                        "--resamples", "50", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for row in ("learned judge", "floor: most frequent step", "floor: most frequent agent", "rule detectors",
                "Who&When paper", "RAFFLES"):
        assert row in r.stdout
    report = json.loads(out.read_text())["subsets"]["algorithm_generated"]
    assert report["traces"] == 12 and len(report["training_cpu_seconds"]) == 3
    judge = report["figures"]["learned judge"]
    for column in ("step", "step ±1", "agent"):
        f = judge[column]
        assert 0 <= f["low"] <= f["value"] <= f["high"] <= 1
    # within one step is never stricter than exactly
    assert judge["step ±1"]["value"] >= judge["step"]["value"]
