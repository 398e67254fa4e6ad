"""The project's code as its linters read it: ruff (pyflakes, pycodestyle, bugbear, import order, pyupgrade) over
the whole tree and mypy over the packages, both configured in pyproject.toml and both clean. They run as the
installed tools (the `test` extra pins their versions), from the project's root, so the settings are pyproject's."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    r = run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_finds_nothing():
    # its cache outside the tree: a clean checkout stays clean
    r = run("mypy", "--cache-dir", str(Path(tempfile.gettempdir()) / "ls-trajeval-mypy-cache"))
    assert r.returncode == 0, r.stdout + r.stderr
