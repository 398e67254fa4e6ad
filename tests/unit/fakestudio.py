"""An in-memory stand-in for the few label_studio_sdk calls the import and export flows make, for unit tests of
their own logic (batching, skipping, counting, file writing). Everything Label Studio itself does is tested against
the real server in tests/studio/; this fake only keeps tasks in a list and answers as the SDK's client would."""
from __future__ import annotations

import itertools
import json
from types import SimpleNamespace


class FakeStudio:
    def __init__(self, label_config: str = "", tasks: list[dict] | None = None, users: list[dict] = ()):
        self.projects = SimpleNamespace(get=self._get, create=self._create, import_tasks=self._import_tasks)
        self.tasks = SimpleNamespace(list=self._list_tasks)
        self.users = SimpleNamespace(list=lambda: list(users))
        self.views = SimpleNamespace(list=self._list_views, create=self._create_view, update=self._update_view)
        self.tabs: list[dict] = []
        # the one call the SDK has no method for: the Data Manager's columns, through the SDK's HTTP client
        self._client_wrapper = SimpleNamespace(httpx_client=SimpleNamespace(request=self._request))
        self.project = {"id": 7, "title": "fake", "label_config": label_config, "task_number": 0}
        self.stored: list[dict] = []
        self.batches: list[int] = []  # the size of every import request
        self._ids = itertools.count(1)
        for task in tasks or []:
            self._store(task)

    def _store(self, task: dict) -> None:
        self.stored.append({"id": next(self._ids), "project": self.project["id"], **task})
        self.project["task_number"] = len(self.stored)

    def _get(self, id):
        assert id == self.project["id"]
        return dict(self.project)

    def _create(self, title, label_config, **_):
        self.project.update(title=title, label_config=label_config)
        return dict(self.project)

    def _import_tasks(self, id, request, return_task_ids, request_options):
        self.batches.append(len(request))
        for task in json.loads(json.dumps(request)):  # what goes over the wire is JSON
            self._store(task)
        return {"task_count": len(request)}

    def _list_views(self, project):
        return [dict(t) for t in self.tabs if t["project"] == project]

    def _create_view(self, project, data):
        self.tabs.append({"id": len(self.tabs) + 1, "project": project, "data": json.loads(json.dumps(data))})
        return dict(self.tabs[-1])

    def _update_view(self, id, project, data):
        (tab,) = [t for t in self.tabs if str(t["id"]) == id and t["project"] == project]
        tab["data"] = json.loads(json.dumps(data))
        return dict(tab)

    def _request(self, path, method, params):
        """``api/dm/columns/``: the task-data fields (shown in the table, hidden beside a task) and one column of
        Label Studio's own that a new tab hides."""
        assert (path, method, params) == ("api/dm/columns/", "GET", {"project": self.project["id"]})
        keys = sorted({k for t in self.stored for k in t.get("data", {})})
        columns = [{"id": k, "parent": "data", "visibility_defaults": {"explore": True, "labeling": False}}
                   for k in keys]
        columns.append({"id": "inner_id", "visibility_defaults": {"explore": False, "labeling": False}})
        return SimpleNamespace(status_code=200, json=lambda: {"columns": columns}, text="")

    def _list_tasks(self, project, page, page_size, fields, only_annotated, include, query):
        """Keyed pages, as studio.client.iter_tasks asks for them: id order, ids above the filter's value."""
        q = json.loads(query)
        after = next((f["value"] for f in q.get("filters", {}).get("items", [])), 0)
        newest_first = q["ordering"] == ["-tasks:id"]
        tasks = sorted(self.stored, key=lambda t: t["id"], reverse=newest_first)
        items = [t for t in tasks if newest_first or t["id"] > after][:page_size]
        if fields == "task_only":
            items = [{k: v for k, v in t.items() if k not in ("annotations", "drafts")} for t in items]
        return SimpleNamespace(items=items)
