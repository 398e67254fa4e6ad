import json
from functools import cache
from pathlib import Path

import pytest

from ls_trajeval.converters.detection import AMBIGUITY_MARGIN
from ls_trajeval.converters.registry import confidence, get_converter, names
from ls_trajeval.converters.support.files import make_sample
from ls_trajeval.flows.convert import FormatError, detect_format

from .conftest import FIXTURES, NOT_LOGS, REAL

EXPECTED = {
    "anthropic.json": "anthropic",
    "anthropic_stream.jsonl": "anthropic",
    "claude_code_branches.jsonl": "claude_code",
    "mini_swe_agent.traj.json": "swe_agent",
    "openai_chat.jsonl": "openai_chat",
    "openai_chat_stream.jsonl": "openai_chat",
    "openai_responses.json": "openai_responses",
    "project.aider.chat.history.md": "aider",
    "react.jsonl": "react",
    "react_trace.txt": "react",
    "react_structured.jsonl": "react",
    "swe_agent_steps.json": "swe_agent",
    "rollout-2025-10-29T00-59-38-019a2d7a.jsonl": "openai_responses",
    "openai_responses/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl": "openai_responses",
    "openai_responses/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl": "openai_responses",
    "openai_responses/simonw_sample_codex_session.jsonl": "openai_responses",
    "smolagents_steps.json": "smolagents",
    "traces.jsonl": "trace_jsonl",
    "claude_code/representative_messages.jsonl": "claude_code",
    "claude_code/session_b.jsonl": "claude_code",
    "claude_code/spotter_short.jsonl": "claude_code",
    "claude_code/spotter_tool_heavy.jsonl": "claude_code",
    "claude_code/spotter_subagent_main.jsonl": "claude_code",
    "claude_code/spotter_ae4a77f8/subagents/agent-aac57f5.jsonl": "claude_code",
    "claude_code/spotter_8463c716/subagents/agent-a7be2f0.jsonl": "claude_code",
    "claude_code/spotter_8463c716/subagents/agent-acompact-f46190.jsonl": "claude_code",
    "claude_code/ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": "claude_code",
    "claude_code/ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": "claude_code",
    "inspect_ai/log_read_sample.json": "inspect_ai",
    "inspect_ai/log_tool_call_error.json": "inspect_ai",
    "swe_agent/function_calling_simple.traj": "swe_agent",
    "swe_agent/swe-agent__test-repo-i1.traj": "swe_agent",
    "gemini_cli/session-2025-12-01T21-45-5b959dae.json": "gemini_cli",
    "gemini_cli/session-2026-01-16T11-01-file-ops-37b7abef.json": "gemini_cli",
    "gemini_cli/logs.json": "gemini_cli",
    "openhands/trajs_basic_gui_mode.json": "openhands",
    "openhands/multi_swe_bench_output.jsonl": "openhands",
    "openhands/resolver_output.jsonl": "openhands",
    "tau_bench/gpt-4o-airline.first10.json": "tau_bench",
    "tau_bench/e2e_telecom_baseline.json": "tau_bench",
    "cline/roo_natural-mini-uncondensed/api_conversation_history.json": "cline",
    "cline/roo_natural-mini-uncondensed/ui_messages.json": "cline",
    "cline/roo_natural-mini-uncondensed/task_metadata.json": "cline",
    "openai_agents/test_music_composer_handoff_hierarchy.ingest1.json": "openai_agents",
    "openai_agents/test_music_composer_handoff_hierarchy.ingest2.json": "openai_agents",
    "openai_agents/test_generate_metrics.ingest1.json": "openai_agents",
    "openai_agents/test_cache_read_input_tokens_recorded.ingest1.json": "openai_agents",
    "openai_agents/test_generate_metrics.watsonx_sdk0.0.16.ingest1.json": "openai_agents",
    "pydantic_ai/pydantic_ai_v1_message_history.json": "pydantic_ai",
    "langsmith/langsmith_py_wrap_openai_.json": "langsmith",
    "langsmith/langsmith_js_wrap_openai_default.json": "langsmith",
    "langsmith/run_ops_1efb27a4-5264-6908-9ab5-23fc3c60ae2d.first14lines.jsonl": "langsmith",
    "crewai/deadlift_close_wrist_front.mp4_A1_json.md": "crewai",
    "crewai/deadlift_ankle_wide_front.mp4_A3_json.md": "crewai",
    "crewai/deadlift_good_form_side.mp4_A1_json.md": "crewai",
    "autogen/history-wile_e_coyote_1.json": "autogen",
    "cline/roo_synthetic-4-mixed-ops/api_conversation_history.json": "cline",
    "smolagents/code_o1_27-01_vision.jsonl": "smolagents",
    "smolagents/code_o1_27-01_text.jsonl": "smolagents",
    "smolagents/benchmark_messages.jsonl": "smolagents",
    "mini_swe_agent/github_issue.traj.json": "swe_agent",
    "mini_swe_agent/sqlfluff__sqlfluff-2419.traj.json": "swe_agent",
    "mini_swe_agent/pvlib__pvlib-python-1606.traj.json": "swe_agent",
    "potato/spotter_tool_heavy.claude_code.potato.jsonl": "potato",
    "potato/function_calling_simple.swe_agent_trajectory.potato.jsonl": "potato",
    "potato/hand_crafted_1.multi_agent.potato.jsonl": "potato",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_auto_picks_the_format(name):
    p = FIXTURES / name if (FIXTURES / name).exists() else REAL / name
    if not p.exists():
        pytest.skip("shared fixtures missing")
    assert detect_format(p).name == EXPECTED[name]


def test_every_fixture_is_detected():
    """All fixture files, part B's included: each gets exactly one confident format."""
    files = [p for d in (FIXTURES, REAL) for p in d.rglob("*") if p.is_file() and p.name not in NOT_LOGS]
    for p in files:
        detect_format(p)  # raises FormatError when unknown or ambiguous


LOGS = sorted(p for d in (FIXTURES, REAL) for p in d.rglob("*") if p.is_file() and p.name not in NOT_LOGS)
#: (a format, another whose shape it is written in): the other's detector may see its files, less sure than its own
DIALECTS = {
    ("anthropic", "openai_chat"): "a messages list with content blocks",
    ("cline", "anthropic"): "Cline's history is Anthropic messages",
    ("cline", "openai_chat"): "... and a messages list",
    ("autogen", "multi_agent"): "AutoGen's thread is agents' messages",
    ("langsmith", "langchain"): "LangSmith's create lines are runs",
    ("swe_agent", "openai_chat"): "mini-swe-agent saves chat messages",
    ("swe_agent", "react"): "the steps form is thought / action / observation",
}


def own_format(p: Path) -> str:
    """The format a log is of: as listed above, else the folder it lies in (the real logs': theirs)."""
    rel = p.relative_to(FIXTURES if FIXTURES in p.parents else REAL).as_posix()
    if rel in EXPECTED:
        return EXPECTED[rel]
    top = rel.split("/")[0]
    return {"who_and_when": "multi_agent", "mini_swe_agent": "swe_agent"}.get(top, top)


@cache
def sample(p: Path):
    return make_sample(p)


def test_every_log_has_a_known_format():
    assert len(LOGS) > 90 and {own_format(p) for p in LOGS} == set(names())


@pytest.mark.parametrize("name", names())
def test_each_detector_rejects_the_other_formats_logs(name):
    conv = get_converter(name)
    for p in LOGS:
        own = own_format(p)
        if own == name:
            continue
        got = confidence(conv, sample(p))
        if (own, name) in DIALECTS:
            assert got <= confidence(get_converter(own), sample(p)) - AMBIGUITY_MARGIN, p
        else:
            assert got == 0, p


def test_unknown_file_names_formats(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(FormatError, match="unknown format.*openai_chat"):
        detect_format(p)


def test_ambiguous_file_names_candidates(tmp_path, monkeypatch):
    import ls_trajeval.converters.detection as conv
    from ls_trajeval.converters.registry import get_converter

    p = tmp_path / "x.json"
    p.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    a, b = get_converter("openai_chat"), get_converter("anthropic")
    monkeypatch.setattr(conv, "detect", lambda sample: [(0.8, a), (0.78, b)])
    with pytest.raises(FormatError, match=r"ambiguous format: candidates openai_chat \(0.80\), anthropic \(0.78\)"):
        detect_format(p)


def test_plain_messages_are_not_ambiguous(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert detect_format(p).name == "openai_chat"


def test_every_converter_module_is_named_after_its_format():
    """``--format NAME`` imports only the module NAME: a converter whose name differs would be unreachable."""
    from ls_trajeval.converters import registry

    assert len(registry.names()) >= 19
    assert [c.name for c in registry.all_converters()] == list(registry.names())
    assert all(registry.get_converter(n).name == n for n in registry.names())
    with pytest.raises(KeyError, match="unknown format 'nope'; known formats: aider, "):
        registry.get_converter("nope")
