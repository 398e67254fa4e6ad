"""``ls-trajeval ml serve | connect | resync``: the ML backend's commands, each a few lines over ``ls_trajeval.ml``."""
from __future__ import annotations

import signal
import sys

import click

from ..ml import env as ml_env
from .common import Command, Group, load_config, optional_config, projects, studio, studio_options

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
@click.option("--model-dir", envvar=ml_env.MODEL_DIR, default=None,
              help=f"where the learned judges are kept [env {ml_env.MODEL_DIR}; default: ml-models in the user's "
                   "data directory]")
@click.option("--no-learning", is_flag=True, help="suggest with the rule detectors only; learn nothing")
@with_auth
@studio_options
def serve(config_path, host, port, workers, threads, model_dir, no_learning, basic_auth_user, basic_auth_password,
          url, api_key):
    """Run the backend on gunicorn. With --url/--api-key it also writes scores back on annotation events and learns
    a judge per project from its labels (the train action, annotation events)."""
    from ..ml.serve import Backend

    backend = Backend(load_config(config_path), host, port, workers, threads, basic_auth_user, basic_auth_password,
                      url, api_key, None if no_learning else (model_dir or ml_env.default_model_dir()))
    proc = backend.start()  # its refusals (missing extra, bad detectors, half-given credentials) are UserErrors
    click.echo(backend.describe(), err=True)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    sys.exit(proc.wait())


@ml_group.command("connect", cls=Command)
@click.option("--project", required=True, type=int)
@click.option("--backend-url", required=True, help="the backend's URL as Label Studio reaches it")
@click.option("--no-interactive", is_flag=True, help="do not use the live running score")
@click.option("--no-webhook", is_flag=True,
              help="no webhook (removes one connect made): in a large project Label Studio counts the whole project "
                   "inside every save for a webhook's payload; the score fields are then written by `ml resync`")
@with_auth
@studio_options
def connect_command(project, backend_url, no_interactive, no_webhook, basic_auth_user, basic_auth_password, url,
                    api_key):
    """Register the backend with a project (predictions, live score, authenticated webhook). Idempotent."""
    from ..ml.connect import connect_backend

    changes = connect_backend(studio.connect(url, api_key), project, backend_url, interactive=not no_interactive,
                              user=basic_auth_user, password=basic_auth_password, webhook=not no_webhook)
    for line in changes or ["nothing to change: already connected"]:
        click.echo(line)


@ml_group.command(cls=Command)
@click.option("--project", required=True, type=int)
@click.option("--config", "config_path", default=None,
              help="the YAML config (default: the one embedded in the project)")
@studio_options
def resync(project, config_path, url, api_key):
    """Recompute and write back every task's score (after downtime or a config change)."""
    from ..ml import writeback

    client = studio.connect(url, api_key)
    cfg = projects.project_config(studio.get_project(client, project), optional_config(config_path))
    counts = writeback.resync(client, cfg, project)
    click.echo(f"project {project}: {counts['tasks']} tasks checked, {counts['updated']} updated")
