"""Text helpers of the step library that several converters share."""
import pytest

from ls_trajeval.converters.support.steps import split_call


@pytest.mark.parametrize("written, expected", [
    ("search_flights(origin='JFK', date='2026-02-27')", ("search_flights", "origin='JFK', date='2026-02-27'")),
    ('Bash({"command": "ls -la"})', ("Bash", '{"command": "ls -la"}')),
    ("  finish()  ", ("finish", "")),
    ("str_replace_editor(view /a.py\nline two)", ("str_replace_editor", "view /a.py\nline two")),
])
def test_a_call_splits_into_name_and_arguments(written, expected):
    assert split_call(written) == expected


@pytest.mark.parametrize("written", ["click the Settings icon", "```python\nprint(1)\n```", "(x)", "f(x) and more"])
def test_other_text_is_no_call(written):
    assert split_call(written) is None
