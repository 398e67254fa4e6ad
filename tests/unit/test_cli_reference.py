"""docs/cli.md is the reference the commands generate (``python -m ls_trajeval.cli.reference > docs/cli.md``)."""
from pathlib import Path

from ls_trajeval.cli import COMMANDS
from ls_trajeval.cli.reference import render

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_docs_cli_md_is_current():
    assert CLI_MD.read_text(encoding="utf-8") == render(), \
        "the commands changed: python -m ls_trajeval.cli.reference > docs/cli.md"


def test_the_reference_has_every_command_and_subcommand():
    text = render()
    for name in COMMANDS:
        assert f"## ls-trajeval {name}\n" in text
    for name in ("serve", "connect", "resync"):
        assert f"## ls-trajeval ml {name}\n" in text
