"""``ls-trajeval convert`` and ``ls-trajeval formats``: agent logs to trace JSONL. Neither needs the config model,
Jinja2 or the Label Studio SDK, and neither imports them."""
from __future__ import annotations

import gc
import sys

import click

from ..converters.registry import all_converters
from ..core.jsonfiles import atomic_output
from ..core.trace import TraceError
from ..flows.convert import ConvertStats, convert_inputs, write_traces
from .common import EXIT_REJECTED, Command, format_option, writing


@click.command("convert", cls=Command)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True, allow_dash=False))
@format_option("auto", "Source format, or auto to detect it per file (`ls-trajeval formats` lists them).")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Trace JSONL to write ('-' for stdout).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary, not each error and warning.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1),
    default=None,
    help="Processes converting files at once (default: the number of CPUs); the output is the same.",
)
def convert_command(inputs: tuple[str, ...], fmt: str, output: str, quiet: bool, jobs: int | None) -> None:
    """Convert agent logs (files or directories; JSON, JSONL, .gz, .eval) to trace JSONL.

    Rejected records are reported as FILE:LINE: FIELD: MESSAGE on stderr; the exit code is 1
    when anything was rejected.
    """
    warnings: list = []

    def on_problem(item) -> None:
        if isinstance(item, TraceError):
            if not quiet:
                click.echo(f"error: {item}", err=True)
        else:
            warnings.append(item)

    stats = ConvertStats()
    # converting makes millions of short-lived dicts and next to no reference cycles, while span and session formats
    # hold a file's spans or records until its end: at the collector's default pace its passes walk those again and
    # again (10 MB inputs of benchmarks/bench_converters.py counted by converter_instructions.py: otel_genai 2,265 M
    # instructions with this against 2,355 M without, claude_code 1,820 M against 1,864 M)
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    try:
        items = convert_inputs(inputs, fmt, stats, jobs=jobs)
        with writing(output):
            if output == "-":
                write_traces(items, sys.stdout, on_problem)
                sys.stdout.flush()
            else:
                # a large buffer: the default 8 KiB makes a system call for every trace or two of a big output
                with atomic_output(output, buffering=1 << 20) as fh:
                    write_traces(items, fh, on_problem)
    finally:  # the command may run inside a longer-lived program (tests, an embedding tool)
        gc.set_threshold(*threshold)
        gc.unfreeze()
    if not quiet:
        for w in warnings:
            click.echo(f"warning: {w}", err=True)
    formats = ", ".join(f"{k} {v}" for k, v in sorted(stats.by_format.items()))
    click.echo(
        f"{stats.files} file(s): {stats.converted} trace(s) converted, {stats.rejected} rejected, "
        f"{stats.warnings} warning(s)"
        + (f" [{formats}]" if formats else ""),
        err=True,
    )
    if stats.rejected:
        sys.exit(EXIT_REJECTED)


@click.command("formats", cls=Command)
def formats_command() -> None:
    """List the source formats `convert` understands and the file shapes each detects."""
    convs = all_converters()
    width = max(len(c.name) for c in convs)
    for c in convs:
        click.echo(f"{c.name.ljust(width)}  {c.description}")
        click.echo(f"{' ' * width}  shapes: {c.shapes}")
