"""ReAct transcripts: ``Thought:`` / ``Action:`` / ``Action Input:`` / ``Observation:`` / ``Final Answer:``.

A ``.txt`` (or ``.log``/``.md``) file is one trace; in JSON/JSONL each record carries the transcript
in a text field (``text``, ``trace``, ``output``, ``log``, ``transcript``, ``react``, ``response``).
``Question:`` becomes the task. Text before the first label is kept as a message step, so nothing
of the transcript is lost; block bodies are kept byte for byte apart from the label itself and
the newline that separates blocks.

Structured ReAct JSON is read too: records ``{"id", "task", "steps": [{"thought", "action",
"action_input"?, "observation"}]}`` (the shape Potato calls ``react``). Each step gives a thought,
an action and its observation, in that order. An action written as a call, ``search(JFK to LHR)``,
becomes tool ``search`` with input ``JFK to LHR``; an action object ``{"tool"|"name",
"params"|"args"|"input"}`` its name and arguments; any other string is the tool name as written.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import open_text
from ls_trajeval.core.trace import Step, TraceError

from .base import Converter, Sample
from .support.chat import record_id
from .support.errors import BadRecord
from .support.files import Origin, records
from .support.steps import default_id, finish, numbered_id, render_args, split_call, step

NAME = "react"

LABEL = re.compile(r"^[ \t]*(Thought|Action Input|Action|Observation|Final Answer|Question)[ \t]*:[ \t]?", re.M | re.I)
TEXT_KEYS = ("text", "trace", "transcript", "react", "log", "output", "response", "completion")
ID_KEYS = ("id", "trace_id", "task_id", "instance_id")
TASK_KEYS = ("task", "question", "input", "query", "prompt")
_FIRST = set("TtAaOoFfQq")
_KINDS = {"thought": "thought", "observation": "observation", "final answer": "message"}
#: keys a structured ReAct step may have; a step with others belongs to another format
STEP_KEYS = {"thought", "action", "action_input", "observation", "step", "step_id", "id", "timestamp"}


def _body(s: str) -> str:
    # blocks are separated by one newline (two when blank-line separated); only that goes
    return s[:-1] if s.endswith("\n") else s


def _blocks(transcript: str) -> tuple[str, list[tuple[str, str]]]:
    """(text before the first label, [(label, body), ...]); scanned line by line (a regex over the
    whole text in MULTILINE mode retries at every character and was the hot spot)."""
    pre: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    cur = pre
    for ln in transcript.split("\n"):
        m = LABEL.match(ln) if ln[:1] in _FIRST or ln[:1] in " \t" else None
        if m is not None:
            cur = [ln[m.end():]]
            blocks.append((m.group(1).lower(), cur))
        else:
            cur.append(ln)
    return "\n".join(pre), [(label, "\n".join(lines)) for label, lines in blocks]


def parse(transcript: str) -> tuple[str, list]:
    """(question or "", steps) of one ReAct transcript."""
    steps = []
    question = ""
    pre, blocks = _blocks(transcript)
    if pre.strip() and blocks or not blocks and pre.strip():
        steps.append(step("message", pre.rstrip("\n"), None, {"role": "preamble"}))
    pending_action = None
    for label, body in blocks:
        body = body.rstrip("\n") if body.endswith("\n\n") or body.endswith("\n") else body
        if label == "question":
            if not question:
                question = body
            else:
                steps.append(step("message", body, None, {"role": "user"}))
            continue
        if label == "action":
            pending_action = step("action", body.strip(), "", {"label": "Action"})
            steps.append(pending_action)
            continue
        if label == "action input":
            if pending_action is not None and pending_action.action_input == "":
                pending_action.action_input = render_args(body)
            else:  # an input with no action before it: keep it visible rather than guess a tool
                steps.append(step("action", "", render_args(body), {"label": "Action Input"}))
            pending_action = None
            continue
        pending_action = None
        steps.append(step(_KINDS[label], body, None, {"final_answer": True} if label == "final answer" else None))
    return question, steps


def _record_text(rec: dict) -> tuple[str, str] | None:
    for k in TEXT_KEYS:
        v = rec.get(k)
        if isinstance(v, str) and LABEL.search(v):
            return k, v
    return None


def _structured(rec: Any) -> bool:
    """A structured ReAct record: ``steps`` of thought/action/observation objects and nothing else."""
    steps = rec.get("steps") if isinstance(rec, dict) else None
    if not isinstance(steps, list) or not steps:
        return False
    head = steps[:5]
    return all(isinstance(st, dict) and st.keys() <= STEP_KEYS for st in head) and any(
        "thought" in st or "action" in st or "observation" in st for st in head)


def detect(sample: Sample) -> float:
    name = sample.path.name.lower()
    if sample.first_records or isinstance(sample.first_json, (dict, list)):
        recs = sample.first_records or (
            sample.first_json if isinstance(sample.first_json, list) else [sample.first_json]
        )
        recs = [r for r in recs[:5] if isinstance(r, dict)]
        if recs and all(_structured(r) for r in recs):
            return 0.7
        if recs and all(_record_text(r) for r in recs):
            _, v = _record_text(recs[0]) or ("", "")
            labels = {m.group(1).lower() for m in LABEL.finditer(v)}
            return 0.8 if {"thought", "action"} <= labels or "final answer" in labels else 0.3
        return 0.0
    if name.endswith((".json", ".jsonl", ".gz", ".traj", ".eval")):
        return 0.0
    labels = {m.group(1).lower() for m in LABEL.finditer(sample.head)}
    if {"thought", "action"} <= labels or {"thought", "final answer"} <= labels:
        return 0.8
    return 0.3 if labels & {"thought", "observation"} else 0.0


def _action_parts(action: Any, i: int) -> tuple[str, str]:
    """(tool name, readable input) of the action of structured step ``i``."""
    if isinstance(action, dict):
        name = action.get("tool", action.get("name"))
        if not isinstance(name, str):
            raise BadRecord(f"steps[{i}].action.tool", "missing: an action object needs a tool (or name) string")
        args = next((action[k] for k in ("params", "args", "arguments", "input") if k in action), None)
        return name, render_args(args)
    if not isinstance(action, str):
        raise BadRecord(f"steps[{i}].action", f"expected a string or an object, got {type(action).__name__}")
    call = split_call(action)
    if call is not None:
        return call[0], render_args(call[1])
    return action.strip(), ""


def _structured_steps(rec: dict) -> list:
    steps: list[Step] = []
    add = steps.append
    for i, st in enumerate(rec["steps"]):
        if not isinstance(st, dict):
            raise BadRecord(f"steps[{i}]", f"expected an object, got {type(st).__name__}")
        get = st.get
        ts = get("timestamp")
        # a hot path: each step's metadata made for it here, not copied from a shared one
        th = get("thought")
        if th is not None and th != "":
            add(step("thought", th, None, {"step_index": i} if ts is None else {"timestamp": ts, "step_index": i}))
        act = get("action")
        if act is not None and act != "":
            tool, given = _action_parts(act, i)
            if "action_input" in st:
                given = render_args(st["action_input"])
            add(step("action", tool, given, {"step_index": i} if ts is None else {"timestamp": ts, "step_index": i}))
        obs = get("observation")
        if obs is not None:
            add(step("observation", obs, None, {"step_index": i} if ts is None else {"timestamp": ts, "step_index": i}))
    return steps


def _one_structured(rec: dict, origin: Origin) -> Iterator:
    steps = _structured_steps(rec)
    tid = record_id(rec, ID_KEYS) or numbered_id(origin)
    task = next((rec[k] for k in TASK_KEYS + ("task_description",) if isinstance(rec.get(k), str)), None) or ""
    meta = {"variant": "structured"}
    for k in ("agent", "model"):
        if rec.get(k) is not None:
            meta[k] = rec[k]
    if isinstance(rec.get("metadata"), dict) and rec["metadata"]:
        meta["record_metadata"] = rec["metadata"]
    yield finish(origin, tid, task, steps, meta, "steps")


def one(rec: Any, origin: Origin) -> Iterator:
    """A record holding a transcript (or structured steps), or a transcript file's text."""
    if isinstance(rec, _Transcript):
        question, steps = parse(rec.text)
        yield finish(origin, default_id(origin), question, steps)
        return
    if not isinstance(rec, dict):
        raise BadRecord(None, "expected a JSON object with a ReAct text field")
    if isinstance(rec.get("steps"), list) and _record_text(rec) is None:
        yield from _one_structured(rec, origin)
        return
    found = _record_text(rec)
    if found is None:
        present = [k for k in TEXT_KEYS if k in rec]
        if present:
            raise BadRecord(
                present[0],
                f"expected a ReAct transcript string, got {type(rec[present[0]]).__name__}"
                if not isinstance(rec[present[0]], str)
                else "no Thought/Action/Observation labels in the text",
            )
        raise BadRecord(None, f"no text field (one of {', '.join(TEXT_KEYS)})")
    key, transcript = found
    question, steps = parse(transcript)
    tid = record_id(rec, ID_KEYS) or numbered_id(origin)
    task = next((rec[k] for k in TASK_KEYS if isinstance(rec.get(k), str)), None) or question
    meta = {"text_field": key}
    for k in ("agent", "model"):
        if rec.get(k) is not None:
            meta[k] = rec[k]
    yield finish(origin, tid, task, steps, meta, key)


class _Transcript:
    """A transcript file's whole text (a .txt, .log or .md file is one trace)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _read(path: Path, fmt: str) -> Iterator[tuple[Origin, Any]]:
    """JSON and JSONL files as records; any other file is one transcript."""
    if path.name.lower().endswith((".json", ".jsonl", ".jsonl.gz", ".json.gz", ".ndjson")):
        yield from records(path, fmt)
        return
    with open_text(path) as fh:
        transcript = fh.read()
    try:
        transcript.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = transcript.count("\n", 0, exc.start) + 1
        yield Origin(fmt, str(path), line), TraceError(str(path), line, None, "invalid UTF-8")
        return
    yield Origin(fmt, str(path)), _Transcript(transcript)


CONVERTER = Converter(
    name=NAME,
    description="ReAct text transcripts (Thought / Action / Action Input / Observation / Final Answer)",
    shapes='.txt/.log/.md transcript; JSON/JSONL records with the transcript in text/trace/output/log; {"steps": '
           '[{thought, action, observation}]}',
    detect=detect,
    one=one,
    read=_read,
)
