"""A trace whose detector findings are known by reading it, and UI-shaped transcript marks.

Each trace runs pytest, gets a traceback, claims success and finishes: the detectors flag the failed
pytest (step 1, tool_error, major), the success claim (step 3, ignored_observation, major) and finishing
after a failure (step 4, premature_termination, critical): 100 - 5 - 5 - 10 = 80.
"""
from __future__ import annotations

TRACES = [
    {"trace_id": f"ml-{i}", "task": f"Run the tests <b>#{i}</b> & report", "trace": [
        {"type": "thought", "content": "Run the test suite first."},
        {"type": "action", "content": "bash", "action_input": "pytest -q"},
        {"type": "observation", "content": "Traceback (most recent call last):\nImportError: no module named x"},
        {"type": "thought", "content": "All tests passed successfully."},
        {"type": "action", "content": "finish", "action_input": "done"},
    ]} for i in range(6)
]
FLAGGED_STEPS = [1, 3, 4]
PREDICTED_SCORE = 100 - 5 - 5 - 10


def region(rid, step, transcript, from_name, rtype, **value):
    return {"id": rid, "from_name": from_name, "to_name": "te_trace", "type": rtype, "origin": "manual",
            "value": {"start": str(step), "end": str(step), "startOffset": 0,
                      "endOffset": len(transcript[step]["text"]), **value}}


def marks(transcript, *steps):
    """UI-shaped transcript results: each (step, severity) a marked step of type logical_error."""
    out = []
    for step, sev in steps:
        rid = f"r{step}{sev}"
        out += [region(rid, step, transcript, "error_localization", "paragraphlabels", paragraphlabels=["incorrect"]),
                region(rid, step, transcript, "error_localization_type", "taxonomy",
                       taxonomy=[["reasoning", "logical_error"]]),
                region(rid, step, transcript, "error_localization_severity", "choices", choices=[sev])]
    return out
