"""Switch an existing project between the two layouts.

A transcript project's tasks carry no ``te_pages`` (see :mod:`tasks`), so switching to the paged
layout first asks Label Studio whether it accepts the new label config (it refuses one that the
project's annotations cannot be read with: layouts name their controls differently), then renders
the cards of every task that lacks them (or holds them in an earlier shape), then replaces the
config: no annotator meets a paged task without its pages. Switching back to the transcript layout
only replaces the config (the cards stay in the tasks, unused).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tqdm import tqdm

from ..core import labelconfig
from ..core.config import Config
from ..core.fields import PAGES
from ..core.tasks import has_pages, pages
from ..core.trace import Trace, parse_trace
from ..studio import client as studio
from .projects import project_config


@dataclass
class RelayoutSummary:
    layout: str
    config_changed: bool = False
    pages_added: int = 0
    errors: list[str] = field(default_factory=list)


def set_layout(client, project_id: int, layout: str, config: Config | None = None, *,
               progress: bool = True) -> RelayoutSummary:
    """Give project ``project_id`` the ``layout``; idempotent (a second run changes nothing)."""
    if layout not in labelconfig.LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}: choose one of {', '.join(labelconfig.LAYOUTS)}")
    project = studio.get_project(client, project_id)
    cfg = project_config(project, config)
    summary = RelayoutSummary(layout)
    xml = labelconfig.generate(cfg, layout)
    unchanged = (project.get("label_config") or "").strip() == xml.strip()
    if not unchanged:  # before any task is touched: a refused switch changes nothing
        studio.validate_label_config(client, project_id, xml)
    if layout == "paged":
        tasks = studio.iter_tasks(client, project_id, with_annotations=False, include="id,data", page_size=500)
        for task in tqdm(tasks, desc="rendering pages", unit=" tasks", disable=not progress, leave=False):
            data = task.get("data") or {}
            if has_pages(data):
                continue
            parsed = parse_trace(data, source=f"task {task['id']}", id_key=cfg.id_key, text_key=cfg.text_key,
                                 trace_key=cfg.trace_key)
            if not isinstance(parsed, Trace):
                summary.errors.append(f"task {task['id']}: its trace cannot be read, so it has no pages: {parsed}")
                continue
            studio.update_task_data(client, task["id"], {PAGES: pages(parsed, cfg)}, data)
            summary.pages_added += 1
    if not unchanged:
        studio.set_label_config(client, project_id, xml)
        summary.config_changed = True
    return summary
