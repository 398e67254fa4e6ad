"""The CLI reference (docs/cli.md), generated from the click commands themselves:

    python -m ls_trajeval.cli.reference > docs/cli.md

A unit test checks that docs/cli.md is what this prints, so the reference cannot drift from the commands."""
from __future__ import annotations

import click

#: help is wrapped at this width, whatever the terminal, so the output is the same everywhere
WIDTH = 100


def _sections(command: click.Command, parent: click.Context | None, name: str) -> list[str]:
    ctx = click.Context(command, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH,
                        **command.context_settings)
    out = [f"## {ctx.command_path}", "", "```", command.get_help(ctx).rstrip(), "```", ""]
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            sub_command = command.get_command(ctx, sub)
            if sub_command is not None:  # a group's listed commands resolve; click's types allow None
                out += _sections(sub_command, ctx, sub)
    return out


def render() -> str:
    from . import main_group

    lines = ["# Command-line reference", "",
             "Generated from the commands by `python -m ls_trajeval.cli.reference > docs/cli.md`; do not edit by "
             "hand.", "",
             "Exit codes of every command: 0 all good; 1 some input was rejected (each rejection printed, the rest "
             "processed); 2 nothing could be done. Every error line starts `error:`.", ""]
    lines += _sections(main_group, None, "ls-trajeval")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    click.echo(render(), nl=False)
