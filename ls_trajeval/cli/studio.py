"""The commands around a Label Studio project: ``generate``, ``import``, ``layout``, ``export``, ``adjudicate`` and
``demo``."""
from __future__ import annotations

import sys

import click

from ..core.jsonfiles import atomic_output
from ..core.layouts import LAYOUTS, PAGED_MAX_STEPS
from .common import (
    EXIT_REJECTED,
    Command,
    format_option,
    layout_option,
    load_config,
    need_extra,
    optional_config,
    project_config_option,
    quiet_option,
    studio,
    studio_options,
    writing,
)


@click.command(cls=Command)
@click.argument("config", required=False)
@layout_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the XML here instead of stdout")
def generate(config, layout, output):
    """Compile a trajectory_eval YAML CONFIG into a Label Studio labeling config."""
    from ..core.labelconfig import generate as generate_xml

    cfg = load_config(config)
    xml = generate_xml(cfg, layout)
    if output:
        with writing(output), atomic_output(output) as fh:
            fh.write(xml)
        click.echo(f"wrote {output} ({layout} layout, {len(cfg.trajectory.types)} error types)", err=True)
    else:
        click.echo(xml, nl=False)
    if layout == "paged":
        click.echo(f"note: the paged layout builds every step's controls up front; traces longer than "
                   f"{PAGED_MAX_STEPS} steps open slowly there: use the transcript layout for them", err=True)


@click.command("import", cls=Command)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--project", type=int, help="import into this project id")
@click.option("--create", "create_title", metavar="TITLE", help="create a project with this title first")
@click.option("--config", "config_path", help="YAML config, a path or a shipped config's name (default: the "
              "project's own, or the shipped default for --create)")
@layout_option
@format_option(None, "convert INPUTS from this log format first (or 'auto'; `ls-trajeval formats` lists them); "
               "default: trace JSONL")
@click.option("--prelabels", is_flag=True, help="bring labels that come with the traces (Who&When mistake_step, "
              "TRAIL span errors) as predictions to review")
@click.option("--prelabels-from", "prelabel_exports", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="a previous trajectory_eval export whose labels become predictions (implies --prelabels)")
@click.option("--window", type=click.IntRange(0), default=None, metavar="STEPS",
              help="a trace longer than STEPS steps becomes one task per window of at most STEPS steps, each showing "
              "the task and the steps before it; the export merges them back (0: every trace one task; default: the "
              "config's annotator_config.window_steps, else 0). Every click costs in proportion to the steps a task "
              "holds (docs/annotating.md)")
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(1, 100000))
@click.option("-j", "--jobs", type=click.IntRange(1), default=None, help="with --format: processes converting files at "
              "once (default: the number of CPUs)")
@quiet_option
@studio_options
def import_(inputs, project, create_title, config_path, layout, fmt, prelabels, prelabel_exports, window, batch_size,
            jobs, quiet, url, api_key):
    """Import trace JSONL INPUTS as tasks (skipping traces the project already has)."""
    from ..flows.importer import import_files
    from ..studio.urls import label_stream_url

    if bool(project) == bool(create_title):
        raise click.UsageError("give either --project ID or --create TITLE")
    run = import_files(studio.connect(url, api_key), inputs, project_id=project or None, create_title=create_title,
                       config=optional_config(config_path), layout=layout, fmt=fmt, prelabels=prelabels,
                       prelabel_exports=prelabel_exports, window=window, batch_size=batch_size, jobs=jobs,
                       progress=not quiet,
                       on_error=lambda err: click.echo(f"rejected: {err}", err=True),
                       on_created=lambda pid: click.echo(f"created project {pid} ({layout} layout)", err=True))
    for w in run.warnings:
        click.echo(f"warning: {w}", err=True)
    if run.prelabeler is not None:
        for p in run.prelabeler.problems:
            click.echo(f"prelabels: {p}", err=True)
        click.echo(f"prelabels: {run.prelabeler.count} predictions", err=True)
    summary = run.summary
    windows = f" tasks ({summary.windows} of them windows of long traces)" if summary.windows else ""
    click.echo(f"project {run.project_id}: imported {summary.imported}{windows}, skipped {summary.skipped} "
               f"(already there), rejected {summary.rejected}")
    if summary.linked:
        click.echo(f"linked {summary.linked} tasks to their parent's or sub-agents' tasks", err=True)
    click.echo(f"annotate: {label_stream_url(studio.server_url(url), run.project_id)}", err=True)
    if summary.long_traces and not summary.window:
        click.echo(f"warning: {summary.long_traces} traces have more than {PAGED_MAX_STEPS} steps "
                   f"(longest {summary.max_steps}); every click on them is slow (about 2 s at 1000 steps): import them "
                   "with --window 100", err=True)
    if not run.ok:
        sys.exit(EXIT_REJECTED)


@click.command(cls=Command)
@click.argument("layout", type=click.Choice(LAYOUTS))
@click.option("--project", type=int, required=True)
@project_config_option
@quiet_option
@studio_options
def layout(layout, project, config_path, quiet, url, api_key):
    """Switch project PROJECT to LAYOUT (rendering the paged layout's cards where tasks lack them)."""
    from ..flows.relayout import set_layout

    summary = set_layout(studio.connect(url, api_key), project, layout, optional_config(config_path),
                         progress=not quiet)
    for err in summary.errors:
        click.echo(f"rejected: {err}", err=True)
    added = f", the task header and score status added to {summary.fields_added}" if summary.fields_added else ""
    click.echo(f"project {project}: {layout} layout "
               f"({'label config replaced' if summary.config_changed else 'unchanged'}), "
               f"pages rendered for {summary.pages_added} tasks{added}")
    if summary.errors:
        sys.exit(EXIT_REJECTED)


@click.command(cls=Command)
@click.option("--project", type=int, required=True)
@click.option("-o", "--output", type=click.Path(), help="output file (default: the config's output.path "
              "+ annotations.jsonl, gold.jsonl or predictions.jsonl); with --per-annotator a directory")
@click.option("--per-annotator", is_flag=True, help="one file per annotator")
@click.option("--gold", is_flag=True, help="one line per trace: the adjudication (from the review projects), else "
              "the unanimous labels, else the --aggregate of the annotators' labels")
@click.option("--aggregate", type=click.Choice(["majority", "dawid-skene"]), default="majority", show_default=True,
              help="with --gold: how disagreeing annotators become one label per step (dawid-skene needs the "
              "analysis extra)")
@click.option("--review", "review", type=int, multiple=True, help="with --gold: a review project whose annotations "
              "are adjudications (default: those `adjudicate` made for --project)")
@click.option("--predictions", is_flag=True, help="the project's predictions instead of its annotations (annotator: "
              "the model version), to measure them with `align`")
@click.option("--model-version", help="with --predictions: only this model version's")
@project_config_option
@studio_options
def export(project, output, per_annotator, gold, aggregate, review, predictions, model_version, config_path, url,
           api_key):
    """Export submitted annotations (or gold labels, or predictions) as trajectory_eval JSONL."""
    from ..flows import export as flow

    if per_annotator + gold + predictions > 1:
        raise click.UsageError("--per-annotator, --gold and --predictions are exclusive")
    if (review or aggregate != "majority") and not gold:
        raise click.UsageError("--aggregate and --review go with --gold")
    if model_version and not predictions:
        raise click.UsageError("--model-version goes with --predictions")
    if aggregate == "dawid-skene":
        need_extra("analysis", "crowdkit", "pandas")
    client = studio.connect(url, api_key)
    if gold:
        made = flow.export_gold(client, project, output, optional_config(config_path), method=aggregate,
                                review=list(review) or None)
        for w in made.warnings:
            click.echo(f"warning: {w}", err=True)
        how = ", ".join(f"{n} {m}" for m, n in sorted(made.methods.items()))
        reviews = ", ".join(map(str, made.review_projects)) or "none"
        click.echo(f"wrote {made.written} gold traces ({how or 'none'}) to {', '.join(made.files)}; "
                   f"review projects: {reviews}")
        return
    if predictions:
        summary = flow.export_predictions(client, project, output, optional_config(config_path),
                                          model_version=model_version)
        what = "predictions"
    else:
        summary = flow.export_project(client, project, output, optional_config(config_path),
                                      per_annotator=per_annotator)
        what = "annotations"
    for w in summary.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(f"wrote {summary.written} {what} of {summary.tasks} tasks to {', '.join(summary.files)}"
               + ("" if predictions else f"; left out {summary.cancelled} skipped/cancelled and {summary.drafts} "
                                         f"drafts"))


@click.command(cls=Command)
@click.option("--project", type=int, required=True, help="the project whose annotators disagree")
@click.option("--create", "create_title", metavar="TITLE", help="the review project's title: made when no project "
              "has it, updated when one does")
@click.option("--into", type=int, help="update this review project")
@click.option("--correctness-share", type=click.FloatRange(0, 1), default=1.0, show_default=True,
              help="a step's correctness is disputed when its most common label has less than this share of the "
              "annotators (1: any dissent)")
@click.option("--type-share", type=click.FloatRange(0, 1), default=1.0, show_default=True,
              help="the same for the error type, among the annotators who marked the step wrong")
@click.option("--severity-ranks", type=click.IntRange(0), default=0, show_default=True,
              help="severities are disputed when more than this many levels apart")
@click.option("--first-error-steps", type=click.IntRange(0), default=2, show_default=True,
              help="first error steps are disputed when more than this many steps apart (as agreement --k); a "
              "trace one annotator finds no error in is always disputed")
@click.option("--root-cause-steps", type=click.IntRange(0), default=0, show_default=True,
              help="root-cause steps are disputed when more than this many steps apart (only where some "
              "annotator's root cause is not their first error: else it is the first-error dispute)")
@project_config_option
@studio_options
def adjudicate(project, create_title, into, correctness_share, type_share, severity_ranks, first_error_steps,
               root_cause_steps, config_path, url, api_key):
    """Put the traces whose annotators disagree in a review project, each annotator's labels as a prediction."""
    from ..analysis.disagreement import Thresholds
    from ..flows.adjudicate import adjudicate as run
    from ..studio.urls import task_list_url

    thresholds = Thresholds(correctness=correctness_share, error_type=type_share, severity_ranks=severity_ranks,
                            first_error_steps=first_error_steps, root_cause_steps=root_cause_steps)
    summary = run(studio.connect(url, api_key), project, create_title=create_title, into=into, thresholds=thresholds,
                  config=optional_config(config_path))
    for w in summary.warnings:
        click.echo(f"warning: {w}", err=True)
    pid = summary.review_project_id
    click.echo(f"project {project}: {summary.compared} traces with 2+ annotators, {summary.disputed} disputed")
    click.echo(f"review project {pid}{' (created)' if summary.created else ''}: added {summary.tasks_added} tasks "
               f"and {summary.predictions_added} predictions, updated {summary.tasks_updated} summaries and "
               f"{summary.predictions_updated} predictions; {len(summary.settled)} held traces no longer disputed")
    for d in summary.disputes[:10]:
        s = d.summary()
        click.echo(f"  {d.trace_id}: disputedness {s['disputedness']:g}, steps {s['steps_in_dispute'] or '–'}, "
                   f"first errors {s['first_errors']}"
                   + (f", root causes {s['root_causes']}" if s["root_cause_disputed"] else ""))
    click.echo(f"adjudicate: {task_list_url(studio.server_url(url), pid, summary.tab_id)} (open a task: one tab per "
               "annotator, and Compare All)", err=True)


@click.command(cls=Command)
@click.option("--data-dir", type=click.Path(file_okay=False), help="Label Studio data dir (default: under "
              "your user data directory)")
@click.option("--port", type=int, default=8080, show_default=True, help="port (a free one if taken)")
@click.option("--config", "config_path", help="YAML config, a path or a shipped config's name (default: the "
              "shipped full taxonomy)")
@layout_option
@click.option("--no-wait", is_flag=True, help="set up, print, and stop instead of serving until Ctrl-C")
def demo(data_dir, port, config_path, layout, no_wait):
    """Run a local Label Studio with a demo project of sample traces."""
    from ..flows.demo import run_demo  # it says which extra to install when the server is missing

    run_demo(data_dir, port, load_config(config_path), layout, wait=not no_wait, echo=click.echo)
