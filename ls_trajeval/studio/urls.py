"""Addresses of Label Studio's pages for people (no SDK: a report links its traces without importing it)."""
from __future__ import annotations


def label_stream_url(url: str, project_id: int) -> str:
    """Where annotators should label a project: the label stream ("Label All Tasks").

    It opens a long trace about 1.4-2x sooner than the Data Manager's quick view (``?task=ID``), whose
    annotation tabs serialise every annotation on each render (benchmarks/bench_browser.py).
    """
    return f"{url.rstrip('/')}/projects/{project_id}/data?labeling=1"


def task_list_url(url: str, project_id: int, tab: int | None = None) -> str:
    """A project's task list (the Data Manager), on its tab ``tab``: a task opened from there shows every
    annotation and prediction as a tab of its own, with "Compare All" beside them, where the label stream
    shows one."""
    return f"{url.rstrip('/')}/projects/{project_id}/data" + (f"?tab={tab}" if tab else "")


def task_url(url: str, project_id: int, task_id: int) -> str:
    """One task opened in its project's Data Manager (its annotations and predictions side by side)."""
    return f"{url.rstrip('/')}/projects/{project_id}/data?task={task_id}"
