"""The command line's contract, without a server: exit codes, every error line starting ``error:``, the extras a
command needs, and what a fast command does not import."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from commandline import argv, invoke

from ls_trajeval.cli.analysis import report_command


def error_lines_only(output: str) -> bool:
    """Every line that reports a problem starts ``error:``; click's own ``Error:`` never appears."""
    return "Error:" not in output and any(line.startswith("error: ") for line in output.splitlines())


@pytest.mark.parametrize("args", [
    ["import", "--nope"],
    ["import"],  # a required argument missing
    ["convert", "README.md", "-o", "-", "--format", "nonsense"],
    ["generate", "--layout", "sideways"],
    ["no-such-command"],
    ["export", "--project", "1", "--gold", "--predictions"],
    ["export", "--project", "1", "--aggregate", "dawid-skene"],
    ["export", "--project", "1", "--model-version", "v1"],
    ["adjudicate", "--project", "1", "--correctness-share", "2"],
])
def test_usage_errors_exit_2_with_an_error_line(args):
    r = invoke(*args)
    assert r.exit_code == 2 and error_lines_only(r.output), r.output


def test_unknown_format_is_refused_before_anything_else(tmp_path):
    r = invoke("import", "--create", "x", "--format", "nonsense", tmp_path)
    assert r.exit_code == 2 and "error: Invalid value for '--format': unknown format 'nonsense'" in r.output
    assert "claude_code" in r.output  # the known ones are listed


def test_an_unwritable_output_exits_2(tmp_path, fixtures_dir):
    target = tmp_path / "missing-dir" / "x.xml"
    r = invoke("generate", "-o", target)
    assert r.exit_code == 2 and r.output == f"error: cannot write {target}: No such file or directory\n"
    r = invoke("convert", fixtures_dir / "converters" / "react.jsonl", "-o", target)
    assert r.exit_code == 2 and f"error: cannot write {target}" in r.output


def test_every_line_of_a_config_error_is_an_error_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("annotation_schemes:\n  - annotation_type: radio\n    name: x\n    labels: []\nnope: 1\n")
    r = invoke("generate", bad)
    assert r.exit_code == 2
    lines = r.output.splitlines()
    assert len(lines) >= 2 and all(line.startswith(f"error: {bad}: ") for line in lines), r.output


def test_a_bug_is_one_error_line_not_a_traceback(monkeypatch):
    import ls_trajeval.core.labelconfig as labelconfig

    def broken(*_a, **_k):
        raise RuntimeError("boom")

    monkeypatch.setattr(labelconfig, "generate", broken)
    r = invoke("generate")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.startswith("error: internal error: RuntimeError: boom (set LS_TRAJEVAL_DEBUG=1")


@pytest.mark.parametrize("command, missing", [("report", "pandas"), ("agreement", "statsmodels"),
                                              ("agreement", "krippendorff")])
def test_a_command_names_the_extra_it_needs(command, missing, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, missing, None)  # importlib finds no such module now
    export = tmp_path / "e.jsonl"
    export.write_text(json.dumps({"trace_id": "t", "scheme": "s", "s": [{"step_index": 0}]}) + "\n")
    r = invoke(command, export, "-o", tmp_path / "out")
    assert r.exit_code == 2
    assert r.output == f"error: {missing} not installed: pip install 'ls-trajeval[analysis]'\n"


def test_prm_needs_no_extra(monkeypatch, tmp_path):
    for name in ("pandas", "numpy", "matplotlib", "statsmodels", "krippendorff"):
        monkeypatch.setitem(sys.modules, name, None)
    export = tmp_path / "e.jsonl"
    export.write_text(json.dumps({"trace_id": "t", "task": "q", "scheme": "s",
                                  "s": [{"step_index": 0, "step_text": "a", "correctness": "correct"}]}) + "\n")
    r = invoke("prm", export, "-o", tmp_path / "prm.jsonl")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "prm.jsonl").read_text()) == {"prompt": "q", "completions": ["a"], "labels": [True]}


def test_a_command_run_on_its_own_keeps_the_contract(tmp_path):
    r = invoke(tmp_path / "missing.jsonl", "-o", tmp_path / "r", command=report_command)
    assert r.exit_code == 2
    assert r.output.splitlines()[-1] == "error: no valid annotation lines in the input"


def _loaded_by(args: list[str], modules: list[str]) -> str:
    """``EXIT_CODE [modules of the list a fresh process has imported after running the CLI with args]``."""
    code = ("import sys\nfrom ls_trajeval.cli import main_group\n"
            f"code = main_group.main({args!r}, prog_name='ls-trajeval', standalone_mode=False)\n"
            f"print(code, [m for m in {modules!r} if m in sys.modules], file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return out.stderr.splitlines()[-1] if out.stderr else out.stdout


@pytest.mark.parametrize("args", [["--help"], ["convert", "{fixture}", "-o", "{out}"], ["formats"]])
def test_fast_commands_load_neither_the_sdk_nor_the_config_model_nor_pandas(args, fixtures_dir, tmp_path):
    args = [a.format(fixture=fixtures_dir / "converters" / "react.jsonl", out=tmp_path / "o.jsonl") for a in args]
    heavy = ["label_studio_sdk", "httpx", "ls_trajeval.core.config", "yaml", "jinja2", "pandas", "numpy", "tqdm"]
    assert _loaded_by(args, heavy) == "0 []"


def test_convert_with_a_format_loads_only_what_converting_needs(fixtures_dir, tmp_path):
    """Start-up is a good part of a small conversion: the other command families, the worker machinery, archive
    and streaming modules stay out of a run that converts one plain JSONL file with a named format (gzip, which
    costs little, is loaded)."""
    args = ["convert", str(fixtures_dir / "converters" / "react.jsonl"), "--format", "react", "-o",
            str(tmp_path / "o.jsonl")]
    unneeded = ["ls_trajeval.cli.studio", "ls_trajeval.cli.analysis", "ls_trajeval.cli.ml", "ls_trajeval.cli.judge",
                "ls_trajeval.cli.tracing", "zipfile", "ijson", "pickle", "concurrent.futures", "multiprocessing",
                "ls_trajeval.converters.openai_chat"]
    assert _loaded_by(args, unneeded) == "0 []"


def test_a_reader_that_goes_away_is_no_error(tmp_path):
    """``ls-trajeval convert ... -o - | head``: the converter stops quietly when head has read enough."""
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps({"trace_id": f"t{i}", "task": "x", "trace": [{"type": "thought",
                                                                                    "content": "y" * 200}]}) + "\n"
                           for i in range(3000)))
    proc = subprocess.Popen(argv("convert", big, "-o", "-"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(100).startswith(b'{"trace_id":"t0"')
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 1 and "error" not in err and "Traceback" not in err, err


def test_ml_serve_names_the_ml_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "flask", None)
    r = invoke("ml", "serve", "--config", "trajectory_eval")
    assert r.exit_code == 2 and r.output == "error: flask not installed: pip install 'ls-trajeval[ml]'\n"


def test_judge_names_the_judge_extra_and_its_help_needs_none_of_it(monkeypatch):
    assert _loaded_by(["judge", "--help"], ["openai", "jsonschema", "ls_trajeval.ml.llm_judge"]) == "0 []"
    monkeypatch.setitem(sys.modules, "openai", None)
    r = invoke("judge", "--project", "1", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert r.exit_code == 2 and r.output == "error: openai not installed: pip install 'ls-trajeval[judge]'\n"


def test_judge_says_what_it_needs():
    r = invoke("judge", "--project", "1")
    assert r.exit_code == 2 and error_lines_only(r.output)
    assert "error: judging needs --base-url, --model (or a subcommand: merge, accept, audit)" in r.output
    r = invoke("judge", "--project", "1", "--base-url", "http://x/v1", "--model", "m", "--cost-budget", "5")
    assert r.exit_code == 2 and "--cost-budget needs --prompt-price and --completion-price" in r.output
