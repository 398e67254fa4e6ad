"""Deterministic synthetic traces for scale and fault tests: 5-200 steps, mean about 20."""
from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

WORDS = ("the function returns a wrong value because the discount is applied twice so the test fails "
         "and we need to check the file before editing it again <b>&amp;</b> \"quoted\" 東京 ünïcødé").split()
TOOLS = ("search", "read_file", "edit_file", "run_tests", "browse", "python")


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def n_steps(rng: random.Random) -> int:
    # 5 + geometric with mean 16, capped at 200: mean about 20, a long tail up to 200
    n = 5
    while rng.random() > 1 / 16 and n < 200:
        n += 1
    return n


def trace(i: int, rng: random.Random) -> dict:
    steps = []
    for j in range(n_steps(rng)):
        kind = ("thought", "action", "observation")[j % 3]
        if kind == "action":
            steps.append({"type": "action", "content": rng.choice(TOOLS),
                          "action_input": {"query": _text(rng, 2, 8), "n": j}})
        else:
            steps.append({"type": kind, "content": _text(rng, 5, 40 if kind == "thought" else 80)})
    return {"trace_id": f"gen-{i:07d}", "task": _text(rng, 4, 12), "trace": steps,
            "metadata": {"agent": "synthetic", "seed": i}}


def traces(n: int, seed: int = 0) -> Iterator[dict]:
    rng = random.Random(seed)
    for i in range(n):
        yield trace(i, rng)


def write(path: str | Path, n: int, seed: int = 0) -> Path:
    path = Path(path)
    with open(path, "w", encoding="utf-8") as fh:
        for t in traces(n, seed):
            fh.write(json.dumps(t, ensure_ascii=False) + "\n")
    return path
