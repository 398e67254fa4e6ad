from conftest import FIXTURES, meta, run, types


def test_chat_history():
    traces, errors, _ = run(FIXTURES / "project.aider.chat.history.md")
    assert not errors and len(traces) == 1
    t = traces[0]
    assert t.task == "add a fib function <script>&"
    assert types(t) == ["system", "message", "message", "action", "observation", "message", "action", "observation"]
    edit = t.steps[3]
    assert edit.content == "edit" and meta(edit)["file"] == "fib.py"
    assert edit.action_input.startswith("fib.py\n```python\n<<<<<<< SEARCH\n") and edit.action_input.endswith(">>>>>>> REPLACE\n```")
    assert t.steps[4].content == "Applied edit to fib.py\nCommit abc123 aider: Added fib"
    assert (t.steps[6].content, t.steps[6].action_input, t.steps[7].content) == ("/run", "python fib.py", "Traceback: boom")
    assert t.metadata["started_at"] == "2024-05-01 10:00:00"
