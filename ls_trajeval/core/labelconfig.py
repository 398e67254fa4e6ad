"""Compile a Config into Label Studio labeling-config XML, through Jinja2 templates (package data).

Two layouts (see DESIGN.md): ``transcript`` (Paragraphs, a region per wrong step, per-region
controls) and ``paged`` (Repeater, one step per page, a correctness choice per step). The control
names both use are :class:`fields.Names`, read back by :mod:`results`. A generated config carries the
Config it was made from in a comment (:func:`embed_comment`), so a project describes itself.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from xml.etree import ElementTree

import jinja2

from .config import Config, Severity, humanize, load_dict
from .fields import SUGGESTED, Names
from .layouts import LAYOUTS

#: Label Studio's Repeater replaces this marker with the step index in every attribute.
IDX = "{{idx}}"
ERROR_COLORS = ("#D32F2F", "#F9A825", "#6A1B9A", "#00838F")
#: Severity labels, least to most severe in the default config's order.
SEVERITY_COLORS = ("#FBC02D", "#EF6C00", "#B71C1C", "#4A148C")
#: The transcript layout's confirmation when ``require_all_steps`` is on (unmarked steps count as correct).
REVIEWED_TEXT = "I reviewed every step; unmarked steps are correct"


def _weight(w: float) -> str:
    text = f"{w:g}"
    return text.replace("-", "\u2212")  # a real minus sign reads better than a hyphen


def severity_label(severity: Severity) -> str:
    """What the annotator sees for a severity: its name and weight, e.g. "Major (−5)"."""
    return f"{humanize(severity.name)} ({_weight(severity.weight)})"


#: Invisible, zero-width; breaks up template syntax Label Studio would otherwise act on.
WORD_JOINER = "\u2060"


def shown(text: str) -> str:
    """Config text for attributes Label Studio only displays, made inert against its substitutions.

    Measured in the browser: Header values replace ``$name`` with task data (``$n_steps`` showed
    "27"), and Repeater replaces ``{{idx}}`` in every attribute of its children (a placeholder
    showed "3"). A word joiner after ``$`` and between ``{{`` stops both and looks the same.
    Never use it on values that are saved (correctness labels, whole-trace Choice values).
    """
    return str(text).replace("$", "$" + WORD_JOINER).replace("{{", "{" + WORD_JOINER + "{")


def rgb(color: str) -> str:
    """A ``#RGB``/``#RRGGBB`` colour as Label Studio writes it in a mark's inline style: ``"211, 47, 47"``."""
    digits = color.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    if not re.fullmatch(r"[0-9A-Fa-f]{6}", digits):
        raise ValueError(f"not a #RGB or #RRGGBB colour: {color!r}")
    return ", ".join(str(int(digits[i:i + 2], 16)) for i in (0, 2, 4))


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ls_trajeval", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        keep_trailing_newline=True,
    )
    env.filters["humanize"] = humanize
    env.filters["severity_label"] = severity_label
    env.filters["shown"] = shown
    env.filters["rgb"] = rgb
    return env


def generate(config: Config, layout: str = "transcript") -> str:
    """The labeling config XML for ``config`` in ``layout``."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    template = _env().get_template(f"{layout}.xml.j2")
    scheme = config.trajectory
    # a mark takes its error label's colour, or its severity's when the error label was taken off it again
    mark_colors = dict.fromkeys([ERROR_COLORS[i % len(ERROR_COLORS)] for i in range(len(scheme.error_labels))] +
                                [SEVERITY_COLORS[i % len(SEVERITY_COLORS)] for i in range(len(scheme.severities))])
    xml = template.render(
        mark_colors=list(mark_colors),
        suggested_field=SUGGESTED,
        config=config,
        names=Names(config.trajectory.name),
        idx=IDX,
        error_colors=ERROR_COLORS,
        severity_colors=SEVERITY_COLORS,
        reviewed_text=REVIEWED_TEXT,
        embedded=embed_comment(config),
    )
    return "\n".join(line for line in xml.splitlines() if line.strip()) + "\n"


def shows_suggestions(xml: str, config: Config) -> bool:
    """Whether a project's label config (XML) marks undecided suggestions with the config's suggestion label: the
    workbench made since it has the label among its marks, older ones and the paged layout do not (a prediction
    for them keeps its correctness labels)."""
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError:
        return False
    return any(labels.get("name") == config.trajectory.name and
               any(label.get("value") == config.suggestions.label for label in labels.iter("Label"))
               for labels in root.iter("ParagraphLabels"))


EMBED_PREFIX = "ls-trajeval config:"


def embed_comment(config: Config) -> str:
    """The config as JSON for an XML comment, so a project's label config describes itself.

    XML comments may not contain '--'; that only occurs inside JSON strings, where '-' can be spelt
    as an escape, so nothing is lost.
    """
    text = json.dumps(config.to_dict(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for raw, escaped in (("--", "-\\u002d"), ("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)  # markup characters too, so the comment is inert anywhere
    return f"{EMBED_PREFIX} " + text


def from_label_config(xml: str, source: str = "<label config>") -> Config | None:
    """The config embedded in a generated label config, or None when there is none."""
    m = re.search(r"<!--\s*" + re.escape(EMBED_PREFIX) + r"\s*(\{.*?\})\s*-->", xml, re.S)
    if not m:
        return None
    return load_dict(json.loads(m.group(1)), source=source)

