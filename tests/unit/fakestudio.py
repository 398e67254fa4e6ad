"""An in-memory stand-in for the few label_studio_sdk calls the import and export flows make, for unit tests of
their own logic (batching, skipping, counting, file writing). Everything Label Studio itself does is tested against
the real server in tests/studio/ and tests/pg/; this fake only keeps tasks in a list and answers as the SDK's client
would: the generated task list, the raw ``GET /api/tasks`` the export pages with (``include`` reaching into the
annotations, as Label Studio's flex fields do), and export snapshots (tasks in no particular order, as PostgreSQL
hands them out), or a 403 for them with ``snapshots=False``."""
from __future__ import annotations

import itertools
import json
import random
from types import SimpleNamespace

from label_studio_sdk.core.api_error import ApiError

NESTED = ("annotations", "predictions", "drafts")


class FakeResponse:
    def __init__(self, status_code: int, body):
        self.status_code, self.body, self.headers = status_code, body, {}

    def json(self):
        return json.loads(json.dumps(self.body))  # what comes over the wire is JSON


class FakeStudio:
    def __init__(self, label_config: str = "", tasks: list[dict] | None = None, users: list[dict] = (),
                 snapshots: bool = True, chunk: int = 97):
        self.projects = SimpleNamespace(get=self._get, create=self._create, import_tasks=self._import_tasks,
                                        exports=SimpleNamespace(create=self._create_snapshot, get=self._get_snapshot,
                                                                list=self._list_snapshots,
                                                                download=self._download_snapshot,
                                                                delete=self._delete_snapshot))
        self.tasks = SimpleNamespace(list=self._list_tasks)
        self.users = SimpleNamespace(list=lambda: list(users))
        self._client_wrapper = SimpleNamespace(httpx_client=SimpleNamespace(request=self._request))
        self.project = {"id": 7, "title": "fake", "label_config": label_config, "task_number": 0}
        self.stored: list[dict] = []
        self.batches: list[int] = []  # the size of every import request
        self.snapshots_allowed, self.chunk = snapshots, chunk
        self.snapshots: dict[int, dict] = {}  # the ones not deleted yet
        self.snapshots_made = 0
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

    def _request(self, path, method, params):
        """``GET /api/tasks`` as the export asks for it: keyed by id, ``include`` applied to the task and to what
        it nests, the ``draft_exists`` filter."""
        assert (path, method, params["fields"]) == ("api/tasks", "GET", "all")
        q = json.loads(params["query"])
        assert q["ordering"] == ["tasks:id"]
        tasks = sorted(self.stored, key=lambda t: t["id"])
        for f in q.get("filters", {}).get("items", []):
            if f["filter"] == "filter:tasks:id":
                tasks = [t for t in tasks if t["id"] > f["value"]]
            else:
                assert f["filter"] == "filter:tasks:draft_exists" and f["value"] is True
                tasks = [t for t in tasks if t.get("drafts")]
        keep = set(params["include"].split(","))

        def only(obj: dict) -> dict:
            return {k: [only(x) if isinstance(x, dict) else x for x in v] if k in NESTED else v
                    for k, v in obj.items() if k in keep}
        return FakeResponse(200, {"tasks": [only(t) for t in tasks[:params["page_size"]]], "total": len(tasks)})

    # export snapshots
    def _create_snapshot(self, id, title, serialization_options, request_options):
        assert id == self.project["id"]
        if not self.snapshots_allowed:
            raise ApiError(status_code=403, body={"detail": "You do not have permission to perform this action."})
        self.snapshots_made += 1
        with_predictions = not serialization_options.predictions.only_id
        tasks = []
        for t in self.stored:
            task = {**t, "drafts": [d.get("id") for d in t.get("drafts") or []]}
            if not with_predictions:
                task["predictions"] = [p.get("id") for p in t.get("predictions") or []]
            tasks.append(task)
        random.Random(self.snapshots_made).shuffle(tasks)
        snap = {"id": 100 + self.snapshots_made, "title": title, "status": "completed",
                "data": json.dumps(tasks, ensure_ascii=False).encode()}
        self.snapshots[snap["id"]] = snap
        return {k: v for k, v in snap.items() if k != "data"}

    def _get_snapshot(self, id, export_pk):
        return {k: v for k, v in self.snapshots[export_pk].items() if k != "data"}

    def _list_snapshots(self, id):
        return [self._get_snapshot(id, pk) for pk in self.snapshots]

    def _download_snapshot(self, id, export_pk, request_options):
        data = self.snapshots[export_pk]["data"]
        yield from (data[i:i + self.chunk] for i in range(0, len(data), self.chunk))

    def _delete_snapshot(self, id, export_pk):
        del self.snapshots[export_pk]
