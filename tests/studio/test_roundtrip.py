"""The core pipeline on a real Label Studio: generate → create project → import → annotate → export.

Annotations are created through the API in exactly the result shapes the labeling UI saves
(written out literally here, not produced by our own encoder), so the decoder is checked against
Label Studio's shapes and not against itself.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from commandline import invoke

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core import labelconfig
from ls_trajeval.core.fields import SCORE_NOT_KEPT
from ls_trajeval.core.layouts import layout_of
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.projects import project_config
from ls_trajeval.studio import client as studio

from .uishapes import NASTY, RATIONALE, TRACES, ui_result

pytestmark = pytest.mark.studio

BAD_LINES = ['{"trace_id": "rt-bad", "trace": []}', "{oops"]


@pytest.fixture(scope="module")
def traces_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("traces") / "traces.jsonl"
    lines = [json.dumps(t, ensure_ascii=False) for t in TRACES] + BAD_LINES
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("name", ["trajectory_eval", "coding_agent", "mast", "trail", "who_and_when"])
@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_every_shipped_config_is_accepted_by_label_studio(ls_client, name, layout):
    c = cfg.load(label_configs.path(name))
    project = studio.create_project(ls_client, c, layout, f"accept {name} {layout}")
    assert project["id"] > 0
    stored = studio.get_project(ls_client, project["id"])["label_config"]
    assert stored.strip() == labelconfig.generate(c, layout).strip()
    assert project_config(stored_project := studio.get_project(ls_client, project["id"])).trajectory == c.trajectory
    assert stored_project["expert_instruction"].strip() == c.instructions.strip()


@pytest.fixture(scope="module")
def exported(ls_env, ls_client, traces_file, tmp_path_factory):
    """Both layouts: project from the CLI, traces imported, one UI-shaped annotation per layout,
    a second annotator, a cancelled annotation and a draft; then exported."""
    out = {}
    bob = studio.ensure_user(ls_client, "bob@example.com", "bob")
    for layout in labelconfig.LAYOUTS:
        r = invoke("import", traces_file, "--create", f"roundtrip {layout}", "--layout", layout, "--quiet",
                    "--batch-size", 1)
        assert r.exit_code == 1, r.output  # two bad lines rejected, the rest imported
        pid = int(re.search(r"project (\d+):", r.stdout).group(1))
        assert "imported 2, skipped 0 (already there), rejected 2" in r.stdout
        assert ":3: trace: empty: a trace needs at least one step" in r.stderr
        assert ":4: invalid JSON" in r.stderr
        again = invoke("import", traces_file, "--project", pid, "--quiet")
        assert "imported 0, skipped 2 (already there), rejected 2" in again.stdout
        tasks = {t["data"]["trace_id"]: t for t in studio.iter_tasks(ls_client, pid)}
        assert len(tasks) == 2
        t1, t2 = tasks["rt-1"], tasks["rt-2"]
        assert t1["data"]["task"] == TRACES[0]["task"]  # byte for byte
        assert t1["data"]["trace"] == TRACES[0]["trace"] and t1["data"]["metadata"] == TRACES[0]["metadata"]
        assert t1["data"]["n_steps"] == 7 and t1["data"]["running_score"] == 100
        assert len(t1["data"]["te_transcript"]) == 7
        # the rendered cards only where the layout shows them (70% of a task's bytes)
        assert len(t1["data"].get("te_pages", [])) == (7 if layout == "paged" else 0)
        studio.create_annotation(ls_client, t1["id"], ui_result(layout, t1["data"]["te_transcript"]), lead_time=42.5)
        ls_client.annotations.create(id=t2["id"], result=[
            {"id": "o", "from_name": "overall_success", "to_name": "te_task", "type": "choices",
             "value": {"choices": ["success"]}}], completed_by=bob["id"], lead_time=3)
        ls_client.annotations.create(id=t2["id"], result=[], was_cancelled=True)
        # a draft, as the UI autosaves one (the SDK has no call for drafts: use its HTTP client)
        ls_client._client_wrapper.httpx_client.request(f"api/tasks/{t2['id']}/drafts", method="POST",
                                                       json={"result": [], "lead_time": 1})
        path = tmp_path_factory.mktemp("export") / "annotations.jsonl"
        r = invoke("export", "--project", pid, "-o", path)
        assert r.exit_code == 0, r.output
        assert "wrote 2 annotations of 2 tasks" in r.stdout and "left out 1 skipped/cancelled and 1 drafts" in r.stdout
        per = tmp_path_factory.mktemp("per")
        r = invoke("export", "--project", pid, "-o", per, "--per-annotator")
        assert r.exit_code == 0, r.output
        out[layout] = {"project": pid, "path": path, "per": per,
                       "lines": [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]}
    return out


@pytest.mark.parametrize("layout", labelconfig.LAYOUTS)
def test_export_has_every_step_with_its_labels_and_scores(exported, layout):
    lines = exported[layout]["lines"]
    assert [x["trace_id"] for x in lines] == ["rt-1", "rt-2"]
    rec = lines[0]
    steps = rec["error_localization"]
    assert [s["step_index"] for s in steps] == list(range(7))
    assert [s["correctness"] for s in steps] == ["correct"] * 3 + ["incorrect", "correct", "correct", "incorrect"]
    assert steps[3] == {"step_index": 3, "step_type": "thought", "step_text": f"It must subtract the discount. {NASTY}",
                        "correctness": "incorrect", "error_category": "reasoning", "error_type": "incorrect_assumption",
                        "severity": "major", "rationale": RATIONALE, "score": 95,
                        # made by hand, a whole-step mark, linked to nothing
                        "source": "human", "suggested_by": None, "confidence": None, "evidence": [], "caused_by": [],
                        "role": "origin", "correction": None}
    assert (steps[6]["error_category"], steps[6]["error_type"], steps[6]["severity"], steps[6]["rationale"]) == (
        "action", "premature_termination", "critical", None)
    assert all(s["error_type"] is None and s["severity"] is None for i, s in enumerate(steps) if i not in (3, 6))
    assert rec["running_score"] == [100, 100, 100, 95, 95, 95, 85] and rec["final_score"] == 85
    assert (rec["n_errors"], rec["first_error_step"], rec["worst_severity"]) == (2, 3, "critical")
    assert (rec["root_cause_step"], rec["rejected_suggestions"]) == (3, [])
    assert rec["overall_success"] == "failure"
    assert rec["task"] == TRACES[0]["task"]
    assert rec["annotator"] == "admin@example.com" and rec["lead_time"] == 42.5
    assert rec["annotation_id"] and rec["created_at"] and rec["layout"] == layout
    other = lines[1]
    assert other["annotator"] == "bob@example.com" and other["overall_success"] == "success"
    assert other["final_score"] == 100 and [s["correctness"] for s in other["error_localization"]] == ["correct"] * 3


def test_both_layouts_export_identical_labels(exported):
    volatile = {"project_id", "task_id", "annotation_id", "created_at", "updated_at", "layout", "annotator_id"}

    def stable(rec):
        return {k: v for k, v in rec.items() if k not in volatile}

    a, b = exported["transcript"]["lines"], exported["paged"]["lines"]
    assert [stable(x) for x in a] == [stable(x) for x in b]


def test_per_annotator_files(exported):
    per = exported["transcript"]["per"]
    files = sorted(p.name for p in per.glob("*.jsonl"))
    assert files == ["admin@example.com.jsonl", "bob@example.com.jsonl"]
    assert json.loads((per / "bob@example.com.jsonl").read_text())["trace_id"] == "rt-2"


def test_export_rerun_gives_the_same_file(exported, ls_env, tmp_path):
    again = tmp_path / "again.jsonl"
    assert invoke("export", "--project", exported["paged"]["project"], "-o", again).exit_code == 0
    assert again.read_bytes() == exported["paged"]["path"].read_bytes()


def test_personal_access_token_works(ls_client, label_studio, exported, tmp_path):
    pat = ls_client.tokens.create().token
    assert pat.count(".") == 2  # a JWT, not a legacy token
    out = tmp_path / "pat.jsonl"
    r = invoke("export", "--project", exported["transcript"]["project"], "-o", out, "--url", label_studio.url,
               "--api-key", pat)
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == exported["transcript"]["path"].read_bytes()


def test_bad_credentials_and_unreachable_server_give_one_line(label_studio, tmp_path):
    r = invoke("export", "--project", "1", "--url", label_studio.url, "--api-key", "nope")
    assert r.exit_code == 2 and r.output.startswith("error: ") and "401" in r.output
    r = invoke("export", "--project", "1", "--url", "http://127.0.0.1:9", "--api-key", "x")
    assert r.exit_code == 2 and "cannot reach Label Studio" in r.output


def _guide_snippets(fixtures_dir: Path) -> list[str]:
    """The guide's analysis snippets, read at run time (French copy: its code kept its line breaks)."""
    text = (fixtures_dir / "guide" / "002_d12294dc7d33069d.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    blocks, current = [], None
    for line in lines:
        if line.startswith(("import json", "# Extract all errors", "import matplotlib", "# Extract final running",
                            "# Group errors by category")):
            current = [line]
            blocks.append(current)
        elif current is not None:
            if line and not line.startswith((" ", "#", "import", "from", "for", "if", "print", "plt", "error_df",
                                             "score_df", "failure_modes", "errors", "positions", "final_scores",
                                             "annotations", "output_dir", ")", "]")):
                current = None
            else:
                current.append(line)
    return ["\n".join(b) for b in blocks]


def test_guide_analysis_snippets_run_on_the_export(exported, fixtures_dir, tmp_path):
    snippets = _guide_snippets(fixtures_dir)
    assert len(snippets) == 5
    out_dir = tmp_path / "output"
    out_dir.mkdir()
    for layout in labelconfig.LAYOUTS:
        (out_dir / f"{layout}.jsonl").write_bytes(exported[layout]["path"].read_bytes())
    script = "import matplotlib\nmatplotlib.use('Agg')\n" + "\n".join(snippets)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Loaded 4 annotated traces" in out
    assert "Total errors found: 4" in out
    assert re.search(r"action\s+2", out) and re.search(r"reasoning\s+2", out)
    assert re.search(r"major\s+2", out) and re.search(r"critical\s+2", out)
    # final scores: 85 (failure) twice, 100 (success) twice
    assert "failure: mean=85.0, median=85.0, n=2" in out
    assert "success: mean=100.0, median=100.0, n=2" in out
    assert (tmp_path / "error_position_distribution.png").stat().st_size > 1000


def test_task_listing_pages_by_id_and_misses_nothing(ls_client):
    """Pages are keyed by task id: every task once, in id order, also when the last page is exactly full
    and when a task is deleted between two pages."""
    c = cfg.load(label_configs.path("trajectory_eval"))
    pid = studio.create_project(ls_client, c, "transcript", "paging")["id"]
    ls_client.projects.import_tasks(id=pid, request=[{"data": {"trace_id": f"p{i}", "task": "t", "te_transcript": [],
                                                               "te_pages": [], "te_header": ""}, "meta": {"k": i}}
                                                     for i in range(9)])
    ids = [t["id"] for t in studio.iter_tasks(ls_client, pid, page_size=3)]
    assert len(ids) == 9 and ids == sorted(ids)
    assert [t["meta"]["k"] for t in studio.iter_tasks(ls_client, pid, page_size=4, with_annotations=False,
                                                       include="meta")] == list(range(9))
    seen = []
    for task in studio.iter_tasks(ls_client, pid, page_size=2):
        if len(seen) == 1:
            ls_client.tasks.delete(id=ids[2])  # not yet listed: must simply be missing, nothing else
        seen.append(task["id"])
    assert seen == ids[:2] + ids[3:]


def test_switching_a_transcript_project_to_paged_renders_its_pages(ls_client, traces_file, tmp_path):
    """`layout paged` on a transcript project: every task gets its cards, then the config changes; a second
    run changes nothing; a project whose annotations the other layout cannot read is refused untouched."""
    r = invoke("import", traces_file, "--create", "relayout", "--quiet")
    pid = int(re.search(r"project (\d+):", r.stdout).group(1))
    assert all("te_pages" not in t["data"] for t in studio.iter_tasks(ls_client, pid))
    r = invoke("layout", "paged", "--project", pid, "--quiet")
    assert r.exit_code == 0, r.output
    assert "paged layout (label config replaced), pages rendered for 2 tasks" in r.stdout
    project = studio.get_project(ls_client, pid)
    assert layout_of(project["label_config"]) == "paged"
    c = project_config(project)
    for t in studio.iter_tasks(ls_client, pid):
        expected = task_data(parse_trace(TRACES[0] if t["data"]["trace_id"] == "rt-1" else TRACES[1]), c, "paged")
        assert t["data"]["te_pages"] == expected["te_pages"]
        assert t["data"]["trace"] == expected["trace"]  # the update merged, nothing else lost
    again = invoke("layout", "paged", "--project", pid, "--quiet")
    assert "paged layout (unchanged), pages rendered for 0 tasks" in again.stdout
    # the paged project's labels export unchanged (through the same UI-shaped result)
    t1 = next(t for t in studio.iter_tasks(ls_client, pid) if t["data"]["trace_id"] == "rt-1")
    studio.create_annotation(ls_client, t1["id"], ui_result("paged", t1["data"]["te_transcript"]))
    out = tmp_path / "paged.jsonl"
    assert invoke("export", "--project", pid, "-o", out).exit_code == 0
    rec = json.loads(out.read_text(encoding="utf-8"))
    assert [s["correctness"] for s in rec["error_localization"]].count("incorrect") == 2
    # back to transcript: Label Studio refuses (the annotation names paged controls); nothing changes
    before = studio.get_project(ls_client, pid)["label_config"]
    refused = invoke("layout", "transcript", "--project", pid, "--quiet")
    assert refused.exit_code == 2 and "checking the new label config" in refused.stderr, refused.output
    assert studio.get_project(ls_client, pid)["label_config"] == before


def test_switching_a_project_made_before_the_task_header_gives_its_tasks_the_new_fields(ls_client):
    """A project made with the config before issue 32 (no task header, no score status): after `layout`, its tasks
    hold an empty header and the status, so the new config shows neither "undefined"."""
    before = Path(__file__).resolve().parents[1] / "fixtures" / "before_readable" / "transcript.xml"
    c = cfg.load(label_configs.path("trajectory_eval"))
    pid = studio.create_project(ls_client, c, "transcript", "before the header")["id"]
    studio.set_label_config(ls_client, pid, before.read_text(encoding="utf-8"))
    old = task_data(parse_trace(TRACES[0]), c)
    del old["te_header"], old["te_score_status"]
    studio.import_batch(ls_client, pid, [{"data": old}])
    r = invoke("layout", "paged", "--project", pid, "--quiet")
    assert r.exit_code == 0 and "pages rendered for 1 tasks, the task header and score status added to 1" in r.stdout
    data = next(studio.iter_tasks(ls_client, pid))["data"]
    assert (data["te_header"], data["te_score_status"]) == ("", SCORE_NOT_KEPT) and len(data["te_pages"]) == len(
        TRACES[0]["trace"])
