"""Converter benchmark: traces/s, MB/s and peak RSS per format, ours beside Potato's converter.

    python benchmarks/bench_converters.py            # ~40 MB per format, a couple of minutes
    python benchmarks/bench_converters.py --large    # adds a 1 GB OpenAI Chat JSONL (memory check)
    python benchmarks/bench_converters.py --no-potato

Every measurement runs in a fresh subprocess wrapped by a tiny parent that reports the child's
peak RSS (``getrusage(RUSAGE_CHILDREN)``), so runs do not see each other's memory. Potato
(``potato-annotation``, GPL-3.0) is installed by this script into its own virtual environment
under ``~/.cache/ls-trajeval-bench`` and only run as a program (``python -m potato.trace_converter``);
it is never imported here nor a dependency of this project.
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

CACHE = Path(os.environ.get("LS_TRAJEVAL_BENCH_CACHE", Path.home() / ".cache" / "ls-trajeval-bench"))
POTATO_VENV = CACHE / "potato-venv"
POTATO_VERSION = "2.12.1"
# our format name -> Potato's format name for the same input
SHARED = {"openai_chat": "openai", "react": "react", "anthropic": "anthropic", "claude_code": "claude_code", "swe_agent": "swe_agent_trajectory"}
OURS = [sys.executable, "-c", "import sys; from ls_trajeval.cli_convert import convert_command; convert_command(sys.argv[1:])"]
WORDS = "the agent reads file config parser tool returns value error retry <tag> & ünï code patch test".split()
WRAP = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter(); r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "dt = time.perf_counter() - t\n"
    "sys.stderr.write(r.stderr.decode(errors='replace')[-2000:] if r.returncode else '')\n"
    "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)\n"
)


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def gen_openai(rng, i):
    msgs = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": words(rng, 30)}]
    for k in range(6):
        cid = f"call_{i}_{k}"
        msgs.append({"role": "assistant", "content": words(rng, 20), "tool_calls": [{"id": cid, "type": "function", "function": {"name": "search", "arguments": json.dumps({"q": words(rng, 5), "n": k})}}]})
        msgs.append({"role": "tool", "tool_call_id": cid, "content": words(rng, 60)})
    msgs.append({"role": "assistant", "content": words(rng, 40)})
    return {"id": f"conv-{i}", "messages": msgs}


def gen_anthropic(rng, i):
    msgs = [{"role": "user", "content": words(rng, 30)}]
    for k in range(6):
        tid = f"toolu_{i}_{k}"
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": words(rng, 20)}, {"type": "tool_use", "id": tid, "name": "search", "input": {"q": words(rng, 5)}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": words(rng, 60)}]})
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": words(rng, 40)}]})
    return {"id": f"anth-{i}", "system": "Be an agent.", "messages": msgs}


def gen_react(rng, i):
    parts = [f"Question: {words(rng, 20)}"]
    for k in range(6):
        parts += [f"Thought: {words(rng, 20)}", "Action: search", f'Action Input: {{"q": "{words(rng, 4)}"}}', f"Observation: {words(rng, 60)}"]
    parts.append(f"Final Answer: {words(rng, 20)}")
    return {"id": f"react-{i}", "text": "\n".join(parts)}


def write_jsonl(path: Path, gen, mb: float) -> int:
    rng = random.Random(1)
    target = mb * 1e6
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        while fh.tell() < target:
            fh.write(json.dumps(gen(rng, n), ensure_ascii=False) + "\n")
            n += 1
    return n


def write_claude(path: Path, mb: float) -> int:
    """Sessions of 40 records each, one file (Potato reads a session file; we split by sessionId)."""
    rng = random.Random(1)
    target = mb * 1e6
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        while fh.tell() < target:
            sid, prev = f"sess-{n}", None
            for k in range(20):
                u = f"{sid}-u{k}"
                if k % 2 == 0:
                    msg = {"role": "user", "content": words(rng, 30) if k == 0 else [{"type": "tool_result", "tool_use_id": f"{sid}-t{k-1}", "content": words(rng, 60)}]}
                    rec = {"type": "user", "message": msg}
                else:
                    rec = {"type": "assistant", "message": {"role": "assistant", "model": "claude", "content": [{"type": "text", "text": words(rng, 20)}, {"type": "tool_use", "id": f"{sid}-t{k}", "name": "Bash", "input": {"command": words(rng, 4)}}]}}
                rec.update(uuid=u, parentUuid=prev, sessionId=sid, isSidechain=False, timestamp="2025-01-01T00:00:00Z")
                fh.write(json.dumps(rec) + "\n")
                prev = u
            n += 1
    return n


def write_swe(dirpath: Path, mb: float) -> int:
    """A directory of .traj files (one trajectory each), as SWE-agent writes them."""
    rng = random.Random(1)
    dirpath.mkdir(parents=True, exist_ok=True)
    total, n = 0, 0
    while total < mb * 1e6:
        traj = [{"thought": words(rng, 30), "action": f"open {words(rng, 2)}", "observation": words(rng, 80), "response": words(rng, 40), "state": "{}"} for _ in range(8)]
        doc = {"environment": "swe_main", "trajectory": traj, "history": [{"role": "system", "content": "You are SWE-agent."}, {"role": "user", "content": "ISSUE:\n" + words(rng, 40) + "\n\nINSTRUCTIONS:\nfix"}], "info": {"exit_status": "submitted"}}
        p = dirpath / f"inst-{n}.traj"
        p.write_text(json.dumps(doc))
        total += p.stat().st_size
        n += 1
    return n


def ensure_potato() -> Path | None:
    py = POTATO_VENV / "bin" / "python"
    if py.exists() and subprocess.run([str(py), "-c", "import potato.trace_converter"], capture_output=True).returncode == 0:
        return py
    print(f"installing potato-annotation=={POTATO_VERSION} into {POTATO_VENV} (GPL, kept out of this project)...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(POTATO_VENV)], check=True)
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", f"potato-annotation=={POTATO_VERSION}"])
    return py if r.returncode == 0 else None


def measure(cmd: list[str]) -> tuple[float, float, int]:
    out = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True)
    if out.stderr.strip():
        sys.stderr.write(out.stderr[-500:] + "\n")
    dt, rss_kb, rc = out.stdout.split()
    return float(dt), int(rss_kb) / 1024, int(rc)


def count_lines(p: Path) -> int:
    try:
        with open(p, "rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return 0


def potato_count(p: Path) -> int:
    """Traces Potato wrote (JSONL or one JSON list)."""
    try:
        text = p.read_text()
    except OSError:
        return 0
    try:
        doc = json.loads(text)
        return len(doc) if isinstance(doc, list) else 1
    except ValueError:
        return sum(1 for ln in text.splitlines() if ln.strip())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=40, help="input size per format (MB)")
    ap.add_argument("--large", action="store_true", help="also convert a 1 GB OpenAI Chat JSONL (ours only)")
    ap.add_argument("--no-potato", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("README-converters.md"))
    args = ap.parse_args()
    work = CACHE / "inputs"
    work.mkdir(parents=True, exist_ok=True)
    inputs: dict[str, tuple[Path, int]] = {}
    gens = {"openai_chat": gen_openai, "anthropic": gen_anthropic, "react": gen_react}
    for name, gen in gens.items():
        p = work / f"{name}-{args.mb:g}.jsonl"
        if not p.exists():
            print(f"generating {p.name}...", flush=True)
            write_jsonl(p, gen, args.mb)
        inputs[name] = (p, count_lines(p))
    p = work / f"claude_code-{args.mb:g}.jsonl"
    if not p.exists():
        write_claude(p, args.mb)
    inputs["claude_code"] = (p, count_lines(p) // 20)
    p = work / f"swe_agent-{args.mb:g}"
    if not p.exists():
        write_swe(p, args.mb)
    inputs["swe_agent"] = (p, len(list(p.iterdir())))
    sizes = {n: (sum(f.stat().st_size for f in p.iterdir()) if p.is_dir() else p.stat().st_size) / 1e6 for n, (p, _) in inputs.items()}
    potato = None if args.no_potato else ensure_potato()
    rows = []
    outdir = CACHE / "out"
    outdir.mkdir(exist_ok=True)
    for name, (p, n) in inputs.items():
        o = outdir / f"ours-{name}.jsonl"
        dt, rss, rc = measure([*OURS, str(p), "--format", name, "-o", str(o), "-q"])
        got = count_lines(o)
        row = {"format": name, "mb": sizes[name], "traces": got, "t": dt, "rss": rss, "rc": rc}
        if potato is not None and name in SHARED:
            po = outdir / f"potato-{name}.jsonl"
            if po.exists():
                po.unlink()
            if p.is_dir():  # Potato takes one file: give it a JSON list of the trajectories
                merged = outdir / f"{name}-merged.json"
                with open(merged, "w") as fh:
                    fh.write("[" + ",".join(f.read_text() for f in sorted(p.iterdir())) + "]")
                pin = merged
            else:
                pin = p
            pdt, prss, prc = measure([str(potato), "-m", "potato.trace_converter", "-i", str(pin), "-f", SHARED[name], "-o", str(po)])
            row.update(pt=pdt, prss=prss, prc=prc, ptraces=potato_count(po))
        rows.append(row)
        print(row, flush=True)
    large = None
    if args.large:
        p = work / "openai_chat-1000.jsonl"
        if not p.exists():
            print("generating 1 GB OpenAI Chat JSONL...", flush=True)
            write_jsonl(p, gen_openai, 1000)
        o = outdir / "ours-large.jsonl"
        dt, rss, rc = measure([*OURS, str(p), "--format", "openai_chat", "-o", str(o), "-q"])
        large = {"mb": p.stat().st_size / 1e6, "traces": count_lines(o), "t": dt, "rss": rss}
        o.unlink()
        print(large, flush=True)
    report(rows, large, args.out, potato is not None)


def report(rows, large, out: Path, with_potato: bool) -> None:
    lines = [
        "# Converter benchmark",
        "",
        f"`python benchmarks/bench_converters.py` on this machine ({os.cpu_count()} CPUs, Python {sys.version.split()[0]}); "
        "each run in a fresh process, peak RSS of that process. Potato = `potato-annotation` "
        f"{POTATO_VERSION} (`python -m potato.trace_converter`), run side by side on the same input.",
        "",
        "| format | input MB | ours traces | ours traces/s | ours MB/s | ours peak RSS MiB | Potato traces | Potato traces/s | Potato MB/s | Potato peak RSS MiB | speed ratio (ours/Potato) | RSS ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ours = f"| {r['format']} | {r['mb']:.0f} | {r['traces']} | {r['traces'] / r['t']:,.0f} | {r['mb'] / r['t']:.1f} | {r['rss']:.0f} |"
        if "pt" in r:
            ok = r["prc"] == 0 and r["ptraces"] > 0
            ptps = r["ptraces"] / r["pt"] if ok else 0
            ours += f" {r['ptraces']}{'' if r['prc'] == 0 else ' (exit ' + str(r['prc']) + ')'} | {ptps:,.0f} | {r['mb'] / r['pt']:.1f} | {r['prss']:.0f} |"
            ours += f" {r['pt'] / r['t']:.1f}× | {r['rss'] / r['prss']:.2f} |"
        else:
            ours += " – | – | – | – | – | – |"
        lines.append(ours)
    lines.append("")
    lines.append("Speed ratio is Potato's wall time over ours on the same input (higher is better for us).")
    if large:
        lines += ["", f"Large input: {large['mb']:.0f} MB OpenAI Chat JSONL, {large['traces']:,} traces in {large['t']:.0f} s "
                  f"({large['mb'] / large['t']:.1f} MB/s), peak RSS {large['rss']:.0f} MiB."]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
