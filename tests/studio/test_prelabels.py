"""Importing with --prelabels into a real Label Studio: the labels that came with the traces become predictions."""
from __future__ import annotations

import json
import re

import pytest
from commandline import invoke

from ls_trajeval import label_configs
from ls_trajeval.core import results
from ls_trajeval.flows.projects import project_config
from ls_trajeval.studio import client as studio


@pytest.mark.studio
def test_import_with_prelabels_creates_predictions(ls_env, ls_client, fixtures_dir, tmp_path):
    config_file = tmp_path / "mapped.yaml"
    config_file.write_text(label_configs.path("trajectory_eval").read_text()
                           + "\nprelabels:\n  default_severity: major\n")
    src = fixtures_dir / "real" / "who_and_when"
    r = invoke("import", src, "--format", "auto", "--create", "prelabels", "--config", config_file, "--prelabels",
               "--quiet")
    assert r.exit_code == 0, r.output
    pid = int(re.search(r"project (\d+):", r.stdout).group(1))
    assert "prelabels: 2 predictions" in r.stderr and "imported 2" in r.stdout
    expected = {}
    for f in sorted(src.glob("*.json")):
        rec = json.loads(f.read_text())
        expected[rec["question"]] = int(rec["mistake_step"])
    config = project_config(studio.get_project(ls_client, pid))
    for task in studio.iter_tasks(ls_client, pid):
        (pred,) = task["predictions"]
        labels = results.decode(pred["result"], config, task["data"]["n_steps"], prediction=True)
        marked = [s.step_index for s in labels.steps if s.correctness == "incorrect"]
        assert marked == [expected[task["data"]["metadata"]["question"]]]
        assert pred["score"] == 95


@pytest.mark.studio
@pytest.mark.parametrize("layout", ["transcript", "paged"])
def test_who_and_when_records_onto_the_shipped_preset(ls_env, ls_client, fixtures_dir, layout):
    """The preset as shipped (no mapping of our own): each record's decisive step and responsible agent arrive as
    a prediction, in both layouts, and decode back from what Label Studio stored."""
    src = fixtures_dir / "real" / "who_and_when"
    r = invoke("import", src, "--format", "auto", "--create", f"w&w {layout}", "--config", "who_and_when",
               "--layout", layout, "--prelabels", "--quiet")
    assert r.exit_code == 0, r.output
    pid = int(re.search(r"project (\d+):", r.stdout).group(1))
    # read from the records: the agent's name as Who&When writes it, and its step
    expected = {}
    for f in sorted(src.glob("*.json")):
        rec = json.loads(f.read_text())
        expected[rec["question"]] = (int(rec["mistake_step"]), rec["mistake_agent"])
    config = project_config(studio.get_project(ls_client, pid))
    assert config.trajectory.name == "failure_attribution"
    labels_of = {t.name: t.label for t in config.trajectory.types}
    for task in studio.iter_tasks(ls_client, pid):
        (pred,) = task["predictions"]
        decoded = results.decode(pred["result"], config, task["data"]["n_steps"], prediction=True)
        (mark,) = [s for s in decoded.steps if s.correctness == "decisive_error"]
        step, agent = expected[task["data"]["metadata"]["question"]]
        assert (mark.step_index, labels_of[mark.error_type], mark.severity) == (step, agent, "decisive")
