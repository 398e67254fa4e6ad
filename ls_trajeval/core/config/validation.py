"""The one schema a config is checked against (the guide's dialect; :mod:`.dialect` translates Potato's first), and
the checker that walks raw values collecting located errors instead of stopping at the first."""
from __future__ import annotations

import difflib
import math
import re
from typing import Any

from ..fields import TASK_FIELDS, control_names
from .model import (
    DEFAULT_SEVERITIES,
    DEFAULT_STEP_DISPLAY,
    Config,
    ConfigError,
    DetectorSpec,
    ErrorCategory,
    ErrorType,
    PrelabelMapping,
    RadioLabel,
    RadioScheme,
    Rationale,
    RunningScore,
    Severity,
    StepStyle,
    Suggestions,
    TrajectoryScheme,
    humanize,
)

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
COLOR_RE = re.compile(r"^(#[0-9A-Fa-f]{3,8}|[A-Za-z]+|rgba?\([0-9.,\s%]+\))$")
TOP_KEYS = {"annotation_task_name", "data_files", "item_properties", "display", "annotation_schemes",
            "annotator_config", "output", "annotation_instructions", "user_config", "task_dir", "prelabels",
            "ml_backend", "suggestions"}
DISPLAY_KEYS = {"type", "trace_key", "step_display", "step_text_key", "show_step_numbers", "show_timestamps"}
TRAJ_KEYS = {"annotation_type", "name", "description", "step_correctness", "error_taxonomy", "severity_levels",
             "running_score", "rationale"}
RADIO_KEYS = {"annotation_type", "name", "description", "labels", "required", "sequential_key_binding"}


class Checker:
    """Collects located errors (``key.path: what was expected``) over a walk of raw values."""

    def __init__(self, source: str):
        self.source = source
        self.errors: list[str] = []
        #: a key path of the translated config -> the one the user wrote (:mod:`.dialect`)
        self.origins: dict[str, str] = {}

    def came_from(self, path: str, original: str) -> None:
        """Errors at ``path`` or inside it are about what the user wrote at ``original``."""
        self.origins[path] = original

    def written(self, path: str) -> str:
        """``path`` as the user wrote it: the longest translated prefix replaced by its origin."""
        best = ""
        for p in self.origins:
            if len(p) > len(best) and path.startswith(p) and path[len(p):len(p) + 1] in ("", ".", "["):
                best = p
        return self.origins[best] + path[len(best):] if best else path

    def error(self, path: str, msg: str) -> None:
        """Record a problem at ``path`` (nothing: the whole config)."""
        path = self.written(path)
        self.errors.append(f"{path}: {msg}" if path else msg)

    def mapping(self, value: Any, path: str, allowed: set[str], required: tuple[str, ...] = ()) -> dict:
        """``value``'s known keys (nothing: ``{}``); unknown keys, missing required ones and a value that is no
        mapping are errors."""
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping, got {show(value)}")
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
        """``value`` as text (numbers too); with ``name``, it must be a name of letters, digits and '_'."""
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.error(path, f"expected a string, got {show(value)}")
            return default or ""
        s = str(value)
        if name and not NAME_RE.match(s):
            self.error(path, f"expected a name of letters, digits and '_' starting with a letter, got {s!r}")
        return s

    def boolean(self, value: Any, path: str, default: bool) -> bool:
        """``value``, which must be true or false (nothing: ``default``)."""
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(path, f"expected true or false, got {show(value)}")
            return default
        return value

    def number(self, value: Any, path: str, default: float) -> float:
        """``value`` as a finite float (nothing: ``default``)."""
        if value is None:
            return default
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)  # an int beyond float's range raises here
            except OverflowError:
                pass
        if number is None or not math.isfinite(number):
            self.error(path, f"expected a number, got {show(value)}")
            return default
        return number

    def seq(self, value: Any, path: str) -> list:
        """``value``, which must be a list (nothing: ``[]``)."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, f"expected a list, got {show(value)}")
            return []
        return value

    def color(self, value: Any, path: str) -> str:
        """``value``, which must be a plain CSS colour (nothing that could carry more CSS)."""
        s = self.string(value, path, "#EEEEEE")
        if not COLOR_RE.match(s):
            self.error(path, f"expected a CSS colour such as '#E8F0FE', got {s!r}")
            return "#EEEEEE"
        return s


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def show(value: Any) -> str:
    """A raw value as an error message shows it: its kind for containers, a short repr otherwise."""
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


def _keys(value: Any) -> list:
    return list(value) if isinstance(value, dict) else []


def validate(data: Any, ck: Checker) -> Config:
    """Check a config in the guide's dialect and build the typed Config; raise ConfigError with every problem."""
    top = ck.mapping(data, "", TOP_KEYS, required=("annotation_schemes",))

    item = ck.mapping(top.get("item_properties"), "item_properties", {"id_key", "text_key"})
    id_key = ck.string(item.get("id_key"), "item_properties.id_key", "trace_id")
    text_key = ck.string(item.get("text_key"), "item_properties.text_key", "task")

    disp = ck.mapping(top.get("display"), "display", DISPLAY_KEYS)
    dtype = ck.string(disp.get("type"), "display.type", "agent_trace")
    if dtype != "agent_trace":
        ck.error("display.type", f"expected 'agent_trace', got {dtype!r}")
    trace_key = ck.string(disp.get("trace_key"), "display.trace_key", "trace")
    step_text_key = ck.string(disp.get("step_text_key"), "display.step_text_key", "content")
    show_numbers = ck.boolean(disp.get("show_step_numbers"), "display.show_step_numbers", True)
    show_ts = ck.boolean(disp.get("show_timestamps"), "display.show_timestamps", False)
    if "step_display" in disp:
        step_display = _step_display(ck, disp["step_display"], "display.step_display")
    else:
        step_display = {k: StepStyle(lbl, col) for k, (lbl, col) in DEFAULT_STEP_DISPLAY.items()}

    trajectory: TrajectoryScheme | None = None
    radios: list[RadioScheme] = []
    for i, raw in enumerate(ck.seq(top.get("annotation_schemes"), "annotation_schemes")):
        path = f"annotation_schemes[{i}]"
        if not isinstance(raw, dict):
            ck.error(path, f"expected a mapping, got {show(raw)}")
            continue
        atype = raw.get("annotation_type")
        if atype == "trajectory_eval":
            if trajectory is not None:
                ck.error(path, "only one trajectory_eval scheme is supported per config")
            trajectory = trajectory or _trajectory(ck, raw, path)
        elif atype == "radio":
            radios.append(_radio(ck, raw, path))
        else:
            ck.error(f"{path}.annotation_type", f"expected 'trajectory_eval' or 'radio', got {show(atype)}")
    if trajectory is None and "annotation_schemes" in top and not ck.errors:
        ck.error("annotation_schemes", "needs one scheme with annotation_type: trajectory_eval")

    ann = ck.mapping(top.get("annotator_config"), "annotator_config",
                     {"allow_back_navigation", "require_all_steps", "window_steps"})
    window_steps = ann.get("window_steps", 0)
    if not isinstance(window_steps, int) or isinstance(window_steps, bool) or window_steps < 0:
        ck.error("annotator_config.window_steps", f"expected a number of steps (0: whole traces), got "
                 f"{show(window_steps)}")
        window_steps = 0
    out = ck.mapping(top.get("output"), "output", {"path", "format"})
    output_path = ck.string(out.get("path"), "output.path", "output/")
    output_format = ck.string(out.get("format"), "output.format", "jsonl")
    if output_format not in ("jsonl", "json"):
        ck.error("output.format", f"expected 'jsonl' or 'json', got {output_format!r}")
    user_config = top.get("user_config") or {}
    if not isinstance(user_config, dict):
        ck.error("user_config", f"expected a mapping, got {show(user_config)}")
        user_config = {}
    data_files = tuple(ck.string(f, f"data_files[{j}]", "")
                       for j, f in enumerate(ck.seq(top.get("data_files"), "data_files")))

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
    if ck.errors or trajectory is None:
        raise ConfigError(ck.source, ck.errors)
    return Config(
        annotation_task_name=ck.string(top.get("annotation_task_name"), "annotation_task_name",
                                       "Agent trace evaluation"),
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
        allow_back_navigation=ck.boolean(ann.get("allow_back_navigation"), "annotator_config.allow_back_navigation",
                                         True),
        require_all_steps=ck.boolean(ann.get("require_all_steps"), "annotator_config.require_all_steps", False),
        window_steps=window_steps,
        output_path=output_path,
        output_format=output_format,
        task_dir=ck.string(top.get("task_dir"), "task_dir", "."),
        user_config=user_config,
        prelabels=prelabels,
        detectors=detectors,
        suggestions=suggestions,
        source=ck.source,
    )


def _suggestions(ck: Checker, raw: Any, scheme: TrajectoryScheme) -> Suggestions:
    """``suggestions``: the undecided suggestion's label and colour, and whether annotators start from them."""
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


def _detectors(ck: Checker, raw: Any, trajectory: TrajectoryScheme | None) -> tuple[DetectorSpec, ...]:
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
            ck.error(path, f"expected true, false or a mapping, got {show(value)}")
            continue
        etype, sev = value.get("type"), value.get("severity")
        if etype is not None and (not isinstance(etype, str) or (types and etype not in types)):
            ck.error(f"{path}.type", f"expected an error type of the taxonomy, got {show(etype)}")
            etype = None
        if sev is not None and (not isinstance(sev, str) or (sevs and sev not in sevs)):
            ck.error(f"{path}.severity", f"expected one of {sorted(sevs)}, got {show(sev)}")
            sev = None
        options = tuple((k, v) for k, v in value.items() if k not in ("enabled", "type", "severity"))
        out.append(DetectorSpec(name, ck.boolean(value.get("enabled"), f"{path}.enabled", True), etype, sev, options))
    return tuple(out)


def _prelabels(ck: Checker, raw: Any, scheme: TrajectoryScheme) -> PrelabelMapping:
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


def _step_display(ck: Checker, raw: Any, path: str) -> dict:
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


def _trajectory(ck: Checker, raw: dict, path: str) -> TrajectoryScheme:
    sc = ck.mapping(raw, path, TRAJ_KEYS, required=("name",))
    name = ck.string(sc.get("name"), f"{path}.name", "error_localization", name=True)
    description = ck.string(sc.get("description"), f"{path}.description", "")

    labels: tuple[str, ...] = ("correct", "incorrect")
    default = "correct"
    if "step_correctness" in sc:
        cpath = f"{path}.step_correctness"
        corr = ck.mapping(sc["step_correctness"], cpath, {"labels", "default"})
        raw_labels = ck.seq(corr.get("labels"), f"{cpath}.labels") or list(labels)
        labels = tuple(ck.string(v, f"{cpath}.labels[{j}]", name=True) for j, v in enumerate(raw_labels))
        default = ck.string(corr.get("default"), f"{cpath}.default", labels[0] if labels else "correct")
        if labels and default not in labels:
            ck.error(f"{cpath}.default", f"expected one of {list(labels)}, got {default!r}")
    if len(labels) < 2:
        ck.error(f"{path}.step_correctness.labels", "expected at least two labels (a correct one and an error one)")
    for dup in sorted({lb for lb in labels if labels.count(lb) > 1}):
        ck.error(f"{path}.step_correctness.labels", f"label {dup!r} is listed twice")

    categories = _taxonomy(ck, sc, f"{path}.error_taxonomy")

    severities: list[Severity] = []
    spath = f"{path}.severity_levels"
    if "severity_levels" in sc:
        for i, rs in enumerate(ck.seq(sc["severity_levels"], spath)):
            s = ck.mapping(rs, f"{spath}[{i}]", {"name", "weight", "description"}, ("name", "weight"))
            severities.append(Severity(ck.string(s.get("name"), f"{spath}[{i}].name", f"severity_{i}", name=True),
                                       ck.number(s.get("weight"), f"{spath}[{i}].weight", 0.0),
                                       ck.string(s.get("description"), f"{spath}[{i}].description", "")))
        if not severities:
            ck.error(spath, "expected at least one severity level")
    else:
        severities = [Severity(n, w, d) for n, w, d in DEFAULT_SEVERITIES]
    snames = [s.name for s in severities]
    for dup in sorted({s for s in snames if snames.count(s) > 1}):
        ck.error(spath, f"severity {dup!r} is listed twice")

    rpath = f"{path}.running_score"
    rs = ck.mapping(sc.get("running_score"), rpath, {"initial", "min", "display"})
    initial = ck.number(rs.get("initial"), f"{rpath}.initial", 100.0)
    minimum = ck.number(rs.get("min"), f"{rpath}.min", 0.0)
    display = ck.boolean(rs.get("display"), f"{rpath}.display", True)
    if minimum > initial:
        ck.error(f"{rpath}.min", f"min ({minimum:g}) is above initial ({initial:g})")

    rat = ck.mapping(sc.get("rationale"), f"{path}.rationale", {"enabled", "placeholder", "required"})
    rationale = Rationale(
        ck.boolean(rat.get("enabled"), f"{path}.rationale.enabled", True),
        ck.string(rat.get("placeholder"), f"{path}.rationale.placeholder", Rationale.placeholder),
        ck.boolean(rat.get("required"), f"{path}.rationale.required", False),
    )
    return TrajectoryScheme(name, description, labels, default, tuple(categories), tuple(severities),
                            RunningScore(initial, minimum, display), rationale)


def _taxonomy(ck: Checker, sc: dict, path: str) -> list[ErrorCategory]:
    """``error_taxonomy``: categories of uniquely named error types."""
    categories: list[ErrorCategory] = []
    if "error_taxonomy" not in sc:
        return categories
    for i, rc in enumerate(ck.seq(sc["error_taxonomy"], path)):
        cpath = f"{path}[{i}]"
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
    if not categories:
        ck.error(path, "expected at least one error category")
    seen_types: dict[str, str] = {}
    for category in categories:
        for etype in category.types:
            if etype.name in seen_types:
                ck.error(path, f"error type {etype.name!r} appears in both {seen_types[etype.name]!r} and "
                               f"{category.category!r}; type names must be unique")
            seen_types.setdefault(etype.name, category.category)
    names = [category.category for category in categories]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        ck.error(path, f"category {dup!r} is listed twice")
    for name in names:
        if seen_types.get(name, name) != name:
            ck.error(path, f"{name!r} is both a category and a type of {seen_types[name]!r}")
    return categories


def _radio(ck: Checker, raw: dict, path: str) -> RadioScheme:
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
        lb = ck.mapping(rl, lpath, {"name", "tooltip"}, ("name",))
        labels.append(RadioLabel(ck.string(lb.get("name"), f"{lpath}.name", f"label_{j}"),
                                 ck.string(lb.get("tooltip"), f"{lpath}.tooltip", "")))
    if "labels" in sc and not labels:
        ck.error(f"{path}.labels", "expected at least one label")
    lnames = [lb.name for lb in labels]
    for dup in sorted({n for n in lnames if lnames.count(n) > 1}):
        ck.error(f"{path}.labels", f"label {dup!r} is listed twice")
    return RadioScheme(name, ck.string(sc.get("description"), f"{path}.description", ""), tuple(labels),
                       ck.boolean(sc.get("required"), f"{path}.required", False),
                       ck.boolean(sc.get("sequential_key_binding"), f"{path}.sequential_key_binding", False))
