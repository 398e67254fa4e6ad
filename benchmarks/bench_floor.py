"""How far the converter benchmark's goal can be met at all: the least Python that writes, byte for byte,
what ours writes for the benchmark's Langfuse input, timed beside ours and Potato as bench_converters
times them (fresh processes, alternating, CPU time, medians).

    python benchmarks/bench_floor.py --mb 10 --repeat 5

The floor program below knows that one input and nothing else: no format detection, no checks, no error
handling, no tree (the generated observations are flat and come in time order), no time parsing, no
tool-call pairing, nothing kept for other shapes; it starts an interpreter, imports orjson and nothing
more. Nobody could ship it; what it costs is what reading, building and writing the same output costs
at the least. Potato's CPU time over the floor's is then about the best ratio any converter writing our output
could reach on this machine, and ours over the floor's is what our generality costs. The run stops with
an error if the floor's output differs from ours by a byte.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_converters as bench  # noqa: E402

FLOOR = r'''
import sys, orjson
src, dst = sys.argv[1], sys.argv[2]
IND = orjson.OPT_INDENT_2
out = []
with open(src, "rb") as fh:
    for n, line in enumerate(fh, 1):
        rec = orjson.loads(line)
        obs = rec["observations"]
        steps = []
        for i, o in enumerate(obs):
            meta = {"observation_id": o["id"], "observation_type": o["type"], "name": o["name"], "depth": 0}
            if o["type"] == "GENERATION":
                meta["model"] = o["model"]
                follows = i + 1 < len(obs) and obs[i + 1]["type"] == "SPAN"
                steps.append({"type": "thought" if follows else "message", "content": o["output"]["content"],
                              "timestamp": o["startTime"], "metadata": meta})
            else:
                steps.append({"type": "action", "content": o["name"],
                              "action_input": orjson.dumps(o["input"], option=IND).decode(),
                              "timestamp": o["startTime"], "metadata": meta})
                steps.append({"type": "observation", "content": orjson.dumps(o["output"], option=IND).decode(),
                              "timestamp": o["startTime"], "metadata": {"tool_name": o["name"], **meta}})
        md = {"source_format": "langfuse", "source_file": src, "source_line": n, "name": rec["name"],
              "final_output": rec["output"]}
        out.append(orjson.dumps({"trace_id": rec["id"], "task": rec["input"]["query"], "trace": steps, "metadata": md},
                                option=orjson.OPT_APPEND_NEWLINE))
with open(dst, "wb") as fh:
    fh.writelines(out)
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=10, help="input size (MB)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per program (medians reported)")
    args = ap.parse_args()
    case = next(c for c in bench.CASES if c.row == "langfuse")
    work = bench.CACHE / "inputs"
    work.mkdir(parents=True, exist_ok=True)
    outdir = Path(tempfile.mkdtemp(prefix="floor-", dir=bench.CACHE))
    potato = bench.ensure_potato()
    if potato is None:
        sys.exit("Potato could not be installed: nothing to compare with")
    ours = bench.install_ours(False)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(bench.CACHE / "pycache")
    src, _ = bench.prepare(case, work, args.mb)
    o, f, p = outdir / "ours.jsonl", outdir / "floor.jsonl", outdir / "potato.jsonl"
    runs: dict[str, list[float]] = {"ours": [], "floor": [], "Potato": []}
    for _ in range(args.repeat):
        runs["ours"].append(bench.measure([*ours, str(src), "--format", "langfuse", "-o", str(o), "-q"], cwd=outdir)[1])
        runs["floor"].append(bench.measure([ours[0], "-c", FLOOR, str(src), str(f)], cwd=outdir)[1])
        runs["Potato"].append(bench.measure([str(potato), "-m", "potato.trace_converter", "-i", str(src),
                                             "-f", "langfuse", "-o", str(p)], cwd=outdir)[1])
    same = o.read_bytes() == f.read_bytes()
    shutil.rmtree(outdir, ignore_errors=True)
    if not same:
        sys.exit("the floor's output differs from ours: its time would not be a floor of the same work")
    cpu = {k: statistics.median(v) for k, v in runs.items()}
    print(f"langfuse, {bench.size_mb(src):.0f} MB, median CPU s of {args.repeat} runs "
          f"(Python {sys.version.split()[0]}, {os.cpu_count()} CPUs); the floor's output is byte for byte ours\n")
    print("| program | CPU s | Potato / program |\n|---|---|---|")
    for k in ("ours", "floor", "Potato"):
        print(f"| {k} | {cpu[k]:.3f} | {cpu['Potato'] / cpu[k]:.2f}× |")


if __name__ == "__main__":
    main()
