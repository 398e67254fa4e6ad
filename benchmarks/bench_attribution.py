"""The learned judge on real labels no one here wrote: Who&When's decisive step and responsible agent.

    python benchmarks/bench_attribution.py [--folds 10] [--subsets hand_crafted algorithm_generated] [--json out.json]

Each subset (benchmarks/data/who_and_when_*.jsonl.gz, vendored from the paper's repository; see its README) is
converted with the ``multi_agent`` converter, labelled from each record's ``mistake_step`` and ``mistake_agent``
(``flows.prelabels.from_metadata``, as ``ls-trajeval import`` pre-labels Who&When), and cross-validated by trace:
K folds grouped by question, the judge trained on K-1 folds (``ls_trajeval.ml.learned``, as the ML backend trains
it on a project's labels, with the default config's rule detectors among its features) and asked for the held-out
traces' decisive step (the step it finds most likely wrong) and so for the responsible agent (that step's agent).
In the same run and on the same folds:

- the floors, computed on the training folds: always the most frequent decisive step, always the most frequent
  responsible agent (for the step floor, the agent of that step);
- the judge's other reading of "responsible agent": the agent whose steps together hold the most probability of
  being the wrong one (``LearnedJudge.responsible_agent``), beside the agent of its single likeliest step;
- the rule detectors: the first step they flag, and its agent;
- the published figures (constants below, with their sources).

Every method's held-out answers are scored by ``analysis.align`` against the held-out labels (decisive step
exact = ``first_error_exact``, within one step = ``first_error_within_1``, each with its bootstrap interval over
traces); the responsible agent is compared by name (case and surrounding space ignored: the labels spell
"WebSurfer" and "Websurfer") with a bootstrap interval over traces the same way. Training time is measured per
fold (CPU and wall clock).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
SUBSETS = ("hand_crafted", "algorithm_generated")

#: published figures: (what, step-level, agent-level), None where the source gives none
PUBLISHED = {
    "hand_crafted": [
        ("Who&When paper, best per column (GPT-4o; step: step-by-step w/o ground truth, agent: all-at-once "
         "with it; Zhang et al., ICML 2025, arXiv:2505.00212, Table 1)", 0.0877, 0.5517),
        ("RAFFLES (Zhu et al., arXiv:2509.06822v3: 'over 20%')", 0.20, None),
    ],
    "algorithm_generated": [
        ("Who&When paper, best per column (GPT-4o; step: step-by-step, agent: all-at-once, both with ground "
         "truth; Table 1)", 0.2551, 0.5433),
        ("RAFFLES (arXiv:2509.06822v3: 'over 50%')", 0.50, None),
    ],
}
PUBLISHED_OVERALL = "Who&When paper's abstract, both subsets together: 14.2% step, 53.5% agent"


def load(subset: str, limit: int | None):
    from ls_trajeval.core.trace import Trace
    from ls_trajeval.flows.convert import convert_inputs

    path = DATA / f"who_and_when_{subset}.jsonl.gz"
    traces, problems = [], []
    for item in convert_inputs([str(path)], "multi_agent"):
        if isinstance(item, Trace) and isinstance(item.metadata.get("mistake_step"), int):
            traces.append(item)
        elif not isinstance(item, Trace):
            problems.append(str(item))
    if problems:
        sys.exit(f"{path}: {len(problems)} records not converted, e.g. {problems[0]}")
    return traces[:limit] if limit else traces


def agent_name(name) -> str:
    return str(name or "").strip().lower()


class Subset:
    """One subset's traces, gold labels and rule findings, and the records the methods' answers become."""

    def __init__(self, name: str, traces, config):
        from ls_trajeval.analysis.settings import from_config
        from ls_trajeval.flows.prelabels import from_metadata
        from ls_trajeval.ml import detectors
        from ls_trajeval.ml.learned import Example, agent_of

        self.name, self.traces, self.config = name, traces, config
        self.settings = from_config(config)
        active = detectors.build(config)
        self.examples = []
        for t in traces:
            (gold,) = [p for p in from_metadata(t, config) if p.source == "who_and_when"]
            flagged = {i: f.detector for i, f in detectors.findings(active, t.steps, config).items()}
            self.examples.append(Example(t, gold.labels, group=str(t.metadata.get("question_ID") or t.trace_id),
                                         flagged=flagged))
        self.agents = [[agent_of(s) for s in t.steps] for t in traces]
        self.gold_agents = [agent_name(t.metadata.get("mistake_agent")) for t in traces]
        self.gold = [self.record(i, [ex.labels.steps[t.metadata["mistake_step"]].step_index], "gold")
                     for i, (t, ex) in enumerate(zip(traces, self.examples))]

    def record(self, i: int, marked: list[int], who: str):
        """A trajectory_eval record (written and read back by core.records) marking ``marked`` steps of trace i."""
        from ls_trajeval.core import records
        from ls_trajeval.core.labels import StepLabel
        from ls_trajeval.core.scoring import summarize

        scheme = self.config.trajectory
        steps = [StepLabel(k, scheme.error_labels[0] if k in marked else scheme.correctness_default)
                 for k in range(len(self.traces[i].steps))]
        t = self.traces[i]
        head = {"trace_id": t.trace_id, "task": t.task, "annotator": who, "annotation_id": f"{who}-{i}"}
        obj = records.assemble(head, scheme.name, steps, {}, summarize(steps, scheme), len(steps), scheme.weights,
                               scheme.running_score.initial, scheme.running_score.min,
                               is_error=scheme.error_labels.__contains__)
        return records.parse_record(json.loads(records.dumps(obj)), who, i + 1,
                                    default_correctness=scheme.correctness_default)


def most_common(values):
    return Counter(values).most_common(1)[0][0] if values else None


def cross_validate(sub: Subset, folds: int, seed: int, base_version: str):
    """Held-out answers of each method: trace index -> (marked steps, named agent); and the training times."""
    from sklearn.model_selection import GroupKFold

    from ls_trajeval.ml.learned import LearnedJudge

    n = len(sub.traces)
    groups = [ex.group for ex in sub.examples]
    answers: dict[str, dict[int, tuple[list[int], str | None]]] = {
        "learned judge": {}, "learned judge, agent by mass": {}, "floor: most frequent step": {},
        "floor: most frequent agent": {}, "rule detectors": {}}
    times = []
    splitter = GroupKFold(n_splits=min(folds, n), shuffle=True, random_state=seed)
    for train, test in splitter.split(range(n), groups=groups):
        started, cpu = time.monotonic(), time.process_time()
        judge = LearnedJudge.train([sub.examples[i] for i in train], base_version=base_version,
                                   error_labels=sub.config.trajectory.error_labels, seed=seed)
        times.append((time.process_time() - cpu, time.monotonic() - started))
        top_step = most_common([sub.traces[i].metadata["mistake_step"] for i in train])
        top_agent = most_common([sub.gold_agents[i] for i in train])
        for i in test:
            steps, flagged = sub.traces[i].steps, sub.examples[i].flagged
            k = judge.decisive_step(steps, flagged)
            answers["learned judge"][i] = ([k], sub.agents[i][k]) if k is not None else ([], None)
            answers["learned judge, agent by mass"][i] = ([], judge.responsible_agent(steps, flagged))
            s = top_step if top_step < len(steps) else None
            answers["floor: most frequent step"][i] = ([s], sub.agents[i][s]) if s is not None else ([], None)
            answers["floor: most frequent agent"][i] = ([], top_agent)
            first = min(flagged) if flagged else None
            answers["rule detectors"][i] = (sorted(flagged), sub.agents[i][first] if first is not None else None)
    return answers, times


def score(sub: Subset, answers, resamples: int, seed: int) -> dict:
    import numpy as np

    from ls_trajeval.analysis.align import align
    from ls_trajeval.analysis.stats import bootstrap_intervals, ratio

    out = {}
    for method, by_trace in answers.items():
        pred = [sub.record(i, marked, method) for i, (marked, _) in sorted(by_trace.items())]
        gold = [sub.gold[i] for i in sorted(by_trace)]
        figures = {}
        if any(marked for marked, _ in by_trace.values()):  # the agent-only answers name no step
            result = align(pred, gold, sub.settings, within=1, resamples=resamples, seed=seed)
            for key, name in (("first_error_exact", "step"), ("first_error_within_1", "step ±1")):
                m = result.metrics[key]
                figures[name] = (m.value, m.low, m.high)
        hits = np.array([[agent == sub.gold_agents[i] and agent is not None, 1]
                         for i, (_, agent) in sorted(by_trace.items())], dtype=float)
        value = float(hits[:, 0].sum() / len(hits))
        low, high = bootstrap_intervals(hits, lambda s: np.atleast_1d(ratio(s[..., 0], s[..., 1])), resamples, seed)
        figures["agent"] = (value, float(low[0]), float(high[0]))
        out[method] = figures
    return out


def pct(fig) -> str:
    if fig is None:
        return "–"
    value, low, high = fig
    return f"{100 * value:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def verdict(subset: str, figures: dict) -> list[str]:
    """Whether the learned judge is above every floor and published figure, said plainly with the numbers."""
    mine = figures["learned judge"]
    lines = []
    for column in ("step", "agent"):
        rivals = [(m, f[column][0]) for m, f in figures.items() if not m.startswith("learned judge") and column in f]
        rivals += [(what.split(" (")[0], s if column == "step" else a) for what, s, a in PUBLISHED[subset]
                   if (s if column == "step" else a) is not None]
        beaten = [f"{m} {100 * v:.1f}%" for m, v in rivals if mine[column][0] > v]
        not_beaten = [f"{m} {100 * v:.1f}%" for m, v in rivals if mine[column][0] <= v]
        lines.append(f"  {column}: learned judge {100 * mine[column][0]:.1f}% — above " + (", ".join(beaten) or "none")
                     + ("; NOT above " + ", ".join(not_beaten) if not_beaten else "; above every floor and figure"))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--subsets", nargs="+", choices=SUBSETS, default=list(SUBSETS))
    ap.add_argument("--folds", type=int, default=10, help="cross-validation folds (grouped by question)")
    ap.add_argument("--limit", type=int, default=None, help="the first N traces of each subset (a quick run)")
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples for each interval")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write every figure to this file as well")
    args = ap.parse_args()

    from ls_trajeval import label_configs
    from ls_trajeval.core import config as cfg
    from ls_trajeval.ml.model import Predictor

    config = cfg.load(label_configs.path("trajectory_eval"))  # the default taxonomy and all six rule detectors
    base_version = Predictor(config).version
    report = {"folds": args.folds, "seed": args.seed, "resamples": args.resamples, "subsets": {}}
    for name in args.subsets:
        sub = Subset(name, load(name, args.limit), config)
        answers, times = cross_validate(sub, args.folds, args.seed, base_version)
        figures = score(sub, answers, args.resamples, args.seed)
        cpu, wall = [t[0] for t in times], [t[1] for t in times]
        print(f"\n{name}: {len(sub.traces)} traces, {sum(len(t.steps) for t in sub.traces)} steps, "
              f"{len(times)} folds grouped by question; training per fold: CPU median {statistics.median(cpu):.1f} s "
              f"(max {max(cpu):.1f}), wall median {statistics.median(wall):.1f} s (max {max(wall):.1f})")
        print(f"  {'method':<34} {'decisive step':<22} {'within ±1 step':<22} {'responsible agent':<22}")
        for method, f in figures.items():
            print(f"  {method:<34} {pct(f.get('step')):<22} {pct(f.get('step ±1')):<22} {pct(f.get('agent')):<22}")
        for what, s, a in PUBLISHED[name]:
            print(f"  {what.split(' (')[0]:<34} {f'{100 * s:.2f}%' if s else '–':<22} {'–':<22} "
                  f"{f'{100 * a:.2f}%' if a else '–':<22}")
        print("\n".join(verdict(name, figures)))
        report["subsets"][name] = {
            "traces": len(sub.traces), "figures": {m: {k: dict(zip(("value", "low", "high"), v)) for k, v in f.items()}
                                                   for m, f in figures.items()},
            "published": [{"what": w, "step": s, "agent": a} for w, s, a in PUBLISHED[name]],
            "training_cpu_seconds": cpu, "training_wall_seconds": wall}
    print(f"\n(intervals: 95% percentile bootstrap over traces, {args.resamples} resamples; {PUBLISHED_OVERALL})")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
