"""Vendor Who&When (both subsets) from a git checkout or bare clone of mingyin1/Agents_Failure_Attribution.

Each subset becomes one gzipped JSONL file, one line per record, in the numeric order of the file names. A line
is the record's JSON object as published with one key added in front, ``trace_id``: ``<subset>/<file stem>``
(``hand_crafted/12`` is ``Who&When/Hand-Crafted/12.json``), so every trace names the file it came from. Nothing
else is changed. Run it again against the same commit and the files come out byte for byte the same.

    python benchmarks/data/vendor_who_and_when.py /path/to/Agents_Failure_Attribution [--commit HEAD]
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUBSETS = {"hand_crafted": "Who&When/Hand-Crafted", "algorithm_generated": "Who&When/Algorithm-Generated"}


def git(repo: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", help="a checkout or bare clone of github.com/mingyin1/Agents_Failure_Attribution")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--out", default=str(HERE), help="where the .jsonl.gz files go (default: beside this script)")
    args = ap.parse_args()
    commit = git(args.repo, "rev-parse", args.commit).decode().strip()
    for subset, folder in SUBSETS.items():
        names = git(args.repo, "ls-tree", "--name-only", commit, folder + "/").decode().split("\n")
        files = sorted((n for n in names if n.endswith(".json")), key=lambda n: int(Path(n).stem))
        buf = io.BytesIO()
        # mtime 0 and no file name in the header: the same input gives the same bytes
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
            for name in files:
                record = json.loads(git(args.repo, "show", f"{commit}:{name}"))
                line = {"trace_id": f"{subset}/{Path(name).stem}", **record}
                gz.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        target = Path(args.out) / f"who_and_when_{subset}.jsonl.gz"
        target.write_bytes(buf.getvalue())
        print(f"{target}: {len(files)} records from {folder} at {commit}")


if __name__ == "__main__":
    main()
