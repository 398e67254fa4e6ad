"""``ls-trajeval judge``: an LLM judge on any OpenAI-compatible endpoint over a project's traces, and its subcommands
``merge`` (several judges as one prediction per task), ``accept`` (confident suggestions accepted, an audit sample
left for people), ``audit`` (what accepting cost) and ``show`` (annotators start from the suggestions or see them beside
each step), each a few lines over ``ls_trajeval.flows``."""
from __future__ import annotations

import json
import os
import sys

import click

from .common import EXIT_REJECTED, Command, Group, need_extra, optional_config, studio, studio_options

JUDGE_NEEDS = ("openai", "jsonschema")
_MAX_PRINTED = 50


def _confidences(values: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for value in values:
        version, sep, number = value.rpartition("=")
        try:
            confidence = float(number)
        except ValueError:
            confidence = -1.0  # refused below
        if not sep or not version or not 0 <= confidence <= 1:
            raise click.BadParameter(f"{value!r}: expected MODEL_VERSION=CONFIDENCE, a confidence in [0, 1]",
                                     param_hint="--confidence")
        out[version] = confidence
    return out


@click.group("judge", cls=Group, invoke_without_command=True)
@click.option("--project", type=int, help="the project whose traces to judge")
@click.option("--base-url", help="the OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 or "
                                 "http://127.0.0.1:8000/v1 (vLLM, Ollama, llama.cpp, LiteLLM)")
@click.option("--model", help="the model's name at that endpoint")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True, metavar="VAR",
              help="the environment variable holding the endpoint's API key (never on the command line); unset: "
                   "no key (local servers)")
@click.option("--model-version", default=None,
              help="the predictions' model version [default: llm-judge-MODEL-<hash of the prompt template>]")
@click.option("--prompt", "prompt_path", type=click.Path(dir_okay=False), default=None,
              help="a Jinja2 prompt template of your own, with a 'system' and a 'user' block (the shipped one: "
                   "ls_trajeval/templates/judge_prompt.j2)")
@click.option("--response-format", type=click.Choice(["json_schema", "json_object", "none"]), default="json_schema",
              show_default=True, help="structured output: a strict JSON schema, JSON mode, or plain text (every "
                                      "answer is validated against the schema whichever)")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 256),
              help="requests in flight at most")
@click.option("--retries", default=4, show_default=True, type=click.IntRange(0, 20),
              help="retries of a request on 429, 5xx, timeouts and dropped connections, with exponential backoff")
@click.option("--invalid-retries", default=2, show_default=True, type=click.IntRange(0, 10),
              help="times an answer that does not validate is asked for again, saying what was wrong")
@click.option("--timeout", default=120.0, show_default=True, type=click.FloatRange(0.1), help="seconds per request")
@click.option("--temperature", default=0.0, show_default=True, type=click.FloatRange(0, 2))
@click.option("--seed", "sampling_seed", default=None, type=int, help="the sampling seed, where the server takes one")
@click.option("--max-answer-tokens", default=None, type=click.IntRange(1),
              help="max_tokens of each answer (default: the server's)")
@click.option("--max-prompt-chars", default=120_000, show_default=True, type=click.IntRange(1000),
              help="a trace whose prompt is longer is judged in windows of steps, the earlier steps shortened as "
                   "context")
@click.option("--max-step-chars", default=8_000, show_default=True, type=click.IntRange(100),
              help="a longer step is cut in its middle, saying how much")
@click.option("--token-budget", default=None, type=click.IntRange(1),
              help="stop starting requests once the answers' usage reaches this many tokens")
@click.option("--cost-budget", default=None, type=click.FloatRange(0, min_open=True),
              help="... or this many US dollars, at --prompt-price and --completion-price")
@click.option("--prompt-price", default=0.0, type=click.FloatRange(0), help="USD per million prompt tokens")
@click.option("--completion-price", default=0.0, type=click.FloatRange(0), help="USD per million completion tokens")
@click.option("--cache", "cache_path", type=click.Path(dir_okay=False), default=None,
              help="the answer cache, a SQLite file [default: judge.sqlite3 in the user's cache directory]")
@click.option("--no-cache", is_flag=True, help="neither read nor write the cache")
@click.option("--limit", default=None, type=click.IntRange(1), help="judge the first N tasks only")
@click.option("--prelabel", is_flag=True,
              help="make these predictions the project's model version, so new annotations start from them")
@click.option("--config", "config_path", help="YAML config (default: the one embedded in the project)")
@click.option("--quiet", is_flag=True, help="no progress bar")
@studio_options
@click.pass_context
def judge_group(ctx, project, base_url, model, api_key_env, model_version, prompt_path, response_format, concurrency,
                retries, invalid_retries, timeout, temperature, sampling_seed, max_answer_tokens, max_prompt_chars,
                max_step_chars, token_budget, cost_budget, prompt_price, completion_price, cache_path, no_cache,
                limit, prelabel, config_path, quiet, url, api_key):
    """An LLM judge on any OpenAI-compatible endpoint: per step of each trace a verdict (correctness, error type
    from the project's taxonomy, severity, rationale, confidence), stored as predictions of one model version.

    \b
    ls-trajeval judge --project 3 --base-url http://127.0.0.1:8000/v1 --model qwen2.5-7b-instruct
    ls-trajeval judge merge --project 3            # several judges as one prediction per task
    ls-trajeval judge accept --project 3 --threshold 0.9 --audit 0.1
    ls-trajeval judge audit --project 3            # once people annotated the audit sample

    A rerun with the same model version updates its predictions instead of adding more, and costs nothing for
    traces judged before (the answer cache). Exit code 1 when a trace was not judged (its reason printed) or the
    budget stopped the run.
    """
    if ctx.invoked_subcommand is not None:
        return None
    missing = [name for name, value in (("--project", project), ("--base-url", base_url), ("--model", model))
               if value is None]
    if missing:
        raise click.UsageError(f"judging needs {', '.join(missing)} (or a subcommand: merge, accept, audit)")
    if cost_budget is not None and not (prompt_price or completion_price):
        raise click.UsageError("--cost-budget needs --prompt-price and --completion-price")
    need_extra("judge", *JUDGE_NEEDS)
    from ..flows.judge import describe, judge_project
    from ..ml.llm_judge import JudgeSettings

    key = os.environ.get(api_key_env) or None
    if key is None:
        click.echo(f"note: ${api_key_env} is not set: no API key is sent", err=True)
    settings = JudgeSettings(base_url=base_url, model=model, api_key=key, concurrency=concurrency, retries=retries,
                             invalid_retries=invalid_retries, timeout=timeout, temperature=temperature,
                             seed=sampling_seed, response_format=response_format, max_answer_tokens=max_answer_tokens,
                             max_prompt_chars=max_prompt_chars, max_step_chars=max_step_chars,
                             token_budget=token_budget, cost_budget=cost_budget,
                             prices=(prompt_price, completion_price))
    client = studio.connect(url, api_key)
    bar = None
    if not quiet:
        from tqdm import tqdm

        bar = tqdm(desc="judging", unit=" traces", file=sys.stderr)
    try:
        summary = judge_project(client, project, settings, config=optional_config(config_path),
                                model_version=model_version, prompt_path=prompt_path, cache_path=cache_path,
                                use_cache=not no_cache, limit=limit, prelabel=prelabel,
                                on_verdict=(lambda v: bar.update(1)) if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    for line in describe(summary):
        click.echo(line)
    for problem in summary.problems[:_MAX_PRINTED]:
        click.echo(f"error: {problem}", err=True)
    if len(summary.problems) > _MAX_PRINTED:
        click.echo(f"error: ... and {len(summary.problems) - _MAX_PRINTED} more", err=True)
    if summary.problems:
        click.echo(f"rejected: {len(summary.problems)} traces not judged", err=True)
    if summary.problems or summary.stopped:
        sys.exit(EXIT_REJECTED)


@judge_group.command("merge", cls=Command)
@click.option("--project", required=True, type=int)
@click.option("--from", "versions", multiple=True, metavar="MODEL_VERSION",
              help="a judge's model version to merge, in order of preference on ties (repeat; default: every version "
                   "a task has, alphabetically)")
@click.option("--model-version", default="merged", show_default=True, help="the merged predictions' model version")
@click.option("--confidence", "confidences", multiple=True, metavar="MODEL_VERSION=C",
              help="the confidence of a judge whose suggestions carry none (a rule detector's precision, measured "
                   "by align), e.g. rules=0.8; without it they rank below every suggestion with a confidence")
@click.option("--prelabel", is_flag=True,
              help="make the merged predictions the project's model version, so new annotations start from them")
@click.option("--config", "config_path", help="YAML config (default: the one embedded in the project)")
@studio_options
def merge_command(project, versions, model_version, confidences, prelabel, config_path, url, api_key):
    """Merge several judges' predictions into one prediction per task: per step the more confident suggestion,
    each region naming its judge (``judge`` on its mark result)."""
    from ..flows.merge import describe, merge_project

    summary = merge_project(studio.connect(url, api_key), project, versions=list(versions) or None,
                            model_version=model_version, default_confidence=_confidences(confidences),
                            config=optional_config(config_path), prelabel=prelabel)
    for line in describe(summary):
        click.echo(line)
    for warning in summary.warnings[:_MAX_PRINTED]:
        click.echo(f"warning: {warning}", err=True)


@judge_group.command("accept", cls=Command)
@click.option("--project", required=True, type=int)
@click.option("--threshold", required=True, type=click.FloatRange(0, 1),
              help="accept a task whose every suggestion is at least this confident")
@click.option("--audit", default=0.1, show_default=True, type=click.FloatRange(0, 1),
              help="the share of those left for people instead, at random, to measure what accepting costs")
@click.option("--seed", default=0, show_default=True, type=int, help="the audit sample's random seed")
@click.option("--model-version", default=None,
              help="accept only this judge's suggestions (default: the ones each task's least_confidence describes)")
@studio_options
def accept_command(project, threshold, audit, seed, model_version, url, api_key):
    """Accept confident suggestions without review: an annotation made from the prediction (its result ids kept,
    so provenance reads "accepted"), except a seeded random audit sample left for people. Then `judge audit`."""
    from ..flows.accept import accept_project, describe_accept

    summary = accept_project(studio.connect(url, api_key), project, threshold=threshold, audit=audit, seed=seed,
                             model_version=model_version)
    for line in describe_accept(summary):
        click.echo(line)
    if summary.audit_sample:
        click.echo(f"when people have annotated the audit sample: ls-trajeval judge audit --project {project}")


@judge_group.command("audit", cls=Command)
@click.option("--project", required=True, type=int)
@click.option("--interval", type=click.Choice(["wilson", "clopper-pearson"]), default="wilson", show_default=True,
              help="the 95% interval of the error rates")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object instead of text")
@click.option("--config", "config_path", help="YAML config (default: the one embedded in the project)")
@studio_options
def audit_command(project, interval, as_json, config_path, url, api_key):
    """The measured error rate of the suggestions `judge accept` accepted, from the audit sample people annotated,
    with its 95% interval: what accepting costs."""
    need_extra("analysis", "numpy", "scipy", "statsmodels")
    from ..flows.accept import audit_report, format_audit

    report = audit_report(studio.connect(url, api_key), project, method=interval, config=optional_config(config_path))
    click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False) if as_json else format_audit(report))
    for problem in report.problems:
        click.echo(f"warning: {problem}", err=True)



@judge_group.command("show", cls=Command)
@click.option("--project", required=True, type=int)
@click.option("--prelabel/--beside", "prelabel", required=True,
              help="annotators start from the suggestions (each a mark to accept or reject), or from a blank trace "
                   "with the suggestions shown beside each step")
@click.option("--model-version", default=None,
              help="the judge whose suggestions are shown (default: the one the tasks' suggestions_by names most; "
                   "beside, else each task's latest prediction)")
@click.option("--config", "config_path", help="YAML config (default: the one embedded in the project)")
@studio_options
def show_command(project, prelabel, model_version, config_path, url, api_key):
    """How annotators meet the suggestions: Label Studio's "use predictions to prelabel tasks" on (--prelabel), or off
    with each task's suggestions written beside its steps and the label config that shows them (--beside)."""
    from ..flows.suggestions import show_suggestions

    summary = show_suggestions(studio.connect(url, api_key), project, prelabel=prelabel, model_version=model_version,
                               config=optional_config(config_path))
    for line in summary.describe():
        click.echo(line)
