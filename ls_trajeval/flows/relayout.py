"""Switch an existing project between the two layouts.

A transcript project's tasks carry no ``te_pages`` (see :mod:`tasks`), so switching to the paged
layout first asks Label Studio whether it accepts the new label config (it refuses one that the
project's annotations cannot be read with: layouts name their controls differently), then renders
the cards of every task that lacks them (or holds them in an earlier shape), then replaces the
config: no annotator meets a paged task without its pages. Switching back to the transcript layout
only replaces the config (the cards stay in the tasks, unused). Either way a task imported before the task header
and the score's status existed gets them (an empty ``te_header``, ``te_score_status``), or the config would show
"undefined" there.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tqdm import tqdm

from ..core import labelconfig
from ..core.config import Config
from ..core.fields import HEADER, PAGES, SCORE_NOT_KEPT, SCORE_STATUS
from ..core.tasks import has_pages, pages
from ..core.trace import Trace, parse_trace
from ..core.windows import window_of
from ..studio import client as studio
from .projects import project_config


@dataclass
class RelayoutSummary:
    layout: str
    config_changed: bool = False
    pages_added: int = 0
    #: tasks given the header and score status fields they were imported without
    fields_added: int = 0
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
    if not unchanged or layout == "paged":
        tasks = studio.iter_tasks(client, project_id, with_annotations=False, include="id,data", page_size=500)
        for task in tqdm(tasks, desc="updating tasks", unit=" tasks", disable=not progress, leave=False):
            data = task.get("data") or {}
            # the old cards' text does not match a header's style: an empty header, as for a task of another tool
            missing = {HEADER: "", SCORE_STATUS: SCORE_NOT_KEPT}
            add: dict[str, object] = {k: v for k, v in missing.items() if k not in data}
            if layout == "paged" and not has_pages(data):
                parsed = parse_trace(data, source=f"task {task['id']}", id_key=cfg.id_key, text_key=cfg.text_key,
                                     trace_key=cfg.trace_key)
                if isinstance(parsed, Trace):
                    add[PAGES] = pages(parsed, cfg, window=window_of(data))
                else:
                    summary.errors.append(f"task {task['id']}: its trace cannot be read, so it has no pages: {parsed}")
            if add:
                studio.update_task_data(client, task["id"], add, data)
                summary.pages_added += PAGES in add
                summary.fields_added += bool(add.keys() & missing.keys())
    if not unchanged:
        studio.set_label_config(client, project_id, xml)
        summary.config_changed = True
    return summary
