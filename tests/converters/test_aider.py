import pytest

from .conftest import FIXTURES, meta, run, types


def test_chat_history():
    traces, errors, _ = run(FIXTURES / "project.aider.chat.history.md")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.task == "add a fib function <script>&"
    assert types(t) == ["system", "message", "message", "action", "observation", "message", "action", "observation"]
    edit = t.steps[3]
    assert edit.content == "edit" and meta(edit)["file"] == "fib.py"
    assert edit.action_input.startswith("fib.py\n```python\n<<<<<<< SEARCH\n") and edit.action_input.endswith(
        ">>>>>>> REPLACE\n```"
    )
    assert t.steps[4].content == "Applied edit to fib.py\nCommit abc123 aider: Added fib"
    assert (t.steps[6].content, t.steps[6].action_input, t.steps[7].content) == (
        "/run",
        "python fib.py",
        "Traceback: boom",
    )
    assert t.metadata["started_at"] == "2024-05-01 10:00:00"


SESSION = ("# aider chat started at 2024-05-01 10:00:00\n"
           "#### fix the bug\n"
           "#### in fib\n"
           "\n"
           "I will edit it.\n"
           "\n"
           "fib.py\n"
           "```python\n"
           "<<<<<<< SEARCH\n"
           "return 0\n"
           "=======\n"
           "return 1\n"
           ">>>>>>> REPLACE\n"
           "```\n"
           "\n"
           "> Applied edit to fib.py\n"
           "\n"
           "#### /run python fib.py\n"
           "> 1\n")


def _steps(t):
    return [(s.type, s.content, meta(s).get("source_line")) for s in t.steps]


# read from SESSION by hand: lines 2-3 the user message, 5 the reply's text (its blank lines around it off),
# 7-14 the edit (numbered as its reply), 16 aider's output, 18 the /run command, 19 its output
EXPECTED = [("message", "fix the bug\nin fib", 2), ("message", "I will edit it.", 5), ("action", "edit", 5),
            ("observation", "Applied edit to fib.py", 16), ("action", "/run", 18), ("observation", "1", 19)]


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_line_ends_of_any_kind_read_the_same(tmp_path, eol):
    p = tmp_path / "h.aider.chat.history.md"
    p.write_bytes(SESSION.replace("\n", eol).encode())
    traces, errors, _ = run(p, "aider")
    assert not errors and len(traces) == 1 and traces[0].task == "fix the bug\nin fib"
    assert _steps(traces[0]) == EXPECTED
    assert traces[0].steps[2].action_input.splitlines()[0] == "fib.py"


def test_undecodable_lines_are_reported_and_skipped_heading_included(tmp_path):
    p = tmp_path / "h.aider.chat.history.md"
    bad_heading = b"# aider chat started at \xff\n"  # line 20: not a heading, an error; session 1 goes on
    p.write_bytes(SESSION.encode() + bad_heading + b"#### more \xfe\n" + SESSION.encode())
    traces, errors, _ = run(p, "aider")
    assert [(e.line, e.message) for e in errors] == [
        (20, "invalid UTF-8 (line skipped)"),
        (21, "invalid UTF-8 (line skipped)"),
    ]
    assert len(traces) == 2 and _steps(traces[0]) == EXPECTED
    assert _steps(traces[1]) == [(k, c, n + 21) for k, c, n in EXPECTED]  # the second session starts at line 22


def test_a_session_longer_than_a_read_is_one_trace(tmp_path):
    """Files are read about a MiB at a time: a session crossing that boundary stays whole, its lines numbered on."""
    filler = "".join(f"#### question {i}\n\nanswer {i}\n\n> output {i}\n\n" for i in range(28_000))  # ~1.1 MB
    p = tmp_path / "h.aider.chat.history.md"
    p.write_text(SESSION + filler + SESSION, encoding="utf-8")
    traces, errors, _ = run(p, "aider")
    assert not errors and len(traces) == 2
    assert len(traces[0].steps) == len(EXPECTED) + 3 * 28_000
    last_user = traces[0].steps[-3]  # each question is followed by its answer and aider's output
    assert (last_user.content, meta(last_user)["source_line"]) == ("question 27999", 19 + 6 * 27_999 + 1)
    assert _steps(traces[1]) == [(k, c, n + 19 + 6 * 28_000) for k, c, n in EXPECTED]
