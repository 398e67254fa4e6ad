"""``ls-trajeval ml serve | connect | resync``: the ML backend's commands, each a few lines over ``ls_trajeval.ml``."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import click

from ..core.errors import UserError
from ..ml import env as ml_env
from .common import Command, Group, load_config, need_extra, optional_config, projects, studio, studio_options

auth_options = [
    click.option("--basic-auth-user", envvar=ml_env.USER, default=None,
                 help=f"require HTTP Basic auth with this user [env {ml_env.USER}]"),
    click.option("--basic-auth-password", envvar=ml_env.PASSWORD, default=None,
                 help=f"... and this password [env {ml_env.PASSWORD}]"),
]


def with_auth(fn):
    for opt in reversed(auth_options):
        fn = opt(fn)
    return fn


@click.group("ml", cls=Group)
def ml_group():
    """The ML backend: running score write-back, live score, pre-annotations."""


@ml_group.command(cls=Command)
@click.option("--config", "config_path", required=True, help="the YAML config (path or shipped name)")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=9090, show_default=True, type=int)
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="worker processes")
@click.option("--threads", default=4, show_default=True, type=click.IntRange(1, 256), help="threads per worker")
@with_auth
@studio_options
def serve(config_path, host, port, workers, threads, basic_auth_user, basic_auth_password, url, api_key):
    """Run the backend on gunicorn. With --url/--api-key it also writes scores back on annotation events."""
    need_extra("ml", "flask", "gunicorn")  # before ml.app, which imports flask
    from ..ml.detectors import build

    cfg = load_config(config_path)
    try:
        build(cfg)  # refuse a config whose detectors cannot work before any worker starts
    except Exception as exc:
        raise UserError(str(exc)) from None
    if basic_auth_user and not basic_auth_password:
        raise UserError("--basic-auth-user needs --basic-auth-password (or LS_TRAJEVAL_ML_PASSWORD)")
    if bool(url) != bool(api_key):
        raise UserError("score write-back needs both --url and --api-key (or neither, for predictions only)")
    env = dict(os.environ)
    # secrets go to the workers through the environment, never the command line (visible in ps)
    env[ml_env.CONFIG] = str(Path(cfg.source).resolve())
    for key, value in ((ml_env.USER, basic_auth_user), (ml_env.PASSWORD, basic_auth_password),
                       ("LABEL_STUDIO_URL", url), ("LABEL_STUDIO_API_KEY", api_key)):
        if value:
            env[key] = value
        else:
            env.pop(key, None)
    cmd = [sys.executable, "-m", "gunicorn", "--bind", f"{host}:{port}", "--workers", str(workers),
           "--worker-class", "gthread", "--threads", str(threads), "--timeout", "120", "--graceful-timeout", "10",
           "--no-control-socket", "--log-level", "info", "ls_trajeval.ml.app:create_app()"]
    click.echo(f"ML backend on http://{host}:{port} ({workers} workers x {threads} threads, "
               f"auth {'on' if basic_auth_user else 'off'}, write-back {'on' if url else 'off'})", err=True)
    proc = subprocess.Popen(cmd, env=env)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    sys.exit(proc.wait())


@ml_group.command("connect", cls=Command)
@click.option("--project", required=True, type=int)
@click.option("--backend-url", required=True, help="the backend's URL as Label Studio reaches it")
@click.option("--no-interactive", is_flag=True, help="do not use the live running score")
@with_auth
@studio_options
def connect_command(project, backend_url, no_interactive, basic_auth_user, basic_auth_password, url, api_key):
    """Register the backend with a project (predictions, live score, authenticated webhook). Idempotent."""
    from ..ml.connect import connect_backend

    changes = connect_backend(studio.connect(url, api_key), project, backend_url, interactive=not no_interactive,
                              user=basic_auth_user, password=basic_auth_password)
    for line in changes or ["nothing to change: already connected"]:
        click.echo(line)


@ml_group.command(cls=Command)
@click.option("--project", required=True, type=int)
@click.option("--config", "config_path", default=None, help="the YAML config (default: the one embedded in the project)")
@studio_options
def resync(project, config_path, url, api_key):
    """Recompute and write back every task's score (after downtime or a config change)."""
    from ..ml import writeback

    client = studio.connect(url, api_key)
    cfg = projects.project_config(studio.get_project(client, project), optional_config(config_path))
    counts = writeback.resync(client, cfg, project)
    click.echo(f"project {project}: {counts['tasks']} tasks checked, {counts['updated']} updated")
