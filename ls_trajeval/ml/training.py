"""The learned judges of a backend: trained from a project's labels in the background, kept in the model dir,
swapped in whole.

What starts a training: Label Studio's train action (``POST /train`` with the annotated tasks, or the
``START_TRAINING`` webhook event), and every annotation event (created, updated, deleted). Each is a key in a
:class:`~ls_trajeval.ml.queue.WorkQueue` of its own: a burst of events collapses into one training, and an
event during a training makes it run once more afterwards with the labels as they are then. The queue's thread
trains while the request threads keep serving the judge in use; the new judge is written beside its file and
renamed over it, then put in place with one assignment.

Every worker process serves the newest judge on disk: it looks at the file's modification time (at most once a
second) and loads a newer one. A lock file serialises trainings of one project across processes, and a
training whose labels are the ones the judge on disk learned from (same fingerprint, same version) is skipped.

A project's judges live under ``<model dir>/project-<id>.<created>/``: Label Studio names a project to its
backends by its id and creation time, so two Label Studio instances whose projects share an id never share a
judge. With too few labels the project keeps the rule detectors' suggestions and its status says why.
"""
from __future__ import annotations

import fcntl
import logging
import os
import pickle
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core import results
from ..core.config import Config
from ..core.jsonfiles import atomic_output
from ..core.trace import Trace, parse_trace
from . import detectors
from .learned import Example, LearnedJudge, NotEnoughLabels

log = logging.getLogger(__name__)

JUDGE_FILE = "judge.pickle"
#: seconds between two looks at a judge's file
RECHECK = 1.0
#: a project as Label Studio names it to backends (``/setup``, ``/predict``, ``/train``): "<id>.<created>"
PROJECT_UID = re.compile(r"^\d{1,12}(\.\d{1,12})?$")


def project_uid(project: Any) -> str | None:
    """The project as Label Studio names it to backends, ``"<id>.<created at, epoch seconds>"``: from a
    ``/predict``, ``/setup`` or ``/train`` body's ``project`` string, or from a webhook's project object."""
    if isinstance(project, str):
        return project if PROJECT_UID.match(project) else None
    if isinstance(project, Mapping) and isinstance(project.get("id"), int) and not isinstance(project["id"], bool):
        created = project.get("created_at")
        if isinstance(created, str):
            try:
                when = datetime.fromisoformat(created.replace("Z", "+00:00"))
            except ValueError:
                when = None
            if when is not None and when.tzinfo is not None:
                return f"{project['id']}.{int(when.timestamp())}"
        return str(project["id"])
    return None


def examples_from_tasks(tasks: Iterable[Mapping], config: Config,
                        active: list[detectors.ActiveDetector]) -> list[Example]:
    """A labelled example per submitted (not skipped) annotation of each task, in Label Studio's task JSON."""
    out = []
    for task in tasks:
        if not isinstance(task, Mapping) or not isinstance(task.get("data"), Mapping):
            continue
        trace = parse_trace(dict(task["data"]), source=f"task {task.get('id')}", id_key=config.id_key,
                            text_key=config.text_key, trace_key=config.trace_key)
        if not isinstance(trace, Trace) or not trace.steps:
            continue
        flagged = {i: f.detector for i, f in detectors.findings(active, trace.steps, config).items()}
        for ann in task.get("annotations") or []:
            if not isinstance(ann, Mapping) or ann.get("was_cancelled") or not isinstance(ann.get("result"), list):
                continue
            labels = results.decode(ann["result"], config, len(trace.steps))
            out.append(Example(trace, labels, group=str(task.get("id")), flagged=flagged))
    return out


class Judges:
    """The learned judges of every project this backend serves, on disk and in memory."""

    def __init__(self, model_dir: str | Path, base_version: str, config: Config,
                 active: list[detectors.ActiveDetector]):
        self.dir = Path(model_dir)
        self.base_version = base_version
        self.config = config
        self.active = active
        # uid -> (file's mtime, judge); replaced whole, never changed in place
        self._loaded: dict[str, tuple[float, LearnedJudge]] = {}
        self._looked: dict[str, float] = {}
        self._status: dict[str, dict] = {}
        self._lock = threading.Lock()

    def _path(self, uid: str) -> Path:
        if not PROJECT_UID.match(uid):  # never a path from a request
            raise ValueError(f"not a project id: {uid!r}")
        return self.dir / f"project-{uid}" / JUDGE_FILE

    def judge(self, uid: str | None) -> LearnedJudge | None:
        """The newest judge of a project, or None (never trained, too few labels, or no project named)."""
        if uid is None or not PROJECT_UID.match(uid):
            return None
        now = time.monotonic()
        held = self._loaded.get(uid)
        if held is not None and now - self._looked.get(uid, 0.0) < RECHECK:
            return held[1]
        self._looked[uid] = now
        path = self._path(uid)
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return held[1] if held else None
        if held is not None and held[0] == mtime:
            return held[1]
        try:
            with open(path, "rb") as fh:
                judge = pickle.load(fh)  # the backend's own file, in its own model dir (see docs/ml-backend.md)
        except Exception as exc:  # a file from an incompatible release, a torn copy: keep what we have
            log.warning("project %s: cannot load the learned judge (%s)", uid, type(exc).__name__)
            return held[1] if held else None
        if not getattr(judge, "version", "").startswith(self.base_version + "-learned-"):
            # learned under another config (taxonomy, detectors) or release: its labels may not exist here
            log.warning("project %s: the learned judge on disk is not for this config; retrain it", uid)
            return held[1] if held else None
        self._loaded[uid] = (mtime, judge)
        return judge

    def version(self, uid: str | None) -> str:
        judge = self.judge(uid)
        return judge.version if judge is not None else self.base_version

    def status(self) -> dict:
        """Per project: the judge in use (version, what it learned from) or why there is none."""
        out = {uid: dict(s) for uid, s in self._status.items()}
        for uid, (_, judge) in self._loaded.items():
            out.setdefault(uid, {}).update(version=judge.version, trained=judge.trained)
        return out

    def train(self, uid: str, examples: list[Example]) -> dict:
        """Train on ``examples``, persist and swap in; returns the project's status. Too few labels leave the
        judge in use (if any) and say so."""
        path = self._path(uid)
        path.parent.mkdir(parents=True, exist_ok=True)
        status: dict[str, Any]
        with open(path.parent / "train.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one training of a project at a time, across worker processes
            try:
                judge = LearnedJudge.train(examples, base_version=self.base_version,
                                           error_labels=self.config.trajectory.error_labels)
            except NotEnoughLabels as exc:
                status = {"state": "rules only", "reason": str(exc)}
                log.info("project %s: %s; suggesting with the rule detectors", uid, exc)
            else:
                current = self.judge(uid)
                if current is not None and current.version == judge.version:
                    status = {"state": "unchanged", "version": judge.version}
                else:
                    _write_atomically(path, pickle.dumps(judge, protocol=pickle.HIGHEST_PROTOCOL))
                    with self._lock:
                        self._loaded[uid] = (path.stat().st_mtime, judge)
                        self._looked[uid] = time.monotonic()
                    status = {"state": "trained", "version": judge.version, "trained": judge.trained}
                    log.info("project %s: learned judge %s (%s)", uid, judge.version, judge.trained)
        self._status[uid] = status
        return status


def _write_atomically(path: Path, data: bytes) -> None:
    # beside the target and renamed over it: a reader sees the old judge or the new one, never part of one
    # (synced to disk before the rename: the model dir outlives a crash of the machine)
    with atomic_output(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


class Trainer:
    """Trainings queued by project and run by a background thread; ``fetch(project_id)`` reads a project's
    annotated tasks from Label Studio, ``after(project_id, status)`` runs when a training ended (the model
    version follows in Label Studio)."""

    def __init__(self, judges: Judges, fetch: Callable[[int], Iterable[Mapping]] | None,
                 after: Callable[[int, dict], None] | None = None):
        from .queue import WorkQueue

        self.judges = judges
        self.fetch = fetch
        self.after = after
        self._given: dict[str, list[Mapping]] = {}  # tasks a /train request carried, by project
        self.queue = WorkQueue(self._run, workers=1)

    def request(self, uid: str, tasks: list[Mapping] | None = None) -> bool:
        """Queue a training of the project (on ``tasks`` when the request carried them, else on its labels read
        from Label Studio); False when there is no way to read them."""
        if tasks is not None:
            self._given[uid] = tasks
        elif self.fetch is None:
            return False
        self.queue.submit(("train", uid))
        return True

    def _run(self, key) -> None:
        uid = key[1]
        project_id = int(uid.split(".")[0])
        tasks = self._given.pop(uid, None)
        if tasks is None:
            if self.fetch is None:
                return
            tasks = list(self.fetch(project_id))
        examples = examples_from_tasks(tasks, self.judges.config, self.judges.active)
        status = self.judges.train(uid, examples)
        if self.after is not None and status.get("version"):  # "unchanged" too: a failed follow-up is retried
            self.after(project_id, status)
