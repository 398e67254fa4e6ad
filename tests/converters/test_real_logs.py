"""Real public logs, each with its provenance beside it (a fixture folder's PROVENANCE.md, or tests/fixtures/real's
README.md, naming the source repository, path and commit): what each converter is known to convert."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ls_trajeval.converters.detection import convert_file
from ls_trajeval.converters.registry import names
from ls_trajeval.core.trace import Trace

from .conftest import FIXTURES, NOT_LOGS, REAL

#: formats with fewer than two real public logs here: their fixtures are written by hand (the logs to add must come
#: from shared/fixtures/real, where public data is placed; see the report of issue 28). A log added makes this fail
#: until its format leaves the list.
KNOWN_GAPS = frozenset({"aider", "anthropic", "atif", "autogen", "langchain", "langfuse", "mcp", "openai_chat",
                        "openinference", "otel_genai", "pydantic_ai", "react", "swebench", "trace_jsonl", "web_agent"})


def real_logs() -> dict[Path, Path]:
    """Each real log, with the document that records where it came from."""
    out = {}
    for doc in [*FIXTURES.glob("*/PROVENANCE.md"), REAL / "README.md"]:
        text = doc.read_text(encoding="utf-8")
        for p in sorted(doc.parent.rglob("*")):
            if (
                p.is_file()
                and p.name not in NOT_LOGS
                and (p.name in text or p.relative_to(doc.parent).as_posix() in text)
            ):
                out[p] = doc
    return out


def test_every_fixture_in_a_folder_with_provenance_is_accounted_for():
    logs = real_logs()
    for doc in FIXTURES.glob("*/PROVENANCE.md"):
        unlisted = [p for p in doc.parent.rglob("*") if p.is_file() and p.name not in NOT_LOGS and p not in logs]
        assert unlisted == [], doc


def test_each_format_converts_two_real_logs_or_is_a_known_gap():
    traces_of: dict[str, list[Path]] = defaultdict(list)
    for p in real_logs():
        made = {t.metadata["source_format"] for t in convert_file(p) if isinstance(t, Trace)}
        for fmt in made:  # the format auto-detection gives it, with at least one trace
            traces_of[fmt].append(p)
    assert set(traces_of) <= set(names())
    assert {fmt for fmt in names() if len(traces_of[fmt]) < 2} == KNOWN_GAPS
