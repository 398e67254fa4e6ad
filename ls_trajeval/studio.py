"""A thin layer over ``label_studio_sdk``: connect, projects, batched imports, paged task iteration.

Every call to Label Studio in this project goes through here. Values leave this module as plain
dicts (task and annotation JSON as Label Studio sends it), so the pure core never sees SDK types.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any, Iterable, Iterator

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from . import labelconfig
from .config import Config, from_label_config

#: Retried with backoff: connection problems and the server's transient answers.
RETRY_STATUS = {429, 502, 503, 504}


class StudioError(RuntimeError):
    """A Label Studio problem with a message fit for a user (no traceback)."""


def _describe_api_error(exc: ApiError) -> str:
    body = exc.body
    if isinstance(body, dict):
        parts = [body.get("detail"), body.get("validation_errors")]
        body = "; ".join(p if isinstance(p, str) else json.dumps(p, ensure_ascii=False) for p in parts if p) \
            or json.dumps(body, ensure_ascii=False)
    text = str(body)
    return f"HTTP {exc.status_code}: {text[:500]}"


def call(fn, *args, retries: int = 5, what: str = "Label Studio request", **kwargs):
    """Call an SDK function, retrying transient failures with exponential backoff."""
    delay = 0.5
    for attempt in range(retries + 1):
        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            status = exc.status_code or 0
            if (status in RETRY_STATUS or status >= 500) and attempt < retries:
                time.sleep(delay)
                delay = min(delay * 2, 10)
                continue
            if exc.status_code == 401:
                raise StudioError(f"{what}: the API key was refused (HTTP 401). Use a personal access token "
                                  "or a legacy token from Account & Settings.") from None
            raise StudioError(f"{what} failed: {_describe_api_error(exc)}") from None
        except (httpx.TransportError, ConnectionError) as exc:
            if attempt < retries:
                time.sleep(delay)
                delay = min(delay * 2, 10)
                continue
            raise StudioError(f"{what}: cannot reach Label Studio ({type(exc).__name__}: {exc})") from None


def connect(url: str | None = None, api_key: str | None = None, timeout: float = 120) -> LabelStudio:
    """A client for ``url`` (or $LABEL_STUDIO_URL) with ``api_key`` (or $LABEL_STUDIO_API_KEY).

    Both legacy tokens and personal access tokens work (the SDK refreshes the latter).
    """
    url = url or os.environ.get("LABEL_STUDIO_URL")
    api_key = api_key or os.environ.get("LABEL_STUDIO_API_KEY")
    if not url:
        raise StudioError("no Label Studio URL: pass --url or set LABEL_STUDIO_URL")
    if not api_key:
        raise StudioError("no API key: pass --api-key or set LABEL_STUDIO_API_KEY")
    try:
        client = LabelStudio(base_url=url.rstrip("/"), api_key=api_key, timeout=timeout)
    except ApiError as exc:
        raise StudioError(f"the API key is not usable: {_describe_api_error(exc)}") from None
    call(client.users.whoami, what=f"connecting to {url}", retries=2)
    return client


def _dump(obj: Any) -> dict:
    if isinstance(obj, dict):
        return obj
    return obj.model_dump(mode="json", by_alias=True, exclude_unset=False)


# ---------------------------------------------------------------- projects
#: Label Studio's limit on a project title
MAX_TITLE = 50


def project_title(title: str) -> str:
    return title if len(title) <= MAX_TITLE else title[:MAX_TITLE - 1] + "…"


def create_project(client: LabelStudio, config: Config, layout: str = "transcript", title: str | None = None) -> dict:
    xml = labelconfig.generate(config, layout)
    project = call(client.projects.create, title=project_title(title or config.annotation_task_name), label_config=xml,
                   expert_instruction=config.instructions or None, show_instruction=bool(config.instructions),
                   show_skip_button=True, what="creating the project")
    return _dump(project)


def get_project(client: LabelStudio, project_id: int) -> dict:
    return _dump(call(client.projects.get, id=project_id, what=f"reading project {project_id}"))


def find_project(client: LabelStudio, title: str) -> dict | None:
    title = project_title(title)
    for project in call(client.projects.list, title=title, what="listing projects"):
        data = _dump(project)
        if data.get("title") == title:
            return data
    return None


def project_config(project: dict, override: Config | None = None) -> Config:
    """The taxonomy config of a project: the given one, else the one embedded in its label config."""
    if override is not None:
        return override
    embedded = from_label_config(project.get("label_config") or "", source=f"project {project.get('id')}")
    if embedded is None:
        raise StudioError(f"project {project.get('id')} was not made by ls-trajeval (its label config has no "
                          "embedded taxonomy): pass --config with the YAML config it was made from")
    return embedded


# ---------------------------------------------------------------- tasks
def iter_tasks(client: LabelStudio, project_id: int, *, only_annotated: bool = False, page_size: int = 100,
               with_annotations: bool = True) -> Iterator[dict]:
    """Every task of a project as a dict, one page at a time (never the whole project in memory)."""
    page = 1
    while True:
        pager = call(client.tasks.list, project=project_id, page=page, page_size=page_size,
                     fields="all" if with_annotations else "task_only", only_annotated=only_annotated or None,
                     what=f"listing tasks of project {project_id}")
        items = list(pager.items or [])
        for task in items:
            yield _dump(task)
        # the SDK's own has_next is "this page was not empty", and the page after the last is a 404
        total = getattr(pager.response, "total", None)
        if len(items) < page_size or (total is not None and page * page_size >= total):
            return
        page += 1


def existing_values(client: LabelStudio, project_id: int, key: str, page_size: int = 1000) -> set[str]:
    """The values of ``data[key]`` over a project's tasks (the trace ids already imported)."""
    out = set()
    for task in iter_tasks(client, project_id, page_size=page_size, with_annotations=False):
        value = (task.get("data") or {}).get(key)
        if value is not None:
            out.add(str(value))
    return out


def import_tasks(client: LabelStudio, project_id: int, tasks: list[dict]) -> int:
    """Import one batch of tasks; returns how many Label Studio created."""
    resp = call(client.projects.import_tasks, id=project_id, request=tasks, return_task_ids=False,
                what=f"importing {len(tasks)} tasks")
    data = _dump(resp)
    return int(data.get("task_count") or len(tasks))


def users_by_id(client: LabelStudio) -> dict[int, dict]:
    out = {}
    for user in call(client.users.list, what="listing users"):
        u = _dump(user)
        out[u["id"]] = u
    return out


def create_annotation(client: LabelStudio, task_id: int, result: list[dict], **kwargs) -> dict:
    return _dump(call(client.annotations.create, id=task_id, result=result, what=f"annotating task {task_id}",
                      **kwargs))


def batched(items: Iterable, size: int) -> Iterator[list]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
