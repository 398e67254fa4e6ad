"""The commands the README and docs/ show work as written: every ``ls-trajeval ...`` they mention (in a shell block or
inline) names a command that exists and options it has, and every command of a shell block that needs no Label
Studio (generate, convert, formats, report, agreement, prm, align) runs and exits 0.

They run in a scratch directory that holds what the pages name: ``label_configs/``, ``traces.jsonl`` (the demo's
samples), ``runs/`` and ``session.jsonl`` / ``logs.json.gz`` (agent logs from the converter fixtures),
``trajectories/`` (SWE-agent runs), ``output/`` (an export of three annotators), and the same export as one
``annotations.jsonl`` with its ``gold.jsonl``, one annotator's lines as ``detectors.jsonl`` and their alignment to
the gold as ``align/align.json``, and analysis.md's worked example of evidence, cause links and corrections
(``labels/``, ``judge.jsonl``, ``labels-gold.jsonl``). A page that shows a local command on another file must add it
here."""
from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from ls_trajeval.cli import main_group

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "cli.md")]
#: commands that need no Label Studio, so the test runs them
LOCAL = {"generate", "convert", "formats", "report", "agreement", "prm", "align"}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def shell_commands(text: str) -> list[str]:
    """``ls-trajeval`` command lines of the shell blocks, continuation lines joined."""
    out = []
    for lang, body in FENCE.findall(text):
        if lang not in ("bash", "sh", "shell"):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith("ls-trajeval "):
                out.append(line)
    return out


def inline_mentions(text: str) -> list[str]:
    return re.findall(r"`(ls-trajeval [^`]+)`", FENCE.sub("", text))


def resolve(line: str) -> tuple[click.Command, list[str], str]:
    """The click command a line runs, the tokens after it, and its name."""
    tokens = shlex.split(line.split(" | ")[0], comments=True)
    assert tokens[0] == "ls-trajeval"
    command, names, rest = main_group, [], tokens[1:]
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        assert sub is not None, f"no command {' '.join(['ls-trajeval', *names, rest[0]])!r}"
        command, names, rest = sub, names + [rest[0]], rest[1:]
    return command, rest, " ".join(names)


def options(command: click.Command) -> set[str]:
    found = {"-h", "--help"}
    for p in command.params:
        if isinstance(p, click.Option):
            found |= set(p.opts) | set(p.secondary_opts)
    return found


MENTIONS = sorted({(page.name, line) for page in PAGES for text in [page.read_text(encoding="utf-8")]
                   for line in shell_commands(text) + inline_mentions(text)})


def test_the_pages_show_commands():
    assert {name for name, _ in MENTIONS} >= {"README.md", "annotating.md", "converters.md", "ml-backend.md",
                                              "scale.md", "analysis.md"}
    assert len(MENTIONS) > 20


@pytest.mark.parametrize("page, line", MENTIONS)
def test_every_mentioned_command_exists_with_its_options(page, line):
    command, rest, name = resolve(line)
    known = options(command)
    used = [t.strip("[]").split("=")[0] for t in rest if t.strip("[]").startswith("-") and t.strip("[]") != "-"]
    assert [u for u in used if u not in known] == [], f"{page}: `{line}`: ls-trajeval {name} has {sorted(known)}"


@pytest.fixture
def repository(tmp_path) -> Path:
    """The repository's layout (its configs, the shipped samples, the test fixtures) and what the commands that need
    Label Studio would have written there: ``output/`` (an export of three annotators), ``annotations.jsonl``,
    ``gold.jsonl`` and ``detectors.jsonl``."""
    from analysis.conftest import write_export  # three annotators' export lines in the exporter's shape

    for name in ("label_configs", "ls_trajeval", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    write_export(tmp_path / "output")
    _with_the_samples_metadata(tmp_path / "output")
    _gold_files(tmp_path)
    return tmp_path


@pytest.fixture
def scratch(repository) -> Path:
    """The repository, and the files the pages other than the README name by short names."""
    from analysis.conftest import write_worked_example  # analysis.md's worked example of the added keys

    tmp_path = repository
    fixtures = ROOT / "tests" / "fixtures"
    shutil.copy(ROOT / "ls_trajeval" / "samples" / "traces.jsonl", tmp_path / "traces.jsonl")
    (tmp_path / "runs").mkdir()
    for name in ("openai_chat.jsonl", "react.jsonl"):
        shutil.copy(fixtures / "converters" / name, tmp_path / "runs" / name)
    shutil.copy(fixtures / "real" / "claude_code" / "session_b.jsonl", tmp_path / "session.jsonl")
    (tmp_path / "logs.json.gz").write_bytes(gzip.compress((fixtures / "converters" / "anthropic.json").read_bytes()))
    shutil.copytree(fixtures / "real" / "swe_agent", tmp_path / "trajectories")
    write_worked_example(tmp_path)
    return tmp_path


def _with_the_samples_metadata(output: Path) -> None:
    """The stand-in export's lines carry trace metadata as an export of the samples does (``agent``, ...)."""
    samples = [json.loads(line)["metadata"] for line in
               (ROOT / "ls_trajeval" / "samples" / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    for path in sorted(output.iterdir()):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            lines = [json.loads(x) for x in fh.read().splitlines()]
        trace_ids = sorted({x["trace_id"] for x in lines})
        for x in lines:
            x["metadata"] = samples[trace_ids.index(x["trace_id"]) % len(samples)]
        with opener(path, "wt", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(x) + "\n" for x in lines))


def _gold_files(scratch: Path) -> None:
    """What `export`, `export --gold` and `export --predictions` would write for the export in ``output/`` (they need
    Label Studio): every line in one file, the gold lines, and bob's lines standing in for a detector's."""
    from ls_trajeval.analysis.gold import build_gold, gold_line
    from ls_trajeval.analysis.settings import AnalysisSettings, read
    from ls_trajeval.analysis.trace_groups import group_by_trace
    from ls_trajeval.core.records import dumps

    records = list(read([scratch / "output"], AnalysisSettings()))
    lines = []
    for path in sorted((scratch / "output").iterdir()):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            lines += fh.read().splitlines()
    (scratch / "annotations.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (scratch / "detectors.jsonl").write_text((scratch / "output" / "bob.jsonl").read_text(encoding="utf-8"))
    golds = build_gold(group_by_trace(records).items(), AnalysisSettings())
    (scratch / "gold.jsonl").write_text("".join(dumps(gold_line(g, AnalysisSettings())) for g in golds),
                                        encoding="utf-8")
    # what `align detectors.jsonl gold.jsonl --out align/` writes, for `report --judge-align align/align.json`
    from ls_trajeval.analysis.align import align, write_outputs

    settings = AnalysisSettings()
    write_outputs(align(read([scratch / "detectors.jsonl"], settings), read([scratch / "gold.jsonl"], settings),
                        settings, resamples=0), scratch / "align", plots=False)


LOCAL_RUNS = [(page.name, line) for page in PAGES for line in shell_commands(page.read_text(encoding="utf-8"))
              if resolve(line)[2] in LOCAL]


def test_the_pages_show_local_commands():
    assert {resolve(line)[2] for _, line in LOCAL_RUNS} == LOCAL


@pytest.mark.parametrize("page, line", LOCAL_RUNS)
def test_local_commands_run_as_written(page, line, request):
    """The README's run on the repository's own files; the other pages may name shorter ones (``traces.jsonl``)."""
    where = request.getfixturevalue("repository" if page == "README.md" else "scratch")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=where, env=env, capture_output=True,
                         text=True, timeout=300)
    # `| head` may close the pipe early: the converter then dies of SIGPIPE (141), which is not a failure
    assert out.returncode == 0 or (" | head" in line and out.returncode == 141), f"{page}: {line}\n{out.stderr}"
    assert "error:" not in out.stderr, f"{page}: {line}\n{out.stderr}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", [*PAGES, ROOT / "docs" / "cli.md"], ids=lambda p: p.name)
def test_links_between_the_pages_resolve(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(target)
    assert broken == []


def test_the_formats_table_names_every_converter():
    """docs/converters.md's formats table is the list users read: one row per converter the registry has."""
    from ls_trajeval.converters.registry import names

    text = (ROOT / "docs" / "converters.md").read_text(encoding="utf-8")
    table = text[text.index("| format | reads |"):].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert sorted(rows) == sorted(names()) and len(rows) == len(set(rows))


def _base_install() -> set[str]:
    """The distributions `pip install ls-trajeval` brings (no extra), by walking the installed metadata."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    seen, todo = set(), ["ls-trajeval"]
    while todo:
        name = todo.pop()
        try:
            reqs = requires(name) or []
        except PackageNotFoundError:
            continue
        for r in map(Requirement, reqs):
            key = r.name.lower().replace("_", "-")
            if key not in seen and (r.marker is None or r.marker.evaluate({"extra": ""})):
                seen.add(key)
                todo.append(r.name)
    return seen


def test_the_readmes_missing_extra_message_is_the_one_the_plugin_alone_prints(monkeypatch, tmp_path):
    """On the plugin alone (`pip install .`), `report` names the analysis modules that install did not bring (the SDK
    brings pandas and numpy)."""
    from importlib.metadata import packages_distributions

    from commandline import invoke

    from ls_trajeval.cli.analysis import REPORT_NEEDS

    (shown,) = re.findall(r"^error: .* not installed: .*$", (ROOT / "README.md").read_text(encoding="utf-8"), re.M)
    base, dists = _base_install(), packages_distributions()
    absent = [m for m in REPORT_NEEDS if not {d.lower() for d in dists.get(m, [])} & base]
    assert "matplotlib" in absent and "pandas" not in absent
    for module in absent:
        monkeypatch.setitem(sys.modules, module, None)  # importlib finds no such module now
    export = tmp_path / "e.jsonl"
    export.write_text(json.dumps({"trace_id": "t", "scheme": "s", "s": [{"step_index": 0}]}) + "\n")
    r = invoke("report", export, "-o", tmp_path / "out")
    assert r.exit_code == 2 and r.output.splitlines() == [shown]


def test_the_readme_imports_files_the_repository_has():
    """Its `import` lines (they need Label Studio, so they do not run here) name files that exist."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = []
    for line in shell_commands(text):
        command, rest, name = resolve(line)
        if name == "import":
            ctx = command.make_context("import", rest, resilient_parsing=True)
            named += ctx.params["inputs"]
    assert "ls_trajeval/samples/traces.jsonl" in named and len(named) >= 3
    assert [p for p in named if not (ROOT / p).exists()] == []
