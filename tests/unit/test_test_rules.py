"""The tests' own house rules, read from their source: one way to run the command line (tests/commandline.py) and
no fixed sleeps, only waits for a condition (tests/waiting.py, Playwright's ``wait_for_*``). tests/converters is
left to the converters' own rules."""
from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
#: sleeps that are no wait: the stand-ins for slow work of the queue's tests
WORK = {"ml/test_detectors.py"}


def sources() -> dict[str, str]:
    """Every test module but the converters' and this one (which names what it looks for)."""
    return {str(p.relative_to(TESTS)): p.read_text(encoding="utf-8") for p in sorted(TESTS.rglob("*.py"))
            if p.relative_to(TESTS).parts[0] != "converters" and p != Path(__file__).resolve()}


def test_the_command_line_runs_through_one_helper():
    found = {name for name, text in sources().items()
             if re.search(r"\bCliRunner\(|[\"']-m[\"'], [\"']ls_trajeval[\"']", text)}
    assert found == {"commandline.py"}


def test_no_fixed_sleeps():
    found = {f"{name}:{n}" for name, text in sources().items() if name not in WORK | {"waiting.py"}
             for n, line in enumerate(text.splitlines(), 1) if re.search(r"\btime\.sleep\(", line)}
    assert found == set()
    # a browser wait for a fixed time only where nothing can be waited for: the autosave that must not come
    timed = {f"{name}:{n}" for name, text in sources().items()
             for n, line in enumerate(text.splitlines(), 1) if "wait_for_timeout(" in line}
    assert {t.split(":")[0] for t in timed} == {"browser/test_lost_draft.py"} and len(timed) == 1
