"""A thin layer over ``label_studio_sdk``: connect, projects, batched imports, paged task iteration.

Every call to Label Studio in this project goes through here. Values leave this module as plain
dicts (task and annotation JSON as Label Studio sends it), so the pure core never sees SDK types.
"""
from __future__ import annotations

import json
import os
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

# The SDK's generated client. Its subclass ``label_studio_sdk.LabelStudio`` only adds client-side export helpers,
# and importing it loads pandas, boto3, azure-storage and smart_open: about 170 MB of RSS in every command.
from label_studio_sdk.base_client import LabelStudioBase as LabelStudio
from label_studio_sdk.core.api_error import ApiError

from ..core import labelconfig
from ..core.config import Config
from ..core.errors import UserError
from ..core.fields import META_TRACE_ID, META_WINDOW

#: Retried with backoff: connection problems and the server's transient answers.
RETRY_STATUS = {429, 502, 503, 504}


class StudioError(UserError):
    """A Label Studio problem with a message fit for a user (no traceback)."""


def _describe_api_error(exc: ApiError) -> str:
    body = exc.body
    if isinstance(body, dict):
        parts = [body.get("detail"), body.get("validation_errors")]
        body = "; ".join(p if isinstance(p, str) else json.dumps(p, ensure_ascii=False) for p in parts if p) \
            or json.dumps(body, ensure_ascii=False)
    text = str(body)
    return f"HTTP {exc.status_code}: {text[:500]}"


#: How often a transient failure is retried (about 15 s of backoff at 5); $LS_TRAJEVAL_RETRIES overrides it.
DEFAULT_RETRIES = 5


def default_retries() -> int:
    try:
        return max(0, int(os.environ.get("LS_TRAJEVAL_RETRIES", DEFAULT_RETRIES)))
    except ValueError:
        return DEFAULT_RETRIES


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): 0.5, 1, 2, 4, 8, then 10, with jitter so that
    many clients hitting a restarting server do not come back in step."""
    return min(0.5 * 2 ** attempt, 10) * random.uniform(0.8, 1.2)


def call(fn, *args, retries: int | None = None, what: str = "Label Studio request", **kwargs):
    """Call an SDK function, retrying transient failures with exponential backoff."""
    retries = default_retries() if retries is None else retries
    for attempt in range(retries + 1):
        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            status = exc.status_code or 0
            if (status in RETRY_STATUS or status >= 500) and attempt < retries:
                time.sleep(backoff(attempt))
                continue
            if exc.status_code == 401:
                raise StudioError(f"{what}: the API key was refused (HTTP 401). Use a personal access token "
                                  "or a legacy token from Account & Settings.") from None
            raise StudioError(f"{what} failed: {_describe_api_error(exc)}") from None
        except (httpx.TransportError, ConnectionError) as exc:
            if attempt < retries:
                time.sleep(backoff(attempt))
                continue
            raise StudioError(f"{what}: cannot reach Label Studio ({type(exc).__name__}: {exc})") from None


def server_url(url: str | None = None) -> str:
    """``url`` or $LABEL_STUDIO_URL, without a trailing slash."""
    url = url or os.environ.get("LABEL_STUDIO_URL")
    if not url:
        raise StudioError("no Label Studio URL: pass --url or set LABEL_STUDIO_URL")
    return url.rstrip("/")


def connect(url: str | None = None, api_key: str | None = None, timeout: float = 120) -> LabelStudio:
    """A client for ``url`` (or $LABEL_STUDIO_URL) with ``api_key`` (or $LABEL_STUDIO_API_KEY).

    Both legacy tokens and personal access tokens work (the SDK refreshes the latter).
    """
    url = server_url(url)
    api_key = api_key or os.environ.get("LABEL_STUDIO_API_KEY")
    if not api_key:
        raise StudioError("no API key: pass --api-key or set LABEL_STUDIO_API_KEY")
    try:
        client = LabelStudio(base_url=url, api_key=api_key, timeout=timeout)
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
    """A new project labelled with ``config`` in ``layout`` (the generated label config, the config's instructions)."""
    return create_project_from_xml(client, title or config.annotation_task_name, labelconfig.generate(config, layout),
                                   expert_instruction=config.instructions or None,
                                   show_instruction=bool(config.instructions), show_skip_button=True,
                                   show_collab_predictions=config.suggestions.prelabel)


def create_project_from_xml(client: LabelStudio, title: str, xml: str, **settings: Any) -> dict:
    """A new project with the label config ``xml`` as it is (one ls-trajeval did not generate, for comparisons)."""
    return _dump(call(client.projects.create, title=project_title(title), label_config=xml, **settings,
                      what="creating the project"))


def validate_label_config(client: LabelStudio, project_id: int, xml: str) -> None:
    """Raises StudioError when Label Studio would refuse ``xml`` for this project (its annotations included)."""
    call(client.projects.validate_label_config, id=project_id, label_config=xml,
         what=f"checking the new label config against project {project_id}")


def set_label_config(client: LabelStudio, project_id: int, xml: str) -> dict:
    return _dump(call(client.projects.update, id=project_id, label_config=xml,
                      what=f"setting the label config of project {project_id}"))


def get_project(client: LabelStudio, project_id: int) -> dict:
    return _dump(call(client.projects.get, id=project_id, what=f"reading project {project_id}"))


def _projects(client: LabelStudio, **filters) -> Iterator[dict]:
    try:
        for project in call(client.projects.list, **filters, what="listing projects"):
            yield _dump(project)
    except ApiError as exc:  # the generated pager asks for the page after the last one: a 404
        if exc.status_code != 404:
            raise StudioError(f"listing projects failed: {_describe_api_error(exc)}") from None


def find_project(client: LabelStudio, title: str) -> dict | None:
    title = project_title(title)
    return next((p for p in _projects(client, title=title) if p.get("title") == title), None)


def update_project(client: LabelStudio, project_id: int, **settings: Any) -> dict:
    """Set project settings (``description``, ``show_collab_predictions``, ...)."""
    return _dump(call(client.projects.update, id=project_id, **settings, what=f"updating project {project_id}"))


def projects_described(client: LabelStudio, text: str) -> list[dict]:
    """The projects whose description holds ``text`` as one of its lines."""
    return [p for p in _projects(client) if text in (p.get("description") or "").splitlines()]


def views(client: LabelStudio, project_id: int) -> list[dict]:
    """The project's Data Manager tabs (``{"id", "data": {"title", "ordering", ...}}``)."""
    return [_dump(v) for v in call(client.views.list, project=project_id,
                                   what=f"listing the tabs of project {project_id}")]


def _columns(client: LabelStudio, project_id: int) -> list[dict]:
    # the SDK has no call for the Data Manager's columns: its own HTTP client asks, as it does for every call
    response = client._client_wrapper.httpx_client.request("api/dm/columns/", method="GET",
                                                           params={"project": project_id})
    if response.status_code >= 400:
        raise ApiError(status_code=response.status_code, body=response.text)
    return list(response.json().get("columns") or [])


def _column_id(column: dict) -> str:
    """A column's id in a tab's settings: ``tasks:data.KEY`` for a task-data field, ``tasks:NAME`` for the others."""
    parent = column.get("parent")
    return f"tasks:{parent}.{column['id']}" if parent else f"tasks:{column['id']}"


def _hidden_columns(client: LabelStudio, project_id: int) -> dict[str, list[str]]:
    """The columns a new tab hides, in the table (``explore``) and beside an open task (``labeling``): those
    Label Studio's own first tab hides, by each column's ``visibility_defaults``."""
    columns = [c for c in call(_columns, client, project_id, what=f"listing the columns of project {project_id}")
               if c.get("visibility_defaults")]
    return {mode: [_column_id(c) for c in columns if not c["visibility_defaults"].get(mode, True)]
            for mode in ("explore", "labeling")}


def _number_types(fields: tuple[str, ...] | list[str]) -> dict[str, str]:
    return {f"tasks:data.{f}": "Number" for f in fields}


def find_tab(client: LabelStudio, project_id: int, title: str) -> dict | None:
    """The project's Data Manager tab called ``title`` (``{"id", "data"}``), or None."""
    return next((v for v in views(client, project_id) if (v.get("data") or {}).get("title") == title), None)


def ensure_tab(client: LabelStudio, project_id: int, title: str, *, ordering: list[str] | None = None,
               numbers: tuple[str, ...] = (), beside_task: tuple[str, ...] = (), filters: dict | None = None) -> dict:
    """The project's Data Manager tab called ``title``, made when there is none: the columns hidden as in Label
    Studio's own first tab (but the task-data fields ``beside_task`` shown next to an open task too), sorted by
    ``ordering`` (``["-tasks:data.KEY"]``), the task-data fields ``numbers`` typed as numbers, showing only the
    tasks ``filters`` lets through (``{"conjunction": "and", "items": [{"filter": "filter:tasks:data.KEY",
    "operator": "equal", "type": "String", "value": ...}]}``). Returns the tab (``{"id", "data"}``)."""
    found = find_tab(client, project_id, title)
    if found is not None:
        return found
    hidden = _hidden_columns(client, project_id)
    shown = {f"tasks:data.{f}" for f in beside_task}
    hidden["labeling"] = [c for c in hidden["labeling"] if c not in shown]
    data: dict[str, Any] = {"title": title, "type": "list", "target": "tasks", "hiddenColumns": hidden,
                            "columnsDisplayType": _number_types(numbers)}
    if ordering:
        data["ordering"] = ordering
    if filters is not None:
        data["filters"] = filters
    return _dump(call(client.views.create, project=project_id, data=data,
                      what=f"adding the tab {title!r} to project {project_id}"))


def number_columns(client: LabelStudio, project_id: int, fields: tuple[str, ...]) -> int:
    """Every tab of the project shows the task-data ``fields`` as numbers: sorted and filtered as numbers, where
    Label Studio types every data column as text (so 10 sorts before 9 where the database compares text). A
    project nobody has opened yet gets the tab Label Studio would make ("Default"). Returns how many tabs changed;
    a type someone chose in a tab's column menu stays."""
    tabs = views(client, project_id)
    if not tabs:
        ensure_tab(client, project_id, "Default", numbers=fields)
        return 1
    changed = 0
    for tab in tabs:
        data = dict(tab.get("data") or {})
        types = dict(data.get("columnsDisplayType") or {})
        missing = {k: v for k, v in _number_types(fields).items() if k not in types}
        if missing:
            data["columnsDisplayType"] = {**types, **missing}
            call(client.views.update, id=str(tab["id"]), project=project_id, data=data,
                 what=f"typing the number columns of tab {tab['id']}")
            changed += 1
    return changed


# ---------------------------------------------------------------- tasks
def iter_tasks(client: LabelStudio, project_id: int, *, only_annotated: bool = False, page_size: int = 100,
               with_annotations: bool = True, include: str | None = None) -> Iterator[dict]:
    """Every task of a project as a dict, one page at a time (never the whole project in memory), in id order.

    Pages are keyed by task id ("id > the last one seen"), not numbered: a numbered page is an OFFSET, which
    the database walks from the start, so paging through 100,000 tasks by number costs quadratic time; and a
    task added or deleted meanwhile cannot shift one page onto the next. ``include`` ("id,meta") asks for only
    those fields: Label Studio's REST flex-fields parameter.
    """
    if include and "id" not in include.split(","):
        include = "id," + include
    last = None
    while True:
        query: dict[str, Any] = {"ordering": ["tasks:id"]}
        if last is not None:
            query["filters"] = {"conjunction": "and", "items": [
                {"filter": "filter:tasks:id", "operator": "greater", "type": "Number", "value": last}]}
        pager = call(client.tasks.list, project=project_id, page=1, page_size=page_size,
                     fields="all" if with_annotations else "task_only", only_annotated=only_annotated or None,
                     include=include, query=json.dumps(query), what=f"listing tasks of project {project_id}")
        items = [_dump(task) for task in (pager.items or [])]
        yield from items
        if len(items) < page_size:
            return
        last = items[-1]["id"]


def _get_json(client: LabelStudio, path: str, params: dict) -> Any:
    """GET ``path`` through the SDK's own HTTP client (its base URL, authentication and token refresh), the answer
    as plain JSON. The generated client would build its models from every task and the export would dump them
    back to dicts: the same values (tested), at more client time than building the export records."""
    response = client._client_wrapper.httpx_client.request(path, method="GET", params=params)
    if not 200 <= response.status_code < 300:
        try:
            body = response.json()
        except ValueError:
            body = response.text
        raise ApiError(status_code=response.status_code, headers=dict(response.headers), body=body)
    return response.json()


def _keyed_pages(client: LabelStudio, project_id: int, params: dict, page_size: int,
                 filters: tuple[dict, ...] = ()) -> Iterator[list[dict]]:
    """Pages of ``GET /api/tasks`` in id order, keyed by the last id seen (see :func:`iter_tasks`)."""
    last = None
    while True:
        items = [*filters]
        if last is not None:
            items.append({"filter": "filter:tasks:id", "operator": "greater", "type": "Number", "value": last})
        query: dict = {"ordering": ["tasks:id"]}
        if items:
            query["filters"] = {"conjunction": "and", "items": items}
        page = call(_get_json, client, "api/tasks", {**params, "project": project_id, "page": 1,
                                                     "page_size": page_size, "query": json.dumps(query)},
                    what=f"listing tasks of project {project_id}")
        tasks = (page.get("tasks") or []) if isinstance(page, dict) else page
        yield tasks
        if len(tasks) < page_size:
            return
        last = tasks[-1]["id"]


def _read_ahead(pages: Iterator[list[dict]], depth: int = 1) -> Iterator[list[dict]]:
    """``pages`` fetched by a background thread up to ``depth`` ahead, so the caller's work on one page overlaps
    Label Studio's on the next. An error in the thread is raised here, in order; closing the generator stops it."""
    done = object()
    ahead: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ahead.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def fetch() -> None:
        try:
            for page in pages:
                if not put(page):
                    return
            put(done)
        except BaseException as exc:  # handed to the consumer, which raises it
            put(exc)

    worker = threading.Thread(target=fetch, name="ls-trajeval page reader", daemon=True)
    worker.start()
    try:
        while True:
            item = ahead.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()


#: Tasks a page when reading a whole project. Each page costs Label Studio a count of the tasks left and the Data
#: Manager's set-up besides its tasks (about a tenth of a second here): 500 a page spent a fifth less of its CPU
#: than 100, 1,000 little less than 500 for half as much memory again (10,000 tasks, benchmarks/bench_export.py).
PAGE_SIZE = 500


def iter_tasks_with(client: LabelStudio, project_id: int, fields: Sequence[str], *,
                    page_size: int = PAGE_SIZE) -> Iterator[dict]:
    """Every task of a project in id order, with only ``fields`` (of the task and of its annotations and
    predictions alike: Label Studio's ``include`` reaches into them), the next page read while the caller works
    on this one.

    Label Studio lists annotations and predictions only with ``fields=all``; ``include`` then keeps it from
    serialising what the caller never reads (the Data Manager's columns; the user's drafts, one query per task).
    """
    params = {"fields": "all", "include": ",".join(dict.fromkeys(fields))}
    for page in _read_ahead(_keyed_pages(client, project_id, params, page_size)):
        yield from page


def count_own_drafts(client: LabelStudio, project_id: int, page_size: int = PAGE_SIZE) -> int:
    """How many drafts the API key's user has in a project (the drafts Label Studio's task list shows), reading
    only the tasks that have a draft at all."""
    has_draft = {"filter": "filter:tasks:draft_exists", "operator": "equal", "type": "Boolean", "value": True}
    params = {"fields": "all", "include": "id,drafts"}
    return sum(len(task.get("drafts") or []) for page in _keyed_pages(client, project_id, params, page_size,
                                                                       (has_draft,)) for task in page)


def existing_values(client: LabelStudio, project_id: int, key: str, page_size: int = 1000) -> set[str]:
    """The values of ``data[key]`` over a project's tasks (the trace ids already imported)."""
    out = set()
    for task in iter_tasks(client, project_id, page_size=page_size, with_annotations=False):
        value = (task.get("data") or {}).get(key)
        if value is not None:
            out.add(str(value))
    return out


def task_key(meta: Any) -> tuple[str, int | None] | None:
    """What tells an imported task apart, from its ``meta``: its trace id and, for a window of a long trace, the
    window's number (None for a whole trace); None for a task imported without them (by another tool)."""
    if not isinstance(meta, dict) or meta.get(META_TRACE_ID) is None:
        return None
    window = meta.get(META_WINDOW)
    return str(meta[META_TRACE_ID]), window if isinstance(window, int) and not isinstance(window, bool) else None


def existing_tasks(client: LabelStudio, project_id: int, id_key: str,
                   page_size: int = 5000) -> dict[str, set[int | None]]:
    """The trace ids a project holds, each with the windows it holds of it (None: the whole trace), read from task
    ``meta``; tasks imported without it (by other tools or older versions) are read from their data, as whole
    traces."""
    out: dict[str, set[int | None]] = {}
    legacy = False
    for task in iter_tasks(client, project_id, page_size=page_size, with_annotations=False, include="id,meta"):
        key = task_key(task.get("meta"))
        if key is None:
            legacy = True
        else:
            out.setdefault(key[0], set()).add(key[1])
    if legacy:
        for value in existing_values(client, project_id, id_key):
            out.setdefault(value, set()).add(None)
    return out


def task_ids_by_trace(client: LabelStudio, project_id: int, page_size: int = 5000) -> dict[str, int]:
    """Task ids of a project's tasks by trace id (from task ``meta``: a few bytes a task); a trace worked in windows
    by its first window's task."""
    out = {}
    for task in iter_tasks(client, project_id, page_size=page_size, with_annotations=False, include="id,meta"):
        key = task_key(task.get("meta"))
        if key is not None and key[1] in (None, 0):
            out[key[0]] = task["id"]
    return out


def first_tasks(client: LabelStudio, project_id: int, ordering: list[str], n: int,
                include: str | None = None) -> list[dict]:
    """The project's first ``n`` tasks in the Data Manager's ``ordering`` (``["-tasks:data.KEY"]``), without
    annotations; ``include`` ("id,meta") asks for only those fields."""
    pager = call(client.tasks.list, project=project_id, page=1, page_size=max(1, n), fields="task_only",
                 include=include, query=json.dumps({"ordering": ordering}),
                 what=f"listing the tasks of project {project_id}")
    return [_dump(t) for t in (pager.items or [])]


def recent_task_keys(client: LabelStudio, project_id: int, n: int) -> set[tuple[str, int | None]]:
    """The :func:`task_key` of each of the project's ``n`` newest tasks."""
    return {k for t in first_tasks(client, project_id, ["-tasks:id"], n, include="id,meta")
            if (k := task_key(t.get("meta"))) is not None}


@dataclass
class Rejected:
    task: dict
    message: str


#: Answers that say the request did not get through (or its outcome is unknown), worth sending again.
TRANSIENT_STATUS = {408, 429, 502, 503, 504}


def import_batch(client: LabelStudio, project_id: int, tasks: list[dict], *, retries: int | None = None,
                 on_rejected: Callable[[Rejected], None] | None = None) -> int:
    """Import a batch exactly once; returns how many of its tasks are now in the project.

    A lost answer (connection reset, server killed, 5xx) leaves it unknown whether the batch was stored, so
    before sending again the newest tasks are checked for the batch's trace ids (``meta``; tasks built by
    the importer carry them) and those already there are not sent twice. A batch that Label Studio refuses
    (400, or a 500 that repeats, as PostgreSQL's refusal of ``\\u0000`` in JSON is) is split in halves until
    the refused tasks are found; they go to ``on_rejected`` and the rest is imported.
    """
    retries = default_retries() if retries is None else retries
    what = f"importing {len(tasks)} tasks"
    for attempt in range(retries + 1):
        try:
            # the SDK's own retries resend blindly, which can store a batch twice: only ours, which check first
            data = _dump(client.projects.import_tasks(id=project_id, request=tasks, return_task_ids=False,
                                                      request_options={"max_retries": 0}))
            return int(data.get("task_count") or len(tasks))
        except ApiError as exc:
            status = exc.status_code or 0
            message = " ".join(_describe_api_error(exc).split())[:300]
            if status in (400, 413, 422):
                return _split_rejected(client, project_id, tasks, message, retries, on_rejected)
            if status == 500 and _healthy(client, project_id):
                # the server is fine and still failed on this batch: its content is the cause
                tasks, stored = _drop_stored(client, project_id, tasks)
                return stored + _split_rejected(client, project_id, tasks, message, retries, on_rejected)
            if status == 401:
                raise StudioError(f"{what}: the API key was refused (HTTP 401)") from None
            if not (status in TRANSIENT_STATUS or status >= 500) or attempt == retries:
                raise StudioError(f"{what} failed: {message}") from None
        except (UnicodeError, ValueError, TypeError) as exc:  # the client could not even encode the request
            return _split_rejected(client, project_id, tasks, f"not sendable: {exc}", retries, on_rejected)
        except (httpx.TransportError, ConnectionError) as exc:
            if attempt == retries:
                raise StudioError(f"{what}: cannot reach Label Studio ({type(exc).__name__}: {exc})") from None
        time.sleep(backoff(attempt))
        try:
            tasks, stored = _drop_stored(client, project_id, tasks)
        except StudioError:
            continue  # still down: the next attempt finds out again
        if stored:
            return stored + (import_batch(client, project_id, tasks, retries=retries, on_rejected=on_rejected)
                             if tasks else 0)
    raise AssertionError("unreachable")


def _drop_stored(client, project_id, tasks) -> tuple[list[dict], int]:
    """The tasks of a batch whose keys (trace id, window) are not among the project's newest tasks, and how many
    were."""
    keys = [task_key(t.get("meta")) for t in tasks]
    if not tasks or any(k is None for k in keys):
        return tasks, 0
    present = recent_task_keys(client, project_id, len(tasks))
    rest = [t for t, k in zip(tasks, keys) if k not in present]
    return rest, len(tasks) - len(rest)


def _healthy(client, project_id) -> bool:
    try:
        call(client.projects.get, id=project_id, retries=0, request_options={"max_retries": 0})
        return True
    except StudioError:
        return False


def _split_rejected(client, project_id, tasks, message, retries, on_rejected) -> int:
    if not tasks:
        return 0
    if len(tasks) == 1:
        if on_rejected:
            on_rejected(Rejected(tasks[0], message))
        return 0
    half = len(tasks) // 2
    return sum(import_batch(client, project_id, part, retries=retries, on_rejected=on_rejected)
               for part in (tasks[:half], tasks[half:]))


def users_by_id(client: LabelStudio) -> dict[int, dict]:
    """Every user of the instance by id (``{"id", "email", "username", ...}``)."""
    users = (_dump(user) for user in call(client.users.list, what="listing users"))
    return {u["id"]: u for u in users}


def ensure_user(client: LabelStudio, email: str, username: str | None = None) -> dict:
    """The user with this email (an annotator), created when there is none; Label Studio makes a new user a
    member of the organisation of the API key's user."""
    for user in users_by_id(client).values():
        if user.get("email") == email:
            return user
    return _dump(call(client.users.create, email=email, username=username or email.split("@")[0],
                      what=f"creating the user {email}"))


def create_annotation(client: LabelStudio, task_id: int, result: list[dict], **kwargs) -> dict:
    return _dump(call(client.annotations.create, id=task_id, result=result, what=f"annotating task {task_id}",
                      **kwargs))


# ---------------------------------------------------------------- ML backend: tasks, write-back, connection
def get_task(client: LabelStudio, task_id: int) -> dict:
    return _dump(call(client.tasks.get, id=str(task_id), what=f"reading task {task_id}"))


def task_annotations(client: LabelStudio, task_id: int) -> list[dict]:
    return [_dump(a) for a in call(client.annotations.list, id=task_id, what=f"listing annotations of task {task_id}")]


def update_task_data(client: LabelStudio, task_id: int, fields: dict, data: dict | None = None) -> dict:
    """Set ``fields`` in a task's data. Label Studio's update REPLACES data, so merge into the current dict
    (``data`` when the caller just read it) or the trace itself would be lost."""
    if data is None:
        data = get_task(client, task_id).get("data") or {}
    merged = {**data, **fields}
    return _dump(call(client.tasks.update, id=str(task_id), data=merged, what=f"updating task {task_id}"))


def create_prediction(client: LabelStudio, task_id: int, prediction: dict) -> dict:
    """``prediction``: ``{"model_version", "score", "result"}`` (as an import carries it)."""
    return _dump(call(client.predictions.create, task=task_id, **prediction,
                      what=f"adding a prediction to task {task_id}"))


def update_prediction(client: LabelStudio, prediction_id: int, prediction: dict) -> dict:
    return _dump(call(client.predictions.update, id=prediction_id, **prediction,
                      what=f"updating prediction {prediction_id}"))


def delete_prediction(client: LabelStudio, prediction_id: int) -> None:
    call(client.predictions.delete, id=prediction_id, what=f"deleting prediction {prediction_id}")


def whoami(client: LabelStudio) -> dict:
    """The user the API key belongs to."""
    return _dump(call(client.users.whoami, what="reading the current user"))


def task_predictions(client: LabelStudio, task_id: int) -> list[dict]:
    """The predictions of a task."""
    return [_dump(p) for p in call(client.predictions.list, task=task_id,
                                   what=f"listing predictions of task {task_id}")]


def ml_backends(client: LabelStudio, project_id: int) -> list[dict]:
    """The ML backends connected to a project (``{"id", "url", "auth_method", "is_interactive", ...}``)."""
    return [_dump(b) for b in call(client.ml.list, project=project_id, what="listing ML backends")]


def remove_ml_backend(client: LabelStudio, backend_id: int) -> None:
    """Disconnect an ML backend (its row goes; the predictions it made stay)."""
    call(client.ml.delete, id=backend_id, what=f"removing ML backend {backend_id}")


def webhooks(client: LabelStudio, project_id: int) -> list[dict]:
    """The webhooks of a project (``{"id", "url", "actions", "headers", ...}``)."""
    return [_dump(h) for h in call(client.webhooks.list, project=str(project_id), what="listing webhooks")]


def webhooks_to(client: LabelStudio, project_id: int, url: str) -> list[dict]:
    """The project's webhooks that call ``url``."""
    return [h for h in webhooks(client, project_id)
            if (h.get("url") or "").rstrip("/") == url.rstrip("/") and h.get("project") == project_id]


def remove_webhook(client: LabelStudio, hook_id: int) -> None:
    """Delete a webhook."""
    call(client.webhooks.delete, id=hook_id, what=f"removing webhook {hook_id}")


def ensure_ml_backend(client: LabelStudio, project_id: int, url: str, *, title: str, interactive: bool = True,
                      user: str | None = None, password: str | None = None) -> tuple[dict, list[str]]:
    """Register (or update) the ML backend at ``url`` for a project; returns it and what changed."""
    url = url.rstrip("/")
    auth = {"auth_method": "BASIC_AUTH", "basic_auth_user": user, "basic_auth_pass": password} if user else \
        {"auth_method": "NONE"}
    mine = [b for b in ml_backends(client, project_id) if (b.get("url") or "").rstrip("/") == url]
    if not mine:
        backend = _dump(call(client.ml.create, project=project_id, url=url, title=title, is_interactive=interactive,
                             **auth, what=f"connecting the ML backend {url}"))
        return backend, [f"registered ML backend {url} (id {backend.get('id')})"]
    backend = mine[0]
    if title == "ls-trajeval" and backend.get("title"):
        title = backend["title"]  # keep the version title a previous connect gave it
    changes = []
    if bool(backend.get("is_interactive")) != interactive:
        changes.append(f"interactive pre-annotations {'on' if interactive else 'off'}")
    if (backend.get("auth_method") or "NONE") != auth["auth_method"] \
            or (user and backend.get("basic_auth_user") != user):
        changes.append(f"authentication {auth['auth_method']}")
    # url= and project= are required alongside auth_method, or Label Studio answers 500 (facts sheet)
    backend = _dump(call(client.ml.update, id=backend["id"], url=url, project=project_id, title=title,
                         is_interactive=interactive, **auth, what=f"updating ML backend {backend['id']}"))
    return backend, changes


def retitle_ml_backend(client: LabelStudio, backend: dict, title: str) -> dict:
    """Give a connected backend (as :func:`ml_backends` lists it) a new title, its other settings as they are."""
    # Label Studio checks the backend again on every update, with the authentication the update itself names:
    # without it a Basic-auth backend answers 401 and the update is refused. An empty password keeps the stored one.
    auth = {"auth_method": "BASIC_AUTH", "basic_auth_user": backend.get("basic_auth_user"), "basic_auth_pass": ""} \
        if backend.get("auth_method") == "BASIC_AUTH" else {"auth_method": "NONE"}
    return _dump(call(client.ml.update, id=backend["id"], url=backend["url"], project=backend["project"], title=title,
                      **auth, what=f"retitling ML backend {backend['id']}"))


def ensure_webhook(client: LabelStudio, project_id: int, url: str, actions: list[str],
                   headers: dict | None = None) -> tuple[dict, list[str]]:
    """The project's webhook to ``url``, with these actions and headers (created or updated)."""
    mine = webhooks_to(client, project_id, url)
    args: dict[str, Any] = dict(url=url, actions=actions, headers=headers or {}, send_payload=True,
                                send_for_all_actions=False, is_active=True)
    if not mine:
        hook = _dump(call(client.webhooks.create, project=project_id, **args, what="creating the webhook"))
        return hook, [f"created webhook {url} for {', '.join(actions)}"]
    hook = mine[0]
    changes = []
    if sorted(hook.get("actions") or []) != sorted(actions) or hook.get("send_for_all_actions"):
        changes.append(f"webhook sends only {', '.join(actions)}")
    if (hook.get("headers") or {}) != (headers or {}):
        changes.append("webhook headers set (authentication)" if headers else "webhook headers cleared")
    call(client.webhooks.update, id=hook["id"], **args, what=f"updating webhook {hook['id']}")
    return hook, changes


def set_project_predictions(client: LabelStudio, project_id: int, model_version: str) -> list[str]:
    """Retrieve predictions when a task opens, under the backend's model version (so "Retrieve predictions" and
    /next do not pile up copies). Whether annotators start from them ("use predictions to prelabel tasks", on in a
    new project) stays the team's choice (:func:`set_prelabel`)."""
    project = get_project(client, project_id)
    changes = []
    if project.get("model_version") != model_version:
        changes.append(f"project model version {project.get('model_version')!r} -> {model_version!r}")
    if not project.get("evaluate_predictions_automatically"):
        changes.append("retrieve predictions when a task opens: on")
    if changes:
        call(client.projects.update, id=project_id, model_version=model_version,
             evaluate_predictions_automatically=True, what=f"updating project {project_id}")
    return changes


def set_prelabel(client: LabelStudio, project_id: int, prelabel: bool, model_version: str | None = None) -> list[str]:
    """Whether annotators start from the predictions of ``model_version`` (Label Studio's "use predictions to
    prelabel tasks"; the label stream fills a new annotation from that version's prediction) or from a blank
    trace (off: the label stream sends no predictions, and Label Studio clears the project's model version)."""
    project = get_project(client, project_id)
    changes = []
    settings: dict[str, Any] = {}
    if bool(project.get("show_collab_predictions")) != prelabel:
        settings["show_collab_predictions"] = prelabel
        changes.append(f"use predictions to prelabel tasks: {'on' if prelabel else 'off'}")
    if prelabel and model_version and project.get("model_version") != model_version:
        settings["model_version"] = model_version
        changes.append(f"project model version {project.get('model_version')!r} -> {model_version!r}")
    if settings:
        call(client.projects.update, id=project_id, **settings, what=f"updating project {project_id}")
    return changes


def retrieve_predictions(client: LabelStudio, project_id: int) -> None:
    """The Data Manager's "Retrieve predictions" on every task of a project."""
    call(client.actions.create, id="retrieve_tasks_predictions", project=project_id,
         selected_items={"all": True, "excluded": []}, what=f"retrieving predictions for project {project_id}")
