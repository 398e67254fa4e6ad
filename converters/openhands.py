"""OpenHands event streams.

Accepted shapes:

- a trajectory export: a JSON list of events, one trace;
- evaluation output (``output.jsonl``, one instance a line: ``instance_id``, ``instruction``,
  ``metadata``, ``history``, ``test_result``, ``metrics``, ``error``), one trace per line;
- resolver output (``output.jsonl``: ``issue``, ``instruction``, ``history``, ``git_patch``, ``success``, ...),
  one trace per line;
- ``history`` as events, as the 2024 flat entries (no ids: each observation answers the action
  before it), or as ``[action, observation]`` pairs.

Events: an action has ``action`` and ``args``, an observation ``observation``, ``content`` and
``cause`` (the id of the action it answers). An agent action is a thought (``args.thought``) and
the tool call itself: the function the model called and its arguments, read from
``tool_call_metadata.model_response`` when it is there (``args`` otherwise, without OpenHands'
bookkeeping fields); its observation follows it (``error`` observations are errors, and so is the output of a
command that exited non-zero: ``exit_code`` of the event or of its ``extras``, -1 being OpenHands' "no exit code
yet" for a command left running). An
``error`` observation without a ``cause`` reports a call that never became an action (arguments
the tool refused): it stays in place, marked unpaired. ``message`` actions are messages (the
first user one is the task), the ``system`` action is the system prompt. Agent-state changes, the
``null`` observations and memory ``recall`` events are bookkeeping: left out, and counted in the
trace's ``events_not_steps``.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

from .base import Converter, Sample
from .support.chat import call_id, value_text
from .support.errors import BadRecord, expect
from .support.files import Origin, documents_only, elements
from .support.steps import StepList, default_id, finish, render_args, step, step_metadata, text

NAME = "openhands"

SOURCES = {"agent", "user", "environment"}
#: events that keep the agent's machinery running and hold nothing the agent did or saw
BOOKKEEPING = {"change_agent_state", "agent_state_changed", "null", "recall"}
#: ``args`` fields OpenHands adds to a call for its own use (not what the model asked for)
NOT_ARGS = {"thought", "action", "keep_prompt", "is_confirmed", "confirmation_state", "action_risk",
            "security_risk", "hidden", "blocking", "is_input", "is_static", "impl_source",
            "translated_ipython_code", "kernel_init_code", "include_extra", "wait_for_response", "image_urls",
            "images_urls", "cwd"}


# ---------------------------------------------------------------- detection

def _is_event(e: Any) -> bool:
    return isinstance(e, dict) and (isinstance(e.get("action"), str) or isinstance(e.get("observation"), str))


def _history_of(rec: Any) -> list | None:
    if isinstance(rec, list):
        return rec
    if isinstance(rec, dict) and isinstance(rec.get("history"), list):
        return rec["history"]
    return None


def _score(rec: Any) -> float:
    h = _history_of(rec)
    if not h:
        return 0.0
    head = [x for e in h[:20] for x in (e if isinstance(e, list) else [e])]
    if not all(_is_event(e) for e in head):
        return 0.0
    if isinstance(rec, list):  # a bare event list: the stream's own fields
        return 0.95 if all(e.get("source") in SOURCES and "id" in e for e in head) else 0.0
    return 0.95 if any(k in rec for k in ("instance_id", "issue", "instruction", "test_result")) else 0.6


#: the start of an evaluation or resolver line too long for the detectors' sample to hold whole
_LONG_RECORD = re.compile(
    r'^\s*\{.*"(instance_id|issue)":.*"history":\s*\[\s*\[?\s*\{\s*"(id|action|observation|content|command|source)":',
    re.S,
)
#: the start of a trajectory export too big to be read whole for detection
_BIG_EVENTS = re.compile(
    r'^\s*\[\s*\{\s*"id":\s*"?\d+"?,\s*"timestamp":\s*"[^"]*",\s*"source":\s*"(agent|user|environment)"'
)


def detect(sample: Sample) -> float:
    if sample.first_records:
        return min(_score(r) for r in sample.first_records[:5])
    if sample.first_json is not None:
        return _score(sample.first_json)
    return 0.9 if _LONG_RECORD.match(sample.head) or _BIG_EVENTS.match(sample.head) else 0.0


# ---------------------------------------------------------------- one history

def _model_call(tcm: dict) -> tuple[str | None, Any]:
    """(function name, arguments) of the tool call the event came from, as the model wrote it."""
    cid = tcm.get("tool_call_id")
    resp = tcm.get("model_response")
    if isinstance(resp, dict) and cid is not None:
        for choice in resp.get("choices") or []:
            msg = choice.get("message") if isinstance(choice, dict) else None
            for tc in (msg or {}).get("tool_calls") or []:
                if isinstance(tc, dict) and tc.get("id") == cid and isinstance(tc.get("function"), dict):
                    return tc["function"].get("name"), tc["function"].get("arguments")
    name = tcm.get("function_name")
    return (name if isinstance(name, str) else None), None


def _args_of(e: dict) -> dict:
    """The call's own arguments: ``args`` (or, in 2024 entries, the entry itself) without bookkeeping."""
    args = e.get("args") if "args" in e else e
    if not isinstance(args, dict):
        return {}
    return {k: v for k, v in args.items() if k not in NOT_ARGS and v is not None}


class _History:
    def __init__(self, events: list) -> None:
        self.out = StepList()
        self.task: str | None = None
        self.skipped: Counter = Counter()
        self.ids = any(isinstance(e, dict) and "id" in e for e in events)
        self.pending: str | None = None  # the last action (2024 entries pair by position)
        self.messages = 0

    def action(self, e: dict, i: int, w: str) -> None:
        kind = e.get("action")
        source = e.get("source")
        args = expect(e.get("args"), dict, f"{w}.args", optional=True) or {}
        if kind in BOOKKEEPING:
            self.skipped[kind] += 1
            return
        meta = {"role": source, "event_id": e.get("id"), "timestamp": e.get("timestamp"),
                "history_index": None if self.ids else i}
        if kind == "system":
            self.out.add(step("system", text(args.get("content")), None,
                              {**meta, "openhands_version": args.get("openhands_version")}))
            return
        thought = args.get("thought") if "args" in e else e.get("thought")
        if kind == "message":
            body = text(args.get("content") if "args" in e else e.get("content"))
            if source is None:  # 2024 entries: the first message is the user's prompt, later ones the agent's
                source = meta["role"] = "user" if self.messages == 0 else "agent"
            self.messages += 1
            if thought and thought != body:
                self.out.add(step("thought", text(thought), None, dict(meta)))
            self.out.add(step("message", body, None, meta))
            if source == "user" and self.task is None:
                self.task = body
            return
        if thought and kind != "think":  # a think call's argument is the thought itself
            self.out.add(step("thought", text(thought), None, dict(meta)))
        tcm = expect(e.get("tool_call_metadata"), dict, f"{w}.tool_call_metadata", optional=True) or {}
        name, raw = _model_call(tcm) if tcm else (None, None)
        key = str(e["id"]) if e.get("id") is not None else f"#{i}"
        cid = call_id(tcm.get("tool_call_id"))
        self.out.call(
            key,
            step(
                "action",
                name or text(kind),
                render_args(raw) if raw is not None else render_args(_args_of(e) or None),
                {**meta, "tool_call_id": cid, "openhands_action": kind if name else None},
            ),
        )
        self.pending = key

    def observation(self, e: dict, i: int, w: str) -> None:
        kind = e.get("observation")
        if kind in BOOKKEEPING:
            self.skipped[kind] += 1
            return
        extras = expect(e.get("extras"), dict, f"{w}.extras", optional=True) or {}
        got = extras.get("metadata")
        run_meta = got if isinstance(got, dict) else {}
        got = e.get("tool_call_metadata")
        tcm = got if isinstance(got, dict) else {}
        exit_code = e.get("exit_code", run_meta.get("exit_code", extras.get("exit_code")))
        meta = {
            "role": e.get("source"),
            "event_id": e.get("id"),
            "timestamp": e.get("timestamp"),
            "history_index": None if self.ids else i,
            "tool_call_id": call_id(tcm.get("tool_call_id")),
            "tool_name": tcm.get("function_name") or (kind if kind != "error" else None),
            "cause": e.get("cause"),
            "exit_code": exit_code,
            "success": e.get("success"),
        }
        # a command with no output shows OpenHands' own line for it ("Command `…` executed with exit code 0.")
        body = value_text(e.get("content")) or text(e.get("message"))
        s = step("error" if kind == "error" or _failed(exit_code) else "observation", body, None, meta)
        cause = e.get("cause")
        if cause is not None:
            self.out.result(str(cause), s)
        elif not self.ids and self.pending is not None:  # 2024 entries: the action right before
            self.out.result(self.pending, s)
            self.pending = None
        else:  # a call the tool refused before it became an action: the error stands alone
            step_metadata(s)["unpaired"] = True
            self.out.add(s)


def _failed(exit_code: Any) -> bool:
    """A command that exited non-zero; -1 is OpenHands' "no exit code yet" (a server left running, a timeout)."""
    return isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code not in (0, -1)


def _steps(history: list, where: str) -> _History:
    h = _History(history)
    flat = []
    for i, e in enumerate(history):
        if isinstance(e, list):  # [action, observation] pairs
            flat += [(i, f"{where}[{i}][{k}]", x) for k, x in enumerate(e)]
        else:
            flat.append((i, f"{where}[{i}]", e))
    for i, w, e in flat:
        if not isinstance(e, dict):
            expect(e, dict, w)
        if "action" in e:
            h.action(e, i, w)
        elif "observation" in e:
            h.observation(e, i, w)
        else:
            raise BadRecord(w, "neither an action nor an observation")
    return h


# ---------------------------------------------------------------- records

def _record_meta(rec: dict) -> tuple[Any, dict]:
    """(trace id, trace metadata) of an evaluation or resolver record."""
    meta: dict = {}
    tid = rec.get("instance_id")
    issue = rec.get("issue")
    if isinstance(issue, dict):
        meta["issue"] = {k: issue.get(k) for k in ("owner", "repo", "number", "title") if issue.get(k) is not None}
        if tid is None and issue.get("number") is not None:
            tid = f"{issue.get('owner')}/{issue.get('repo')}#{issue.get('number')}"
    run = rec.get("metadata")
    if isinstance(run, dict):
        llm = run.get("llm_config")
        if not isinstance(llm, dict):
            llm = {}
        meta["model"] = llm.get("model")
        meta["run"] = {
            k: v
            for k, v in run.items()
            if k not in ("llm_config", "agent_config", "condenser_config") and v is not None
        }
    for k in ("instance_id", "issue_type", "base_commit", "success", "comment_success", "result_explanation", "error"):
        if rec.get(k) is not None:
            meta[k] = rec[k]
    patch = rec.get("git_patch")
    if patch is None and isinstance(rec.get("test_result"), dict):
        patch = rec["test_result"].get("git_patch")
    meta["git_patch"] = patch
    metrics = rec.get("metrics")
    if isinstance(metrics, dict):
        meta["cost"] = metrics.get("accumulated_cost")
        meta["token_usage"] = metrics.get("accumulated_token_usage")
    inst = rec.get("instance")
    if isinstance(inst, dict):
        meta["repo"] = inst.get("repo")
        meta.setdefault("base_commit", inst.get("base_commit"))
    return tid, meta


def one(rec: Any, origin: Origin) -> list:
    history = _history_of(rec)
    if history is None:
        if isinstance(rec, dict) and "history" in rec:
            expect(rec["history"], list, "history")
        raise BadRecord("history", "missing: expected a list of OpenHands events or a record with \"history\"")
    h = _steps(history, "history" if isinstance(rec, dict) else "")
    tid, meta = _record_meta(rec) if isinstance(rec, dict) else (None, {})
    if h.skipped:
        meta["events_not_steps"] = dict(h.skipped)
    task = h.task
    if task is None and isinstance(rec, dict):
        task = text(rec.get("instruction")) or None
    if tid is None or tid == "":
        tid = default_id(origin)
    return [finish(origin, tid, task, h.out.steps(), meta, field="history")]


@documents_only
def _split(doc: Any, origin: Origin) -> list | None:
    """A JSON list of records is its records; a list of events is one trace."""
    if isinstance(doc, list) and doc and not _is_event(doc[0]) and all(isinstance(r, dict) for r in doc):
        return elements(doc, origin)
    return None


CONVERTER = Converter(
    name=NAME,
    description="OpenHands event streams (trajectory exports, evaluation and resolver output.jsonl)",
    shapes="JSON list of events {id, source, action|observation, args|content, cause, tool_call_metadata}; "
           "JSONL of {instance_id | issue, instruction, history, ...}",
    detect=detect,
    one=one,
    split=_split,
)
