"""The write-back's pure logic: which verdicts a labelled trace makes, what the ledger lets through, retries with
backoff, failures reported and sent again next time. The sink here is a fake (the real ones are tested against a
real Phoenix and by contract against Langfuse's document, tests/tracing)."""
from __future__ import annotations

from ls_trajeval.flows.projects import load_config
from ls_trajeval.flows.verdicts import TraceLabels, deliver, trace_verdicts
from ls_trajeval.tracing.ledger import Ledger
from ls_trajeval.tracing.verdict import DeliveryError

CONFIG = load_config(None)


def record(who: str, wrong: dict, outcome: str = "failure", n: int = 3) -> dict:
    steps = []
    for i in range(n):
        e = {"step_index": i, "step_type": "action", "correctness": "correct", "error_category": None,
             "error_type": None, "severity": None, "rationale": None}
        if i in wrong:
            e.update(correctness="incorrect", error_category="action", error_type=wrong[i][0], severity=wrong[i][1],
                     rationale="why <b>")
        steps.append(e)
    return {"trace_id": "T", "annotator": who, "project_id": 1, "task_id": 7, "scheme": "error_localization",
            "error_localization": steps, "overall_success": outcome, "final_score": 100 - 5 * len(wrong),
            "n_steps": n}


class FakeSink:
    name = "phoenix"
    destination = "fake"

    def __init__(self, failures: list | None = None):
        self.requests = 0
        self.sent: list = []
        self.withdrawn: list = []
        self.failures = list(failures or [])

    def send(self, verdicts):
        self.requests += 1
        if self.failures:
            raise self.failures.pop(0)
        self.sent.extend(verdicts)

    def withdraw(self, verdicts):
        self.requests += 1
        self.withdrawn.extend(verdicts)


def test_verdicts_of_a_trace():
    t = TraceLabels("T", ["s0", None, "s2"], [record("a@x", {2: ("wrong_tool", "major")}), record("b@x", {})])
    got = {v.key: v for v in trace_verdicts(t, CONFIG)}
    # per annotator: final score, outcome, correctness of steps with a span (#1, #3; #2 has none); a's #3 type and
    # severity; then the annotators and their agreement (#3 disputed: 2 of 3 steps alike)
    assert sorted(got) == sorted([
        "T/a@x/final_score", "T/a@x/overall_success", "T/a@x/#1/correctness", "T/a@x/#3/correctness",
        "T/a@x/#3/error_type", "T/a@x/#3/severity", "T/b@x/final_score", "T/b@x/overall_success",
        "T/b@x/#1/correctness", "T/b@x/#3/correctness", "T/ls-trajeval/annotators", "T/ls-trajeval/agreement"])
    assert got["T/a@x/#3/severity"].score == -5.0 and got["T/a@x/#3/severity"].span_id == "s2"
    assert got["T/a@x/#3/correctness"].label == "incorrect" and got["T/a@x/#3/correctness"].score == 0.0
    assert got["T/a@x/#3/correctness"].explanation == "why <b>"
    assert got["T/ls-trajeval/agreement"].score == round(2 / 3, 4)
    assert got["T/ls-trajeval/annotators"].score == 2.0


def test_ledger_retries_and_failures(tmp_path):
    ledger = Ledger(tmp_path / "state.sqlite")
    t = TraceLabels("T", ["s0", "s1", "s2"], [record("a@x", {1: ("wrong_tool", "major")})])
    waits: list = []
    sink = FakeSink([DeliveryError("503", retry=True), DeliveryError("timeout", retry=True)])
    s = deliver([t], CONFIG, sink, ledger, "d", sleep=waits.append, backoff=0.5)
    assert s.ok and s.new == s.verdicts == 8 and waits == [0.5, 1.0] and sink.requests == 3
    # unchanged: nothing sent
    again = deliver([t], CONFIG, sink, ledger, "d", sleep=waits.append)
    assert (again.unchanged, again.new, again.requests) == (8, 0, 0)
    # changed: #2 right again -> its correctness and the final score updated, its type and severity withdrawn;
    # the tool says no (a 4xx): reported, not retried, not recorded
    t2 = TraceLabels("T", ["s0", "s1", "s2"], [record("a@x", {})])
    refused = FakeSink([DeliveryError("422 bad", retry=False)])
    s = deliver([t2], CONFIG, refused, ledger, "d", sleep=waits.append)
    assert not s.ok and s.failed == 2 and s.withdrawn == 2 and refused.requests == 2 and "422 bad" in s.failures[0]
    # the next run sends what failed, and has nothing left to withdraw
    ok = FakeSink()
    s = deliver([t2], CONFIG, ok, ledger, "d", sleep=waits.append)
    assert s.ok and s.updated == 2 and s.withdrawn == 0 and {v.name for v in ok.sent} == {"correctness", "final_score"}


def test_dry_run_plans_and_sends_nothing(tmp_path):
    ledger = Ledger(tmp_path / "state.sqlite")
    t = TraceLabels("T", ["s0"], [record("a@x", {}, n=1)])
    sink = FakeSink()
    s = deliver([t], CONFIG, sink, ledger, "d", dry_run=True)
    assert [a for a, _ in s.planned] == ["new"] * 4 and sink.requests == 0
    assert ledger.delivered("d", ["T"]) == {}


def test_traces_without_links_are_counted_not_sent(tmp_path):
    t = TraceLabels("T", [None, None], [record("a@x", {}, n=2)])
    s = deliver([t], CONFIG, FakeSink(), Ledger(tmp_path / "s.sqlite"), "d")
    assert (s.traces, s.unlinked, s.verdicts) == (1, 1, 0)
