"""The typed config: what every later stage reads, never raw YAML (:mod:`.loading` builds it)."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from ..errors import UserError

#: the severities of a config that names none: (name, weight, description)
DEFAULT_SEVERITIES = (
    ("minor", -1.0, "Small issue, does not derail the overall trace"),
    ("major", -5.0, "Significant error that wastes effort or produces wrong results"),
    ("critical", -10.0, "Fundamental failure that breaks the trace or causes harm"),
)
#: the step types a config that names none shows: type -> (label, background colour)
DEFAULT_STEP_DISPLAY = {
    "thought": ("Thought", "#E8F0FE"),
    "action": ("Action", "#FFF3E0"),
    "observation": ("Observation", "#F1F8E9"),
    "code": ("Code", "#F3E5F5"),
}


class ConfigError(UserError):
    """One or more problems in a config; ``errors`` holds one message per problem."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = errors
        super().__init__("\n".join(f"{source}: {e}" for e in errors))


@dataclass(frozen=True)
class ErrorType:
    """One error type of the taxonomy, in its ``category``."""

    name: str
    label: str
    description: str
    category: str


@dataclass(frozen=True)
class ErrorCategory:
    """A category of the taxonomy and its error types."""

    category: str
    label: str
    types: tuple[ErrorType, ...]
    description: str = ""


@dataclass(frozen=True)
class Severity:
    """A severity level and the points its weight costs."""

    name: str
    weight: float
    description: str = ""

    @property
    def deduction(self) -> float:
        """Points this severity costs: the weight's magnitude, whatever its sign (as Potato scores)."""
        return abs(self.weight)


@dataclass(frozen=True)
class RunningScore:
    """The running score: where it starts, its floor, and whether the label config shows it."""

    initial: float = 100.0
    min: float = 0.0
    display: bool = True


@dataclass(frozen=True)
class Rationale:
    """The rationale box of a wrong step."""

    enabled: bool = True
    placeholder: str = "Explain why this step is incorrect..."
    required: bool = False


@dataclass(frozen=True)
class TrajectoryScheme:
    """The per-step scheme: correctness labels, the error taxonomy, severities, score and rationale."""

    name: str
    description: str
    correctness_labels: tuple[str, ...]
    correctness_default: str
    categories: tuple[ErrorCategory, ...]
    severities: tuple[Severity, ...]
    running_score: RunningScore
    rationale: Rationale

    @cached_property  # asked once per step by the decoder and the score
    def error_labels(self) -> tuple[str, ...]:
        """Correctness labels that mark a step as (partly) wrong: all but the default."""
        return tuple(label for label in self.correctness_labels if label != self.correctness_default)

    @property
    def types(self) -> tuple[ErrorType, ...]:
        """Every error type, category by category."""
        return tuple(t for c in self.categories for t in c.types)

    def type_by_name(self, name: str) -> ErrorType | None:
        """The error type called ``name``, or None."""
        for t in self.types:
            if t.name == name:
                return t
        return None

    def severity_by_name(self, name: str) -> Severity | None:
        """The severity called ``name``, or None."""
        for s in self.severities:
            if s.name == name:
                return s
        return None

    @property
    def weights(self) -> dict[str, float]:
        """Severity name -> weight."""
        return {s.name: s.weight for s in self.severities}


@dataclass(frozen=True)
class RadioLabel:
    """One choice of a whole-trace question."""

    name: str
    tooltip: str = ""


@dataclass(frozen=True)
class RadioScheme:
    """A whole-trace question (``overall_success``, ...)."""

    name: str
    description: str
    labels: tuple[RadioLabel, ...]
    required: bool = False
    hotkeys: bool = False


@dataclass(frozen=True)
class StepStyle:
    """How a step type is shown: its label and background colour."""

    label: str
    color: str


@dataclass(frozen=True)
class PrelabelMapping:
    """How labels that come with the traces (Who&When, TRAIL, other taxonomies) map onto this taxonomy."""

    #: a foreign category or type name -> one of this taxonomy's type names
    type_map: dict = field(default_factory=dict)
    #: a foreign severity or impact (HIGH, MEDIUM, LOW, ...) -> one of this config's severity names
    severity_map: dict = field(default_factory=dict)
    #: the type for labels that name none (Who&When's mistake_step); None leaves it to the annotator
    default_type: str | None = None
    default_severity: str | None = None


@dataclass(frozen=True)
class DetectorSpec:
    """One ``ml_backend.detectors`` entry; the ML backend checks ``options`` against the detector."""

    name: str
    enabled: bool = True
    error_type: str | None = None  # None: the detector's default
    severity: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict:
        """The entry as the config writes it."""
        out = {"enabled": self.enabled, **dict(self.options)}
        if self.error_type:
            out["type"] = self.error_type
        if self.severity:
            out["severity"] = self.severity
        return out


@dataclass(frozen=True)
class Suggestions:
    """How annotators meet suggestions (predictions): ``prelabel`` starts them from the suggestions (Label Studio's
    "use predictions to prelabel tasks"), else from a blank trace with each suggestion shown beside its step. In the
    workbench an undecided suggestion is a mark with its own ``label`` and ``color``."""

    label: str = "suggested"
    color: str = "#1E88E5"
    prelabel: bool = True


@dataclass(frozen=True)
class Config:
    """A whole config: the trajectory scheme, the whole-trace questions, the task's keys and how steps show."""

    annotation_task_name: str
    trajectory: TrajectoryScheme
    whole_trace: tuple[RadioScheme, ...] = ()
    data_files: tuple[str, ...] = ()
    id_key: str = "trace_id"
    text_key: str = "task"
    trace_key: str = "trace"
    step_text_key: str = "content"
    step_display: dict = field(default_factory=dict)  # type -> StepStyle
    show_step_numbers: bool = True
    show_timestamps: bool = False
    instructions: str = ""
    allow_back_navigation: bool = True
    require_all_steps: bool = False
    #: ``annotator_config.window_steps``: import a trace longer than this as windows of steps (0: whole traces)
    window_steps: int = 0
    output_path: str = "output/"
    output_format: str = "jsonl"
    task_dir: str = "."
    user_config: dict = field(default_factory=dict)
    prelabels: PrelabelMapping = field(default_factory=PrelabelMapping)
    #: the ML backend's detectors (``ml_backend.detectors``); empty = the built-in defaults
    detectors: tuple[DetectorSpec, ...] = ()
    suggestions: Suggestions = field(default_factory=Suggestions)
    source: str = "<config>"

    def step_style(self, step_type: str) -> StepStyle:
        """How steps of ``step_type`` show: the config's style, else the type's name on grey."""
        style = self.step_display.get(step_type)
        if style is None:
            return StepStyle(humanize(step_type), "#EEEEEE")
        return style

    def to_dict(self) -> dict:
        """A plain dict in the guide's dialect that :func:`~.loading.load_dict` reads back into an equal Config."""
        t = self.trajectory
        return {
            "annotation_task_name": self.annotation_task_name,
            "data_files": list(self.data_files),
            "task_dir": self.task_dir,
            "item_properties": {"id_key": self.id_key, "text_key": self.text_key},
            "display": {
                "type": "agent_trace",
                "trace_key": self.trace_key,
                "step_text_key": self.step_text_key,
                "show_step_numbers": self.show_step_numbers,
                "show_timestamps": self.show_timestamps,
                "step_display": {k: {"label": v.label, "color": v.color} for k, v in self.step_display.items()},
            },
            "annotation_instructions": self.instructions,
            "annotation_schemes": [
                {
                    "annotation_type": "trajectory_eval",
                    "name": t.name,
                    "description": t.description,
                    "step_correctness": {"labels": list(t.correctness_labels), "default": t.correctness_default},
                    "error_taxonomy": [
                        {"category": c.category, "label": c.label, "description": c.description,
                         "types": [{"name": e.name, "label": e.label, "description": e.description} for e in c.types]}
                        for c in t.categories
                    ],
                    "severity_levels": [asdict(s) for s in t.severities],
                    "running_score": asdict(t.running_score),
                    "rationale": asdict(t.rationale),
                },
                *[
                    {"annotation_type": "radio", "name": r.name, "description": r.description,
                     "labels": [asdict(lb) for lb in r.labels], "required": r.required,
                     "sequential_key_binding": r.hotkeys}
                    for r in self.whole_trace
                ],
            ],
            "annotator_config": {"allow_back_navigation": self.allow_back_navigation,
                                 "require_all_steps": self.require_all_steps,
                                 **({"window_steps": self.window_steps} if self.window_steps else {})},
            "output": {"path": self.output_path, "format": self.output_format},
            "user_config": self.user_config,
            "prelabels": asdict(self.prelabels),
            "suggestions": asdict(self.suggestions),
            **({"ml_backend": {"detectors": {d.name: d.to_dict() for d in self.detectors}}}
               if self.detectors else {}),
        }


def humanize(name: str) -> str:
    """A name as a label: ``logical_error`` -> ``Logical Error``."""
    return " ".join(w[:1].upper() + w[1:] for w in re.split(r"[_\s]+", name) if w)
