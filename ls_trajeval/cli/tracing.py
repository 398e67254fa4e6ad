"""``ls-trajeval ingest otlp | phoenix | langfuse`` and ``ls-trajeval writeback``: the tracing tools' commands, each a
few lines over :mod:`ls_trajeval.flows.ingest` and :mod:`ls_trajeval.flows.verdicts`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .common import EXIT_REJECTED, Command, Group, need_extra, studio, studio_options

PHOENIX_EXTRA = ("phoenix", "phoenix.client")
LANGFUSE_EXTRA = ("langfuse", "langfuse")


def _state_option(fn):
    return click.option("--state", "state_path", type=click.Path(dir_okay=False),
                        help="the SQLite file of checkpoints and delivered verdicts (default: tracing.sqlite in "
                        "your user data directory)")(fn)


def _phoenix_options(fn):
    fn = click.option("--phoenix-api-key", envvar="PHOENIX_API_KEY", default=None,
                      help="Phoenix API key, when its authentication is on [env PHOENIX_API_KEY]")(fn)
    fn = click.option("--phoenix-project", default="default", show_default=True, help="the Phoenix project")(fn)
    fn = click.option("--phoenix-url", envvar="PHOENIX_COLLECTOR_ENDPOINT", default="http://127.0.0.1:6006",
                      show_default=True, help="Phoenix's address [env PHOENIX_COLLECTOR_ENDPOINT]")(fn)
    return fn


def _langfuse_options(fn):
    fn = click.option("--langfuse-secret-key", envvar="LANGFUSE_SECRET_KEY", default=None,
                      help="[env LANGFUSE_SECRET_KEY]")(fn)
    fn = click.option("--langfuse-public-key", envvar="LANGFUSE_PUBLIC_KEY", default=None,
                      help="[env LANGFUSE_PUBLIC_KEY]")(fn)
    fn = click.option("--langfuse-host", envvar="LANGFUSE_HOST", default="https://cloud.langfuse.com",
                      show_default=True, help="Langfuse's address [env LANGFUSE_HOST]")(fn)
    return fn


def _phoenix(url, project, api_key):
    need_extra(*PHOENIX_EXTRA)
    from ..tracing.phoenix import Phoenix

    return Phoenix(url, project, api_key)


def _langfuse(host, public_key, secret_key):
    need_extra(*LANGFUSE_EXTRA)
    if not (public_key and secret_key):
        raise click.UsageError("Langfuse needs --langfuse-public-key and --langfuse-secret-key (or LANGFUSE_PUBLIC_KEY "
                               "and LANGFUSE_SECRET_KEY)")
    from ..tracing.langfuse import Langfuse

    return Langfuse(host, public_key, secret_key)


def _ledger(state_path):
    from ..tracing.ledger import Ledger

    return Ledger(state_path)


def _report(summary) -> None:
    click.echo(f"fetched {summary.fetched} finished traces: imported {summary.imported}, skipped {summary.skipped} "
               f"(already there), rejected {summary.rejected}")
    if not summary.ok:
        sys.exit(EXIT_REJECTED)


class _Time(click.ParamType):
    name = "time"

    def convert(self, value, param, ctx):
        from ..flows.ingest import parse_time

        try:
            return parse_time(value)
        except ValueError:
            self.fail(f"{value!r} is not an ISO time (e.g. 2026-05-01T12:00:00Z)", param, ctx)


def _pull_options(fn):
    fn = click.option("--interval", default=30.0, show_default=True, type=click.FloatRange(0.1),
                      help="with --follow: seconds between polls (doubled up to 10 minutes while a server is away)")(fn)
    fn = click.option("--follow", is_flag=True, help="keep polling for new traces until interrupted")(fn)
    fn = click.option("--settle", default=60.0, show_default=True, type=click.FloatRange(0),
                      help="a trace is taken once it ended (Langfuse: last changed) this many seconds ago")(fn)
    fn = click.option("--until", type=_Time(), help="only traces that started before this time")(fn)
    fn = click.option("--since", type=_Time(), help="only traces that started at or after this time (the stored "
                      "checkpoint moves it on)")(fn)
    fn = click.option("--project", type=int, required=True, help="the Label Studio project to import into")(fn)
    return fn


@click.group("ingest", cls=Group)
def ingest_group():
    """Traces in live from the tracing stack: an OTLP receiver, or pulled from Phoenix or Langfuse."""


@ingest_group.command("otlp", cls=Command)
@click.option("--project", type=int, required=True, help="the Label Studio project to import into")
@click.option("--host", default="127.0.0.1", show_default=True, help="the address to listen on (loopback: this "
              "machine only)")
@click.option("--port", default=4318, show_default=True, type=click.IntRange(0, 65535), help="0: a free port")
@click.option("--spool", "spool_path", type=click.Path(dir_okay=False), help="the spool file (default: "
              "otlp-spool-<project>.sqlite in your user data directory)")
@click.option("--settle", default=30.0, show_default=True, type=click.FloatRange(0),
              help="a trace is imported once its root span arrived and no span of it arrived for this many seconds")
@click.option("--orphan-after", default=600.0, show_default=True, type=click.FloatRange(0),
              help="a trace whose root span never arrives is imported after this many quiet seconds")
@click.option("--max-body", default=16 * 1024 * 1024, show_default=True, type=click.IntRange(1024),
              help="the largest request body, in bytes, compressed or not")
@click.option("--token", envvar="LS_TRAJEVAL_OTLP_TOKEN", default=None,
              help="require `Authorization: Bearer TOKEN` [env LS_TRAJEVAL_OTLP_TOKEN]")
@click.option("--basic-auth-user", envvar="LS_TRAJEVAL_OTLP_USER", default=None,
              help="require HTTP Basic auth with this user [env LS_TRAJEVAL_OTLP_USER]")
@click.option("--basic-auth-password", envvar="LS_TRAJEVAL_OTLP_PASSWORD", default=None,
              help="... and this password [env LS_TRAJEVAL_OTLP_PASSWORD]")
@click.option("--threads", default=4, show_default=True, type=click.IntRange(1, 64), help="request threads")
@studio_options
def otlp(project, host, port, spool_path, settle, orphan_after, max_body, token, basic_auth_user, basic_auth_password,
         threads, url, api_key):
    """Serve OTLP/HTTP on /v1/traces (protobuf or JSON, gzip) and import each finished trace as a task."""
    need_extra("tracing", "opentelemetry.proto", "flask", "waitress")
    from ..flows.ingest import OtlpReceiver
    from ..tracing.ledger import default_path

    if basic_auth_user and not basic_auth_password:
        raise click.UsageError("--basic-auth-user needs --basic-auth-password (or LS_TRAJEVAL_OTLP_PASSWORD)")
    if host not in ("127.0.0.1", "localhost", "::1") and not (token or basic_auth_user):
        click.echo(f"warning: listening on {host} without authentication: anyone who reaches it can add tasks",
                   err=True)
    spool = Path(spool_path) if spool_path else default_path().with_name(f"otlp-spool-{project}.sqlite")
    receiver = OtlpReceiver(project, spool, host, port, token, basic_auth_user, basic_auth_password, settle,
                            orphan_after, max_body, threads)
    summary = receiver.run(studio.connect(url, api_key), echo=lambda m: click.echo(m, err=True),
                           on_error=lambda err: click.echo(f"rejected: {err}", err=True))
    click.echo(f"imported {summary.imported}, skipped {summary.skipped} (already there), rejected {summary.rejected}")
    if not summary.ok:
        sys.exit(EXIT_REJECTED)


@ingest_group.command("phoenix", cls=Command)
@_pull_options
@click.option("--name", help="only traces whose root span has this name")
@_phoenix_options
@_state_option
@studio_options
def phoenix(project, since, until, settle, follow, interval, name, phoenix_url, phoenix_project, phoenix_api_key,
            state_path, url, api_key):
    """Import a Phoenix project's finished traces (OpenInference spans), those not fetched before."""
    from ..flows.ingest import PhoenixSource, pull

    source = PhoenixSource(_phoenix(phoenix_url, phoenix_project, phoenix_api_key), until, name)
    summary = pull(studio.connect(url, api_key), project, source, _ledger(state_path), since=since, settle=settle,
                   follow=follow, interval=interval, echo=lambda m: click.echo(m, err=True),
                   on_error=lambda err: click.echo(f"rejected: {err}", err=True))
    _report(summary)


@ingest_group.command("langfuse", cls=Command)
@_pull_options
@click.option("--name", help="only traces of this name")
@click.option("--tag", "tags", multiple=True, help="only traces with this tag (repeat: all of them)")
@_langfuse_options
@_state_option
@studio_options
def langfuse(project, since, until, settle, follow, interval, name, tags, langfuse_host, langfuse_public_key,
             langfuse_secret_key, state_path, url, api_key):
    """Import a Langfuse project's finished traces with their observations, those not fetched before."""
    from ..flows.ingest import LangfuseSource, pull

    source = LangfuseSource(_langfuse(langfuse_host, langfuse_public_key, langfuse_secret_key), until, name, tags)
    summary = pull(studio.connect(url, api_key), project, source, _ledger(state_path), since=since, settle=settle,
                   follow=follow, interval=interval, echo=lambda m: click.echo(m, err=True),
                   on_error=lambda err: click.echo(f"rejected: {err}", err=True))
    _report(summary)


@click.command("writeback", cls=Command)
@click.option("--project", type=int, required=True)
@click.option("--to", "target", type=click.Choice(["phoenix", "langfuse"]), required=True,
              help="the tool the project's traces came from")
@click.option("--gold", is_flag=True, help="the gold labels (adjudicated, else unanimous, else --aggregate) instead "
              "of each annotator's")
@click.option("--aggregate", type=click.Choice(["majority", "dawid-skene"]), default="majority", show_default=True,
              help="with --gold: how disagreeing annotators become one label per step")
@click.option("--review", type=int, multiple=True, help="with --gold: a review project whose annotations are "
              "adjudications (default: those `adjudicate` made for --project)")
@click.option("--dry-run", is_flag=True, help="print what would be sent, updated or withdrawn (JSON lines) and send "
              "nothing")
@click.option("--retries", default=4, show_default=True, type=click.IntRange(0, 20),
              help="attempts after a failed request (1, 2, 4, ... seconds apart)")
@_phoenix_options
@_langfuse_options
@_state_option
@studio_options
def writeback(project, target, gold, aggregate, review, dry_run, retries, phoenix_url, phoenix_project,
              phoenix_api_key, langfuse_host, langfuse_public_key, langfuse_secret_key, state_path, url, api_key):
    """Write the project's verdicts to the spans (Phoenix) or observations (Langfuse) of its traces: per step
    correctness, error type, severity and rationale; per trace the outcome, score, annotators and agreement."""
    from ..flows.verdicts import write_back

    if (review or aggregate != "majority") and not gold:
        raise click.UsageError("--aggregate and --review go with --gold")
    if aggregate == "dawid-skene":
        need_extra("analysis", "crowdkit", "pandas")
    sink = (_phoenix(phoenix_url, phoenix_project, phoenix_api_key) if target == "phoenix"
            else _langfuse(langfuse_host, langfuse_public_key, langfuse_secret_key))
    summary = write_back(studio.connect(url, api_key), project, sink, _ledger(state_path), gold=gold,
                         method=aggregate, review=list(review) or None, dry_run=dry_run, retries=retries)
    for action, v in summary.planned:
        click.echo(json.dumps({"action": action, "key": v.key, **v.payload()}, ensure_ascii=False))
    for failure in summary.failures:
        click.echo(f"failed: {failure}", err=True)
    verb = "would send" if dry_run else "sent"
    click.echo(f"{sink.destination}: {summary.traces} labelled traces ({summary.unlinked} without {target} ids); "
               f"{summary.verdicts} verdicts: {verb} {summary.new} new and {summary.updated} updated, "
               f"{summary.unchanged} unchanged, {summary.withdrawn} withdrawn, {summary.failed} failed"
               + ("" if dry_run else f" ({summary.requests} requests)"), err=dry_run)
    if not summary.ok:
        sys.exit(EXIT_REJECTED)
