"""An LLM judge on any OpenAI-compatible endpoint: per step of a trace a verdict (correctness, error type from the
project's taxonomy, severity, rationale, confidence), as structured output validated against a JSON schema built
from the taxonomy.

- **Requests**: the official ``openai`` client's chat completions, one request per trace (a verdict on a step
  depends on what came before it, so the whole trace in one request gives the judge all of it at the least cost: its
  content is sent once). A trace whose prompt would exceed ``max_prompt_chars`` is judged in windows of consecutive
  steps, each request carrying the earlier steps shortened as context (as many of the latest as fit half the limit).
  A step longer than ``max_step_chars`` is cut in its middle, saying how much was cut.
- **Structured output**: ``response_format`` ``json_schema`` (strict) where the server supports it, ``json_object``
  or none where not; whatever comes back is parsed and validated against the full schema (``jsonschema``: labels,
  types and severities from the taxonomy, every step asked for exactly once, confidence in [0, 1], a type and a
  severity on a wrong step). An invalid answer is asked for again with what was wrong, ``invalid_retries`` times,
  then reported for its trace.
- **Retries**: 429, 5xx, timeouts and dropped connections are retried by the client with exponential backoff and
  jitter, honouring ``Retry-After`` (``retries`` times); what still fails is reported for its trace. A refused key,
  an unknown model or address stop the run (:class:`JudgeFailed`).
- **Concurrency**: a bounded thread pool (``concurrency`` requests in flight at most), fed lazily.
- **Budget**: a token or cost cap. No request starts once it is reached; the requests in flight finish (they are
  paid for) and the run stops cleanly, saying how far it got. Tokens are the answers' reported usage (estimated at
  four characters a token when a server reports none).
- **Cache**: :mod:`.judge_cache`, keyed by the rendered messages (the prompt and the trace's content), the model and
  the request's settings: a rerun costs nothing.

The prompt is a Jinja2 template (``templates/judge_prompt.j2``, or a file of one's own) with a ``system`` and a
``user`` block; the trace reaches it as data.
"""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jinja2

from ..core.config import TrajectoryScheme
from ..core.errors import UserError
from ..core.labels import StepLabel
from .judge_cache import AnswerCache, CachedAnswer, cache_key

RESPONSE_FORMATS = ("json_schema", "json_object", "none")
#: a window's request shows the steps before it as context: this many characters of each
OUTLINE_CHARS = 160


class JudgeFailed(UserError):
    """The endpoint refuses the whole run (a key it does not accept, a model or address it does not know)."""


class BudgetReached(Exception):
    """The token or cost cap is reached: no request may start."""


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    model: str
    api_key: str | None = None
    concurrency: int = 4
    #: transport retries: 429, 5xx, timeouts, dropped connections (the client's backoff)
    retries: int = 4
    #: answers that do not validate, asked for again with what was wrong
    invalid_retries: int = 2
    timeout: float = 120.0
    temperature: float | None = 0.0
    seed: int | None = None
    response_format: str = "json_schema"
    max_answer_tokens: int | None = None
    max_prompt_chars: int = 120_000
    max_step_chars: int = 8_000
    token_budget: int | None = None
    cost_budget: float | None = None
    #: USD per million prompt tokens and per million completion tokens, for ``cost_budget``
    prices: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class JudgeInput:
    """One trace to judge: its key (the trace id, to report by), the agent's task and each step's (type, text)."""

    key: str
    task: str
    steps: tuple[tuple[str, str], ...]


@dataclass
class Verdict:
    """What the judge said of one trace: a label per step, or why there is none."""

    key: str
    steps: list[StepLabel] | None = None
    problem: str | None = None
    #: requests answered (not counting the client's transport retries)
    requests: int = 0
    #: transport retries, and invalid answers asked for again
    retries: int = 0
    invalid: int = 0
    windows: int = 0
    #: windows answered from the cache
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


# ---------------------------------------------------------------- the schema of an answer
def wire_schema(scheme: TrajectoryScheme, numbers: Sequence[int]) -> dict:
    """The answer's JSON schema as sent in ``response_format`` (strict structured outputs: every key required, no
    other keys, null where a value may be absent)."""
    severities = [s.name for s in scheme.severities]
    return {
        "type": "object", "additionalProperties": False, "required": ["steps"],
        "properties": {"steps": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["step", "correctness", "error_type", "severity", "rationale", "confidence"],
            "properties": {
                "step": {"type": "integer", "enum": list(numbers)},
                "correctness": {"type": "string", "enum": list(scheme.correctness_labels)},
                "error_type": {"type": ["string", "null"], "enum": [t.name for t in scheme.types] + [None]},
                "severity": {"type": ["string", "null"], "enum": severities + [None]},
                "rationale": {"type": "string"},
                "confidence": {"type": "number"},
            }}}},
    }


def answer_schema(scheme: TrajectoryScheme, numbers: Sequence[int]) -> dict:
    """The schema an answer is validated against: the wire schema, every step asked for (as many entries), the
    confidence in [0, 1], and a wrong step's error type and severity given."""
    schema = wire_schema(scheme, numbers)
    steps = schema["properties"]["steps"]
    steps["minItems"] = steps["maxItems"] = len(numbers)
    item = steps["items"]
    item["properties"]["confidence"].update(minimum=0, maximum=1)
    wrong = {"type": "string"}
    then: dict = {"properties": {"error_type": wrong}}
    if scheme.severities:
        then["properties"]["severity"] = wrong
    item["allOf"] = [{"if": {"properties": {"correctness": {"enum": list(scheme.error_labels)}}}, "then": then}]
    return schema


class InvalidAnswer(ValueError):
    """An answer that is not the JSON asked for; the message says what is wrong."""


_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?```$", re.S)


def parse_answer(content: str | None, scheme: TrajectoryScheme, numbers: Sequence[int]) -> list[dict]:
    """The answer's step verdicts in the order asked, or :class:`InvalidAnswer`."""
    from jsonschema import Draft202012Validator

    if not content or not content.strip():
        raise InvalidAnswer("the answer is empty")
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:  # a model that wraps its JSON in a code fence in spite of the instructions
        text = fenced.group(1).strip()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidAnswer(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    errors = sorted(Draft202012Validator(answer_schema(scheme, numbers)).iter_errors(doc),
                    key=lambda e: list(e.absolute_path))
    if errors:
        shown = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '(the answer)'}: {_problem(e)}" for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise InvalidAnswer(f"does not match the schema: {shown}{more}")
    seen: dict[int, int] = {}
    for entry in doc["steps"]:
        seen[entry["step"]] = seen.get(entry["step"], 0) + 1
    twice = [n for n, c in seen.items() if c > 1]
    missing = [n for n in numbers if n not in seen]
    if twice or missing:
        raise InvalidAnswer("; ".join(filter(None, [
            f"step{'s' * (len(missing) > 1)} {', '.join(f'#{n}' for n in missing)} missing" if missing else "",
            f"step{'s' * (len(twice) > 1)} {', '.join(f'#{n}' for n in twice)} given twice" if twice else ""])))
    order = {n: i for i, n in enumerate(numbers)}
    return sorted(doc["steps"], key=lambda e: order[e["step"]])


def _problem(error: Any) -> str:
    """A schema violation in a line (a long list of allowed values is not repeated: the prompt lists them)."""
    if error.validator == "enum" and len(error.validator_value) > 6:
        value = json.dumps(error.instance, ensure_ascii=False)[:80]
        return f"{value} is not one of the {len(error.validator_value)} allowed values"
    return error.message[:200]


def to_label(entry: dict, scheme: TrajectoryScheme) -> StepLabel:
    """One validated verdict as the step's label (step numbers are 1-based, as the prompt shows them)."""
    index, correctness = entry["step"] - 1, entry["correctness"]
    confidence = float(entry["confidence"])
    if correctness not in scheme.error_labels:
        return StepLabel(index, correctness, confidence=confidence)
    etype = scheme.type_by_name(entry["error_type"])
    rationale = entry["rationale"].strip() or None
    return StepLabel(index, correctness, etype.category if etype else None, entry["error_type"], entry["severity"],
                     rationale, confidence=confidence)


# ---------------------------------------------------------------- the prompt
def _cut(text: str, limit: int) -> str:
    """``text`` at most about ``limit`` characters: its head and tail, saying how much of the middle was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}[... {len(text) - 2 * half} characters cut ...]{text[len(text) - half:]}"


class Prompt:
    """The judge's messages for a window of a trace's steps, from the Jinja2 template (plain text: autoescape is off,
    nothing renders as markup; the trace's strings enter as JSON)."""

    def __init__(self, scheme: TrajectoryScheme, instructions: str = "", template_text: str | None = None,
                 source: str = "judge_prompt.j2"):
        env = jinja2.Environment(autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
        env.filters["json"] = lambda v: json.dumps(v, ensure_ascii=False)
        if template_text is None:
            template_text = resources.files("ls_trajeval.templates").joinpath("judge_prompt.j2").read_text("utf-8")
        #: the template's source (a judge's model version names it by its hash)
        self.text = template_text
        try:
            self.template = env.from_string(template_text)
        except jinja2.TemplateSyntaxError as exc:
            raise UserError(f"{source}:{exc.lineno}: not a Jinja2 template: {exc.message}") from None
        missing = {"system", "user"} - set(self.template.blocks)
        if missing:
            raise UserError(f"{source}: the prompt template needs the blocks 'system' and 'user' "
                            f"({{% block system %}}...{{% endblock %}}); missing: {', '.join(sorted(missing))}")
        self.source = source
        self.taxonomy = {
            "correctness": list(scheme.correctness_labels), "default": scheme.correctness_default,
            "categories": [{"name": c.category, "label": c.label, "description": c.description,
                            "types": [{"name": t.name, "label": t.label, "description": t.description}
                                      for t in c.types]} for c in scheme.categories],
            "severities": [{"name": s.name, "weight": s.weight, "description": s.description}
                           for s in sorted(scheme.severities, key=lambda s: s.deduction)],
            "instructions": instructions or "",
        }

    def messages(self, task: str, steps: list[dict], context: list[dict], total: int, omitted: int = 0) -> list[dict]:
        """The system and user messages asking about ``steps``, the ``context`` steps before them shortened and the
        ``omitted`` ones before those left out."""
        values = {**self.taxonomy, "task": task, "steps": steps, "context": context, "omitted": omitted,
                  "total": total, "first": steps[0]["step"], "last": steps[-1]["step"]}
        try:
            ctx = self.template.new_context(values)
            system = "".join(self.template.blocks["system"](ctx)).strip()
            user = "".join(self.template.blocks["user"](ctx)).strip()
        except jinja2.TemplateError as exc:
            raise UserError(f"{self.source}: the prompt template failed: {exc}") from None
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def plan_windows(item: JudgeInput, prompt: Prompt, max_prompt_chars: int, max_step_chars: int
                 ) -> list[tuple[list[dict], list[dict], int]]:
    """(steps to judge, earlier steps as context, how many before those are left out) per request: the whole trace
    when its prompt fits ``max_prompt_chars``, else consecutive windows of at least one step each. A window's context
    is the steps before it, each cut to its first characters, the most recent ones that fit half the limit."""
    steps: list[dict[str, Any]] = [{"step": i + 1, "type": kind, "content": _cut(text, max_step_chars)}
                                    for i, (kind, text) in enumerate(item.steps)]
    if not steps:
        return []
    whole = sum(len(m["content"]) for m in prompt.messages(item.task, steps, [], len(steps)))
    if whole <= max_prompt_chars:
        return [(steps, [], 0)]
    outline = [{**s, "content": s["content"][:OUTLINE_CHARS]} for s in steps]
    sizes = [len(json.dumps(s, ensure_ascii=False)) + 1 for s in steps]
    outline_sizes = [len(json.dumps(s, ensure_ascii=False)) + 1 for s in outline]

    def fixed(context: list[dict], omitted: int) -> int:  # the prompt's length less its steps and context
        size = sum(len(m["content"]) for m in prompt.messages(item.task, steps[:1], context, len(steps), omitted))
        return size - sizes[0] - sum(outline_sizes[:len(context)])

    first, later = fixed([], 0), fixed(outline[:1], len(steps))
    windows, start = [], 0
    while start < len(steps):
        since, context_size = start, 0
        while since > 0 and context_size + outline_sizes[since - 1] <= max_prompt_chars // 2:
            since -= 1
            context_size += outline_sizes[since]
        room = max_prompt_chars - (later if start else first) - context_size
        end, used = start + 1, sizes[start]
        while end < len(steps) and used + sizes[end] <= room:
            used += sizes[end]
            end += 1
        windows.append((steps[start:end], outline[since:start], since))
        start = end
    return windows


# ---------------------------------------------------------------- the budget
class Budget:
    """Tokens and cost spent so far, against the caps (thread-safe)."""

    def __init__(self, tokens: int | None, cost: float | None, prices: tuple[float, float]):
        self.tokens_cap, self.cost_cap, self.prices = tokens, cost, prices
        self.prompt_tokens = self.completion_tokens = 0
        self.estimated = False
        self._lock = threading.Lock()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> float:
        return (self.prompt_tokens * self.prices[0] + self.completion_tokens * self.prices[1]) / 1e6

    @property
    def reached(self) -> bool:
        return (self.tokens_cap is not None and self.tokens >= self.tokens_cap) or \
            (self.cost_cap is not None and self.cost >= self.cost_cap)

    def check(self) -> None:
        with self._lock:
            if self.reached:
                raise BudgetReached()

    def spend(self, prompt_tokens: int, completion_tokens: int, estimated: bool = False) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.estimated |= estimated

    def describe(self) -> str:
        cost = f", ${self.cost:.4f}" if any(self.prices) else ""
        return f"{self.tokens:,} tokens ({self.prompt_tokens:,} prompt, {self.completion_tokens:,} completion" \
               f"{', partly estimated' if self.estimated else ''}){cost}"


# ---------------------------------------------------------------- the judge
@dataclass
class _Window:
    numbers: list[int]
    messages: list[dict]
    #: the request's other settings (response format, temperature, ...)
    extra: dict[str, Any]
    key: str
    labels: list[StepLabel] = field(default_factory=list)


class LLMJudge:
    """Judges traces on one endpoint with one model; :meth:`run` judges many concurrently."""

    def __init__(self, settings: JudgeSettings, scheme: TrajectoryScheme, prompt: Prompt,
                 cache: AnswerCache | None = None):
        import openai

        if settings.response_format not in RESPONSE_FORMATS:
            raise UserError(f"response format {settings.response_format!r}: expected one of "
                            f"{', '.join(RESPONSE_FORMATS)}")
        self.settings, self.scheme, self.prompt, self.cache = settings, scheme, prompt, cache
        self.client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-set",
                                    max_retries=settings.retries, timeout=settings.timeout)
        self.budget = Budget(settings.token_budget, settings.cost_budget, settings.prices)
        #: set when the budget stopped a run
        self.stopped = False

    def _request_settings(self, numbers: Sequence[int]) -> dict[str, Any]:
        s = self.settings
        out: dict[str, Any] = {}
        if s.temperature is not None:
            out["temperature"] = s.temperature
        if s.seed is not None:
            out["seed"] = s.seed
        if s.max_answer_tokens is not None:
            out["max_tokens"] = s.max_answer_tokens
        if s.response_format == "json_schema":
            out["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "step_verdicts", "strict": True, "schema": wire_schema(self.scheme, numbers)}}
        elif s.response_format == "json_object":
            out["response_format"] = {"type": "json_object"}
        return out

    def _ask(self, messages: list[dict], extra: dict[str, Any], verdict: Verdict) -> tuple[str, int, int, str | None]:
        """One chat completion's text, its prompt and completion tokens, and what makes it no answer at all (a
        refusal, a cut-off) or None; transport failures that outlast the retries raise ``_Unanswered``."""
        import openai

        self.budget.check()
        try:
            raw = self.client.chat.completions.with_raw_response.create(
                model=self.settings.model,
                messages=messages,  # type: ignore[arg-type, unused-ignore]  # plain dicts (openai typed only if installed)
                **extra)
            completion = raw.parse()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise JudgeFailed(f"{self.settings.base_url} refused the API key (HTTP {exc.status_code}): "
                              f"{_message(exc)}") from None
        except openai.NotFoundError as exc:
            raise JudgeFailed(f"{self.settings.base_url}: model {self.settings.model!r} or the address not found "
                              f"(HTTP 404): {_message(exc)}") from None
        except openai.APIStatusError as exc:
            message, code = _message(exc), exc.status_code
            retried = f" after {self.settings.retries} retries" if code in (408, 409, 429) or code >= 500 else ""
            hint = ""
            if code == 400 and "response_format" in message:
                hint = " (the server may not support this response format: try --response-format json_object or none)"
            elif code == 400 and "context" in message.lower():
                hint = " (the prompt may be too long for the model: lower --max-prompt-chars)"
            raise _Unanswered(f"HTTP {code}{retried}: {message}{hint}") from None
        except openai.APITimeoutError:
            raise _Unanswered(f"no answer within {self.settings.timeout:g} s, {self.settings.retries} retries") \
                from None
        except openai.APIConnectionError as exc:
            raise _Unanswered(f"cannot reach {self.settings.base_url} ({exc.__cause__ or exc}), "
                              f"{self.settings.retries} retries") from None
        except openai.APIResponseValidationError as exc:
            raise _Unanswered(f"not a chat completion: {_message(exc)}") from None
        verdict.requests += 1
        verdict.retries += getattr(raw, "retries_taken", 0)
        usage = getattr(completion, "usage", None)
        choice = completion.choices[0] if completion.choices else None
        content = choice.message.content if choice is not None and choice.message is not None else None
        if usage is not None and usage.prompt_tokens is not None:
            prompt_tokens, completion_tokens = usage.prompt_tokens, usage.completion_tokens or 0
            estimated = False
        else:
            prompt_tokens = sum(len(m["content"]) for m in messages) // 4
            completion_tokens, estimated = len(content or "") // 4, True
        self.budget.spend(prompt_tokens, completion_tokens, estimated)
        verdict.prompt_tokens += prompt_tokens
        verdict.completion_tokens += completion_tokens
        problem = None
        refusal = getattr(choice.message, "refusal", None) if choice is not None else None
        if choice is None:
            problem = "the answer has no choices"
        elif refusal:
            problem, content = f"the model refused: {refusal[:200]}", refusal
        elif choice.finish_reason == "length":
            problem = "the answer was cut off at the token limit (finish_reason length)"
        return content or "", prompt_tokens, completion_tokens, problem

    def _window(self, window: _Window, verdict: Verdict) -> None:
        if self.cache is not None:
            hit = self.cache.get(window.key)
            if hit is not None:
                try:
                    window.labels = [to_label(e, self.scheme)
                                     for e in parse_answer(hit.content, self.scheme, window.numbers)]
                    verdict.cached += 1
                    return
                except InvalidAnswer:
                    pass  # stored under an older schema: ask again
        extra = window.extra
        messages = list(window.messages)
        attempts = self.settings.invalid_retries + 1
        for attempt in range(attempts):
            content, prompt_tokens, completion_tokens, problem = self._ask(messages, extra, verdict)
            try:
                if problem is not None:
                    raise InvalidAnswer(problem)
                entries = parse_answer(content, self.scheme, window.numbers)
            except InvalidAnswer as exc:
                verdict.invalid += 1
                if attempt + 1 == attempts:
                    raise InvalidAnswer(f"{exc} ({attempts} answer{'s' * (attempts > 1)}, none valid)") from None
                verdict.retries += 1
                messages = [*messages, {"role": "assistant", "content": content},
                            {"role": "user", "content": f"That answer is not valid: {exc}. Answer again with one "
                                                        "JSON object as described, one entry per step asked for."}]
                continue
            window.labels = [to_label(e, self.scheme) for e in entries]
            if self.cache is not None:
                self.cache.put(window.key, self.settings.model,
                               CachedAnswer(content, prompt_tokens, completion_tokens))
            return

    def judge(self, item: JudgeInput) -> Verdict:
        """Every step of one trace judged, or the reason it could not be (:class:`BudgetReached` and
        :class:`JudgeFailed` propagate)."""
        verdict = Verdict(item.key)
        if not item.steps:
            verdict.problem = "the trace has no steps"
            return verdict
        windows = []
        for steps, context, omitted in plan_windows(item, self.prompt, self.settings.max_prompt_chars,
                                                    self.settings.max_step_chars):
            numbers = [s["step"] for s in steps]
            messages = self.prompt.messages(item.task, steps, context, len(item.steps), omitted)
            extra = self._request_settings(numbers)
            windows.append(_Window(numbers, messages, extra, cache_key(self.settings.model, messages, extra)))
        verdict.windows = len(windows)
        try:
            for w in windows:
                self._window(w, verdict)
        except InvalidAnswer as exc:
            where = f"steps #{w.numbers[0]}-#{w.numbers[-1]}: " if len(windows) > 1 else ""
            verdict.problem = f"invalid answer: {where}{exc}"
            return verdict
        except _Unanswered as exc:
            verdict.problem = f"no answer: {exc}"
            return verdict
        verdict.steps = [label for w in windows for label in w.labels]
        return verdict

    def run(self, items: Iterable[JudgeInput]) -> Iterator[Verdict]:
        """Judge ``items`` with ``concurrency`` requests in flight, yielding each verdict as it is done. At the
        budget no further trace starts, those in flight finish, and :attr:`stopped` is set."""
        source = iter(items)
        limit = max(1, self.settings.concurrency)
        with ThreadPoolExecutor(limit, thread_name_prefix="llm-judge") as pool:
            running: set[Future] = set()

            def feed() -> None:
                while not self.stopped and len(running) < limit:
                    item = next(source, None)
                    if item is None:
                        return
                    running.add(pool.submit(self.judge, item))

            feed()
            try:
                while running:
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        running.discard(future)
                        try:
                            yield future.result()
                        except BudgetReached:
                            self.stopped = True
                    feed()
            finally:
                for future in running:
                    future.cancel()

    def close(self) -> None:
        self.client.close()


class _Unanswered(Exception):
    """A request that failed after the client's retries."""


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body["error"] if isinstance(body.get("error"), dict) else body
        text = inner.get("message") or json.dumps(body, ensure_ascii=False)
    else:
        text = getattr(exc, "message", None) or str(exc)
    return " ".join(str(text).split())[:300]

