"""The ``ls-trajeval`` command line: command definitions only, each a few lines over the Python API.

One module per command family (``studio``: generate, import, layout, export, adjudicate, demo; ``convert``: convert, formats;
``analysis``: report, agreement, prm, align; ``ml``: the ML backend), one error handler and one exit-code contract
(:mod:`.common`). May import everything in ``ls_trajeval``; nothing imports it. Modules behind the commands are
imported when a command runs, so ``--help`` and ``convert`` start fast.
"""
from __future__ import annotations

import click

from .. import __version__
from .analysis import agreement_command, align_command, prm_command, report_command
from .common import Group
from .convert import convert_command, formats_command
from .ml import ml_group
from .studio import adjudicate, demo, export, generate, import_, layout


@click.group(cls=Group)
@click.version_option(__version__, prog_name="ls-trajeval")
def main_group():
    """Per-step error localization for AI agent traces, in Label Studio."""


for _command in (generate, import_, layout, export, adjudicate, demo, convert_command, formats_command, report_command,
                 agreement_command, prm_command, align_command, ml_group):
    main_group.add_command(_command)


def main(argv=None):
    main_group.main(args=argv, prog_name="ls-trajeval")
