"""The task-field names have one owner: what import writes, what the ML backend writes back, and what a config may
not claim for its own data are one list."""
from __future__ import annotations

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.fields import (
    ACCEPTANCE_FIELDS,
    DISPUTE_FIELDS,
    SCORE_FIELDS,
    SUGGESTED,
    SUGGESTION_FIELDS,
    TASK_FIELDS,
    WINDOW,
    n_steps,
)
from ls_trajeval.core.tasks import task_data
from ls_trajeval.core.trace import parse_trace

BASE = cfg.load(label_configs.path("trajectory_eval")).to_dict()


@pytest.mark.parametrize("key", ["te_transcript", "te_pages", "n_steps", "running_score", "n_errors",
                                 "first_error_step", "worst_severity", "score_mean", "te_scores", "disputedness",
                                 "least_confidence", "acceptance", "te_suggested"])
def test_a_config_may_not_claim_a_field_ls_trajeval_writes(key):
    spec = {**BASE, "item_properties": {"id_key": key, "text_key": "task"}}
    with pytest.raises(cfg.ConfigError, match=f"item_properties.id_key: '{key}' is reserved"):
        cfg.load_dict(spec)


def test_import_writes_the_listed_fields_and_nothing_else_of_its_own():
    c = cfg.load_dict(BASE)
    trace = {"trace_id": "t", "task": "x", "trace": [{"type": "thought", "content": "y"}], "extra": 1}
    # less those only `adjudicate` writes, on its review tasks, and those the judges write with their suggestions
    # (a window task's field is written only for a trace worked in windows: tests/unit/test_windows.py)
    imported = (set(TASK_FIELDS) - set(DISPUTE_FIELDS) - set(SUGGESTION_FIELDS) - set(ACCEPTANCE_FIELDS)
                - {SUGGESTED, WINDOW})
    for layout, expected in (("transcript", imported - {"te_pages"}), ("paged", imported)):
        data = task_data(parse_trace(trace), c, layout)
        assert set(data) - {"trace_id", "task", "trace", "extra"} == expected
    # where annotators start from a blank trace, the suggestions' field the workbench shows beside it
    beside = cfg.load_dict({**BASE, "suggestions": {"prelabel": False}})
    data = task_data(parse_trace(trace), beside)
    assert set(data) - {"trace_id", "task", "trace", "extra"} == imported - {"te_pages"} | {SUGGESTED}
    assert set(SCORE_FIELDS) <= set(TASK_FIELDS) and set(DISPUTE_FIELDS) <= set(TASK_FIELDS)


@pytest.mark.parametrize("data, expected", [
    ({"n_steps": 4, "te_transcript": [1]}, 4),
    ({"te_transcript": [1, 2, 3]}, 3),  # a task written by an older version or another tool
    ({"n_steps": True, "te_transcript": [1]}, 1),
    ({"n_steps": -2}, 0),
    ({}, 0),
])
def test_step_count_of_a_task(data, expected):
    assert n_steps(data) == expected
