"""The analysis commands over trajectory_eval exports: ``report``, ``agreement`` and ``prm``.

Exit codes as everywhere (:mod:`.common`): 1 when some input lines were rejected (each printed to stderr as
file:line: reason), 2 when nothing was usable (no valid annotation at all). ``report`` and ``agreement`` need the
``analysis`` extra and say so when it is missing.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..core.errors import UserError
from .common import EXIT_REJECTED, Command, need_extra, writing

#: what ``pip install 'ls-trajeval[analysis]'`` brings, by command
REPORT_NEEDS = ("pandas", "numpy", "matplotlib")
AGREEMENT_NEEDS = ("numpy", "statsmodels", "krippendorff")
_MAX_PRINTED_ERRORS = 50


class _ErrorPrinter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, err) -> None:
        self.count += 1
        if self.count <= _MAX_PRINTED_ERRORS:
            click.echo(f"error: {err}", err=True)
        elif self.count == _MAX_PRINTED_ERRORS + 1:
            click.echo("error: (more rejected lines; only the first 50 are printed)", err=True)

    def finish(self) -> None:
        if self.count:
            click.echo(f"rejected: {self.count} input line(s) or path(s)", err=True)

    def done(self) -> None:
        """The count of rejections, and exit 1 when there were any."""
        self.finish()
        if self.count:
            sys.exit(EXIT_REJECTED)


def _settings(config, correct_label, outcome_key):
    from ..analysis.settings import load_settings

    return load_settings(config, correct_labels=tuple(correct_label) if correct_label else None,
                         outcome_key=outcome_key)


def _nothing_usable(printer: _ErrorPrinter) -> UserError:
    printer.finish()
    return UserError("no valid annotation lines in the input")


def _common(f):
    f = click.option("--outcome-key", default=None,
                     help="Whole-trace scheme used to group scores (default: from --config, else overall_success).")(f)
    f = click.option("--correct-label", multiple=True,
                     help="Correctness label(s) that mean 'no error' (default: from --config, else 'correct').")(f)
    f = click.option("--config", type=click.Path(dir_okay=False), default=None,
                     help="trajectory_eval YAML config: severity weights, score range, labels.")(f)
    f = click.argument("inputs", nargs=-1, required=True, type=click.Path())(f)
    return f


@click.command("report", cls=Command)
@_common
@click.option("-o", "--output", "output", default="report", show_default=True, type=click.Path(file_okay=False),
              help="Directory for report.html, the CSV/Parquet tables and the PNG plots.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1), help="Rows of the ranked tables shown in HTML.")
@click.option("--curve-x", type=click.Choice(["position", "step"]), default="position", show_default=True,
              help="x axis of the running-score plot: normalised position or step index.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots (tables and HTML only).")
@click.option("-q", "--quiet", is_flag=True, help="No terminal summary.")
def report_command(inputs, config, correct_label, outcome_key, output, top, curve_x, no_plots, quiet):
    """Error report (tables, plots, HTML) from trajectory_eval JSONL files or directories."""
    need_extra("analysis", *REPORT_NEEDS)
    from ..analysis.report import aggregate, terminal_summary, write_report

    settings = _settings(config, correct_label, outcome_key)
    printer = _ErrorPrinter()
    data = aggregate(inputs, settings, on_error=printer)
    if len(data.traces) == 0:
        raise _nothing_usable(printer)
    with writing(output):
        out = write_report(data, output, top=top, curve_x=curve_x, plots=not no_plots, inputs=inputs)
    if not quiet:
        click.echo(terminal_summary(out))
    printer.done()


@click.command("agreement", cls=Command)
@_common
@click.option("--k", "k", default=2, show_default=True, type=click.IntRange(0),
              help="Tolerance in steps for first-error-step agreement.")
@click.option("--top", default=20, show_default=True, type=click.IntRange(1), help="Traces listed for adjudication.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of a table.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Also write the JSON results here.")
def agreement_command(inputs, config, correct_label, outcome_key, k, top, as_json, output):
    """Inter-annotator agreement on steps, error types, severity and first error."""
    need_extra("analysis", *AGREEMENT_NEEDS)
    from ..analysis.agreement import collect, compute, format_table

    settings = _settings(config, correct_label, outcome_key)
    printer = _ErrorPrinter()
    col = collect(inputs, settings, on_error=printer)
    if len(col.a_trace) == 0:
        raise _nothing_usable(printer)
    result = compute(col, k=k, top=top)
    doc = result.to_json()
    if output:
        with writing(output):
            Path(output).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False) if as_json else format_table(result))
    printer.done()


@click.command("prm", cls=Command)
@_common
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Output JSONL ('-' for stdout).")
@click.option("--partial", type=click.Choice(["true", "false", "drop"]), default="false", show_default=True,
              help="Label for partially correct steps; drop = leave such steps out.")
@click.option("--after-error", type=click.Choice(["keep", "false", "truncate"]), default="keep", show_default=True,
              help="Steps after the first error: keep their labels, label them false, or cut the example there.")
@click.option("--merge", type=click.Choice(["majority", "any-error", "per-annotator"]), default="majority",
              show_default=True, help="Several annotators: majority vote (ties are errors), any error, or one example each.")
@click.option("--with-meta", is_flag=True, help="Add trace_id and annotators columns.")
def prm_command(inputs, config, correct_label, outcome_key, output, partial, after_error, merge, with_meta):
    """Process-reward data in TRL's stepwise-supervision shape (prompt, completions, labels)."""
    from ..analysis.prm import build_prm

    settings = _settings(config, correct_label, outcome_key)
    printer = _ErrorPrinter()
    target = Path(output)
    tmp = target.with_name(target.name + ".partial") if output != "-" else None
    with writing(output):
        fh = sys.stdout if tmp is None else open(tmp, "w", encoding="utf-8")
    try:
        stats = build_prm(inputs, fh, settings=settings, partial=partial, after_error=after_error,
                          merge=merge, with_meta=with_meta, on_error=printer)
    finally:
        if tmp is not None:
            fh.close()
    if tmp is not None:
        # written beside the target and renamed, so a failed run never leaves half a dataset under the real name
        tmp.replace(target)
    if stats.examples == 0 and printer.count:
        raise _nothing_usable(printer)
    click.echo(f"wrote {stats.examples} examples ({stats.steps} steps, {stats.true_labels} labelled true, "
               f"{stats.dropped_steps} dropped) to {output}", err=tmp is None)
    printer.done()
