"""What every command shares: the exit-code contract, the one error handler, the options used by more than one
command, and the lazily loaded modules behind them.

Exit codes: 0 all good; 1 some input was rejected (each rejection printed, the rest processed); 2 nothing could
be done. Every error line starts ``error:``: click's usage errors, a :class:`~ls_trajeval.core.errors.UserError`
from any layer (bad config, Label Studio refusing or unreachable, an output that cannot be written, a missing
extra), and, as a one-line report with LS_TRAJEVAL_DEBUG for the traceback, a bug.
"""
from __future__ import annotations

import errno
import importlib
import importlib.util
import os
import sys
from contextlib import contextmanager

import click

from ..core.errors import UserError
from ..core.layouts import LAYOUTS

EXIT_OK, EXIT_REJECTED, EXIT_FAILED = 0, 1, 2
EXIT_INTERRUPTED = 130


class _Lazy:
    """A module imported on first use: label_studio_sdk takes seconds and ~200 MB to import, and convert, formats
    and the analysis commands never talk to Label Studio; convert needs neither the config model nor Jinja2 (a
    tenth of a second of every start)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self._name), attr)


studio = _Lazy("ls_trajeval.studio.client")
projects = _Lazy("ls_trajeval.flows.projects")


def error(message: str) -> None:
    for line in str(message).splitlines() or [""]:
        click.echo(f"error: {line}", err=True)


class _Contract(click.Command):
    """``main`` of a command or group that keeps the exit-code contract for everything it runs (the top group
    for the whole CLI; a command's own for the command run alone, as the tests and embedding programs do); and
    ``-h`` next to ``--help`` however the command is reached."""

    def __init__(self, *args, **kwargs):
        kwargs["context_settings"] = {"help_option_names": ["-h", "--help"], **(kwargs.get("context_settings") or {})}
        super().__init__(*args, **kwargs)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            code = code if isinstance(code, int) else EXIT_OK  # --help and --version give theirs
        except getattr(click.exceptions, "NoArgsIsHelpError", ()) as exc:  # click >= 8.2: no command: the help
            exc.show()
            code = exc.exit_code
        except click.UsageError as exc:
            if exc.ctx is not None:
                click.echo(exc.ctx.get_usage(), err=True)
                click.echo(f"Try '{exc.ctx.command_path} --help' for help.\n", err=True)
            error(exc.format_message())
            code = EXIT_FAILED
        except click.ClickException as exc:
            error(exc.format_message())
            code = EXIT_FAILED
        except UserError as exc:
            error(str(exc))
            code = EXIT_FAILED
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader of our output went away (`| head`): nothing to say
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor at exit, when stdout flushes
                code = 1  # as click itself answers a broken pipe
            else:  # a file or directory that cannot be read or written, named by the error
                error(f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc))
                code = EXIT_FAILED
        except (click.Abort, KeyboardInterrupt):
            error("interrupted")
            code = EXIT_INTERRUPTED
        except Exception as exc:  # noqa: BLE001 - a user gets one line, a developer the traceback
            if os.environ.get("LS_TRAJEVAL_DEBUG"):
                raise
            error(f"internal error: {type(exc).__name__}: {exc} (set LS_TRAJEVAL_DEBUG=1 for the traceback)")
            code = EXIT_FAILED
        if standalone_mode:
            sys.exit(code)
        return code


class Command(_Contract, click.Command):
    pass


class Group(_Contract, click.Group):
    pass


def need_extra(extra: str, *modules: str) -> None:
    """Refuse to go on when an optional dependency of the ``extra`` is not installed, naming what to install."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        names = " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
        raise UserError(f"{names} not installed: pip install 'ls-trajeval[{extra}]'")


@contextmanager
def writing(path: str):
    """Turns a failure to write ``path`` into a one-line error."""
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise  # stdout's reader went away: not a file we failed to write
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


def load_config(path: str | None):
    """``--config``: a YAML path or the name of a shipped config; None: the shipped default."""
    return projects.load_config(path)


def optional_config(path: str | None):
    """``--config`` of a command on an existing project: None leaves the choice to the flow, which takes the
    project's own (:func:`ls_trajeval.flows.projects.project_config`)."""
    return load_config(path) if path else None


# ---------------------------------------------------------------- options used by more than one command
def studio_options(fn):
    fn = click.option("--api-key", envvar="LABEL_STUDIO_API_KEY", help="API key: a personal access token or a "
                      "legacy token [env LABEL_STUDIO_API_KEY]")(fn)
    fn = click.option("--url", envvar="LABEL_STUDIO_URL", help="Label Studio URL [env LABEL_STUDIO_URL]")(fn)
    return fn


layout_option = click.option("--layout", type=click.Choice(LAYOUTS), default="transcript", show_default=True,
                             help="transcript: the whole trace, mark wrong steps; paged: one step per page "
                             "(short traces)")
quiet_option = click.option("--quiet", is_flag=True, help="no progress bar")


def project_config_option(fn):
    return click.option("--config", "config_path", help="YAML config, a path or a shipped config's name (default: "
                        "the one embedded in the project)")(fn)


class FormatName(click.ParamType):
    """A source format's name (or ``auto``), checked against the converter registry without importing a
    converter."""

    name = "format"

    def get_metavar(self, param, ctx=None):
        return "[auto|NAME]"

    def convert(self, value, param, ctx):
        from ..converters.registry import names

        if value == "auto" or value in names():
            return value
        self.fail(f"unknown format {value!r}; known formats: auto, {', '.join(names())}", param, ctx)


def format_option(default: str | None, help: str):
    return click.option("--format", "fmt", type=FormatName(), default=default, show_default=default is not None,
                        help=help)
