"""``ls-trajeval demo``: a local Label Studio on SQLite with a project of bundled sample traces, and the ML
backend beside it (loopback, Basic auth with credentials generated once and kept in the data dir), connected
to the project so that the samples open with its suggested steps and a live running score."""
from __future__ import annotations

import importlib.util
import json
import secrets
import shlex
import signal
import socket
import threading
from importlib import resources
from pathlib import Path

import platformdirs

from ..core.config import Config
from ..core.errors import UserError
from ..core.jsonfiles import TraceError, atomic_output, load_located
from ..ml.connect import connect_backend
from ..ml.serve import Backend, BackendError, stop
from ..studio import client as studio
from ..studio.localserver import Credentials, LocalLabelStudio, ServerError, free_port
from ..studio.urls import label_stream_url
from .importer import import_traces, read_inputs


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("ls-trajeval")) / "label-studio"


def sample_traces() -> Path:
    return Path(str(resources.files("ls_trajeval") / "samples" / "traces.jsonl"))


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        # as the servers bind it: a port whose last connections are still closing (TIME_WAIT) is free to them
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


#: the demo backend's Basic-auth credentials and port, kept beside Label Studio's own (``localserver.STATE_FILE``)
BACKEND_STATE = "ml-backend.json"


def _backend_state(data_dir: Path) -> dict:
    """Generated on the first run, the same on every rerun (the project's backend row and webhook carry them)."""
    path = data_dir / BACKEND_STATE
    if path.exists():
        state = load_located(path)
        if isinstance(state, TraceError):
            raise UserError(f"{state} (delete it to start the demo's ML backend afresh)")
        return state
    state = {"user": "ls-trajeval-demo", "password": secrets.token_urlsafe(24), "port": 0}
    with atomic_output(path) as fh:
        fh.write(json.dumps(state))
    path.chmod(0o600)
    return state


def _forget_backend(client, project_id: int, url: str) -> None:
    """The project's ML backend row and webhook for a backend address no longer used (its port was taken)."""
    for b in studio.ml_backends(client, project_id):
        if (b.get("url") or "").rstrip("/") == url:
            studio.remove_ml_backend(client, b["id"])
    for h in studio.webhooks_to(client, project_id, url + "/webhook"):
        studio.remove_webhook(client, h["id"])


def _start_backend(data_dir: Path, server: LocalLabelStudio, client, project_id: int, config: Config, echo=print):
    """The ML backend, started the way ``ls-trajeval ml serve`` starts it, connected to the demo project, the
    samples' suggestions retrieved; returns the backend and its process, or None when the ``ml`` extra is
    missing (the demo then runs without suggestions and live score, and says so)."""
    if any(importlib.util.find_spec(m) is None for m in ("flask", "gunicorn")):
        echo("ML backend: not started (pip install 'ls-trajeval[ml]' for suggested steps and the live score)")
        return None
    state = _backend_state(data_dir)
    port = state["port"] if state["port"] and _port_free(state["port"]) else free_port()
    if state["port"] and port != state["port"]:
        _forget_backend(client, project_id, f"http://127.0.0.1:{state['port']}")
    if port != state["port"]:
        state["port"] = port
        with atomic_output(data_dir / BACKEND_STATE) as fh:  # the file keeps its permissions (0600)
            fh.write(json.dumps(state))
    backend = Backend(config, port=port, user=state["user"], password=state["password"], studio_url=server.url,
                      api_key=_credentials(server).token, model_dir=str(data_dir / "ml-models"))
    echo(f"starting the ML backend on {backend.url} ...")
    with open(data_dir / "ml-backend.log", "ab") as log:
        proc = backend.start(log=log, own_session=True)
    try:
        backend.wait_ready(proc)
        changes = connect_backend(client, project_id, backend.url, user=backend.user, password=backend.password)
        echo("ML backend connected: " + ("; ".join(changes) if changes else "as before"))
        studio.retrieve_predictions(client, project_id)
    except (BackendError, studio.StudioError):
        stop(proc)
        raise
    return backend, proc


def _credentials(server: LocalLabelStudio) -> Credentials:
    if server.credentials is None:
        raise ServerError("Label Studio is not started")
    return server.credentials


def run_demo(data_dir: str | None, port: int, config: Config, layout: str = "transcript", *, wait: bool = True,
             echo=print) -> dict:
    """Start (or reuse) the local instance, its demo project and the ML backend; serve until Ctrl-C when ``wait``."""
    directory = Path(data_dir) if data_dir else default_data_dir()
    if not port or not _port_free(port):
        port = free_port()
    server = LocalLabelStudio(directory, port, log=echo)
    echo(f"starting Label Studio from {directory} ...")
    server.start()
    creds = _credentials(server)
    ml = None
    try:
        client = studio.connect(server.url, creds.token)
        title = f"ls-trajeval demo ({layout} layout)"
        project = studio.find_project(client, title)
        if project is None:
            project = studio.create_project(client, config, layout, title)
            echo(f"created project {project['id']}: {title}")
        else:
            echo(f"reusing project {project['id']}: {title}")
        summary = import_traces(client, project["id"], read_inputs([sample_traces()], config), config, progress=False)
        echo(f"sample traces: imported {summary.imported}, already there {summary.skipped}")
        try:
            ml = _start_backend(directory, server, client, project["id"], config, echo)
        except BackendError as exc:
            echo(f"ML backend: not started ({exc}; see {directory / 'ml-backend.log'})")
        echo("")
        echo(f"  Label Studio:  {server.url}/projects/{project['id']}/data")
        echo(f"  annotate:      {label_stream_url(server.url, project['id'])}")
        echo(f"  log in as:     {creds.email}")
        echo(f"  password:      {creds.password}")
        if ml:
            echo(f"  ML backend:    {ml[0].url} (suggested steps, live score, score write-back)")
        echo("")
        echo("  next, in another terminal:")
        echo(f"    export LABEL_STUDIO_URL={server.url} LABEL_STUDIO_API_KEY={creds.token}")
        echo(f"    ls-trajeval export --project {project['id']} -o output/annotations.jsonl")
        echo(f"    ls-trajeval import my_traces.jsonl --project {project['id']}")
        echo("    ls-trajeval report output/")
        if ml:
            # the password stays in its file (never printed): the line reads it there when it runs
            state = shlex.quote(str(directory / BACKEND_STATE))
            echo("  the ML backend for a project of your own (import --create makes one without it):")
            echo(f"    ls-trajeval ml connect --project ID --backend-url {ml[0].url} --basic-auth-user {ml[0].user} "
                 "--basic-auth-password \"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))"
                 f"[sys.argv[2]])' {state} password)\"")
        info = {"url": server.url, "project": project["id"], "imported": summary.imported,
                "skipped": summary.skipped, "ml_backend": ml[0].url if ml else None, **creds.__dict__}
        if wait:
            both = " and the ML backend" if ml else ""
            echo(f"\n  Ctrl-C stops Label Studio{both} (your data stays in the data dir).")
            stop_event = threading.Event()
            signal.signal(signal.SIGTERM, lambda *_: stop_event.set())
            try:
                while not stop_event.wait(1):
                    if server.proc is None or server.proc.poll() is not None:
                        echo("Label Studio exited; see " + str(directory / "server.log"))
                        break
                    if ml and ml[1].poll() is not None:
                        echo("the ML backend exited; see " + str(directory / "ml-backend.log"))
                        break
            except KeyboardInterrupt:
                pass
        return info
    finally:
        if ml:
            echo("stopping the ML backend ...")
            stop(ml[1])
        echo("stopping Label Studio ...")
        server.stop()
