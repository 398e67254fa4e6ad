"""Detectors, prediction and live-score logic, the queue and event parsing (pure logic, no servers)."""
from __future__ import annotations

import threading
import time

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig, results
from ls_trajeval.core.fields import SCORE_KEPT, SCORE_NOT_KEPT, SCORE_STATUS
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import Step, parse_trace
from ls_trajeval.ml import detectors
from ls_trajeval.ml.app import BadRequest, Events, safe_project, safe_version
from ls_trajeval.ml.model import Predictor
from ls_trajeval.ml.queue import WorkQueue
from ls_trajeval.ml.writeback import task_fields

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


def S(t, c, a=None):
    return Step.of(t, c, a)


def hits(det, steps):
    return [i for i, _ in det.detect(steps)]


def test_tool_error_flags_the_action_behind_a_failure():
    d = detectors.ToolError()
    steps = [S("action", "bash", "pytest"), S("observation", "Traceback (most recent call last):\n  x"),
             S("action", "bash", "ls"), S("observation", "a.py b.py"),
             S("action", "curl", "x"), S("observation", "HTTP/1.1 404 Not Found"),
             S("action", "bash", "cat x"), S("observation", "cat: x: No such file or directory"),
             S("action", "bash", "make"), S("observation", "make: exited with code 2"),
             S("action", "bash", "touch /etc/x"), S("observation", "touch: Permission denied")]
    assert hits(d, steps) == [0, 4, 6, 8, 10]
    assert hits(detectors.ToolError({"flag": "observation"}), steps) == [1, 5, 7, 9, 11]
    assert hits(d, [S("observation", "All 12 tests passed; exit code 0")]) == []


def test_loop_flags_repeats_only():
    d = detectors.Loop()
    steps = [S("action", "search", "foo"), S("observation", "none"), S("action", "search", "foo"),
             S("action", "search", "bar"), S("action", "Search", " foo ")]
    assert hits(d, steps) == [2, 4]


def test_ignored_observation_contradiction_and_unused():
    d = detectors.IgnoredObservation()
    steps = [S("observation", "Traceback (most recent call last):\nValueError"), S("thought", "Great, it works now.")]
    assert hits(d, steps) == [1]
    honest = [S("observation", "Traceback (most recent call last):\nValueError"),
              S("thought", "It failed with an error.")]
    assert hits(d, honest) == []
    unused = [S("observation", "temperature Munich twelve degrees rain wind northwest humidity eighty percent"),
              S("thought", "I should book flights to Paris tomorrow morning because prices are lower there")]
    assert hits(d, unused) == [1]


def test_premature_termination():
    d = detectors.PrematureTermination()
    assert hits(d, [S("thought", "easy"), S("action", "finish", "42")]) == [1]
    assert hits(d, [S("action", "run"), S("observation", "Error: boom"), S("action", "final_answer", "x")]) == [2]
    assert hits(d, [S("action", "run"), S("observation", "result 42"), S("action", "finish", "42")]) == []


@pytest.mark.parametrize("cmd", ["rm -rf build/", "rm -fr /", "git push --force origin main", "git push -f",
                                 "DROP TABLE users;", "git reset --hard HEAD~3", "TRUNCATE TABLE logs"])
def test_destructive_commands(cmd):
    assert hits(detectors.DestructiveCommand(), [S("action", "bash", cmd)]) == [0]


@pytest.mark.parametrize("cmd", ["rm build.log", "git push origin main", "SELECT * FROM users", "grep -rf x"])
def test_harmless_commands(cmd):
    assert hits(detectors.DestructiveCommand(), [S("action", "bash", cmd)]) == []


def test_empty_and_truncated_observations():
    d = detectors.EmptyObservation()
    steps = [S("observation", "  "), S("observation", "None"), S("observation", "lots of output ... [truncated]"),
             S("observation", "fine output")]
    assert hits(d, steps) == [0, 1, 2]
    silent = [S("action", "bash", "rm build.log"), S("observation", ""), S("action", "bash", "cat a"),
              S("observation", "")]
    assert hits(d, silent) == [3]


def test_tool_error_flags_the_action_only_within_three_steps_and_before_another_observation():
    steps = [S("action", "bash", "make"), S("thought", "wait"), S("thought", "wait"), S("observation", "Error: boom"),
             S("action", "bash", "ls"), S("thought", "hm"), S("thought", "hm"), S("thought", "hm"),
             S("observation", "fatal: x"), S("action", "bash", "cat a"), S("observation", "ok"),
             S("observation", "error: y")]
    assert hits(detectors.ToolError(), steps) == [0, 8, 11]


@pytest.mark.parametrize("text,reason", [
    ("exİt code 1", "a non-zero exit code"),  # re.I matches İ, ı and ſ to i and s; lower() does not
    ("ſtatus: 503", "an HTTP error status"),
    ("Permıssion denied", "'permission denied'"),
    ("EXIT CODE 2", "a non-zero exit code"),
    ("all good, exit code 0", None),
])
def test_error_patterns_match_case_insensitively_as_re_does(text, reason):
    assert detectors.tool_error_reason(text) == reason


def test_odd_case_letters_in_commands_and_loops():
    assert hits(detectors.DestructiveCommand(), [S("action", "sql", "DROP DATABAſE prod")]) == [0]
    # any Unicode whitespace run counts as one space
    assert hits(detectors.Loop(), [S("action", "search", "foo\u00a0 bar"),
                                   S("action", "Search", "foo bar\u2003")]) == [1]


def test_findings_hand_plugins_a_plain_list_of_the_steps():
    seen = []

    class Plugin(detectors.Detector):
        name = "plugin"

        def detect(self, steps):
            seen.append((isinstance(steps, list), len(steps), steps[1].content))
            return iter([(1, "why")])

    active = [detectors.ActiveDetector(Plugin(), "wrong_arguments", "major"),
              detectors.ActiveDetector(detectors.ToolError(), "wrong_arguments", "minor")]
    steps = [S("action", "bash", "x"), S("observation", "Error: no")]
    found = detectors.findings(active, steps, CONFIG)
    assert seen == [(True, 2, "Error: no")]
    assert {i: (f.detector, f.severity) for i, f in found.items()} == {1: ("plugin", "major"),
                                                                       0: ("tool_error", "minor")}


@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_prediction_region_ids_are_unique_and_shared_within_a_region(layout):
    trace = {"trace_id": "ids", "task": "t", "trace": [
        {"type": "action", "content": "bash", "action_input": f"cat missing{i}.txt"} if i % 2 == 0 else
        {"type": "observation", "content": f"cat: missing{i}.txt: No such file or directory"} for i in range(600)]}
    pred = Predictor(CONFIG).predict({"id": 1, "data": task_data(parse_trace(trace), CONFIG)}, layout)
    ids = [r["id"] for r in pred["result"]]
    assert all(isinstance(i, str) and i for i in ids)
    if layout == "paged":
        assert len(set(ids)) == len(ids)
    else:  # a region's label, type, severity and rationale share its id; regions do not
        by_id = {}
        for r in pred["result"]:
            if r["from_name"] != "error_localization_live_score":  # the score box, not a region
                by_id.setdefault(r["id"], set()).add(r["value"]["start"])
        assert len(by_id) == 300 and all(len(v) == 1 for v in by_id.values())
    again = Predictor(CONFIG).predict({"id": 1, "data": task_data(parse_trace(trace), CONFIG)}, layout)
    assert again["result"][0]["id"] not in ids  # another prediction, other ids


def test_detector_config_errors_are_located():
    raw = CONFIG.to_dict()
    raw["ml_backend"] = {"detectors": {"loop": {"window": "x"}, "nope": True, "tool_error": {"colour": 1}}}
    with pytest.raises(cfg.ConfigError) as e:
        detectors.build(cfg.load_dict(raw))
    text = str(e.value)
    assert "ml_backend.detectors.loop.window: expected int" in text
    assert "ml_backend.detectors.nope: unknown detector" in text
    assert "ml_backend.detectors.tool_error.colour: unknown option" in text


def test_config_selects_and_configures_detectors():
    raw = CONFIG.to_dict()
    raw["ml_backend"] = {"detectors": {"loop": {"severity": "critical"}, "tool_error": False}}
    active = detectors.build(cfg.load_dict(raw))
    assert [(a.detector.name, a.severity) for a in active] == [("loop", "critical")]
    assert {a.detector.name for a in detectors.build(CONFIG)} == set(detectors.BUILTIN)


TRACE = {"trace_id": "p", "task": "t <b>&amp;</b>", "trace": [
    {"type": "action", "content": "bash", "action_input": "pytest"},
    {"type": "observation", "content": "Traceback (most recent call last):\nboom"},
    {"type": "action", "content": "bash", "action_input": "rm -rf /data"},
]}


@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_prediction_decodes_back_to_its_score(layout):
    p = Predictor(CONFIG)
    data = task_data(parse_trace(TRACE), CONFIG)
    pred = p.predict({"id": 1, "data": data}, layout)
    labels = results.decode(pred["result"], CONFIG, 3)
    assert [s.error_type for s in labels.steps] == ["wrong_arguments", None, "destructive_action"]
    assert pred["score"] == 100 - 5 - 10 and pred["model_version"] == p.version
    assert "rule tool_error" in labels.steps[0].rationale


def test_live_score_lists_deductions_and_is_ignored_by_decode():
    p = Predictor(CONFIG)
    data = task_data(parse_trace(TRACE), CONFIG)
    context = {"result": p.predict({"id": 1, "data": data}, "transcript")["result"]}
    live = p.live({"id": 1, "data": data}, context)
    text = live["result"][0]["value"]["text"][0]
    assert live["result"][0]["from_name"] == "error_localization_live_score" and live["score"] == 85
    # each mark says which step it is (#N and the step's type as the trace shows it) and what it costs
    assert text.splitlines() == ["Running score now: 85 of 100", "#1 · Action: \u22125 (Major) · Wrong Arguments",
                                 "#3 · Action: \u221210 (Critical) · Destructive Action"]
    assert live["result"][0]["to_name"] == "te_task"  # not the marks' object: see the transcript template
    # saved with the annotation, the live-score text changes nothing in the decoded labels
    assert results.decode(context["result"] + live["result"], CONFIG, 3) == results.decode(context["result"], CONFIG, 3)


def test_task_fields_latest_and_mean():
    data = task_data(parse_trace(TRACE), CONFIG)
    p = Predictor(CONFIG)
    res = p.predict({"id": 1, "data": data}, "transcript")["result"]
    anns = [{"id": 7, "updated_at": "2026-01-02T00:00:00Z", "result": res},
            {"id": 8, "updated_at": "2026-01-01T00:00:00Z", "result": []},
            {"id": 9, "updated_at": "2026-01-03T00:00:00Z", "result": res, "was_cancelled": True}]
    f = task_fields(CONFIG, data, anns)
    # the first wrong step is step_index 0; the Data Manager's column numbers it as the UI does: #1
    assert (f["running_score"], f["n_errors"], f["first_error_step"], f["worst_severity"]) == (85, 2, 1, "critical")
    assert f["score_mean"] == 92.5 and f["te_scores"] == {"8": 100, "7": 85}
    # the score after each step of the latest annotation (the paged layout shows it on each step): TRACE's
    # steps 1 and 3 are wrong, Major (-5) and Critical (-10) by the guide's weights
    assert f["te_curve"] == [95, 95, 85]
    empty = task_fields(CONFIG, data, [])
    assert empty["running_score"] == 100 and empty["te_curve"] == [100, 100, 100]
    # the seeded score fields, but for what says who keeps the score: the import seeds "not kept", the backend
    # writes that it keeps it
    same = set(empty) - {"te_scores", SCORE_STATUS}
    assert {k: empty[k] for k in same} == {k: data[k] for k in same}
    assert (data[SCORE_STATUS], empty[SCORE_STATUS]) == (SCORE_NOT_KEPT, SCORE_KEPT)


@pytest.mark.parametrize("bad", ["../x", "..", "a/b", "x" * 200, "/etc/passwd", 5])
def test_unsafe_versions_are_refused(bad):
    with pytest.raises(BadRequest):
        safe_version(bad)


def test_safe_values_pass():
    assert safe_version("ls-trajeval-0.1.0-abc") == "ls-trajeval-0.1.0-abc"
    assert safe_project("12.1700000000") == "12.1700000000"
    with pytest.raises(BadRequest):
        safe_project("1/../2")


def test_events_map_deletions_to_tasks():
    got = []
    ev = Events(got.append)
    ev.handle({"action": "ANNOTATION_CREATED", "annotation": {"id": 5, "task": 9}, "project": {"id": 2}})
    ev.handle({"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 5}, {"id": 77}], "project": {"id": 2}})
    assert got[0] == ("task", 2, 9) and set(got[1:]) == {("task", 2, 9), ("project", 2)}
    assert ev.handle({"action": "PROJECT_UPDATED", "project": {"id": 2}}) == {}
    with pytest.raises(BadRequest):
        ev.handle({"action": "ANNOTATION_UPDATED", "annotation": {}})


def test_queue_dedupes_runs_one_key_at_a_time_and_never_drops_the_last_event():
    running, seen, lock = set(), [], threading.Lock()
    overlap = []

    def handler(key):
        with lock:
            if key in running:
                overlap.append(key)
            running.add(key)
        time.sleep(0.01)
        with lock:
            running.discard(key)
            seen.append(key)

    q = WorkQueue(handler, workers=4)
    for i in range(1000):
        q.submit(i % 5)
    assert q.join(30)
    assert overlap == [] and set(seen) == set(range(5)) and len(seen) < 100
    stats = q.snapshot()
    assert stats["submitted"] == 1000 and stats["done"] == len(seen)


def test_queue_retries_failures():
    calls = []

    def flaky(key):
        calls.append(key)
        if len(calls) < 3:
            raise ConnectionError("down")

    q = WorkQueue(flaky, workers=1, base_delay=0.01)
    q.submit("k")
    assert q.join(10) and calls == ["k", "k", "k"] and q.snapshot()["retried"] == 2


def test_queue_wait_returns_once_a_run_that_started_after_the_ticket_has_ended():
    release, started, runs = threading.Event(), threading.Event(), []

    def handler(key):
        runs.append(key)
        started.set()
        release.wait(5)

    q = WorkQueue(handler, workers=2)
    first = q.submit("k")
    assert started.wait(5)  # the first run is under way ...
    second = q.submit("k")  # ... when another event for the key comes: that run may have read the state before it
    assert q.wait("k", first, timeout=0.2) is False and q.wait("k", second, timeout=0.2) is False
    threading.Timer(0.3, release.set).start()
    t0 = time.monotonic()
    assert q.wait("k", second, timeout=5) is True
    assert runs == ["k", "k"] and time.monotonic() - t0 >= 0.25  # it waited for the second run, not the first
    assert q.wait("k", first, timeout=0) is True  # an earlier ticket is served by any later run


def test_queue_wait_is_bounded_and_a_failure_ends_it():
    def slow(key):
        time.sleep(0.5 if key == "slow" else 0)
        if key == "bad":
            raise ConnectionError("down")

    q = WorkQueue(slow, workers=2, base_delay=10)
    t0 = time.monotonic()
    assert q.wait("slow", q.submit("slow"), timeout=0.1) is False
    assert 0.1 <= time.monotonic() - t0 < 0.4
    t0 = time.monotonic()
    assert q.wait("bad", q.submit("bad"), timeout=3) is False and time.monotonic() - t0 < 1  # failed: no need to wait
    assert q.snapshot()["retried"] == 1  # and the queue retries it as before
    assert q.wait("ok", q.submit("ok"), timeout=3) is True


def test_queue_remembers_the_last_runs_of_a_bounded_number_of_keys():
    q = WorkQueue(lambda key: None, workers=2, max_ended=3)
    tickets = {k: q.submit(k) for k in range(10)}
    assert q.join(10)
    # the older keys are forgotten: waiting for them gives up
    assert [q.wait(k, tickets[k], timeout=0) for k in range(10)].count(True) == 3
    assert q.wait(9, tickets[9], timeout=0) is True
