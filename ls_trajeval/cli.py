"""The ``ls-trajeval`` command line: each command a few lines over the Python API."""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import click

from . import __version__
from .cli_analysis import agreement_command, align_command, prm_command, report_command
from .cli_convert import convert_command, formats_command
from .convert import convert_inputs
from .converters.base import ConvertWarning
from .layouts import LAYOUTS, PAGED_MAX_STEPS


class _Lazy:
    """A module imported on first use: label_studio_sdk takes seconds and ~200 MB to import, and
    convert/formats/report never talk to Label Studio; convert needs neither the config model nor Jinja2
    (a tenth of a second of every start)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(f"{__package__}.{self._name}"), attr)


studio, labelconfig, config_mod = _Lazy("studio"), _Lazy("labelconfig"), _Lazy("config")

DEFAULT_CONFIG = "trajectory_eval"
# exit codes: 1 = some input was rejected (the rest was processed); 2 = nothing could be done
EXIT_REJECTED, EXIT_FAILED = 1, 2


class UserError(click.ClickException):
    exit_code = EXIT_FAILED

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


def load_config(path: str | None) -> config_mod.Config:
    """A config path, or the name of a shipped one (``trajectory_eval``, ``coding_agent``)."""
    from . import label_configs

    target = Path(path) if path else label_configs.path(DEFAULT_CONFIG)
    if path and not target.exists() and label_configs.path(path).exists():
        target = label_configs.path(path)
    try:
        return config_mod.load(target)
    except config_mod.ConfigError as exc:
        raise UserError(str(exc)) from None


def studio_options(fn):
    fn = click.option("--api-key", envvar="LABEL_STUDIO_API_KEY", help="API key: a personal access token or a "
                      "legacy token [env LABEL_STUDIO_API_KEY]")(fn)
    fn = click.option("--url", envvar="LABEL_STUDIO_URL", help="Label Studio URL [env LABEL_STUDIO_URL]")(fn)
    return fn


def connect(url, api_key):
    try:
        return studio.connect(url, api_key)
    except studio.StudioError as exc:
        raise UserError(str(exc)) from None


layout_option = click.option("--layout", type=click.Choice(LAYOUTS), default="transcript",
                             show_default=True, help="transcript: the whole trace, mark wrong steps; "
                             "paged: one step per page (short traces)")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ls-trajeval")
def main_group():
    """Per-step error localization for AI agent traces, in Label Studio."""


@main_group.command()
@click.argument("config", required=False)
@layout_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the XML here instead of stdout")
def generate(config, layout, output):
    """Compile a trajectory_eval YAML CONFIG into a Label Studio labeling config."""
    cfg = load_config(config)
    xml = labelconfig.generate(cfg, layout)
    if output:
        Path(output).write_text(xml, encoding="utf-8")
        click.echo(f"wrote {output} ({layout} layout, {len(cfg.trajectory.types)} error types)", err=True)
    else:
        click.echo(xml, nl=False)
    if layout == "paged":
        click.echo(f"note: the paged layout builds every step's controls up front; traces longer than "
                   f"{PAGED_MAX_STEPS} steps open slowly there: use the transcript layout for them",
                   err=True)


def _without_warnings(items, warnings: list):
    for item in items:
        if isinstance(item, ConvertWarning):
            warnings.append(item)
        else:
            yield item


@main_group.command(name="import")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--project", type=int, help="import into this project id")
@click.option("--create", "create_title", metavar="TITLE", help="create a project with this title first")
@click.option("--config", "config_path", help="YAML config (default: the project's own, or the shipped default "
              "for --create)")
@layout_option
@click.option("--format", "fmt", default=None, help="convert INPUTS from this log format first (or 'auto'); "
              "default: trace JSONL")
@click.option("--prelabels", is_flag=True, help="bring labels that come with the traces (Who&When mistake_step, "
              "TRAIL span errors) as predictions to review")
@click.option("--prelabels-from", "prelabel_exports", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="a previous trajectory_eval export whose labels become predictions (implies --prelabels)")
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(1, 100000))
@click.option("--quiet", is_flag=True, help="no progress bar")
@studio_options
def import_(inputs, project, create_title, config_path, layout, fmt, prelabels, prelabel_exports, batch_size, quiet,
            url, api_key):
    """Import trace JSONL INPUTS as tasks (skipping traces the project already has)."""
    from .importer import import_traces, read_inputs

    if bool(project) == bool(create_title):
        raise UserError("give either --project ID or --create TITLE")
    if fmt and fmt != "auto":  # before anything is created: a typo must not leave an empty project
        from .converters.registry import get_converter

        try:
            get_converter(fmt)
        except KeyError as exc:
            raise UserError(exc.args[0]) from None
    client = connect(url, api_key)
    try:
        if create_title:
            cfg = load_config(config_path)
            project_id = studio.create_project(client, cfg, layout, create_title)["id"]
            click.echo(f"created project {project_id} ({layout} layout)", err=True)
        else:
            project_id = project
            cfg = load_config(config_path) if config_path else studio.project_config(studio.get_project(client, project))
        warnings = []
        if fmt:
            items = _without_warnings(convert_inputs(list(inputs), fmt), warnings)
        else:
            items = read_inputs(inputs, cfg)

        def on_error(err):
            click.echo(f"rejected: {err}", err=True)

        prelabeler = None
        if prelabels or prelabel_exports:
            from .prelabels import Prelabeler

            project_layout = labelconfig.layout_of(studio.get_project(client, project_id)["label_config"])
            prelabeler = Prelabeler(cfg, project_layout, list(prelabel_exports))
            for err in prelabeler.errors:
                on_error(err)
        summary = import_traces(client, project_id, items, cfg, batch_size=batch_size, progress=not quiet,
                                on_error=on_error, prelabel=prelabeler)
    except KeyError as exc:  # an unknown --format name
        raise UserError(exc.args[0]) from None
    except studio.StudioError as exc:
        raise UserError(str(exc)) from None
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
    if prelabeler is not None:
        for p in prelabeler.problems:
            click.echo(f"prelabels: {p}", err=True)
        click.echo(f"prelabels: {prelabeler.count} predictions", err=True)
    click.echo(f"project {project_id}: imported {summary.imported}, skipped {summary.skipped} "
               f"(already there), rejected {summary.rejected}")
    click.echo(f"annotate: {studio.label_stream_url(studio.server_url(url), project_id)}", err=True)
    if summary.paged and summary.long_traces:
        click.echo(f"warning: {summary.long_traces} traces have more than {PAGED_MAX_STEPS} steps "
                   f"(longest {summary.max_steps}); the paged layout opens them slowly: "
                   "prefer --layout transcript", err=True)
    if not summary.ok or (prelabeler is not None and prelabeler.errors):
        sys.exit(EXIT_REJECTED)


@main_group.command()
@click.argument("layout", type=click.Choice(LAYOUTS))
@click.option("--project", type=int, required=True)
@click.option("--config", "config_path", help="YAML config (default: the one embedded in the project)")
@click.option("--quiet", is_flag=True, help="no progress bar")
@studio_options
def layout(layout, project, config_path, quiet, url, api_key):
    """Switch project PROJECT to LAYOUT (rendering the paged layout's cards where tasks lack them)."""
    from .relayout import set_layout

    client = connect(url, api_key)
    try:
        summary = set_layout(client, project, layout, load_config(config_path) if config_path else None,
                             progress=not quiet)
    except studio.StudioError as exc:
        raise UserError(str(exc)) from None
    for err in summary.errors:
        click.echo(f"rejected: {err}", err=True)
    click.echo(f"project {project}: {layout} layout ({'label config replaced' if summary.config_changed else 'unchanged'}), "
               f"pages rendered for {summary.pages_added} tasks")
    if summary.errors:
        sys.exit(EXIT_REJECTED)


@main_group.command()
@click.option("--project", type=int, required=True)
@click.option("-o", "--output", type=click.Path(), help="output file (default: the config's output.path "
              "+ annotations.jsonl); with --per-annotator a directory")
@click.option("--per-annotator", is_flag=True, help="one file per annotator")
@click.option("--config", "config_path", help="YAML config (default: the one embedded in the project)")
@studio_options
def export(project, output, per_annotator, config_path, url, api_key):
    """Export submitted annotations as trajectory_eval JSONL."""
    from .export import export_project

    client = connect(url, api_key)
    try:
        cfg = load_config(config_path) if config_path else studio.project_config(studio.get_project(client, project))
        out = output or (cfg.output_path if per_annotator else str(Path(cfg.output_path) / "annotations.jsonl"))
        summary = export_project(client, project, out, cfg, per_annotator=per_annotator)
    except studio.StudioError as exc:
        raise UserError(str(exc)) from None
    for w in summary.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(f"wrote {summary.written} annotations of {summary.tasks} tasks to {', '.join(summary.files)}; "
               f"left out {summary.cancelled} skipped/cancelled and {summary.drafts} drafts")


@main_group.command()
@click.option("--data-dir", type=click.Path(file_okay=False), help="Label Studio data dir (default: under "
              "your user data directory)")
@click.option("--port", type=int, default=8080, show_default=True, help="port (a free one if taken)")
@click.option("--config", "config_path", help="YAML config (default: the shipped full taxonomy)")
@layout_option
@click.option("--no-wait", is_flag=True, help="set up, print, and stop instead of serving until Ctrl-C")
def demo(data_dir, port, config_path, layout, no_wait):
    """Run a local Label Studio with a demo project of sample traces."""
    from .demo import run_demo
    from .localserver import ServerError  # here, not at the top: httpx costs every command ~0.3 s

    try:
        run_demo(data_dir, port, load_config(config_path), layout, wait=not no_wait, echo=click.echo)
    except (ServerError, studio.StudioError) as exc:
        raise UserError(str(exc)) from None


for _name, _command in (("convert", convert_command), ("formats", formats_command), ("report", report_command),
                        ("agreement", agreement_command), ("prm", prm_command), ("align", align_command)):
    main_group.add_command(_command, _name)

from .cli_ml import ml_group  # noqa: E402 - it builds on the helpers above

main_group.add_command(ml_group, "ml")


def main(argv=None):
    try:
        main_group.main(args=argv, prog_name="ls-trajeval", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - a user gets one line, a developer the traceback
        if os.environ.get("LS_TRAJEVAL_DEBUG"):
            raise
        click.echo(f"internal error: {type(exc).__name__}: {exc} (set LS_TRAJEVAL_DEBUG=1 for the traceback)",
                   err=True)
        sys.exit(EXIT_FAILED)
