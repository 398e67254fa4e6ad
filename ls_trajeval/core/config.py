"""Load and validate a ``trajectory_eval`` YAML config into typed objects.

Two dialects load into the same objects: the guide's keys (``display.step_display``,
``step_correctness``, ``error_taxonomy``, ``severity_levels``, ``running_score``, ``rationale``)
and Potato's native keys (``instance_display``, ``correctness_options``, ``error_types`` with
``subtypes``, ``severities``, ``show_score``, ``max_score``, ...). Every later stage reads these
objects, never raw YAML.

Errors name the file, the key path and what was expected, and all of them are collected
before :class:`ConfigError` is raised.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from .errors import UserError
from .fields import TASK_FIELDS, control_names

DEFAULT_SEVERITIES = (
    ("minor", -1.0, "Small issue, does not derail the overall trace"),
    ("major", -5.0, "Significant error that wastes effort or produces wrong results"),
    ("critical", -10.0, "Fundamental failure that breaks the trace or causes harm"),
)
DEFAULT_STEP_DISPLAY = {
    "thought": ("Thought", "#E8F0FE"),
    "action": ("Action", "#FFF3E0"),
    "observation": ("Observation", "#F1F8E9"),
    "code": ("Code", "#F3E5F5"),
}
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class ConfigError(UserError):
    """One or more problems in a config; ``errors`` holds one message per problem."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = errors
        super().__init__("\n".join(f"{source}: {e}" for e in errors))


# ---------------------------------------------------------------- typed objects
@dataclass(frozen=True)
class ErrorType:
    name: str
    label: str
    description: str
    category: str


@dataclass(frozen=True)
class ErrorCategory:
    category: str
    label: str
    types: tuple[ErrorType, ...]
    description: str = ""


@dataclass(frozen=True)
class Severity:
    name: str
    weight: float
    description: str = ""

    @property
    def deduction(self) -> float:
        """Points this severity costs: the weight's magnitude, whatever its sign (as Potato scores)."""
        return abs(self.weight)


@dataclass(frozen=True)
class RunningScore:
    initial: float = 100.0
    min: float = 0.0
    display: bool = True


@dataclass(frozen=True)
class Rationale:
    enabled: bool = True
    placeholder: str = "Explain why this step is incorrect..."
    required: bool = False


@dataclass(frozen=True)
class TrajectoryScheme:
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
        return tuple(t for c in self.categories for t in c.types)

    def type_by_name(self, name: str) -> ErrorType | None:
        for t in self.types:
            if t.name == name:
                return t
        return None

    def severity_by_name(self, name: str) -> Severity | None:
        for s in self.severities:
            if s.name == name:
                return s
        return None

    @property
    def weights(self) -> dict[str, float]:
        return {s.name: s.weight for s in self.severities}


@dataclass(frozen=True)
class RadioLabel:
    name: str
    tooltip: str = ""


@dataclass(frozen=True)
class RadioScheme:
    name: str
    description: str
    labels: tuple[RadioLabel, ...]
    required: bool = False
    hotkeys: bool = False


@dataclass(frozen=True)
class StepStyle:
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
    output_path: str = "output/"
    output_format: str = "jsonl"
    task_dir: str = "."
    user_config: dict = field(default_factory=dict)
    prelabels: PrelabelMapping = field(default_factory=PrelabelMapping)
    #: the ML backend's detectors (``ml_backend.detectors``); empty = the built-in defaults
    detectors: tuple["DetectorSpec", ...] = ()
    suggestions: Suggestions = field(default_factory=Suggestions)
    source: str = "<config>"

    def step_style(self, step_type: str) -> StepStyle:
        style = self.step_display.get(step_type)
        if style is None:
            return StepStyle(humanize(step_type), "#EEEEEE")
        return style

    def to_dict(self) -> dict:
        """A plain dict in the guide's dialect that :func:`load_dict` reads back into an equal Config."""
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
                                 "require_all_steps": self.require_all_steps},
            "output": {"path": self.output_path, "format": self.output_format},
            "user_config": self.user_config,
            "prelabels": asdict(self.prelabels),
            "suggestions": asdict(self.suggestions),
            **({"ml_backend": {"detectors": {d.name: _detector_dict(d) for d in self.detectors}}}
               if self.detectors else {}),
        }


def humanize(name: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in re.split(r"[_\s]+", name) if w)


# ---------------------------------------------------------------- YAML reading
class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one (libyaml's parser where
    PyYAML has it: the pure-Python scanner takes seconds on a hostile megabyte)."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(None, None, f"unhashable key {key!r}", key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping_orig(node, deep=deep)


_UniqueKeyLoader.construct_mapping_orig = yaml.constructor.SafeConstructor.construct_mapping
_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load(path: str | Path) -> Config:
    """Load a config file (YAML or JSON); raise ConfigError with every problem found."""
    p = Path(path)
    source = str(p)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(source, ["file not found"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(source, [f"not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None
    except OSError as exc:
        raise ConfigError(source, [f"cannot read: {exc.strerror}"]) from None
    return loads(text, source=source)


def loads(text: str, source: str = "<config>") -> Config:
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [f"{where}invalid YAML: {problem}"]) from None
    except RecursionError:
        raise ConfigError(source, ["invalid YAML: nested too deeply"]) from None
    return load_dict(data, source=source)


# ---------------------------------------------------------------- validation
class _Checker:
    """Walks raw YAML values, collecting located errors instead of stopping at the first."""

    def __init__(self, source: str):
        self.source = source
        self.errors: list[str] = []

    def error(self, path: str, msg: str) -> None:
        self.errors.append(f"{path}: {msg}" if path else msg)

    def mapping(self, value: Any, path: str, allowed: set[str], required: tuple[str, ...] = ()) -> dict:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping, got {_show(value)}")
            return {}
        for key in value:
            if not isinstance(key, str) or key not in allowed:
                hint = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.6)
                suggestion = f" (did you mean {hint[0]!r}?)" if hint else f" (allowed: {', '.join(sorted(allowed))})"
                self.error(_join(path, str(key)), f"unknown key{suggestion}")
        for key in required:
            if key not in value:
                self.error(_join(path, key), "required key is missing")
        return {k: v for k, v in value.items() if isinstance(k, str) and k in allowed}

    def string(self, value: Any, path: str, default: str | None = None, *, name: bool = False) -> str:
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.error(path, f"expected a string, got {_show(value)}")
            return default or ""
        s = str(value)
        if name and not NAME_RE.match(s):
            self.error(path, f"expected a name of letters, digits and '_' starting with a letter, got {s!r}")
        return s

    def boolean(self, value: Any, path: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(path, f"expected true or false, got {_show(value)}")
            return default
        return value

    def number(self, value: Any, path: str, default: float) -> float:
        if value is None:
            return default
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)  # an int beyond float's range raises here
            except OverflowError:
                pass
        if number is None or not math.isfinite(number):
            self.error(path, f"expected a number, got {_show(value)}")
            return default
        return number

    def seq(self, value: Any, path: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, f"expected a list, got {_show(value)}")
            return []
        return value

    def color(self, value: Any, path: str) -> str:
        s = self.string(value, path, "#EEEEEE")
        if not re.match(r"^(#[0-9A-Fa-f]{3,8}|[A-Za-z]+|rgba?\([0-9.,\s%]+\))$", s):
            self.error(path, f"expected a CSS colour such as '#E8F0FE', got {s!r}")
            return "#EEEEEE"
        return s


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"  # repr() refuses beyond 4300
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


TOP_KEYS = {
    "annotation_task_name", "data_files", "item_properties", "display", "instance_display",
    "annotation_schemes", "annotator_config", "output", "annotation_instructions",
    "output_annotation_dir", "export_annotation_format", "user_config", "task_dir", "prelabels", "ml_backend",
    "suggestions",
}
TRAJ_KEYS = {
    "annotation_type", "name", "description", "step_correctness", "error_taxonomy", "severity_levels",
    "running_score", "rationale", "steps_key", "step_text_key", "correctness_options", "error_types",
    "severities", "show_score", "max_score", "min_score", "label_requirement",
}
RADIO_KEYS = {"annotation_type", "name", "description", "labels", "required", "sequential_key_binding",
              "label_requirement", "horizontal"}


def load_dict(data: Any, source: str = "<config>") -> Config:
    """Validate an already-parsed config and build the typed Config."""
    ck = _Checker(source)
    top = ck.mapping(data, "", TOP_KEYS, required=("annotation_schemes",))

    item = ck.mapping(top.get("item_properties"), "item_properties", {"id_key", "text_key"})
    id_key = ck.string(item.get("id_key"), "item_properties.id_key", "trace_id")
    text_key = ck.string(item.get("text_key"), "item_properties.text_key", "task")

    trace_key, step_text_key = "trace", "content"
    step_display = {k: StepStyle(lbl, col) for k, (lbl, col) in DEFAULT_STEP_DISPLAY.items()}
    show_numbers, show_ts = True, False
    if "display" in top and "instance_display" in top:
        ck.error("instance_display", "give either 'display' or 'instance_display', not both")
    if "display" in top:
        disp = ck.mapping(top["display"], "display", {"type", "trace_key", "step_display", "step_text_key",
                                                      "show_step_numbers", "show_timestamps"})
        dtype = ck.string(disp.get("type"), "display.type", "agent_trace")
        if dtype != "agent_trace":
            ck.error("display.type", f"expected 'agent_trace', got {dtype!r}")
        trace_key = ck.string(disp.get("trace_key"), "display.trace_key", trace_key)
        step_text_key = ck.string(disp.get("step_text_key"), "display.step_text_key", step_text_key)
        show_numbers = ck.boolean(disp.get("show_step_numbers"), "display.show_step_numbers", True)
        show_ts = ck.boolean(disp.get("show_timestamps"), "display.show_timestamps", False)
        if "step_display" in disp:
            step_display = _step_display(ck, disp["step_display"], "display.step_display")
    if "instance_display" in top:
        idisp = ck.mapping(top["instance_display"], "instance_display", {"fields", "layout"})
        found_trace = False
        for i, raw in enumerate(ck.seq(idisp.get("fields"), "instance_display.fields")):
            path = f"instance_display.fields[{i}]"
            fld = ck.mapping(raw, path, {"key", "type", "label", "display_options", "span_target"}, ("key",))
            ftype = ck.string(fld.get("type"), f"{path}.type", "text")
            if ftype != "agent_trace":
                continue
            found_trace = True
            trace_key = ck.string(fld.get("key"), f"{path}.key", trace_key)
            opts = ck.mapping(fld.get("display_options"), f"{path}.display_options",
                              {"show_step_numbers", "show_timestamps", "step_type_colors", "step_type_labels"})
            show_numbers = ck.boolean(opts.get("show_step_numbers"), f"{path}.display_options.show_step_numbers", True)
            show_ts = ck.boolean(opts.get("show_timestamps"), f"{path}.display_options.show_timestamps", False)
            colors = ck.mapping(opts.get("step_type_colors"), f"{path}.display_options.step_type_colors",
                                set(_keys(opts.get("step_type_colors"))))
            labels = ck.mapping(opts.get("step_type_labels"), f"{path}.display_options.step_type_labels",
                                set(_keys(opts.get("step_type_labels"))))
            if colors or labels:
                step_display = {}
                for stype in list(colors) + [k for k in labels if k not in colors]:
                    step_display[stype] = StepStyle(
                        ck.string(labels.get(stype), f"{path}.display_options.step_type_labels.{stype}", humanize(stype)),
                        ck.color(colors.get(stype), f"{path}.display_options.step_type_colors.{stype}"))
        if not found_trace:
            ck.error("instance_display.fields", "no field of type 'agent_trace' (which key holds the steps?)")

    schemes = ck.seq(top.get("annotation_schemes"), "annotation_schemes")
    trajectory: TrajectoryScheme | None = None
    radios: list[RadioScheme] = []
    for i, raw in enumerate(schemes):
        path = f"annotation_schemes[{i}]"
        if not isinstance(raw, dict):
            ck.error(path, f"expected a mapping, got {_show(raw)}")
            continue
        atype = raw.get("annotation_type")
        if atype == "trajectory_eval":
            if trajectory is not None:
                ck.error(path, "only one trajectory_eval scheme is supported per config")
            scheme, keys = _trajectory(ck, raw, path)
            trajectory = trajectory or scheme
            if keys.get("steps_key"):
                trace_key = keys["steps_key"]
            if keys.get("step_text_key"):
                step_text_key = keys["step_text_key"]
        elif atype == "radio":
            radios.append(_radio(ck, raw, path))
        else:
            ck.error(f"{path}.annotation_type",
                     f"expected 'trajectory_eval' or 'radio', got {_show(atype)}")
    if trajectory is None and "annotation_schemes" in top and not ck.errors:
        ck.error("annotation_schemes", "needs one scheme with annotation_type: trajectory_eval")

    ann = ck.mapping(top.get("annotator_config"), "annotator_config",
                     {"allow_back_navigation", "require_all_steps"})
    out = ck.mapping(top.get("output"), "output", {"path", "format"})
    if "output" in top and ("output_annotation_dir" in top or "export_annotation_format" in top):
        ck.error("output", "give either 'output' or 'output_annotation_dir'/'export_annotation_format', not both")
    output_path = ck.string(out.get("path", top.get("output_annotation_dir")), "output.path", "output/")
    output_format = ck.string(out.get("format", top.get("export_annotation_format")), "output.format", "jsonl")
    if output_format not in ("jsonl", "json"):
        ck.error("output.format", f"expected 'jsonl' or 'json', got {output_format!r}")
    user_config = top.get("user_config") or {}
    if not isinstance(user_config, dict):
        ck.error("user_config", f"expected a mapping, got {_show(user_config)}")
        user_config = {}
    data_files = tuple(ck.string(f, f"data_files[{j}]", "") for j, f in enumerate(ck.seq(top.get("data_files"), "data_files")))

    names = [trajectory.name] if trajectory else []
    names += [r.name for r in radios]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        ck.error("annotation_schemes", f"scheme name {dup!r} is used twice")
    for key, path in ((id_key, "item_properties.id_key"), (text_key, "item_properties.text_key"),
                      (trace_key, "display.trace_key")):
        if key in TASK_FIELDS:
            ck.error(path, f"{key!r} is reserved for ls-trajeval's own task fields; choose another key")
    if trajectory is not None:  # the generated XML's names must not collide
        clash = set(control_names(trajectory.name)) & {r.name for r in radios}
        for c in sorted(clash):
            ck.error("annotation_schemes", f"scheme name {c!r} collides with a control of {trajectory.name!r}")

    prelabels = _prelabels(ck, top.get("prelabels"), trajectory) if trajectory else PrelabelMapping()
    detectors = _detectors(ck, top.get("ml_backend"), trajectory) if "ml_backend" in top else ()
    suggestions = _suggestions(ck, top.get("suggestions"), trajectory) if trajectory else Suggestions()
    if ck.errors:
        raise ConfigError(source, ck.errors)
    return Config(
        annotation_task_name=ck.string(top.get("annotation_task_name"), "annotation_task_name", "Agent trace evaluation"),
        trajectory=trajectory,
        whole_trace=tuple(radios),
        data_files=data_files,
        id_key=id_key,
        text_key=text_key,
        trace_key=trace_key,
        step_text_key=step_text_key,
        step_display=step_display,
        show_step_numbers=show_numbers,
        show_timestamps=show_ts,
        instructions=ck.string(top.get("annotation_instructions"), "annotation_instructions", ""),
        allow_back_navigation=ck.boolean(ann.get("allow_back_navigation"), "annotator_config.allow_back_navigation", True),
        require_all_steps=ck.boolean(ann.get("require_all_steps"), "annotator_config.require_all_steps", False),
        output_path=output_path,
        output_format=output_format,
        task_dir=ck.string(top.get("task_dir"), "task_dir", "."),
        user_config=user_config,
        prelabels=prelabels,
        detectors=detectors,
        suggestions=suggestions,
        source=source,
    )


def _detector_dict(d: DetectorSpec) -> dict:
    out = {"enabled": d.enabled, **dict(d.options)}
    if d.error_type:
        out["type"] = d.error_type
    if d.severity:
        out["severity"] = d.severity
    return out


def _detectors(ck: _Checker, raw: Any, trajectory: TrajectoryScheme | None) -> tuple[DetectorSpec, ...]:
    """``ml_backend.detectors``: name -> true/false or {enabled, type, severity, the detector's options}."""
    ml = ck.mapping(raw, "ml_backend", {"detectors"})
    dets = ck.mapping(ml.get("detectors"), "ml_backend.detectors", set(_keys(ml.get("detectors"))))
    types = {t.name for t in trajectory.types} if trajectory else set()
    sevs = {s.name for s in trajectory.severities} if trajectory else set()
    out = []
    for name, value in dets.items():
        path = f"ml_backend.detectors.{name}"
        if not NAME_RE.match(name):
            ck.error(path, "expected a detector name of letters, digits and '_'")
            continue
        if isinstance(value, bool) or value is None:
            out.append(DetectorSpec(name, value is not False))
            continue
        if not isinstance(value, dict):
            ck.error(path, f"expected true, false or a mapping, got {_show(value)}")
            continue
        etype, sev = value.get("type"), value.get("severity")
        if etype is not None and (not isinstance(etype, str) or (types and etype not in types)):
            ck.error(f"{path}.type", f"expected an error type of the taxonomy, got {_show(etype)}")
            etype = None
        if sev is not None and (not isinstance(sev, str) or (sevs and sev not in sevs)):
            ck.error(f"{path}.severity", f"expected one of {sorted(sevs)}, got {_show(sev)}")
            sev = None
        options = tuple((k, v) for k, v in value.items() if k not in ("enabled", "type", "severity"))
        out.append(DetectorSpec(name, ck.boolean(value.get("enabled"), f"{path}.enabled", True), etype, sev, options))
    return tuple(out)


def _prelabels(ck: _Checker, raw: Any, scheme: TrajectoryScheme) -> PrelabelMapping:
    path = "prelabels"
    pm = ck.mapping(raw, path, {"type_map", "severity_map", "default_type", "default_severity"})
    types = {t.name for t in scheme.types}
    sevs = [s.name for s in scheme.severities]

    def one_of(value: Any, where: str, allowed, what: str) -> str | None:
        if value is None:
            return None
        name = ck.string(value, where)
        if name not in allowed:
            hint = difflib.get_close_matches(name, sorted(allowed), n=1)
            ck.error(where, f"{name!r} is not {what}" + (f" (did you mean {hint[0]!r}?)" if hint else ""))
            return None
        return name

    type_map = {str(k): one_of(v, f"{path}.type_map.{k}", types, "an error type of the taxonomy")
                for k, v in ck.mapping(pm.get("type_map"), f"{path}.type_map", set(_keys(pm.get("type_map")))).items()}
    severity_map = {str(k): one_of(v, f"{path}.severity_map.{k}", sevs, "a severity of the config")
                    for k, v in ck.mapping(pm.get("severity_map"), f"{path}.severity_map",
                                           set(_keys(pm.get("severity_map")))).items()}
    return PrelabelMapping(
        {k: v for k, v in type_map.items() if v}, {k: v for k, v in severity_map.items() if v},
        one_of(pm.get("default_type"), f"{path}.default_type", types, "an error type of the taxonomy"),
        one_of(pm.get("default_severity"), f"{path}.default_severity", sevs, "a severity of the config"))


def _suggestions(ck: _Checker, raw: Any, scheme: TrajectoryScheme) -> Suggestions:
    path = "suggestions"
    sg = ck.mapping(raw, path, {"label", "color", "prelabel"})
    label = ck.string(sg.get("label"), f"{path}.label", Suggestions.label)
    # the label sits beside the correctness labels on a mark, and a mark's severity is a second label on it
    taken = {*scheme.correctness_labels, *(s.name for s in scheme.severities)}
    if not label.strip():
        ck.error(f"{path}.label", "expected a label, got an empty string")
    elif label in taken:
        ck.error(f"{path}.label", f"{label!r} is already a correctness or severity label; choose another")
    color = ck.string(sg.get("color"), f"{path}.color", Suggestions.color)
    if not re.fullmatch(r"#[0-9A-Fa-f]{3}([0-9A-Fa-f]{3})?", color):  # the workbench finds its marks by it
        ck.error(f"{path}.color", f"expected a colour as '#RRGGBB' or '#RGB', got {color!r}")
        color = Suggestions.color
    return Suggestions(label, color, ck.boolean(sg.get("prelabel"), f"{path}.prelabel", Suggestions.prelabel))


def _keys(value: Any) -> list:
    return list(value) if isinstance(value, dict) else []


def _step_display(ck: _Checker, raw: Any, path: str) -> dict:
    disp = ck.mapping(raw, path, set(_keys(raw)))
    out = {}
    for stype, style in disp.items():
        spath = f"{path}.{stype}"
        if isinstance(style, str):  # shorthand: `thought: "#E8F0FE"`
            out[stype] = StepStyle(humanize(stype), ck.color(style, spath))
            continue
        st = ck.mapping(style, spath, {"label", "color"})
        out[stype] = StepStyle(ck.string(st.get("label"), f"{spath}.label", humanize(stype)),
                               ck.color(st.get("color"), f"{spath}.color"))
    return out


def _either(ck: _Checker, raw: dict, path: str, guide: str, potato: str) -> str | None:
    if guide in raw and potato in raw:
        ck.error(_join(path, potato), f"give either {guide!r} or {potato!r}, not both")
    return guide if guide in raw else potato if potato in raw else None


def _trajectory(ck: _Checker, raw: dict, path: str) -> tuple[TrajectoryScheme, dict]:
    sc = ck.mapping(raw, path, TRAJ_KEYS, required=("name",))
    name = ck.string(sc.get("name"), f"{path}.name", "error_localization", name=True)
    description = ck.string(sc.get("description"), f"{path}.description", "")

    # correctness
    labels, default = ("correct", "incorrect"), "correct"
    which = _either(ck, sc, path, "step_correctness", "correctness_options")
    if which == "step_correctness":
        cpath = f"{path}.step_correctness"
        corr = ck.mapping(sc["step_correctness"], cpath, {"labels", "default"})
        raw_labels = ck.seq(corr.get("labels"), f"{cpath}.labels") or list(labels)
        labels = tuple(ck.string(v, f"{cpath}.labels[{j}]", name=True) for j, v in enumerate(raw_labels))
        default = ck.string(corr.get("default"), f"{cpath}.default", labels[0] if labels else "correct")
        if labels and default not in labels:
            ck.error(f"{cpath}.default", f"expected one of {list(labels)}, got {default!r}")
    elif which == "correctness_options":
        cpath = f"{path}.correctness_options"
        raw_labels = ck.seq(sc["correctness_options"], cpath)
        labels = tuple(ck.string(v, f"{cpath}[{j}]", name=True) for j, v in enumerate(raw_labels)) or labels
        default = "correct" if "correct" in labels else labels[0]
    if len(labels) < 2:
        ck.error(f"{path}.step_correctness.labels", "expected at least two labels (a correct one and an error one)")
    for dup in sorted({lb for lb in labels if labels.count(lb) > 1}):
        ck.error(f"{path}.step_correctness.labels", f"label {dup!r} is listed twice")

    # taxonomy
    categories: list[ErrorCategory] = []
    which = _either(ck, sc, path, "error_taxonomy", "error_types")
    if which == "error_taxonomy":
        for i, rc in enumerate(ck.seq(sc["error_taxonomy"], f"{path}.error_taxonomy")):
            cpath = f"{path}.error_taxonomy[{i}]"
            c = ck.mapping(rc, cpath, {"category", "label", "description", "types"}, ("category", "types"))
            cat = ck.string(c.get("category"), f"{cpath}.category", f"category_{i}", name=True)
            types = []
            for j, rt in enumerate(ck.seq(c.get("types"), f"{cpath}.types")):
                tpath = f"{cpath}.types[{j}]"
                t = ck.mapping(rt, tpath, {"name", "label", "description"}, ("name",))
                tname = ck.string(t.get("name"), f"{tpath}.name", f"type_{j}", name=True)
                types.append(ErrorType(tname, ck.string(t.get("label"), f"{tpath}.label", humanize(tname)),
                                       ck.string(t.get("description"), f"{tpath}.description", ""), cat))
            if "types" in c and not types:
                ck.error(f"{cpath}.types", "expected at least one error type")
            categories.append(ErrorCategory(cat, ck.string(c.get("label"), f"{cpath}.label", humanize(cat)),
                                            tuple(types), ck.string(c.get("description"), f"{cpath}.description", "")))
    elif which == "error_types":
        for i, rc in enumerate(ck.seq(sc["error_types"], f"{path}.error_types")):
            cpath = f"{path}.error_types[{i}]"
            if isinstance(rc, str):
                rc = {"name": rc, "subtypes": [rc]}
            c = ck.mapping(rc, cpath, {"name", "label", "description", "subtypes"}, ("name",))
            cat = ck.string(c.get("name"), f"{cpath}.name", f"category_{i}", name=True)
            types = []
            subtypes = ck.seq(c.get("subtypes"), f"{cpath}.subtypes") or [cat]
            for j, rt in enumerate(subtypes):
                tpath = f"{cpath}.subtypes[{j}]"
                if isinstance(rt, dict):
                    t = ck.mapping(rt, tpath, {"name", "label", "description"}, ("name",))
                else:
                    t = {"name": rt}
                tname = ck.string(t.get("name"), tpath if not isinstance(rt, dict) else f"{tpath}.name",
                                  f"type_{j}", name=True)
                types.append(ErrorType(tname, ck.string(t.get("label"), f"{tpath}.label", humanize(tname)),
                                       ck.string(t.get("description"), f"{tpath}.description", ""), cat))
            categories.append(ErrorCategory(cat, ck.string(c.get("label"), f"{cpath}.label", humanize(cat)),
                                            tuple(types), ck.string(c.get("description"), f"{cpath}.description", "")))
    if which and not categories:
        ck.error(f"{path}.{which}", "expected at least one error category")
    seen_types: dict[str, str] = {}
    for c in categories:
        for t in c.types:
            if t.name in seen_types:
                ck.error(f"{path}.{which}", f"error type {t.name!r} appears in both {seen_types[t.name]!r} "
                                            f"and {c.category!r}; type names must be unique")
            seen_types.setdefault(t.name, c.category)
    cats = [c.category for c in categories]
    for dup in sorted({c for c in cats if cats.count(c) > 1}):
        ck.error(f"{path}.{which}", f"category {dup!r} is listed twice")
    for c in categories:
        if c.category in seen_types and seen_types[c.category] != c.category:
            ck.error(f"{path}.{which}", f"{c.category!r} is both a category and a type of {seen_types[c.category]!r}")

    # severities
    severities: list[Severity] = []
    which = _either(ck, sc, path, "severity_levels", "severities")
    if which:
        for i, rs in enumerate(ck.seq(sc[which], f"{path}.{which}")):
            spath = f"{path}.{which}[{i}]"
            s = ck.mapping(rs, spath, {"name", "weight", "description"}, ("name", "weight"))
            severities.append(Severity(ck.string(s.get("name"), f"{spath}.name", f"severity_{i}", name=True),
                                       ck.number(s.get("weight"), f"{spath}.weight", 0.0),
                                       ck.string(s.get("description"), f"{spath}.description", "")))
        if not severities:
            ck.error(f"{path}.{which}", "expected at least one severity level")
    else:
        severities = [Severity(n, w, d) for n, w, d in DEFAULT_SEVERITIES]
    snames = [s.name for s in severities]
    for dup in sorted({s for s in snames if snames.count(s) > 1}):
        ck.error(f"{path}.{which}", f"severity {dup!r} is listed twice")

    # running score
    rs = ck.mapping(sc.get("running_score"), f"{path}.running_score", {"initial", "min", "display"})
    initial = ck.number(rs.get("initial", sc.get("max_score")), f"{path}.running_score.initial", 100.0)
    minimum = ck.number(rs.get("min", sc.get("min_score")), f"{path}.running_score.min", 0.0)
    display = ck.boolean(rs.get("display", sc.get("show_score")), f"{path}.running_score.display", True)
    if minimum > initial:
        ck.error(f"{path}.running_score.min", f"min ({minimum:g}) is above initial ({initial:g})")

    rat = ck.mapping(sc.get("rationale"), f"{path}.rationale", {"enabled", "placeholder", "required"})
    rationale = Rationale(
        ck.boolean(rat.get("enabled"), f"{path}.rationale.enabled", True),
        ck.string(rat.get("placeholder"), f"{path}.rationale.placeholder", Rationale.placeholder),
        ck.boolean(rat.get("required"), f"{path}.rationale.required", False),
    )
    extra = {"steps_key": sc.get("steps_key") and ck.string(sc["steps_key"], f"{path}.steps_key"),
             "step_text_key": sc.get("step_text_key") and ck.string(sc["step_text_key"], f"{path}.step_text_key")}
    scheme = TrajectoryScheme(name, description, labels, default, tuple(categories), tuple(severities),
                              RunningScore(initial, minimum, display), rationale)
    return scheme, extra


def _radio(ck: _Checker, raw: dict, path: str) -> RadioScheme:
    sc = ck.mapping(raw, path, RADIO_KEYS, required=("name", "labels"))
    name = ck.string(sc.get("name"), f"{path}.name", "radio", name=True)
    labels = []
    for j, rl in enumerate(ck.seq(sc.get("labels"), f"{path}.labels")):
        lpath = f"{path}.labels[{j}]"
        if isinstance(rl, bool):
            ck.error(lpath, f"expected a label name, got {rl} (YAML reads unquoted yes/no/on/off/true/false as "
                            "booleans: quote the label)")
            continue
        if isinstance(rl, (str, int, float)):
            labels.append(RadioLabel(str(rl)))
            continue
        lb = ck.mapping(rl, lpath, {"name", "tooltip", "key_value"}, ("name",))
        labels.append(RadioLabel(ck.string(lb.get("name"), f"{lpath}.name", f"label_{j}"),
                                 ck.string(lb.get("tooltip"), f"{lpath}.tooltip", "")))
    if "labels" in sc and not labels:
        ck.error(f"{path}.labels", "expected at least one label")
    lnames = [lb.name for lb in labels]
    for dup in sorted({n for n in lnames if lnames.count(n) > 1}):
        ck.error(f"{path}.labels", f"label {dup!r} is listed twice")
    required = ck.boolean(sc.get("required"), f"{path}.required", False)
    if "label_requirement" in sc:
        req = ck.mapping(sc["label_requirement"], f"{path}.label_requirement", {"required"})
        required = ck.boolean(req.get("required"), f"{path}.label_requirement.required", required)
    return RadioScheme(name, ck.string(sc.get("description"), f"{path}.description", ""), tuple(labels), required,
                       ck.boolean(sc.get("sequential_key_binding"), f"{path}.sequential_key_binding", False))
