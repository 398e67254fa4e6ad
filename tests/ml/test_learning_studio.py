"""The backend learning from its annotators, for real: a gunicorn backend (2 workers, Basic auth, a model dir of
its own) connected to the session's Label Studio.

Annotations submitted through Label Studio's API fire its webhooks; the backend retrains in the background, the
project moves to the new judge's version, and "Retrieve predictions" gives another task the learned judge's marks,
each with a confidence. A second project whose labels were made before the backend was connected learns from
Label Studio's own train action (``START_TRAINING``).

The traces: ordinary steps, and in each one step where the agent guesses instead of checking, at a different
place in each trace. The rule detectors see nothing wrong in any of them (no tool fails), so the rules' prediction
marks nothing; labels that always mark the guess teach the judge to mark it in a trace it has not seen.
"""
from __future__ import annotations

import httpx
import pytest
from commandline import invoke

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.studio import client as studio

from .conftest import PASSWORD, USER, wait_for
from .samples import marks

pytestmark = pytest.mark.studio
CONFIG = str(label_configs.path("trajectory_eval"))
WORK = ["Open the list of sources.", "Read the second page of results.", "Note the publication dates.",
        "Compare the two tables side by side.", "Write down what the sources agree on."]
GUESS = "I guess the figure is about 42 million; no need to check a source."


def traces(prefix: str, n: int) -> list[dict]:
    out = []
    for k in range(n):
        steps = [{"type": "thought", "content": WORK[(j + k) % len(WORK)], "metadata": {"agent": "researcher"}}
                 for j in range(5)]
        steps[k % 5]["content"] = GUESS
        out.append({"trace_id": f"{prefix}-{k}", "task": "How many people live there?", "trace": steps})
    return out


def guess_at(task) -> int:
    return next(i for i, s in enumerate(task["data"]["trace"]) if s["content"] == GUESS)


def marked(prediction) -> list[int]:
    return sorted({int(r["value"]["start"]) for r in prediction["result"] if r["from_name"] == "error_localization"})


def connect(label_studio, project_id, backend):
    r = invoke(*["ml", "connect", "--project", str(project_id), "--backend-url", backend.url,
                                        "--basic-auth-user", USER, "--basic-auth-password", PASSWORD],
                           env={"LABEL_STUDIO_URL": label_studio.url,
                                "LABEL_STUDIO_API_KEY": label_studio.credentials.token})
    assert r.exit_code == 0, r.output


def make_project(ls_client, title, items):
    c = cfg.load(CONFIG)
    project = studio.create_project(ls_client, c, "transcript", title)
    import_traces(ls_client, project["id"], [parse_trace(t) for t in items], c, progress=False)
    return project["id"], sorted(studio.iter_tasks(ls_client, project["id"]), key=lambda t: t["id"])


def learned_version(ls_client, project_id):
    v = studio.get_project(ls_client, project_id)["model_version"] or ""
    return v if "-learned-" in v else None


@pytest.fixture(scope="module")
def backend(label_studio, backend_factory):
    return backend_factory(CONFIG, ls=label_studio, workers=2).start()


def test_annotations_retrain_the_backend_and_change_another_tasks_suggestions(label_studio, ls_client, backend):
    project_id, tasks = make_project(ls_client, "learned judge: webhooks", traces("hook", 7))
    connect(label_studio, project_id, backend)
    rules_version = studio.get_project(ls_client, project_id)["model_version"]
    held_out = tasks[-1]
    studio.retrieve_predictions(ls_client, project_id)
    (before,) = studio.task_predictions(ls_client, held_out["id"])
    assert before["model_version"] == rules_version and marked(before) == []  # no rule fires on these traces

    # two labelled traces: too few to learn from, and the backend says so
    for t in tasks[:2]:
        studio.create_annotation(ls_client, t["id"], marks(t["data"]["te_transcript"], (guess_at(t), "major")))
    health = wait_for(lambda: (h := httpx.get(backend.url + "/health", auth=backend.auth_tuple).json())
                      .get("learned") and h)
    (status,) = health["learned"].values()
    assert status["state"] == "rules only" and "too few labels" in status["reason"]
    assert learned_version(ls_client, project_id) is None

    # three more: the webhooks retrain it in the background (once per event, or fewer when they come in a burst)
    # and the project follows each new version, until the judge has learned from all five
    for t in tasks[2:5]:
        studio.create_annotation(ls_client, t["id"], marks(t["data"]["te_transcript"], (guess_at(t), "major")))

    def learned_from_all_five():
        version = learned_version(ls_client, project_id)
        if version is None:
            return None
        studio.retrieve_predictions(ls_client, project_id)  # predicts only tasks the version has not predicted
        mine = [p for p in studio.task_predictions(ls_client, held_out["id"]) if p["model_version"] == version]
        said = [r["value"]["text"][0] for p in mine for r in p["result"] if r["type"] == "textarea"
                and r.get("to_name") == "te_trace"]
        return (version, mine[0]) if any("learned from 5 labelled traces" in w for w in said) else None

    version, after = wait_for(learned_from_all_five, timeout=120, interval=1) or (None, None)
    assert version and version.startswith(rules_version + "-learned-"), studio.get_project(ls_client, project_id)
    assert [b["title"] for b in studio.ml_backends(ls_client, project_id)] == [version]

    # the held-out task's new suggestion is the learned judge's: the guess, with a confidence
    assert marked(after) == [guess_at(held_out)] != marked(before)
    regions = [r for r in after["result"] if r.get("to_name") == "te_trace"]
    assert regions and all(0 <= r["score"] <= 1 for r in regions)
    assert len({r["score"] for r in regions}) == 1  # one step: every result of its region carries its confidence
    (why,) = [r["value"]["text"][0] for r in regions if r["type"] == "textarea"]
    assert why.startswith(f"[ls-trajeval learned {version}] wrong with probability")
    # both workers serve it (each reads the judge from the model dir)
    for _ in range(6):
        r = httpx.post(backend.url + "/setup", json={"project": f"{project_id}.{_created(ls_client, project_id)}"},
                       auth=backend.auth_tuple)
        assert r.json()["model_version"] == version


def _created(ls_client, project_id) -> int:
    from datetime import datetime

    created = studio.get_project(ls_client, project_id)["created_at"]
    return int(datetime.fromisoformat(str(created).replace("Z", "+00:00")).timestamp())


def test_the_train_action_learns_from_labels_made_before_the_backend(label_studio, ls_client, backend):
    project_id, tasks = make_project(ls_client, "learned judge: train action", traces("train", 6))
    for t in tasks[:4]:  # no backend yet: no webhook, nothing learned
        studio.create_annotation(ls_client, t["id"], marks(t["data"]["te_transcript"], (guess_at(t), "major")))
    connect(label_studio, project_id, backend)
    assert learned_version(ls_client, project_id) is None
    (ml,) = studio.ml_backends(ls_client, project_id)
    ls_client.ml.train(id=ml["id"])  # Label Studio sends START_TRAINING to the backend, with its Basic auth
    version = wait_for(lambda: learned_version(ls_client, project_id), timeout=120)
    assert version
    studio.retrieve_predictions(ls_client, project_id)
    held_out = tasks[-1]
    (after,) = [p for p in studio.task_predictions(ls_client, held_out["id"]) if p["model_version"] == version]
    assert marked(after) == [guess_at(held_out)]
