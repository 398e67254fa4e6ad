"""Run one command; print its wall time, CPU time, own peak RSS and exit code as JSON (the last line of stdout).

    python benchmarks/measure.py [--max-memory GB] [--oom-first] -- CMD [ARG...]

bench_export.py and bench_report.py run every command they time through this small process (the standard library
and nothing else). Forked straight from a benchmark, a command's peak RSS would start at the benchmark's own: until it
execs, the child holds its parent's pages, and ``ru_maxrss`` is the most the process ever held.
``--max-memory`` caps the command's address space; ``--oom-first`` makes it the first process the kernel ends should
memory run out (on a machine shared with other work, the measured command goes, not someone else's).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-memory", type=float, metavar="GB")
    ap.add_argument("--oom-first", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the command")
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command")

    def limits() -> None:
        if args.oom_first:
            with open("/proc/self/oom_score_adj", "w") as fh:
                fh.write("1000")
        if args.max_memory:
            cap = int(args.max_memory * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, preexec_fn=limits)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        result = {"wall": wall, "rss": usage.ru_maxrss / 1024, "cpu": usage.ru_utime + usage.ru_stime,
                  "rc": os.waitstatus_to_exitcode(status),
                  **{name: f.read().decode(errors="replace")[-4000:] for name, f in (("out", out), ("err", err))}}
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
