"""Potato's native keys put into the guide's dialect, so that one schema (:mod:`.validation`) checks every config.

=======================================================  ==================================================
Potato-native key                                        the guide's key it becomes
=======================================================  ==================================================
``instance_display.fields[type: agent_trace].key``       ``display.trace_key``
``...display_options.show_step_numbers``, ``show_timestamps``  ``display.show_step_numbers``, ``show_timestamps``
``...display_options.step_type_colors`` / ``_labels``    ``display.step_display.TYPE.color`` / ``.label``
scheme ``steps_key``, ``step_text_key``                  ``display.trace_key``, ``display.step_text_key``
``correctness_options``                                  ``step_correctness.labels`` (default ``correct``)
``error_types[].{name, subtypes}``                       ``error_taxonomy[].{category, types[].name}``
``severities``                                           ``severity_levels``
``max_score``, ``min_score``, ``show_score``             ``running_score.initial``, ``.min``, ``.display``
radio ``label_requirement.required``                     ``required``
``output_annotation_dir``, ``export_annotation_format``  ``output.path``, ``output.format``
=======================================================  ==================================================

Potato's display hints that mean nothing here (``instance_display.layout``, a field's ``label`` and
``span_target``, a radio's ``horizontal``, a label's ``key_value``, a trajectory scheme's ``label_requirement``)
are accepted and dropped. Giving a thing in both spellings is an error. The translation tells the checker where
each guide key came from (:meth:`.Checker.came_from`), so that an error names the key path the user wrote.
"""
from __future__ import annotations

from typing import Any

from .validation import Checker

#: the keys of Potato-only mappings, which the guide's schema does not know
FIELD_KEYS = {"key", "type", "label", "display_options", "span_target"}
DISPLAY_OPTIONS = {"show_step_numbers", "show_timestamps", "step_type_colors", "step_type_labels"}
CATEGORY_KEYS = {"name", "label", "description", "subtypes"}


def to_guide(data: Any, ck: Checker) -> Any:
    """``data`` in the guide's dialect (a new value; ``data`` is not changed)."""
    if not isinstance(data, dict):
        return data  # the schema says what it should be
    top = dict(data)
    if "instance_display" in top:
        raw = top.pop("instance_display")
        if "display" in top:
            ck.error("instance_display", "give either 'display' or 'instance_display', not both")
        else:
            display = _instance_display(ck, raw)
            if display is not None:
                top["display"] = display
    output = {k: top.pop(k) for k in ("output_annotation_dir", "export_annotation_format") if k in top}
    if output:
        if "output" in top:
            ck.error("output", "give either 'output' or 'output_annotation_dir'/'export_annotation_format', not both")
        else:
            top["output"] = {}
            for potato, guide in (("output_annotation_dir", "path"), ("export_annotation_format", "format")):
                if potato in output:
                    top["output"][guide] = output[potato]
                    ck.came_from(f"output.{guide}", potato)
    schemes = top.get("annotation_schemes")
    if isinstance(schemes, list):
        top["annotation_schemes"] = [_scheme(ck, top, raw, f"annotation_schemes[{i}]")
                                     for i, raw in enumerate(schemes)]
    return top


def _instance_display(ck: Checker, raw: Any) -> dict | None:
    """``display`` from the last ``agent_trace`` field of ``instance_display``; None when it has none."""
    idisp = ck.mapping(raw, "instance_display", {"fields", "layout"})
    display = None
    for i, field in enumerate(ck.seq(idisp.get("fields"), "instance_display.fields")):
        path = f"instance_display.fields[{i}]"
        fld = ck.mapping(field, path, FIELD_KEYS, ("key",))
        if ck.string(fld.get("type"), f"{path}.type", "text") != "agent_trace":
            continue
        display = {}
        if "key" in fld:
            display["trace_key"] = fld["key"]
            ck.came_from("display.trace_key", f"{path}.key")
        opts = ck.mapping(fld.get("display_options"), f"{path}.display_options", DISPLAY_OPTIONS)
        for key in ("show_step_numbers", "show_timestamps"):
            if key in opts:
                display[key] = opts[key]
                ck.came_from(f"display.{key}", f"{path}.display_options.{key}")
        colors = _any_keys(ck, opts.get("step_type_colors"), f"{path}.display_options.step_type_colors")
        labels = _any_keys(ck, opts.get("step_type_labels"), f"{path}.display_options.step_type_labels")
        if colors or labels:
            styles: dict[str, dict] = {}
            display["step_display"] = styles
            for stype in [*colors, *(k for k in labels if k not in colors)]:
                styles[stype] = {}
                for values, guide, potato in ((labels, "label", "step_type_labels"),
                                              (colors, "color", "step_type_colors")):
                    if stype in values:
                        styles[stype][guide] = values[stype]
                        ck.came_from(f"display.step_display.{stype}.{guide}",
                                     f"{path}.display_options.{potato}.{stype}")
    if display is None:
        ck.error("instance_display.fields", "no field of type 'agent_trace' (which key holds the steps?)")
    return display


def _any_keys(ck: Checker, value: Any, path: str) -> dict:
    return ck.mapping(value, path, set(value) if isinstance(value, dict) else set())


def _scheme(ck: Checker, top: dict, raw: Any, path: str) -> Any:
    if not isinstance(raw, dict):
        return raw
    if raw.get("annotation_type") == "trajectory_eval":
        return _trajectory(ck, top, dict(raw), path)
    if raw.get("annotation_type") == "radio":
        return _radio(ck, dict(raw), path)
    return raw


def _rename(ck: Checker, sc: dict, path: str, guide: str, potato: str) -> bool:
    """``sc[potato]`` moved to ``sc[guide]``; False (and an error when both are there) when it was not."""
    if potato not in sc:
        return False
    if guide in sc:
        ck.error(f"{path}.{potato}", f"give either {guide!r} or {potato!r}, not both")
        del sc[potato]
        return False
    sc[guide] = sc.pop(potato)
    ck.came_from(f"{path}.{guide}", f"{path}.{potato}")
    return True


def _trajectory(ck: Checker, top: dict, sc: dict, path: str) -> dict:
    sc.pop("label_requirement", None)
    # the scheme's own keys say where its steps are, over any display section (as Potato reads them)
    for potato, guide in (("steps_key", "trace_key"), ("step_text_key", "step_text_key")):
        value = sc.pop(potato, None)
        display = top.get("display", {})
        if value and isinstance(display, dict):
            top["display"] = {**display, guide: value}
            ck.came_from(f"display.{guide}", f"{path}.{potato}")
    if "correctness_options" in sc and "step_correctness" in sc:
        _rename(ck, sc, path, "step_correctness", "correctness_options")
    elif "correctness_options" in sc:
        labels = sc.pop("correctness_options")
        sc["step_correctness"] = {"labels": labels}
        if isinstance(labels, list) and "correct" in labels:
            sc["step_correctness"]["default"] = "correct"
        ck.came_from(f"{path}.step_correctness.labels", f"{path}.correctness_options")
        ck.came_from(f"{path}.step_correctness", f"{path}.correctness_options")
    if _rename(ck, sc, path, "error_taxonomy", "error_types") and isinstance(sc["error_taxonomy"], list):
        sc["error_taxonomy"] = [_category(ck, c, f"{path}.error_taxonomy[{i}]", f"{path}.error_types[{i}]")
                                for i, c in enumerate(sc["error_taxonomy"])]
    _rename(ck, sc, path, "severity_levels", "severities")
    score = {k: sc.pop(k) for k in ("max_score", "min_score", "show_score") if k in sc}
    if score:
        running = sc.get("running_score")
        running = dict(running) if isinstance(running, dict) else {} if running is None else None
        if running is None:  # not a mapping: the schema says so, and the Potato keys wait for a valid one
            return sc
        for potato, guide in (("max_score", "initial"), ("min_score", "min"), ("show_score", "display")):
            if potato not in score:
                continue
            if guide in running:
                ck.error(f"{path}.{potato}", f"give either 'running_score.{guide}' or {potato!r}, not both")
                continue
            running[guide] = score[potato]
            ck.came_from(f"{path}.running_score.{guide}", f"{path}.{potato}")
        sc["running_score"] = running
    return sc


def _category(ck: Checker, raw: Any, path: str, origin: str) -> Any:
    """One ``error_types`` entry (a mapping, or a bare name that is its own only type) as an ``error_taxonomy``
    entry."""
    if isinstance(raw, str):
        for guide in (path, f"{path}.category", f"{path}.types", f"{path}.types[0].name"):
            ck.came_from(guide, origin)
        return {"category": raw, "types": [{"name": raw}]}
    if not isinstance(raw, dict):
        ck.came_from(path, origin)
        return raw
    c = ck.mapping(raw, origin, CATEGORY_KEYS)
    out = {k: c[k] for k in ("label", "description") if k in c}
    ck.came_from(path, origin)
    ck.came_from(f"{path}.category", f"{origin}.name")
    if "name" in c:
        out["category"] = c["name"]
    subtypes = c.get("subtypes")
    if subtypes is None or subtypes == []:
        out["types"] = [{"name": c.get("name")}]  # a category without subtypes is its own only type
        ck.came_from(f"{path}.types", origin)
        return out
    ck.came_from(f"{path}.types", f"{origin}.subtypes")
    if not isinstance(subtypes, list):
        out["types"] = subtypes
        return out
    out["types"] = []
    for j, t in enumerate(subtypes):
        if isinstance(t, dict):
            out["types"].append(t)
        else:
            out["types"].append({"name": t})
            ck.came_from(f"{path}.types[{j}].name", f"{origin}.subtypes[{j}]")
    return out


def _radio(ck: Checker, sc: dict, path: str) -> dict:
    sc.pop("horizontal", None)
    if isinstance(sc.get("labels"), list):
        sc["labels"] = [{k: v for k, v in lb.items() if k != "key_value"} if isinstance(lb, dict) else lb
                        for lb in sc["labels"]]
    if "label_requirement" in sc:
        req = ck.mapping(sc.pop("label_requirement"), f"{path}.label_requirement", {"required"})
        if "required" in req:
            if "required" in sc:
                ck.error(f"{path}.label_requirement", "give either 'required' or 'label_requirement', not both")
            else:
                sc["required"] = req["required"]
                ck.came_from(f"{path}.required", f"{path}.label_requirement.required")
    return sc
