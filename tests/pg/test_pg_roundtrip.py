"""The round trip on a Label Studio backed by a real PostgreSQL server: generate → import → annotate
through the API → export, with hostile text, several annotators at once, and what PostgreSQL refuses."""
from __future__ import annotations

import json
import re
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from commandline import invoke
from studio.test_deep_marks import check, deep_round_trip
from studio.test_suggestions import decided_through_the_api
from studio.uishapes import EXPECTED_REJECTED, EXPECTED_STEPS, NASTY, RATIONALE, TRACES, provenance_of, ui_result

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig
from ls_trajeval.flows.projects import project_config
from ls_trajeval.studio import client as studio

pytestmark = pytest.mark.studio

# every character class that a database can get wrong; \u0000 is the one PostgreSQL's jsonb refuses
HOSTILE = NASTY + " \u202eRTL\u202c 😀 \t\r\n tab<&>'\" \\u0041 %s %(x)s ' OR 1=1; --"


@pytest.fixture(scope="module")
def env(pg_label_studio):
    return {"LABEL_STUDIO_URL": pg_label_studio.url, "LABEL_STUDIO_API_KEY": pg_label_studio.credentials.token}


@pytest.fixture(scope="module")
def traces_file(tmp_path_factory):
    rows = [dict(t) for t in TRACES]
    rows.append({"trace_id": "pg-hostile", "task": HOSTILE, "trace": [
        {"type": "thought", "content": HOSTILE}, {"type": "action", "content": "run", "action_input": {"q": HOSTILE}}]})
    rows.append({"trace_id": "pg-nul", "task": "a NUL byte", "trace": [{"type": "observation", "content": "x\u0000y"}]})
    p = tmp_path_factory.mktemp("pg") / "traces.jsonl"
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return p


def test_label_studio_stores_its_data_in_postgresql(pg_label_studio):
    # migrations ran into PostgreSQL, and no SQLite file was made beside the data dir
    assert int(pg_label_studio.pg.psql("select count(*) from django_migrations")) > 100
    assert not (pg_label_studio.data_dir / "label_studio.sqlite3").exists()


@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_round_trip_on_postgresql(pg_label_studio, pg_client, env, traces_file, layout, tmp_path):
    pg = pg_label_studio.pg
    xml = tmp_path / "config.xml"
    assert invoke("generate", "--layout", layout, "-o", xml).exit_code == 0
    r = invoke("import", traces_file, "--create", f"pg roundtrip {layout}", "--layout", layout, "--quiet",
                "--batch-size", 2, env=env)
    assert r.exit_code == 1, r.output  # the NUL trace is refused by PostgreSQL, the rest is imported
    pid = int(re.search(r"project (\d+):", r.stdout).group(1))
    assert "imported 3, skipped 0 (already there), rejected 1" in r.stdout
    assert "Label Studio refused trace 'pg-nul'" in r.stderr and "\\u0000" in r.stderr
    assert studio.get_project(pg_client, pid)["label_config"].strip() == xml.read_text(encoding="utf-8").strip()
    # the rows really are in PostgreSQL, once each, with the trace id in meta
    rows = pg.psql(f"select meta->>'te_trace_id', data->>'trace_id' from task where project_id={pid} order by id")
    assert rows.split() == ["rt-1|rt-1", "rt-2|rt-2", "pg-hostile|pg-hostile"]
    again = invoke("import", traces_file, "--project", pid, "--quiet", env=env)
    assert "imported 0, skipped 3 (already there), rejected 1" in again.stdout

    tasks = {t["data"]["trace_id"]: t for t in studio.iter_tasks(pg_client, pid)}
    hostile = tasks["pg-hostile"]["data"]
    assert hostile["task"] == HOSTILE and hostile["trace"][0]["content"] == HOSTILE  # byte for byte
    assert hostile["trace"][1]["action_input"] == {"q": HOSTILE}
    t1 = tasks["rt-1"]
    studio.create_annotation(pg_client, t1["id"], ui_result(layout, t1["data"]["te_transcript"]), lead_time=7)

    # three annotators on one task at the same moment: PostgreSQL takes concurrent writes, SQLite serialises
    run = uuid.uuid4().hex[:8]  # a kept test database ($LS_TRAJEVAL_TEST_PG_DIR) has the users of earlier runs
    users = [studio.ensure_user(pg_client, f"pg{i}-{layout}-{run}@example.com", f"pg{i}{layout}{run}")
             for i in range(3)]
    def annotate(i):
        return studio.create_annotation(pg_client, tasks["pg-hostile"]["id"], [
            {"id": f"o{i}", "from_name": "overall_success", "to_name": "te_task", "type": "choices",
             "value": {"choices": [["success", "failure", "success"][i]]}}], completed_by=users[i]["id"])

    with ThreadPoolExecutor(3) as pool:
        created = list(pool.map(annotate, range(3)))
    assert len({a["id"] for a in created}) == 3

    out = tmp_path / "out.jsonl"
    r = invoke("export", "--project", pid, "-o", out, env=env)
    assert r.exit_code == 0, r.output
    assert "wrote 4 annotations of 3 tasks" in r.stdout
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    first = lines[0]
    assert first["trace_id"] == "rt-1" and first["final_score"] == 85 and first["running_score"][-1] == 85
    assert first["error_localization"][3]["rationale"] == RATIONALE
    assert first["overall_success"] == "failure"
    others = [x for x in lines if x["trace_id"] == "pg-hostile"]
    assert sorted(x["annotator"] for x in others) == sorted(u["email"] for u in users)
    assert sorted(x["overall_success"] for x in others) == ["failure", "success", "success"]
    assert {x["task"] for x in others} == {HOSTILE}
    # a rerun gives the same bytes
    out2 = tmp_path / "again.jsonl"
    assert invoke("export", "--project", pid, "-o", out2, env=env).exit_code == 0
    assert out2.read_bytes() == out.read_bytes()


def test_shipped_configs_are_accepted_on_postgresql(pg_client):
    for name in ("trajectory_eval", "coding_agent"):
        c = cfg.load(label_configs.path(name))
        project = studio.create_project(pg_client, c, "transcript", f"pg accept {name}")
        assert project_config(studio.get_project(pg_client, project["id"])).trajectory == c.trajectory


def test_suggestions_decided_in_the_browsers_shapes_export_their_provenance_on_postgresql(pg_client, env, tmp_path,
                                                                                        monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    records, _ = decided_through_the_api(pg_client, tmp_path, "pg suggestions")
    assert len(records) == 2
    assert all(provenance_of(r) == (EXPECTED_STEPS, EXPECTED_REJECTED) for r in records)


@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_spans_links_and_corrections_round_trip_on_postgresql(pg_client, env, layout, tmp_path):
    record, stderr = deep_round_trip(pg_client, layout, tmp_path, env=env)
    check(record, stderr, layout)
