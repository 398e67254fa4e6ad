"""The names ls-trajeval claims inside a Label Studio project: the task-data fields it writes, the task-meta key
of a trace id, and the label config's object and control names. A config may use none of them for its own data
or schemes (:mod:`config` checks both against this module).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: the transcript layout's Paragraphs: one utterance per step
TRANSCRIPT = "te_transcript"
#: the paged layout's rendered cards, one per step
PAGES = "te_pages"
#: under the task's request: the trace's facts, its parent's and sub-agents' traces (linked to their tasks once
#: imported) and the workbench's per-task style (HTML for a ``HyperText``; Label Studio refuses to import a task
#: without it into a project whose config shows it: write ``""`` where there is nothing)
HEADER = "te_header"
N_STEPS = "n_steps"
#: a window's place in its trace (``core.windows.Window``): a long trace worked in windows of steps is several tasks,
#: each holding its window's steps under the trace's id; the export merges them back into one trace
WINDOW = "te_window"
#: what the score header says of the running score: whether an ML backend keeps it current
SCORE_STATUS = "te_score_status"
#: ``SCORE_STATUS`` until an ML backend writes a score, and after it writes one
SCORE_NOT_KEPT = "not kept current: no ML backend has scored this task; the export scores your marks"
SCORE_KEPT = "written by the ML backend at the last save"
#: the score fields the ML backend writes back (Data Manager columns); import seeds them
SCORE_FIELDS = ("running_score", "n_errors", "first_error_step", "worst_severity", "score_mean", "te_scores",
                "te_curve", SCORE_STATUS)
#: a review project's summary of what its annotators dispute (``ls-trajeval adjudicate``): Data Manager columns,
#: ``disputedness`` sorts most disputed first
DISPUTE_FIELDS = ("disputedness", "n_annotators", "disputed_steps", "correctness_disputes", "error_type_disputes",
                  "severity_disputes", "first_error_disputed", "steps_in_dispute", "first_errors", "role_disputes",
                  "root_cause_disputed", "root_causes")
#: what a task's stored suggestions are least sure of (written by ``judge`` and ``judge merge``, with the
#: predictions): ``least_confidence`` (a number: the Data Manager sorts the review queue by it, least confident
#: first), the step it is about (``#N``) and the model version of the suggestions it describes
LEAST_CONFIDENCE, LEAST_CONFIDENT_STEP, SUGGESTIONS_BY = "least_confidence", "least_confident_step", "suggestions_by"
SUGGESTION_FIELDS = (LEAST_CONFIDENCE, LEAST_CONFIDENT_STEP, SUGGESTIONS_BY)
#: the suggestions shown beside each step when annotators start from a blank trace (``suggestions.prelabel: false``):
#: written with the predictions, shown by the workbench's ``List`` of that name (see ``core.suggestions.beside``)
SUGGESTED = "te_suggested"
#: ``judge accept``: ``acceptance`` is ``accepted`` (an annotation was made from the suggestion) or ``audit`` (left
#: for people, to measure what accepting costs); ``te_acceptance`` what it was decided from (model version,
#: prediction, threshold, the task's least confidence)
ACCEPTANCE, ACCEPTANCE_DETAIL = "acceptance", "te_acceptance"
ACCEPTANCE_FIELDS = (ACCEPTANCE, ACCEPTANCE_DETAIL)
#: every task-data key ls-trajeval writes
TASK_FIELDS = (TRANSCRIPT, PAGES, HEADER, N_STEPS, WINDOW, *SCORE_FIELDS, *DISPUTE_FIELDS, *SUGGESTION_FIELDS,
               SUGGESTED, *ACCEPTANCE_FIELDS)
#: the fields that hold numbers: the Data Manager's tabs type them so (it types every data column as text)
NUMBER_FIELDS = (N_STEPS, "running_score", "n_errors", "first_error_step", "score_mean", "disputedness",
                 "n_annotators", "disputed_steps", "correctness_disputes", "error_type_disputes", "severity_disputes",
                 "role_disputes", LEAST_CONFIDENCE)
#: where a task keeps its trace id besides ``data``: listing ``id,meta`` is a few bytes a task, where the data
#: holds the whole trace three times over
META_TRACE_ID = "te_trace_id"
#: a window task's number in its trace (0-based) besides ``data``: with the trace id, what tells a task apart
META_WINDOW = "te_window"
#: a review task's source: ``{"project": id, "task": id}`` of the task whose annotators it adjudicates
META_SOURCE = "te_source"


def review_mark(project_id: int) -> str:
    """The line of a review project's description that names the project it adjudicates (``export --gold``
    finds its review projects by it)."""
    return f"ls-trajeval: adjudication of project {project_id}"


def initial_scores(config, n_steps: int) -> dict:
    """The score fields of a task nobody has annotated: what import seeds (headers and Data Manager columns read
    sensibly before any annotation; a missing field reads "undefined") and what the ML backend writes when the
    last annotation goes. ``te_curve`` is the score after each step (the paged layout shows it on each step)."""
    initial = config.trajectory.running_score.initial
    return {"running_score": initial, "n_errors": 0, "first_error_step": None, "worst_severity": "",
            "score_mean": initial, "te_scores": {}, "te_curve": [initial] * n_steps, SCORE_STATUS: SCORE_NOT_KEPT}


def first_error_column(step_index: int | None) -> int | None:
    """The ``first_error_step`` a task shows in the Data Manager: the step's number as the UI shows it (``#1`` is
    ``step_index`` 0), where the export record keeps the 0-based index."""
    return None if step_index is None else step_index + 1


def n_steps(data: Mapping[str, Any]) -> int:
    """A task's step count: its ``n_steps``, else the length of its transcript (tasks written by older versions
    or other tools), else 0."""
    n = data.get(N_STEPS)
    if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
        return n
    transcript = data.get(TRANSCRIPT)
    return len(transcript) if isinstance(transcript, list) else 0


#: the label config's objects: the task text, the transcript, a paged step, the header under the task, the
#: suggestions beside a blank trace
OBJECT_NAMES = ("te_task", "te_trace", "te_step", HEADER, SUGGESTED)


@dataclass(frozen=True)
class Names:
    """Control names of the generated label configs, derived from the trajectory scheme's name."""

    scheme: str

    @property
    def marks(self) -> str:
        """The transcript layout's ParagraphLabels that marks a wrong step."""
        return self.scheme

    @property
    def correctness(self) -> str:
        """The paged layout's prefix of the per-step correctness Choices."""
        return f"{self.scheme}_correctness"

    @property
    def type(self) -> str:
        """The error-type control."""
        return f"{self.scheme}_type"

    @property
    def severity(self) -> str:
        """The severity control."""
        return f"{self.scheme}_severity"

    @property
    def rationale(self) -> str:
        """The rationale TextArea."""
        return f"{self.scheme}_rationale"

    @property
    def correction(self) -> str:
        """What the agent should have done: the workbench's per-mark TextArea, the paged layout's per-step prefix."""
        return f"{self.scheme}_correction"

    @property
    def caused_by(self) -> str:
        """The paged layout's prefix of the per-step "caused by step #" TextArea (the workbench links marks)."""
        return f"{self.scheme}_caused_by"

    @property
    def types_store(self) -> str:
        """The paged layout's hidden Taxonomy holding the error types every step shares."""
        return f"{self.scheme}_types"

    @property
    def reviewed(self) -> str:
        """The "I reviewed every step" box."""
        return f"{self.scheme}_reviewed"

    @property
    def decision(self) -> str:
        """The transcript layout's per-region choice that keeps Submit from taking undecided suggestions."""
        return f"{self.scheme}_decision"

    @property
    def live_score(self) -> str:
        """The transcript layout's TextArea the ML backend fills with the live score."""
        return f"{self.scheme}_live_score"


def control_names(scheme_name: str) -> list[str]:
    """Every control and object name a label config for the trajectory scheme ``scheme_name`` uses."""
    n = Names(scheme_name)
    return [n.marks, n.correctness, n.type, n.severity, n.rationale, n.correction, n.caused_by, n.types_store,
            n.reviewed, n.live_score, n.decision, *OBJECT_NAMES]
