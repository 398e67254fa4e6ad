"""``ls-trajeval demo``: a local Label Studio on SQLite with a project of bundled sample traces."""
from __future__ import annotations

import signal
import socket
import threading
from importlib import resources
from pathlib import Path

import platformdirs

from ..core.config import Config
from ..studio import client as studio
from ..studio.localserver import LocalLabelStudio, free_port
from .importer import import_traces, read_inputs


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("ls-trajeval")) / "label-studio"


def sample_traces() -> Path:
    return Path(str(resources.files("ls_trajeval") / "samples" / "traces.jsonl"))


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run_demo(data_dir: str | None, port: int, config: Config, layout: str = "transcript", *, wait: bool = True,
             echo=print) -> dict:
    """Start (or reuse) the local instance and its demo project; serve until Ctrl-C when ``wait``."""
    data_dir = Path(data_dir) if data_dir else default_data_dir()
    if not port or not _port_free(port):
        port = free_port()
    server = LocalLabelStudio(data_dir, port, log=echo)
    echo(f"starting Label Studio from {data_dir} ...")
    server.start()
    try:
        client = studio.connect(server.url, server.credentials.token)
        title = f"ls-trajeval demo ({layout} layout)"
        project = studio.find_project(client, title)
        if project is None:
            project = studio.create_project(client, config, layout, title)
            echo(f"created project {project['id']}: {title}")
        else:
            echo(f"reusing project {project['id']}: {title}")
        summary = import_traces(client, project["id"], read_inputs([sample_traces()], config), config, progress=False)
        echo(f"sample traces: imported {summary.imported}, already there {summary.skipped}")
        creds = server.credentials
        echo("")
        echo(f"  Label Studio:  {server.url}/projects/{project['id']}/data")
        echo(f"  annotate:      {studio.label_stream_url(server.url, project['id'])}")
        echo(f"  log in as:     {creds.email}")
        echo(f"  password:      {creds.password}")
        echo("")
        echo("  next, in another terminal:")
        echo(f"    export LABEL_STUDIO_URL={server.url} LABEL_STUDIO_API_KEY={creds.token}")
        echo(f"    ls-trajeval export --project {project['id']} -o output/annotations.jsonl")
        echo(f"    ls-trajeval import my_traces.jsonl --project {project['id']}")
        echo("    ls-trajeval report output/")
        info = {"url": server.url, "project": project["id"], "imported": summary.imported,
                "skipped": summary.skipped, **creds.__dict__}
        if wait:
            echo("\n  Ctrl-C stops Label Studio (your data stays in the data dir).")
            stop = threading.Event()
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
            try:
                while not stop.wait(1):
                    if server.proc.poll() is not None:
                        echo("Label Studio exited; see " + str(data_dir / "server.log"))
                        break
            except KeyboardInterrupt:
                pass
        return info
    finally:
        echo("stopping Label Studio ...")
        server.stop()
