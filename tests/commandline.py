"""How the tests run the ``ls-trajeval`` command line: in this process through click's runner (exit code and output,
fast), or as a fresh process (``python -m ls_trajeval``: when a test kills it, reads its output as it comes, or
needs an interpreter of its own). Arguments may be paths or numbers; they are passed as strings."""
from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner, Result

from ls_trajeval.cli import main_group

#: the program, as a fresh process runs it
PROGRAM = (sys.executable, "-m", "ls_trajeval")


def invoke(*args, command: click.Command = main_group, env: dict | None = None) -> Result:
    """``ls-trajeval ARGS`` (or ``command`` on its own) in this process; ``env`` adds to (or, with None values,
    removes from) the environment while it runs. An exception that escapes the command's own error handling is
    raised, not hidden in the result."""
    return CliRunner(env=env).invoke(command, [str(a) for a in args], catch_exceptions=False)


def argv(*args) -> list[str]:
    """The command line of ``ls-trajeval ARGS`` as a fresh process."""
    return [*PROGRAM, *(str(a) for a in args)]


def run(*args, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``ls-trajeval ARGS`` as a fresh process, its output captured as text; ``env`` is its whole environment."""
    return subprocess.run(argv(*args), env=env, capture_output=True, text=True, timeout=timeout)
