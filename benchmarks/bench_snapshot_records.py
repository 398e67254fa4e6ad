"""What reading Label Studio's export snapshot instead of paging its tasks would add: our records built from the file.

    python benchmarks/bench_snapshot_records.py --input /tmp/ls-trajeval-bench-export/files/100000-3.json

``--input`` is a snapshot downloaded as JSON (``bench_export.py`` leaves its last one as ``N-3.json``). The file is
streamed with ijson (one task in memory at a time) and every submitted annotation's record built and serialised by
the export's own functions, as ``export`` would from that file; it prints the client's CPU and wall seconds, its peak
RSS, the records and their bytes. The snapshot names annotators by user id only, so the records name placeholder
users (one dict lookup either way). This cost can only start once Label Studio has finished the snapshot, where
paging builds a page's records while Label Studio serves the next: docs/scale.md#export-speed compares the two.
"""
from __future__ import annotations

import argparse
import resource
import time

import ijson

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.records import dumps
from ls_trajeval.flows.export import ExportSummary, readable_record, submitted


class PlaceholderUsers(dict):
    def __missing__(self, user_id):
        return {"id": user_id, "email": f"user{user_id}@example.com", "username": f"user{user_id}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True, help="a Label Studio export snapshot, JSON")
    args = ap.parse_args()
    config = cfg.load(label_configs.path("trajectory_eval"))
    users, summary = PlaceholderUsers(), ExportSummary()
    tasks = records = size = 0
    wall, cpu = time.perf_counter(), time.process_time()
    with open(args.input, "rb") as fh:
        for task in ijson.items(fh, "item", use_float=True):
            tasks += 1
            for annotation in submitted(task):
                record = readable_record(task, annotation, config, layout="transcript", users=users, summary=summary)
                if record is not None:
                    size += len(dumps(record))
                    records += 1
    print(f"{tasks} tasks, {records} records ({size / 1e6:.0f} MB), {summary.unreadable} unreadable: client CPU "
          f"{time.process_time() - cpu:.1f} s, wall {time.perf_counter() - wall:.1f} s, peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
