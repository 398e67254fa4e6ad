"""The export on a PostgreSQL-backed Label Studio asks for only the fields the record is built from, as plain JSON,
pages read ahead: its files are byte for byte what reading every field of every task through the SDK's models gives
(the way it read before), for annotations, predictions and gold labels; with hostile text, two annotators in the
shapes the labeling UI saves, a skip, drafts, and predictions an annotator started from (provenance)."""
from __future__ import annotations

import json
import random
import uuid

import httpx
import pytest
from pg import tracegen
from studio.uishapes import NASTY, TRACES, ui_marks

from ls_trajeval import label_configs
from ls_trajeval.analysis.gold import build_gold, gold_line
from ls_trajeval.analysis.settings import from_config
from ls_trajeval.analysis.trace_groups import group_by_trace
from ls_trajeval.core import config as cfg
from ls_trajeval.core.layouts import layout_of
from ls_trajeval.core.records import build_record, dumps
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.export import export_gold, export_predictions, export_project, read_back
from ls_trajeval.flows.importer import import_traces
from ls_trajeval.studio import client as studio

pytestmark = pytest.mark.studio

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


@pytest.fixture(scope="module")
def project(pg_label_studio, pg_client):
    """40 generated traces and the hostile ones; annotator A on all, B on every third, A's skip alone on task 5, a
    draft by the API key's user on two, a judge's prediction on every other. Returns the project and its counts."""
    pid = studio.create_project(pg_client, CONFIG, "transcript", "export: fields and pages")["id"]
    traces = [*TRACES, *tracegen.traces(40, seed=5)]
    assert import_traces(pg_client, pid, (parse_trace(t) for t in traces), CONFIG, progress=False).imported == 42
    run = uuid.uuid4().hex[:8]  # a kept test database ($LS_TRAJEVAL_TEST_PG_DIR) has the users of earlier runs
    a, b = (studio.ensure_user(pg_client, f"{w}-{run}@example.com", f"{w}{run}")["id"] for w in ("exp-a", "exp-b"))
    rng = random.Random(7)
    types = CONFIG.trajectory.types
    tasks = list(studio.iter_tasks(pg_client, pid))
    submitted = 0
    from_judge = {}  # task id -> (the suggested step B kept, the one B deleted)
    for i, task in enumerate(tasks):
        transcript = task["data"]["te_transcript"]

        def marks(n_steps: int = len(transcript), k: int | None = None) -> dict:
            steps = rng.sample(range(n_steps), min(n_steps, rng.randint(0, 3) if k is None else k))
            return {s: (t.category, t.name, rng.choice(("minor", "major", "critical")), f"why {s} {NASTY}")
                    for s in steps for t in [rng.choice(types)]}
        suggested = marks(k=2)
        if i % 2 == 0:
            prediction = studio.create_prediction(pg_client, task["id"], {
                "model_version": "judge-1", "score": 0.5, "result": ui_marks("transcript", transcript, suggested)})
        if i == 5:
            studio.create_annotation(pg_client, task["id"], [], completed_by=a, was_cancelled=True)
        else:
            studio.create_annotation(pg_client, task["id"], ui_marks("transcript", transcript, marks()),
                                     completed_by=a, lead_time=round(rng.uniform(1, 99), 3))
            submitted += 1
        if i % 6 == 0:  # B started from the judge's suggestions: kept the first, deleted the second
            kept = dict(sorted(suggested.items())[:1])
            if len(suggested) == 2:
                from_judge[task["id"]] = tuple(sorted(suggested))
            studio.create_annotation(pg_client, task["id"], ui_marks("transcript", transcript, kept),
                                     completed_by=b, lead_time=12.5, parent_prediction=prediction["id"])
            submitted += 1
        elif i % 3 == 0:
            studio.create_annotation(pg_client, task["id"], ui_marks("transcript", transcript, marks(), "success"),
                                     completed_by=b, lead_time=12.5)
            submitted += 1
        if i in (3, 4):  # a draft of the API key's own user (the SDK has no call for drafts)
            httpx.post(f"{pg_label_studio.url}/api/tasks/{task['id']}/drafts", json={"result": [], "lead_time": 1},
                       headers={"Authorization": f"Token {pg_label_studio.credentials.token}"}).raise_for_status()
    return {"id": pid, "tasks": len(tasks), "submitted": submitted, "b": b, "from_judge": from_judge}


def every_field_records(client, pid: int, what: str = "annotations") -> list[dict]:
    """The records of every task read whole through the SDK's models (``studio.iter_tasks``): how the export read a
    project before it asked for fields."""
    project = studio.get_project(client, pid)
    layout, users = layout_of(project["label_config"]), studio.users_by_id(client)
    version = project.get("model_version")
    out = []
    for task in studio.iter_tasks(client, pid):
        items = sorted(task[what], key=lambda a: a["id"])
        if what == "predictions":  # per task the latest prediction of each model version
            items = list({p["model_version"]: p for p in items}.values())
        for item in items:
            if not item.get("was_cancelled"):
                who = item["model_version"] if what == "predictions" else None
                out.append(build_record(task, item, CONFIG, layout=layout, users=users, annotator=who,
                                        prediction=what == "predictions", model_version=version)[0])
    return out


def test_the_export_is_what_reading_every_field_gives(pg_client, project, tmp_path):
    expected = every_field_records(pg_client, project["id"])
    summary = export_project(pg_client, project["id"], tmp_path / "out.jsonl", page_size=7)  # 6 full pages, 1 short
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == "".join(dumps(r) for r in expected)
    assert (summary.written, summary.tasks, summary.cancelled, summary.drafts) == (project["submitted"], 42, 1, 2)
    # provenance is read from the task's predictions and the annotation's parent: B's annotations that started from
    # the judge's suggestions keep one (accepted) and reject the other
    started = [r for r in expected if r["annotator_id"] == project["b"] and r["task_id"] in project["from_judge"]]
    assert len(started) == len(project["from_judge"]) >= 6  # tasks 0, 6, ..., 36 (a one-step trace has no second)
    for r in started:
        kept, deleted = project["from_judge"][r["task_id"]]
        step = r[CONFIG.trajectory.name][kept]
        assert (step["source"], step["suggested_by"]) == ("accepted", "judge-1")
        assert [x["step_index"] for x in r["rejected_suggestions"]] == [deleted]
    rt1 = next(r for r in expected if r["trace_id"] == "rt-1")
    assert rt1["task"] == TRACES[0]["task"] and rt1["metadata"] == TRACES[0]["metadata"]  # hostile text intact
    # and whatever the page size
    export_project(pg_client, project["id"], tmp_path / "one-page.jsonl")
    assert (tmp_path / "one-page.jsonl").read_bytes() == (tmp_path / "out.jsonl").read_bytes()


def test_predictions_are_what_reading_every_field_gives(pg_client, project, tmp_path):
    expected = every_field_records(pg_client, project["id"], "predictions")
    summary = export_predictions(pg_client, project["id"], tmp_path / "predictions.jsonl", page_size=7)
    assert summary.written == len(expected) == 21
    assert (tmp_path / "predictions.jsonl").read_text(encoding="utf-8") == "".join(dumps(r) for r in expected)


def test_gold_trace_by_trace_is_the_gold_of_every_record_at_once(pg_client, project, tmp_path):
    settings = from_config(CONFIG)
    records = [read_back(r, CONFIG) for r in every_field_records(pg_client, project["id"])]
    expected = [gold_line(g, settings) for g in build_gold(group_by_trace(records).items(), settings)]
    summary = export_gold(pg_client, project["id"], tmp_path / "gold.jsonl", review=[], page_size=7)
    lines = [json.loads(x) for x in (tmp_path / "gold.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines == expected and summary.written == 41  # every trace but the one with only a skip
    assert {"single", "majority"} <= set(summary.methods)
