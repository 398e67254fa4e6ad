"""The learned judge on a small hand-made set whose answer is plain from the data, and the judges' store (pure:
no servers). The real loop, Label Studio to a retrained backend, is test_learning_studio.py."""
from __future__ import annotations

import pickle
import re

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.labels import StepLabel, TraceLabels
from ls_trajeval.core.trace import Step, Trace
from ls_trajeval.ml import detectors
from ls_trajeval.ml.learned import Example, LearnedJudge, NotEnoughLabels, step_features
from ls_trajeval.ml.training import Judges, examples_from_tasks, project_uid

from .samples import FLAGGED_STEPS, TRACES

CONFIG = cfg.load(label_configs.path("trajectory_eval"))
ERRORS = CONFIG.trajectory.error_labels
FILLER = ["Let me look at the page.", "Open the search results.", "Read the table of contents.",
          "Compare the two numbers found.", "Write down the dates.", "Summarise what was found so far."]


def trace(n: int, wrong_at: int, mistake: str) -> Trace:
    """Six steps of ordinary work; at ``wrong_at`` the agent makes the mistake ``mistake`` names."""
    steps = [Step.of("thought", FILLER[(k + n) % len(FILLER)], extra={"metadata": {"agent": "planner"}})
             for k in range(6)]
    text = {"guess": "I guess the answer is 42 without checking any source.",
            "typo": "Typing the query as 'reserch paper lsit' into the box."}[mistake]
    steps[wrong_at] = Step.of("thought", text, extra={"metadata": {"agent": "planner"}})
    return Trace(f"t{n}", "find it", steps)


def example(n: int, wrong_at: int, mistake: str) -> Example:
    etype = {"guess": "hallucinated_element", "typo": "wrong_arguments"}[mistake]
    category = CONFIG.trajectory.type_by_name(etype).category
    labels = [StepLabel(k, "correct") for k in range(6)]
    labels[wrong_at] = StepLabel(wrong_at, "incorrect", category, etype, "major", "annotator's reason")
    return Example(trace(n, wrong_at, mistake), TraceLabels(labels), group=f"task-{n}")


#: each mistake once at every position, so where a step is teaches nothing: its words do
TRAINING = [example(n, n % 6, "guess" if n < 6 else "typo") for n in range(12)]


@pytest.fixture(scope="module")
def judge():
    return LearnedJudge.train(TRAINING, base_version="ls-trajeval-test", error_labels=ERRORS)


@pytest.mark.parametrize("wrong_at, mistake", [(1, "guess"), (5, "typo"), (3, "guess")])
def test_the_judge_finds_the_step_the_labels_teach(judge, wrong_at, mistake):
    held_out = trace(99, wrong_at, mistake)
    assert judge.decisive_step(held_out.steps) == wrong_at
    labels = judge.suggest(held_out.steps)
    marked = [s for s in labels.steps if s.correctness in ERRORS]
    assert [s.step_index for s in marked] == [wrong_at]
    (mark,) = marked
    # the type follows the mistake's words; the severity is the only one ever given
    assert mark.error_type == {"guess": "hallucinated_element", "typo": "wrong_arguments"}[mistake]
    assert mark.error_category == CONFIG.trajectory.type_by_name(mark.error_type).category
    assert mark.severity == "major" and mark.suggested_by == judge.version
    assert mark.rationale.startswith(f"[ls-trajeval learned {judge.version}] wrong with probability")
    assert "learned from 12 labelled traces" in mark.rationale
    # what weighed most are the mistake's own words
    said = re.findall(r"the words? '([^']+)'", mark.rationale)
    assert said and all(w in held_out.steps[wrong_at].content.lower() for w in said), mark.rationale
    # confidence: the probability that the label given is right, for every step
    for s in labels.steps:
        assert s.confidence is not None and 0 <= s.confidence <= 1
    assert mark.confidence >= judge.threshold
    assert all(s.confidence > 0.5 for s in labels.steps if s is not mark)


def test_version_names_the_labels_it_learned_from(judge):
    assert judge.version.startswith("ls-trajeval-test-learned-")
    again = LearnedJudge.train(list(reversed(TRAINING)), base_version="ls-trajeval-test", error_labels=ERRORS)
    assert again.version == judge.version  # same labels, in any order
    changed = TRAINING[:-1] + [example(11, 4, "guess")]
    assert LearnedJudge.train(changed, base_version="ls-trajeval-test", error_labels=ERRORS).version != judge.version
    assert judge.trained["traces"] == 12 and judge.trained["wrong_steps"] == 12 and judge.trained["steps"] == 72


def test_too_few_labels_say_how_many_it_takes():
    with pytest.raises(NotEnoughLabels, match=r"2 labelled trace\(s\), 2 with a wrong step; it takes 3 and 2"):
        LearnedJudge.train(TRAINING[:2], base_version="b", error_labels=ERRORS)
    all_correct = [Example(e.trace, TraceLabels([StepLabel(k, "correct") for k in range(6)]), e.group)
                   for e in TRAINING]
    with pytest.raises(NotEnoughLabels, match="0 with a wrong step"):
        LearnedJudge.train(all_correct, base_version="b", error_labels=ERRORS)


def test_features_of_a_step_and_its_neighbours():
    steps = [Step.of("action", "bash", "pytest", {"metadata": {"agent": "Coder"}}),
             Step.of("observation", "Traceback (most recent call last):\nImportError",
                     extra={"metadata": {"agent": "Computer"}}),
             Step.of("thought", "It works.", extra={"metadata": {"agent": "Coder"}})]
    rows = step_features(steps, {0: "tool_error"})
    assert rows[0]["rule tool_error here"] == 1 and rows[1]["rule tool_error on the step before"] == 1
    assert rows[0]["a tool error in the step after"] == 1 and rows[1]["a tool error here"] == 1
    assert rows[2]["tool errors before it"] == 1 / 5 and rows[0]["tool errors before it"] == 0
    assert rows[2]["agent coder, turn 1"] == 1 and rows[0]["agent coder, turn 0"] == 1
    assert rows[2]["step before: observation"] == 1 and rows[2]["step after: (none)"] == 1
    assert rows[1]["share of the trace before it"] == pytest.approx(1 / 3)


def test_examples_from_label_studio_tasks_skip_cancelled_and_keep_the_rules_findings():
    from ls_trajeval.core import results
    from ls_trajeval.core.tasks import task_data
    from ls_trajeval.core.trace import parse_trace

    t = parse_trace(TRACES[0])
    data = task_data(t, CONFIG)
    labels = TraceLabels([StepLabel(k, "correct") for k in range(5)])
    labels.steps[3] = StepLabel(3, "incorrect", "reasoning", "logical_error", "critical", "claims success")
    result = results.encode(labels, CONFIG, "transcript", data["te_transcript"])
    tasks = [{"id": 7, "data": data, "annotations": [{"result": result}, {"result": [], "was_cancelled": True}]},
             {"id": 8, "data": data, "annotations": []},
             {"id": 9, "data": {"no": "trace"}, "annotations": [{"result": []}]}]
    (ex,) = examples_from_tasks(tasks, CONFIG, detectors.build(CONFIG))
    assert ex.group == "7" and [s.correctness for s in ex.labels.steps] == ["correct"] * 3 + ["incorrect", "correct"]
    assert (ex.labels.steps[3].error_type, ex.labels.steps[3].severity) == ("logical_error", "critical")
    # the failed pytest, the success claim, finishing after a failure (samples.py says why)
    assert ex.flagged == dict(zip(FLAGGED_STEPS, ["tool_error", "ignored_observation", "premature_termination"]))


def test_project_uid_is_label_studios_name_for_the_project():
    assert project_uid("12.1733400000") == "12.1733400000"
    assert project_uid("../x") is None
    # a webhook's project object: Label Studio names it "<id>.<created_at as epoch seconds>"
    assert project_uid({"id": 12, "created_at": "2024-12-05T12:00:00.123456Z"}) == "12.1733400000"
    assert project_uid({"id": 12}) == "12"


def test_judges_persist_swap_and_skip_an_unchanged_training(tmp_path):
    active = detectors.build(CONFIG)
    judges = Judges(tmp_path, "ls-trajeval-test", CONFIG, active)
    assert judges.judge("3.100") is None and judges.version("3.100") == "ls-trajeval-test"
    status = judges.train("3.100", TRAINING[:2])
    assert status["state"] == "rules only" and "too few labels" in status["reason"]
    assert judges.judge("3.100") is None and judges.status()["3.100"]["state"] == "rules only"
    status = judges.train("3.100", TRAINING)
    assert status["state"] == "trained" and (tmp_path / "project-3.100" / "judge.pickle").is_file()
    first = status["version"]
    assert judges.version("3.100") == first and judges.version("4.100") == "ls-trajeval-test"
    assert judges.train("3.100", TRAINING)["state"] == "unchanged"
    # another worker process: reads the same file
    other = Judges(tmp_path, "ls-trajeval-test", CONFIG, active)
    assert other.version("3.100") == first
    # a retraining on changed labels: a new version, which the other worker picks up from the file
    second = judges.train("3.100", TRAINING[:-1] + [example(11, 4, "guess")])["version"]
    assert second != first and judges.version("3.100") == second
    import ls_trajeval.ml.training as training
    other._looked.clear()  # as if RECHECK seconds had passed
    assert other.version("3.100") == second
    # a judge learned under another config is not served
    assert Judges(tmp_path, "ls-trajeval-other", CONFIG, active).judge("3.100") is None
    # a torn or foreign file leaves the judge in use in place
    (tmp_path / "project-3.100" / "judge.pickle").write_bytes(b"not a pickle")
    other._looked.clear()
    assert other.version("3.100") == second
    assert training.PROJECT_UID.match("3.100")
    with pytest.raises(ValueError):
        judges.train("../etc", TRAINING)


def test_a_judge_survives_pickling(judge):
    back = pickle.loads(pickle.dumps(judge))
    held_out = trace(5, 2, "guess")
    assert back.decisive_step(held_out.steps) == judge.decisive_step(held_out.steps) == 2
