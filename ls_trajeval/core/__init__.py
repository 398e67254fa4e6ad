"""The pure core: config, traces, labels, scoring, Label Studio result shapes, task data, the label config,
the task-field names and the trajectory_eval record.

Imports only the standard library, PyYAML, Jinja2 and other core modules: no Label Studio SDK, no HTTP, no
click, no progress bars, nothing from studio/flows/analysis/ml/cli (tests/unit/test_architecture.py checks it).
"""
