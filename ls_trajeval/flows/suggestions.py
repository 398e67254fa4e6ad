"""Storing a judge's suggestions in a project: one prediction per task and model version, and the task fields that
say what the task's suggestions are least sure of (the review queue's Data Manager column).

Used by ``judge`` (an LLM judge's verdicts) and ``judge merge`` (several judges as one). Storing again under the
same model version updates that prediction in place (or leaves it when nothing changed), so a rerun never adds a
second one; older duplicates of the version on a task are removed.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core import results
from ..core.config import Config
from ..core.fields import LEAST_CONFIDENCE, N_STEPS, SUGGESTION_FIELDS
from ..core.labelconfig import shows_suggestions
from ..core.labels import TraceLabels
from ..core.layouts import layout_of
from ..core.suggestions import suggestion_fields
from ..studio import client as studio
from .prelabels import as_prediction

#: the Data Manager tab that orders a project's tasks by their least confident suggestion, least first
REVIEW_TAB = "Least confident first"


@dataclass
class StoreCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def describe(self) -> str:
        return f"{self.created} predictions created, {self.updated} updated, {self.unchanged} unchanged"


class SuggestionStore:
    """Writes suggestions of one model version into a project's tasks (as Label Studio lists them, predictions
    included)."""

    def __init__(self, client, project_id: int, config: Config, label_config: str, model_version: str):
        self.client, self.project_id, self.config = client, project_id, config
        self.layout, self.suggested = layout_of(label_config), shows_suggestions(label_config, config)
        self.model_version = model_version
        self.counts = StoreCounts()

    def _same(self, stored: dict, new: dict, n_steps: int) -> bool:
        if stored.get("score") != new["score"]:
            return False
        old, now = (results.decode(p.get("result") or [], self.config, n_steps, prediction=True)
                    for p in (stored, new))
        return old.steps == now.steps and old.whole_trace == now.whole_trace

    def put(self, task: dict, labels: TraceLabels) -> str:
        """Store ``labels`` as the task's prediction of this model version, and the task fields that describe them
        (from every label: an LLM judge's confidence that a step is correct counts, though the transcript layout's
        prediction keeps only the marks). Returns ``created``, ``updated`` or ``unchanged``."""
        data = task.get("data") or {}
        prediction = as_prediction(labels, self.model_version, self.config, self.layout, data, self.suggested)
        mine = sorted((p for p in task.get("predictions") or [] if p.get("model_version") == self.model_version),
                      key=lambda p: p.get("id") or 0)
        for older in mine[:-1]:
            studio.delete_prediction(self.client, older["id"])
        if not mine:
            studio.create_prediction(self.client, task["id"], prediction)
            outcome = "created"
        elif self._same(mine[-1], prediction, data[N_STEPS]):
            outcome = "unchanged"
        else:
            studio.update_prediction(self.client, mine[-1]["id"], prediction)
            outcome = "updated"
        setattr(self.counts, outcome, getattr(self.counts, outcome) + 1)
        fields = suggestion_fields(labels, self.config.trajectory, self.model_version)
        if any(data.get(k) != fields[k] for k in SUGGESTION_FIELDS):
            # read afresh and merged: the ML backend may have written the task's scores since it was listed
            studio.update_task_data(self.client, task["id"], fields)
        return outcome

    def finish(self, prelabel: bool = False) -> list[str]:
        """The review tab (made once), and with ``prelabel`` this model version made the project's, so that Label
        Studio fills new annotations from these suggestions; what changed."""
        changes = []
        if studio.ensure_view(self.client, self.project_id, REVIEW_TAB, [f"tasks:data.{LEAST_CONFIDENCE}"]):
            changes.append(f"added the Data Manager tab {REVIEW_TAB!r} (ordered by {LEAST_CONFIDENCE})")
        if prelabel:
            project = studio.get_project(self.client, self.project_id)
            if project.get("model_version") != self.model_version or not project.get("show_collab_predictions"):
                studio.update_project(self.client, self.project_id, model_version=self.model_version,
                                      show_collab_predictions=True)
                changes.append(f"new annotations start from {self.model_version!r}'s suggestions (project model "
                               f"version {project.get('model_version')!r} -> {self.model_version!r})")
        return changes
