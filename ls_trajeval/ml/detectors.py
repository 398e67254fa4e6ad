"""Rule-based detectors of suspect steps: each a small pure function over a trace's steps.

A detector yields ``(step_index, reason)`` pairs; the error type and severity it suggests come from
the config (``ml_backend.detectors.<name>.type/severity``) or its defaults. A team adds its own with a
Python entry point in the group ``ls_trajeval.detectors`` whose object is a :class:`Detector`
subclass (or any callable taking ``(options, where)`` and returning an object with ``name``,
``default_type``, ``default_severity`` and ``detect(steps)``).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

from ..core.config import Config, ConfigError
from ..core.trace import Step

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ls_trajeval.detectors"
OBSERVATION_TYPES = {"observation", "error", "tool", "tool_result", "result", "output"}
ACTION_TYPES = {"action", "code", "tool_call", "command"}
THOUGHT_TYPES = {"thought", "reasoning", "plan", "message", "assistant", "answer"}
FINISH_WORDS = {"finish", "final_answer", "submit", "answer", "done", "stop", "terminate", "exit", "return",
                "final answer", "task_complete", "complete"}


@dataclass(frozen=True)
class Finding:
    step_index: int
    detector: str
    reason: str
    error_type: str
    severity: str | None  # None only for a scheme without severities, which validation refuses


class Detector:
    """Base class: subclasses set ``name``, defaults, ``OPTIONS`` (name -> (type, default)) and ``detect``."""

    name = "detector"
    default_type = "logical_error"
    default_severity = "major"
    OPTIONS: dict[str, tuple[type, Any]] = {}

    def __init__(self, options: Mapping[str, Any] | None = None, where: str = ""):
        errors = []
        self.options: dict[str, Any] = {}  # each of the type OPTIONS names for it
        for key, value in (options or {}).items():
            if key not in self.OPTIONS:
                errors.append(f"{where}.{key}: unknown option (allowed: {', '.join(sorted(self.OPTIONS)) or 'none'})")
                continue
            kind = self.OPTIONS[key][0]
            if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
                errors.append(f"{where}.{key}: expected {kind.__name__}, got {value!r}")
                continue
            self.options[key] = value
        if errors:
            raise ConfigError("ml_backend", errors)
        for key, (_, default) in self.OPTIONS.items():
            self.options.setdefault(key, default)

    def detect(self, steps: Sequence[Step]) -> Iterator[tuple[int, str]]:
        raise NotImplementedError


# ---------------------------------------------------------------- the steps as detectors see them
class Steps(list):
    """A trace's steps with what the detectors ask of them worked out once per trace, not once per question.

    A plain list of the steps too, so :func:`findings` hands the same one to every detector, plugins included.
    """

    def __init__(self, steps: Sequence[Step]):
        super().__init__(steps)
        self.kinds = [s.type.lower() for s in self]
        self.observations = [i for i, k in enumerate(self.kinds) if k in OBSERVATION_TYPES]
        self.actions = [i for i, k in enumerate(self.kinds) if k in ACTION_TYPES]
        # previous_action[i]: the action an observation at i answers, the nearest action of the 3 steps
        # before it unless an observation is nearer
        self.previous_action: list[int | None] = []
        last = None  # the latest action or observation
        for i, kind in enumerate(self.kinds):
            near = last is not None and i - last <= 3 and self.kinds[last] in ACTION_TYPES
            self.previous_action.append(last if near else None)
            if kind in ACTION_TYPES or kind in OBSERVATION_TYPES:
                last = i
        self._texts: dict[int, str] = {}

    def text(self, i: int) -> str:
        """The step's content and its action input (structured inputs formatted as JSON once)."""
        text = self._texts.get(i)
        if text is None:
            step = self[i]
            extra = step.action_input_text
            text = self._texts[i] = f"{step.content}\n{extra}" if extra else step.content
        return text


def _view(steps: Sequence[Step]) -> Steps:
    return steps if isinstance(steps, Steps) else Steps(steps)


#: (what it shows, words in lower case one of which every match contains, the pattern)
Patterns = Sequence[tuple[str, tuple[str, ...], re.Pattern]]


def first_match(patterns: Patterns, text: str) -> str | None:
    """What the first of ``patterns`` that matches ``text`` shows, or None.

    Case-insensitive regexes are slow (microseconds on a short line, most of a millisecond on a long
    output), so a pattern none of whose words is in the lower-cased text is not run. That is exact:
    under re.I a pattern's ASCII letter matches its two cases and only three other letters, K (Kelvin
    sign, lower-cases to k) and İ, ı, ſ (which do not lower-case to i, s), so a text holding one of
    those last three is searched in full.
    """
    folded = None if "\u0130" in text or "\u0131" in text or "\u017f" in text else text.lower()
    for what, words, pattern in patterns:
        if (folded is None or _mentions(folded, words)) and pattern.search(text):
            return what
    return None


def _mentions(text: str, words: tuple[str, ...]) -> bool:
    for word in words:  # a loop, not any() over a generator: three times faster on these short tuples
        if word in text:
            return True
    return False


_ERROR_PATTERNS: Patterns = [
    ("a Python traceback", ("traceback",), re.compile(r"Traceback \(most recent call last\)")),
    ("a non-zero exit code", ("exit", "return"),
     re.compile(r"\b(exit(ed)?( with)?( code| status)?|return(ed)? (code|non-zero exit status))[:=\s]+(-?[1-9]\d*)\b",
                re.I)),
    ("an HTTP error status", ("http", "status", "bad request", "unauthorized", "forbidden", "not found",
                              "internal server error", "service unavailable", "too many requests"),
     re.compile(r"\b(HTTP(/\d(\.\d)?)?|status( code)?)[:=\s]+[45]\d\d\b|\b[45]\d\d "
                r"(Bad Request|Unauthorized|Forbidden|Not Found|Internal Server Error|"
                r"Service Unavailable|Too Many Requests)\b", re.I)),
    ("'not found'", ("not found", "no such file or directory", "does not exist", "cannot find", "could not find",
                     "unknown command"),
     re.compile(r"\b(not found|no such file or directory|does not exist|cannot find|"
                r"could not find|unknown command)\b", re.I)),
    ("'permission denied'", ("permission denied", "access denied", "operation not permitted"),
     re.compile(r"\b(permission denied|access denied|operation not permitted)\b", re.I)),
    ("an error message", ("error", "exception", "fatal", "failed"),
     re.compile(r"^\s*(\w+Error|\w+Exception|error|fatal|failed)\b[:!]", re.I | re.M)),
]


@lru_cache(maxsize=8192)
def tool_error_reason(text: str) -> str | None:
    """What in an observation shows that the tool or command failed, or None."""
    return first_match(_ERROR_PATTERNS, text)


# ---------------------------------------------------------------- the built-in detectors
class ToolError(Detector):
    """An observation (or error step) showing a failed tool call; flags the action that caused it."""

    name = "tool_error"
    default_type = "wrong_arguments"
    default_severity = "major"
    OPTIONS = {"flag": (str, "action")}  # action | observation

    def detect(self, steps):
        steps = _view(steps)
        for i in steps.observations:
            reason = "an error step" if steps.kinds[i] == "error" else tool_error_reason(steps[i].content)
            if reason is None:
                continue
            target = steps.previous_action[i] if self.options["flag"] == "action" else None
            target = i if target is None else target
            yield target, f"the observation at step {i + 1} shows {reason}"


class Loop(Detector):
    """The same action (tool and input) repeated: flags every repeat after the first."""

    name = "loop"
    default_type = "unnecessary_action"
    default_severity = "minor"
    OPTIONS = {"window": (int, 6)}  # how many earlier actions a repeat is looked for in

    def detect(self, steps):
        steps = _view(steps)
        recent: list[tuple[str, int]] = []
        for i in steps.actions:
            key = " ".join(steps.text(i).split()).lower()  # whitespace runs as one space, ends stripped
            first = next((j for k, j in recent if k == key), None) if key else None
            if first is not None:
                yield i, f"repeats the action of step {first + 1} unchanged"
            recent = (recent + [(key, i)])[-self.options["window"]:]


_SUCCESS_CLAIM: Patterns = [
    ("a success claim", ("succe", "work", "fixed", "pass", "resolved", "complete", "done", "correct"),
     re.compile(r"\b(success(fully)?|succeeded|works( now)?|worked|fixed|passed|passes|resolved|completed?|done|"
                r"correct(ly)?)\b", re.I))]
_ADMITS_FAILURE: Patterns = [
    ("an admitted failure", ("error", "fail", "not", "n't", "wrong", "issue"),
     re.compile(r"\b(error|fail|not|n't|wrong|issue)", re.I))]
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{3,}|\d+(?:\.\d+)?")
_STOP = {"this", "that", "with", "from", "have", "will", "what", "there", "their", "then", "than", "which", "when",
         "would", "should", "could", "about", "into", "your", "need", "next", "step", "let's", "lets", "the", "and",
         "now", "file", "line", "true", "false", "none", "null", "also", "some", "more", "been", "were", "they"}


def _words(text: str) -> set[str]:
    return {w.lower().rstrip(".") for w in _WORD.findall(text)} - _STOP


class IgnoredObservation(Detector):
    """The thought after an observation contradicts it (claims success after an error) or does not use it."""

    name = "ignored_observation"
    default_type = "missed_element"
    default_severity = "major"
    OPTIONS = {"min_observation_words": (int, 8), "min_thought_words": (int, 8)}

    def detect(self, steps):
        steps = _view(steps)
        for i in steps.observations:
            nxt = next((j for j in range(i + 1, min(len(steps), i + 3)) if steps.kinds[j] in THOUGHT_TYPES), None)
            if nxt is None:
                continue
            observation, thought = steps[i].content, steps[nxt].content
            err = tool_error_reason(observation)
            if err and first_match(_SUCCESS_CLAIM, thought) and not first_match(_ADMITS_FAILURE, thought):
                yield nxt, f"claims success although the observation at step {i + 1} shows {err}"
                continue
            th_words = _words(thought)  # the (often long) observation's words only when the thought has enough
            if len(th_words) < self.options["min_thought_words"]:
                continue
            obs_words = _words(observation)
            if len(obs_words) >= self.options["min_observation_words"] and not obs_words & th_words:
                yield nxt, f"uses nothing from the observation at step {i + 1}"


def _is_finish(kind: str, step: Step) -> bool:
    if kind in ("answer", "final_answer", "finish"):
        return True
    if kind not in ACTION_TYPES:
        return False
    name = step.content.strip().lower()
    return name in FINISH_WORDS or name.split("(")[0].strip() in FINISH_WORDS


class PrematureTermination(Detector):
    """A finish/answer with no successful observation behind it (none at all, or the last one failed)."""

    name = "premature_termination"
    default_type = "premature_termination"
    default_severity = "critical"
    OPTIONS = {}

    def detect(self, steps):
        steps = _view(steps)
        last_obs = None
        for i, kind in enumerate(steps.kinds):
            if kind in OBSERVATION_TYPES:
                last_obs = i
            if not _is_finish(kind, steps[i]):
                continue
            if last_obs is None:
                yield i, "finishes without any observation behind it"
            elif steps.kinds[last_obs] == "error" or tool_error_reason(steps[last_obs].content):
                yield i, "finishes right after a failed observation"


_DESTRUCTIVE: Patterns = [
    ("rm -rf", ("rm",), re.compile(r"\brm\s+(-[a-zA-Z]*r[a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*r|-r\s+-f|-f\s+-r|"
                                   r"--recursive\s+--force|--force\s+--recursive)\b")),
    ("a force push", ("git",), re.compile(r"\bgit\s+push\b[^\n]*(\s--force\b|\s-f\b|\s--force-with-lease\b|\s\+\S+)")),
    ("DROP TABLE/DATABASE", ("drop",), re.compile(r"\bDROP\s+(TABLE|DATABASE|SCHEMA)\b", re.I)),
    ("TRUNCATE", ("truncate",), re.compile(r"\bTRUNCATE\s+(TABLE\s+)?\w", re.I)),
    ("DELETE without WHERE", ("delete",), re.compile(r"\bDELETE\s+FROM\s+\w+\s*(;|$)", re.I | re.M)),
    ("git reset --hard", ("git",), re.compile(r"\bgit\s+(reset\s+--hard|clean\s+-[a-zA-Z]*f)")),
    ("a disk wipe", ("mkfs", "dd"), re.compile(r"\b(mkfs(\.\w+)?\s|dd\s+[^\n]*of=/dev/)")),
]


class DestructiveCommand(Detector):
    """A command that destroys data: rm -rf, force push, DROP TABLE, git reset --hard, mkfs, ..."""

    name = "destructive_command"
    default_type = "destructive_action"
    default_severity = "critical"
    OPTIONS = {}

    def detect(self, steps):
        steps = _view(steps)
        for i, kind in enumerate(steps.kinds):
            if kind in OBSERVATION_TYPES or kind in THOUGHT_TYPES:
                continue
            what = first_match(_DESTRUCTIVE, steps.text(i))
            if what is not None:
                yield i, f"runs {what}"


_TRUNCATED: Patterns = [
    ("truncated", ("...", "…", "truncated", "omitted"),
     re.compile(r"(\.\.\.|…|\[(output )?truncated\]|<truncated>|\(truncated\)|output truncated|"
                r"\[\d+ (more )?(lines|characters|chars) (omitted|truncated)\])\s*$", re.I))]
_EMPTY = {"", "none", "null", "nil", "undefined", "{}", "[]", "\"\"", "''", "n/a", "no output"}


#: commands that print nothing when they succeed: their empty output is the expected answer
_SILENT = re.compile(r"^\s*(sudo\s+)?(rm|rmdir|touch|mkdir|cp|mv|ln|chmod|chown|cd|export|true|kill|"
                     r"git\s+(add|checkout|stash|tag)|sed\s+-i)\b")


class EmptyObservation(Detector):
    """An observation that is empty or cut off (empty output of a command that is silent on success is fine)."""

    name = "empty_observation"
    default_type = "missed_element"
    default_severity = "minor"
    OPTIONS = {}

    def detect(self, steps):
        steps = _view(steps)
        for i in steps.observations:
            text = steps[i].content.strip()
            if text.lower() in _EMPTY:
                j = steps.previous_action[i]
                if j is not None and _SILENT.search(steps[j].action_input_text or steps[j].content):
                    continue
                yield i, "the observation is empty"
            elif first_match(_TRUNCATED, text):
                yield i, "the observation is truncated"


BUILTIN: dict[str, Callable[..., Detector]] = {
    d.name: d for d in (ToolError, Loop, IgnoredObservation, PrematureTermination, DestructiveCommand, EmptyObservation)
}


def available() -> dict[str, Callable[..., Any]]:
    """Built-in detectors and those installed through the ``ls_trajeval.detectors`` entry point group."""
    out = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            out[ep.name] = ep.load()
        except Exception as exc:  # a broken plugin must not take the backend down
            log.warning("detector entry point %r cannot be loaded: %s", ep.name, type(exc).__name__)
    return out


@dataclass(frozen=True)
class ActiveDetector:
    detector: Any
    error_type: str
    severity: str | None  # as Finding's


def _pick_severity(scheme, wanted: str) -> str | None:
    names = [s.name for s in scheme.severities]
    if wanted in names:
        return wanted
    if not names:
        return None
    ranked = sorted(scheme.severities, key=lambda s: s.deduction)
    position = {"minor": 0, "major": len(ranked) // 2, "critical": len(ranked) - 1}.get(wanted, len(ranked) // 2)
    return ranked[position].name


def build(config: Config) -> list[ActiveDetector]:
    """The detectors the config selects (all built-ins when it names none), checked against the taxonomy."""
    scheme = config.trajectory
    kinds = available()
    specs = {d.name: d for d in config.detectors}
    errors: list[str] = []
    active: list[ActiveDetector] = []
    explicit = bool(specs)
    for name in specs:
        if name not in kinds:
            errors.append(f"ml_backend.detectors.{name}: unknown detector (available: {', '.join(sorted(kinds))})")
    names = [n for n in specs if n in kinds] if explicit else list(BUILTIN)
    for name in names:
        spec = specs.get(name)
        if spec is not None and not spec.enabled:
            continue
        where = f"ml_backend.detectors.{name}"
        try:
            det = kinds[name](dict(spec.options) if spec else {}, where)
        except ConfigError as exc:
            errors += exc.errors
            continue
        etype = (spec.error_type if spec else None) or det.default_type
        if scheme.type_by_name(etype) is None:
            if spec is not None:
                errors.append(f"{where}.type: the detector's default {etype!r} is not in the taxonomy; set 'type'")
            else:
                log.info("detector %s is off: its error type %r is not in the taxonomy", name, etype)
            continue
        severity = (spec.severity if spec else None) or _pick_severity(scheme, det.default_severity)
        active.append(ActiveDetector(det, etype, severity))
    if errors:
        raise ConfigError(config.source, errors)
    return active


def findings(active: Sequence[ActiveDetector], steps: Sequence[Step], config: Config) -> dict[int, Finding]:
    """At most one finding per step: where detectors agree on a step, the more severe one is kept."""
    rank: dict[str | None, float] = {s.name: s.deduction for s in config.trajectory.severities}
    out: dict[int, Finding] = {}
    steps = Steps(steps)  # worked out once for every detector
    for a in active:
        for idx, reason in a.detector.detect(steps):
            if not 0 <= idx < len(steps):
                continue
            old = out.get(idx)
            if old is None or rank.get(a.severity, 0) > rank.get(old.severity, 0):
                out[idx] = Finding(idx, a.detector.name, reason, a.error_type, a.severity)
    return out
