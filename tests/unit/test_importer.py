"""The importer's own logic against an in-memory client: batching, skipping what the project holds, located
rejections, the seeded task fields, the progress bar and the import flow's project and config choice."""
from __future__ import annotations

import json
import re
import sys

import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.core.fields import META_TRACE_ID, NUMBER_FIELDS, SCORE_FIELDS
from ls_trajeval.core.labelconfig import from_label_config
from ls_trajeval.core.trace import parse_trace
from ls_trajeval.flows.importer import import_files, import_traces, read_inputs, sized_batches

from .fakestudio import FakeStudio

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


def trace(tid: str, n: int = 2) -> dict:
    return {"trace_id": tid, "task": f"task {tid}", "trace": [{"type": "thought", "content": f"{tid} step {i}"}
                                                             for i in range(n)]}


def write(path, lines: list) -> str:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return str(path)


def screen(text: str) -> list[str]:
    """What a terminal shows for ``text``: a carriage return goes back to the start of the line."""
    lines, col = [""], 0
    for ch in text:
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("")
            col = 0
        else:
            lines[-1] = lines[-1][:col] + ch + lines[-1][col + 1:]
            col += 1
    return [ln.rstrip() for ln in lines]


def test_batches_by_count_and_by_bytes():
    sizes = [30, 30, 50, 200, 10]
    got = list(sized_batches([(i + 1, s) for i, s in enumerate(sizes)], 3, 100))
    # 30+30 fit in 100, +50 does not; 200 alone is over the limit and goes alone; 10 would push it over
    assert got == [[1, 2], [3], [4], [5]]
    assert list(sized_batches([(i, 1) for i in range(5)], 2, 10**9)) == [[0, 1], [2, 3], [4]]


def test_skips_what_the_project_holds_and_locates_every_rejection(tmp_path):
    fake = FakeStudio(label_config="<View/>", tasks=[{"data": trace("t-1"), "meta": {META_TRACE_ID: "t-1"}}])
    path = write(tmp_path / "in.jsonl", [trace("t-0"), trace("t-1"), trace("t-2"), "{not json", trace("t-2"),
                                         {"trace_id": "t-3", "task": "x"}])
    errors = []
    summary = import_traces(fake, 7, read_inputs([path], CONFIG), CONFIG, batch_size=2, progress=False,
                            on_error=errors.append)
    # lines 1 and 3 are new, line 2 is in the project, lines 4-6 are bad JSON, a repeated id, a trace without steps
    assert (summary.imported, summary.skipped, summary.rejected) == (2, 1, 3)
    assert [str(e) for e in errors] == [f"{path}:4: invalid JSON: Expecting property name enclosed in double "
                                        "quotes: line 1 column 2 (char 1)",
                                        f"{path}:5: trace_id: duplicate trace_id 't-2' (first on line 3)",
                                        f"{path}:6: trace: missing"]
    assert fake.batches == [2]
    new = fake.stored[1:]
    assert [t["meta"][META_TRACE_ID] for t in new] == ["t-0", "t-2"]
    assert {k: new[0]["data"][k] for k in SCORE_FIELDS} == {
        "running_score": 100, "n_errors": 0, "first_error_step": None, "worst_severity": "", "score_mean": 100,
        "te_scores": {}, "te_curve": [100, 100],
        "te_score_status": "not kept current: no ML backend has scored this task; the export scores your marks"}
    # each step's card: its header line (number, actor), then the step's content as it was
    assert new[0]["data"]["n_steps"] == 2 and [e["text"] for e in new[0]["data"]["te_transcript"]] == [
        "#1 · agent\nt-0 step 0", "#2 · agent\nt-0 step 1"]
    assert "te_pages" not in new[0]["data"]  # a transcript project's tasks carry no rendered cards

    again = import_traces(fake, 7, read_inputs([path], CONFIG), CONFIG, progress=False)
    assert (again.imported, again.skipped, again.rejected) == (0, 3, 3) and fake.batches == [2]


def test_an_import_types_the_number_columns_of_every_tab(tmp_path):
    """Label Studio types every task-data column as text; the import gives a project nobody opened the tab Label
    Studio would make, with the number fields typed, and types them in the tabs someone made, keeping their choice."""
    fake = FakeStudio(label_config="<View/>")
    import_traces(fake, 7, [parse_trace(trace("t-0"))], CONFIG, progress=False)
    (tab,) = fake.tabs
    assert tab["data"]["title"] == "Default"
    assert tab["data"]["columnsDisplayType"] == {f"tasks:data.{f}": "Number" for f in NUMBER_FIELDS}
    assert "tasks:data.running_score" in tab["data"]["columnsDisplayType"] and "tasks:data.task" not in \
        tab["data"]["columnsDisplayType"]
    # hidden as Label Studio's first tab hides them: its own columns that say so, task data beside an open task
    assert tab["data"]["hiddenColumns"] == {
        "explore": ["tasks:inner_id"],
        "labeling": [f"tasks:data.{k}" for k in sorted(fake.stored[0]["data"])] + ["tasks:inner_id"]}

    fake.tabs[0]["data"]["columnsDisplayType"] = {"tasks:data.running_score": "String"}  # the user's choice
    fake._create_view(7, {"title": "mine"})
    import_traces(fake, 7, [parse_trace(trace("t-1"))], CONFIG, progress=False)
    first, mine = fake.tabs
    assert first["data"]["columnsDisplayType"]["tasks:data.running_score"] == "String"
    assert first["data"]["columnsDisplayType"]["tasks:data.n_errors"] == "Number"
    assert mine["data"]["columnsDisplayType"] == {f"tasks:data.{f}": "Number" for f in NUMBER_FIELDS}


def test_paged_project_tasks_carry_their_cards_and_long_traces_are_counted(tmp_path):
    fake = FakeStudio(label_config='<View><Repeater on="$te_pages"/></View>')
    path = write(tmp_path / "in.jsonl", [trace("short", 3), trace("long", 205)])
    summary = import_traces(fake, 7, read_inputs([path], CONFIG), CONFIG, progress=False)
    assert summary.paged and (summary.long_traces, summary.max_steps) == (1, 205)
    assert [len(t["data"]["te_pages"]) for t in fake.stored] == [3, 205]


def test_batches_hold_at_most_batch_size_tasks(tmp_path):
    fake = FakeStudio(label_config="<View/>")
    path = write(tmp_path / "in.jsonl", [trace(f"t{i}") for i in range(5)])
    summary = import_traces(fake, 7, read_inputs([path], CONFIG), CONFIG, batch_size=2, progress=False)
    assert summary.imported == 5 and fake.batches == [2, 2, 1]


def test_a_duplicate_across_files_is_rejected_with_both_places(tmp_path):
    a = write(tmp_path / "a.jsonl", [trace("same")])
    b = write(tmp_path / "b.jsonl", [trace("same"), trace("other")])
    items = list(read_inputs([a, b], CONFIG))
    assert [str(x) for x in items if not hasattr(x, "steps")] == [
        f"{b}: trace_id: duplicate trace_id 'same' (first in {a})"]


def test_an_agent_log_imported_without_format_is_one_error_naming_its_format(tmp_path, fixtures_dir):
    log = fixtures_dir / "converters" / "openai_chat.jsonl"  # three OpenAI chat records: no trace_id on any line
    good = write(tmp_path / "good.jsonl", [trace("a")])
    items = list(read_inputs([str(log), good], CONFIG))
    assert [str(x) for x in items if not hasattr(x, "steps")] == [
        f"{log}: not trace JSONL but an agent log in the openai_chat format: import it with --format auto "
        "(or --format openai_chat), which converts it on the way"]
    assert [x.trace_id for x in items if hasattr(x, "steps")] == ["a"]  # the next file imports as usual
    # trace JSONL whose lines miss their id keeps its line-by-line errors
    plain = write(tmp_path / "plain.jsonl", [{"task": "t", "trace": [{"type": "thought", "content": "x"}]}, trace("b")])
    errors = [str(x) for x in read_inputs([plain], CONFIG) if not hasattr(x, "steps")]
    assert errors == [f"{plain}:1: trace_id: missing"]


def test_progress_bar_steps_aside_for_rejections(tmp_path, capsys):
    fake = FakeStudio(label_config="<View/>")
    path = write(tmp_path / "in.jsonl", ["{bad", trace("a"), trace("b")])
    import_traces(fake, 7, read_inputs([path], CONFIG), CONFIG, progress=True,
                  on_error=lambda err: print(f"rejected: {err}", file=sys.stderr))
    print("summary", file=sys.stderr)
    shown = [ln for ln in screen(capsys.readouterr().err) if ln]
    assert shown[0].startswith(f"rejected: {path}:1: invalid JSON") and shown[1] == "summary"
    assert len(shown) == 2  # the bar's "importing: 0 traces" line was cleared, not left above the summary


def test_import_files_creates_a_project_with_the_default_config_and_converts(tmp_path, fixtures_dir):
    fake = FakeStudio()
    src = fixtures_dir / "converters" / "react.jsonl"
    n_records = sum(1 for line in src.read_text().splitlines() if line.strip())
    created = []
    run = import_files(fake, [src], create_title="react runs", fmt="react", progress=False, on_created=created.append)
    assert run.created and created == [7] and fake.project["title"] == "react runs"
    assert from_label_config(fake.project["label_config"]).trajectory == CONFIG.trajectory
    assert run.summary.imported == n_records == 2 and run.ok


def test_import_files_into_an_existing_project_reads_with_its_embedded_config(tmp_path):
    from ls_trajeval.core.labelconfig import generate

    spec = CONFIG.to_dict()
    spec["item_properties"]["id_key"] = "run_id"
    own = cfg.load_dict(spec)
    fake = FakeStudio(label_config=generate(own, "transcript"))
    line = {"run_id": "r-1", "task": "t", "trace": [{"type": "thought", "content": "c"}]}
    run = import_files(fake, [write(tmp_path / "in.jsonl", [line])], project_id=7, progress=False)
    # read with the shipped default, the line has no trace_id and would be rejected
    assert not run.created and (run.summary.imported, run.summary.rejected) == (1, 0)
    assert fake.stored[0]["data"]["run_id"] == "r-1"


def test_import_files_refuses_a_project_without_an_embedded_config(tmp_path):
    from ls_trajeval.core.config import ConfigError

    fake = FakeStudio(label_config="<View/>")
    with pytest.raises(ConfigError, match=re.escape("project 7: not made by ls-trajeval")):
        import_files(fake, [write(tmp_path / "in.jsonl", [trace("x")])], project_id=7, progress=False)


def test_a_trace_handed_in_with_all_steps_empty_is_refused_and_the_rest_imports():
    from ls_trajeval.core.trace import Step, Trace

    fake = FakeStudio(label_config="<View/>")
    hollow = Trace("hollow", "t", [Step.of("message", ""), Step.of("action", " ", "")],
                   {"source_file": "logs/a.json", "source_line": 3})
    good = Trace("good", "t", [Step.of("message", ""), Step.of("observation", "done")])
    errors = []
    summary = import_traces(fake, 7, [hollow, good], CONFIG, progress=False, on_error=errors.append)
    assert (summary.imported, summary.rejected) == (1, 1)
    assert [str(e) for e in errors] == ["logs/a.json:3: trace: all 2 step(s) are empty (no content, no action_input): "
                                        "nothing to annotate"]
    assert [t["meta"][META_TRACE_ID] for t in fake.stored] == ["good"]
