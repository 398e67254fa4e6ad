"""The analysis commands over trajectory_eval exports: ``report``, ``agreement``, ``prm`` and ``align``.

Exit codes as everywhere (:mod:`.common`): 1 when some input lines were rejected (each printed to stderr as
file:line: reason), 2 when nothing was usable (no valid annotation at all). ``report``, ``agreement`` and ``align``
need the ``analysis`` extra and say so when it is missing.
"""
from __future__ import annotations

import json
import sys

import click

from ..core.errors import UserError
from ..core.jsonfiles import atomic_output
from .common import EXIT_REJECTED, Command, need_extra, writing

#: what ``pip install 'ls-trajeval[analysis]'`` brings, by command
REPORT_NEEDS = ("pandas", "numpy", "matplotlib", "scipy", "statsmodels", "krippendorff")
AGREEMENT_NEEDS = ("numpy", "scipy", "statsmodels", "krippendorff")
ALIGN_NEEDS = ("pandas", "numpy", "scipy", "statsmodels", "matplotlib")
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


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


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
@click.option("--top", default=10, show_default=True, type=click.IntRange(1),
              help="Rows of the ranked tables shown in HTML.")
@click.option("--curve-x", type=click.Choice(["position", "step"]), default="position", show_default=True,
              help="x axis of the running-score plot: normalised position or step index.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots (tables and HTML only).")
@click.option("--by", "by", metavar="KEY", default=None,
              help="Compare groups by this trace-metadata key or record field (agent, model, annotator, ...; "
                   "metadata.KEY for a metadata key only): error rates per category, scores and the first error, "
                   "each with a bootstrap 95% interval.")
@click.option("--url", envvar="LABEL_STUDIO_URL", default=None,
              help="Label Studio's address, to link each trace to its task [env LABEL_STUDIO_URL].")
@click.option("--resamples", default=2000, show_default=True, type=click.IntRange(0),
              help="Bootstrap resamples for the --by intervals; 0 = no intervals.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap.")
@click.option("--judge-align", "judge_align", type=click.Path(dir_okay=False), default=None,
              help="The labels came from a judge: correct the error rates for its error as measured by `align` "
                   "against gold labels (its align.json), Rogan-Gladen with 95% intervals.")
@click.option("-q", "--quiet", is_flag=True, help="No terminal summary.")
def report_command(inputs, config, correct_label, outcome_key, output, top, curve_x, no_plots, by, url, resamples,
                   seed, judge_align, quiet):
    """Error report (tables, plots, HTML) from trajectory_eval JSONL files or directories."""
    need_extra("analysis", *REPORT_NEEDS)
    from ..analysis.agreement import assess
    from ..analysis.correction import read_alignment
    from ..analysis.report import aggregate, terminal_summary, write_report
    from ..studio.urls import task_url

    judge = read_alignment(judge_align) if judge_align else None
    settings = _settings(config, correct_label, outcome_key)
    printer = _ErrorPrinter()
    data = aggregate(inputs, settings, on_error=printer, by=by)
    if len(data.traces) == 0:
        raise _nothing_usable(printer)
    several = data.traces["trace_id"].value_counts().max() >= 2
    agreement = assess(inputs, settings) if several else None  # its rejected lines are printed already
    link = (lambda project, task: task_url(url, project, task)) if url else None
    with writing(output):
        out = write_report(data, output, top=top, curve_x=curve_x, plots=not no_plots, inputs=inputs,
                           task_link=link, agreement=agreement, resamples=resamples, seed=seed, judge=judge)
    if not quiet:
        click.echo(terminal_summary(out))
    warning = data.by_warning()
    if warning:
        click.echo(f"warning: --by: {warning}", err=True)
    printer.done()
    if by is not None and data.by_found == 0:  # the comparison asked for is not there: as a rejected input
        sys.exit(EXIT_REJECTED)


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
    from ..analysis.agreement import assess, format_table

    printer = _ErrorPrinter()
    result = assess(inputs, _settings(config, correct_label, outcome_key), k=k, top=top, on_error=printer)
    if result.n_annotations == 0:
        raise _nothing_usable(printer)
    doc = result.to_json()
    if output:
        with writing(output), atomic_output(output) as fh:
            fh.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False) if as_json else format_table(result))
    printer.done()


@click.command("prm", cls=Command)
@_common
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Output JSONL ('-' for stdout).")
@click.option("--shape", type=click.Choice(["trl", "prm800k", "soft", "sft", "dpo"]), default="trl", show_default=True,
              help="Labels: TRL booleans, PRM800K ratings (1 / 0 partial / -1), or severity-weighted soft labels; "
                   "or rows from the annotators' corrections: sft (prompt, completion), dpo (prompt, chosen, "
                   "rejected).")
@click.option("--partial", type=click.Choice(["true", "false", "drop"]), default="false", show_default=True,
              help="trl, sft, dpo: label for partially correct steps; drop = leave such steps out.")
@click.option("--after-error", type=click.Choice(["keep", "cascade", "false", "truncate", "causes"]), default="keep",
              show_default=True, help="Steps after the first error: keep their labels, make them all negative "
                                      "(cascade; 'false' is the same), cut the example there, or causes: keep "
                                      "every step's own label and treat propagated errors by --propagated.")
@click.option("--propagated", type=click.Choice(["negative", "drop", "mark"]), default="negative",
              show_default=True, help="With --after-error causes, an error caused by an earlier wrong step: "
                                      "negative as any error, drop (not graded; its text is context of the next "
                                      "step), or mark (negative, flagged in a 'propagated' column).")
@click.option("--merge", type=click.Choice(["majority", "any-error", "per-annotator"]), default="majority",
              show_default=True,
              help="Several annotators: majority vote (ties are errors), any error, or one example each.")
@click.option("--agent-steps", default="thought,action,code,message", show_default=True,
              help="Step types that become completions; other steps are context (prompt / next completion).")
@click.option("--all-steps", is_flag=True, help="Every step is a completion (no context folding).")
@click.option("--with-meta", is_flag=True, help="Add trace_id and annotators columns (sft/dpo: also step_index "
                                                "and role).")
def prm_command(inputs, config, correct_label, outcome_key, output, shape, partial, after_error, propagated, merge,
                agent_steps, all_steps, with_meta):
    """Training data: process-reward labels (TRL stepwise, PRM800K ratings, soft labels) or, from the
    annotators' corrections, SFT and DPO rows in TRL's prompt-completion and preference formats."""
    from ..analysis.prm import CORRECTION_SHAPES, build_prm

    if propagated != "negative" and after_error != "causes":
        raise UserError("--propagated applies with --after-error causes")
    if shape in CORRECTION_SHAPES and after_error != "keep":
        raise UserError(f"--after-error applies to step labels, not to --shape {shape}")
    settings = _settings(config, correct_label, outcome_key)
    printer = _ErrorPrinter()
    types = None if all_steps else tuple(t.strip() for t in agent_steps.split(",") if t.strip())

    def build(fh):
        return build_prm(inputs, fh, settings=settings, shape=shape, partial=partial, after_error=after_error,
                         propagated=propagated, merge=merge, agent_steps=types, with_meta=with_meta,
                         on_error=printer)

    if output == "-":
        stats = build(sys.stdout)
    else:
        # written beside the target and renamed, so a failed run never leaves half a dataset under the real name
        with writing(output), atomic_output(output) as fh:
            stats = build(fh)
    if stats.examples == 0 and printer.count:
        raise _nothing_usable(printer)
    if shape in CORRECTION_SHAPES:
        unchanged = f", {_count(stats.unchanged, 'correction')} equal to what the agent did" if shape == "dpo" else ""
        click.echo(f"wrote {_count(stats.examples, shape + ' row')} from "
                   f"{_count(stats.corrected_steps, 'corrected step')} "
                   f"({_count(stats.without_correction, 'wrong step')} without a correction{unchanged}) to {output}",
                   err=output == "-")
    else:
        folded = f", {stats.propagated} propagated" if after_error == "causes" else ""
        click.echo(f"wrote {stats.examples} {shape} examples ({stats.steps} steps, {stats.true_labels} labelled good, "
                   f"{stats.context_steps} context steps folded, {stats.dropped_steps} dropped{folded}) to {output}",
                   err=output == "-")
    printer.done()


@click.command("align", cls=Command)
@click.argument("pred", type=click.Path())
@click.argument("gold", type=click.Path())
@click.option("--within", "within", default=1, show_default=True, type=click.IntRange(0),
              help="Tolerance in steps for first_error_within_K.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Also write confusion_categories.csv/.png, per_trace.csv and align.json here.")
@click.option("--resamples", default=2000, show_default=True, type=click.IntRange(0),
              help="Bootstrap resamples (of traces) for the 95% intervals; 0 = no intervals.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap.")
@click.option("--config", type=click.Path(dir_okay=False), default=None,
              help="trajectory_eval YAML config: which correctness label means 'no error'.")
@click.option("--correct-label", multiple=True,
              help="Correctness label(s) that mean 'no error' (default: from --config, else 'correct').")
@click.option("--certify", is_flag=True,
              help="Also state, overall and per error type, whether the lower end of each figure's 95% interval "
                   "clears the thresholds below.")
@click.option("--min-precision", type=click.FloatRange(0, 1), default=None,
              help="--certify: the least lower bound of error_precision.")
@click.option("--min-recall", type=click.FloatRange(0, 1), default=None,
              help="--certify: the least lower bound of error_recall.")
@click.option("--min-first-error", type=click.FloatRange(0, 1), default=None,
              help="--certify: the least lower bound of first_error_within_K (K: --within).")
@click.option("--interval", "interval", type=click.Choice(["wilson", "clopper-pearson"]), default="wilson",
              show_default=True, help="--certify: the interval of each proportion (on the effective number of "
                                      "steps, as the steps of one trace are not independent).")
def align_command(pred, gold, within, as_json, out_dir, resamples, seed, config, correct_label, certify,
                  min_precision, min_recall, min_first_error, interval):
    """Measure PRED labels (a judge, a detector, an annotator) against GOLD labels, both trajectory_eval JSONL.

    Traces are paired by trace_id. Exit code 1 when input lines were rejected or paired traces differ in
    their step counts (they are left out and listed), 2 when no trace could be paired. The certification's
    verdict does not change the exit code: read it from the text or from --json's "certification".
    """
    need_extra("analysis", *ALIGN_NEEDS)
    from ..analysis import certify as certification
    from ..analysis.align import format_text, measure, pair, write_outputs
    from ..analysis.settings import read
    from ..core.records import AnnotationRecord

    thresholds = certification.Thresholds(min_precision, min_recall, min_first_error)
    if certify and thresholds == certification.Thresholds():
        raise click.UsageError("--certify needs a threshold: --min-precision, --min-recall or --min-first-error")
    if not certify and thresholds != certification.Thresholds():
        raise click.UsageError("--min-precision, --min-recall and --min-first-error go with --certify")
    settings = _settings(config, correct_label, None)
    printer = _ErrorPrinter()

    def valid(path):
        for item in read([path], settings):
            if isinstance(item, AnnotationRecord):
                yield item
            else:
                printer(item)

    paired = pair(valid(pred), valid(gold))
    result = measure(paired, settings, within=within, resamples=resamples, seed=seed)
    for msg in result.duplicates:
        click.echo(f"warning: {msg}", err=True)
    for tid, where in result.pred_only:
        click.echo(f"warning: {where}: trace {tid!r} is only in PRED", err=True)
    for tid, where in result.gold_only:
        click.echo(f"warning: {where}: trace {tid!r} is only in GOLD", err=True)
    for m in result.mismatches:
        printer(f"{m['pred_at']}: trace {m['trace_id']!r} has {m['pred_steps']} steps in PRED but "
                f"{m['gold_steps']} in GOLD ({m['gold_at']}); left out")
    if result.traces == 0:
        printer.finish()
        raise UserError("no trace of PRED is in GOLD with the same number of steps")
    doc = result.to_json()
    text = format_text(result)
    if certify:
        verdict = certification.certify(paired.pairs, settings, thresholds, within=within, method=interval)
        doc["certification"] = verdict.to_json()
        text += "\n\n" + certification.format_text(verdict)
    if out_dir:
        with writing(out_dir):
            write_outputs(result, out_dir, doc)
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False) if as_json else text)
    printer.done()
