"""The ``ls-trajeval`` command line: command definitions only, each a few lines over the Python API.

One module per command family (``studio``: generate, import, layout, export, adjudicate, demo; ``convert``: convert,
formats; ``analysis``: report, agreement, prm, align; ``ml``: the ML backend; ``judge``: the LLM judge and its
suggestions; ``tracing``: ingest, writeback), one error handler and one exit-code contract (:mod:`.common`). May
import everything in ``ls_trajeval``; nothing imports it. A command family's module is imported only when one of its
commands runs (or help lists them), and the modules behind the commands only when a command runs, so ``convert``
starts without the studio, analysis and ML modules (with every family imported up front, an empty convert took
262 M instructions instead of 246 M; benchmarks/converter_instructions.py, start-up).
"""
from __future__ import annotations

import gc
import importlib

import click

from .. import __version__
from .common import Group

#: command name -> (module of .cli, attribute): the one list of the CLI's commands
COMMANDS = {
    "generate": ("studio", "generate"),
    "import": ("studio", "import_"),
    "layout": ("studio", "layout"),
    "export": ("studio", "export"),
    "adjudicate": ("studio", "adjudicate"),
    "demo": ("studio", "demo"),
    "convert": ("convert", "convert_command"),
    "formats": ("convert", "formats_command"),
    "report": ("analysis", "report_command"),
    "agreement": ("analysis", "agreement_command"),
    "prm": ("analysis", "prm_command"),
    "align": ("analysis", "align_command"),
    "ml": ("ml", "ml_group"),
    "judge": ("judge", "judge_group"),
    "ingest": ("tracing", "ingest_group"),
    "writeback": ("tracing", "writeback"),
}


class _LazyGroup(Group):
    """Loads a command's module when the command is asked for (click's documented lazy-subcommand pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            module, attr = COMMANDS[name]
            command = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
            if command.name != name:
                raise RuntimeError(f"cli.COMMANDS: {module}.{attr} is the command {command.name!r}, not {name!r}")
            self.add_command(command)
        return self.commands.get(name)


@click.group(cls=_LazyGroup)
@click.version_option(__version__, prog_name="ls-trajeval")
def main_group():
    """Per-step error localization for AI agent traces, in Label Studio."""


def main(argv=None):
    """The ``ls-trajeval`` program: the console script and ``python -m ls_trajeval`` (tests and embedding
    programs call ``main_group``)."""
    try:
        main_group.main(args=argv, prog_name="ls-trajeval")
    finally:
        # the process ends here: the collector's passes over every object at interpreter exit would only
        # free memory the operating system takes back anyway (an empty convert: 246 M instructions with this,
        # 266 M without; benchmarks/converter_instructions.py, start-up); open files and standard streams are
        # flushed and closed without them
        gc.freeze()
