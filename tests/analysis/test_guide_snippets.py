"""The guide's own analysis snippets, run on an export, agree with the report.

The English guide is stored on one line, so its code blocks have lost their newlines and
indentation. They are rebuilt here: comments are cut off where the next statement starts,
tokens are split into statements, and each statement is indented as shallowly as the names it
reads allow (a statement that reads a loop's variable, or a value computed from it, stays in
that loop; the first statement after a header is its body). That is enough for these snippets
and the result is compiled before it runs, so a guide change that defeats it fails loudly.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import keyword
import re
import tokenize
from pathlib import Path

import pytest

from ls_trajeval.analysis.report import aggregate, build_tables

from .conftest import deep_line, export_line

GUIDE = Path(__file__).resolve().parents[1] / "fixtures" / "guide" / "000_b868f1924f416570.txt"

_STMT_START = re.compile(
    r"(?:import|from|if|with|while|return)\b|for\s+\w+(?:\s*,\s*\w+)*\s+in\b"
    r"|[A-Za-z_][\w.]*(?:\[[^\]]*\])?\s*(?:[-+*/]?=(?!=))|[A-Za-z_][\w.]*\("
)
_HEADERS = {"for", "if", "elif", "else", "with", "while", "def", "class", "try", "except", "finally"}
_INFIX = {"in", "is", "and", "or", "not", "as", "if", "else"}
_STMT_KW = {"import", "from", "for", "if", "with", "while", "return", "del", "def", "class", "print"}


def strip_comments(code: str) -> str:
    out, i, quote = [], 0, None
    while i < len(code):
        ch = code[i]
        if quote:
            out.append(ch)
            if ch == "\\":
                out.append(code[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            out.append(ch)
        elif ch == "#":
            # the comment runs until the first word that starts a statement
            j = i + 1
            while j < len(code):
                if code[j - 1] == " " and _STMT_START.match(code, j):
                    break
                j += 1
            i = j
            out.append(" ")
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def split_statements(code: str) -> list:
    toks = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)]
    stmts, cur, depth = [], [], 0

    def ends_expr(t) -> bool:
        if t.type == tokenize.NAME:
            return not keyword.iskeyword(t.string) or t.string in ("True", "False", "None")
        return t.type in (tokenize.NUMBER, tokenize.STRING) or t.string in (")", "]", "}")

    for t in toks:
        if depth == 0 and cur:
            starts = t.type in (tokenize.NAME, tokenize.NUMBER) and t.string not in _INFIX
            if t.string == "import" and cur[0].string == "from" and not any(x.string == "import" for x in cur):
                starts = False
            if t.string in _STMT_KW:
                starts = starts or t.string != "import" or cur[0].string != "from"
            if starts and ends_expr(cur[-1]) and not (t.type == tokenize.STRING and cur[-1].type == tokenize.STRING):
                stmts.append(cur)
                cur = []
        cur.append(t)
        if t.string in "([{" and t.type == tokenize.OP:
            depth += 1
        elif t.string in ")]}" and t.type == tokenize.OP:
            depth -= 1
        elif t.string == ":" and depth == 0 and cur[0].string in _HEADERS:
            stmts.append(cur)
            cur = []
    if cur:
        stmts.append(cur)
    return [code[s[0].start[1]:s[-1].end[1]] for s in stmts]


def _names(stmt: str):
    """(names read, names bound by a loop/with header, names plainly assigned, self-referential?)."""
    header = stmt.endswith(":")
    tree = ast.parse(stmt + " pass" if header else stmt)
    node = tree.body[0]
    bound_local = set()
    for n in ast.walk(node):
        if isinstance(n, ast.comprehension):
            bound_local |= {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}
        elif isinstance(n, ast.Lambda):
            bound_local |= {a.arg for a in n.args.args}
    loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound_local
    binds, assigns = set(), set()
    if isinstance(node, ast.For):
        binds = {x.id for x in ast.walk(node.target) if isinstance(x, ast.Name)}
        loads = {n.id for n in ast.walk(node.iter) if isinstance(n, ast.Name)} - bound_local
    elif isinstance(node, ast.With):
        binds = {x.id for it in node.items if it.optional_vars is not None
                 for x in ast.walk(it.optional_vars) if isinstance(x, ast.Name)}
    elif isinstance(node, ast.Assign):
        assigns = {t.id for t in node.targets if isinstance(t, ast.Name)}
    return loads, binds, assigns, bool(assigns & loads)


def reindent(code: str) -> str:
    stmts = split_statements(strip_comments(code))
    info = [_names(s) for s in stmts]
    stack: list = []  # open blocks: set of names whose value belongs to one iteration of that block
    taint: dict = {}  # name -> set of block ids it depends on
    lines, prev_header = [], False
    for i, s in enumerate(stmts):
        loads, binds, assigns, selfref = info[i]

        def need(names) -> int:
            deps = set()
            for n in names:
                deps |= taint.get(n, set())
            return max((d + 1 for d in deps if d < len(stack)), default=0)

        if prev_header:
            level = len(stack)
        else:
            level = need(loads)
            rebound: set = set()
            for j in range(i + 1, len(stmts)):  # blocks cannot be re-entered: keep open what later code needs
                lj, bj, aj, _ = info[j]
                level = max(level, need(lj - rebound))
                rebound |= bj | aj
            level = min(level, len(stack))
        del stack[level:]
        for n in list(taint):
            taint[n] = {d for d in taint[n] if d < level}  # closed blocks' ids are reused by new ones
        lines.append("    " * level + s)
        if assigns and not selfref:
            deps = set()
            for n in loads:
                deps |= taint.get(n, set())
            for n in assigns:
                taint[n] = deps
        prev_header = s.endswith(":")
        if prev_header:
            bid = len(stack)
            stack.append(s)
            for n in binds:
                taint[n] = {bid}
    return "\n".join(lines) + "\n"


def guide_snippets() -> list:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("Analyzing the results")
    return [m.group(1) for m in re.finditer(r"```python(.*?)```", text[start:], re.S)]


def _incorrect_only_export(directory: Path, added_keys: bool = False) -> None:
    """Two annotators, only the `incorrect` label (the guide's snippets count no other). With ``added_keys`` the
    lines are written by the exporter's record writer with evidence, cause links (each later error caused by the
    trace's first) and corrections: the same labels, in the export's current shape."""
    T = "incorrect"
    data = {
        "alice": [
            ("A", {0: (T, "reasoning", "logical_error", "minor"), 2: (T, "action", "wrong_tool", "critical")},
             "failure", 89),
            ("B", {}, "success", 100),
            ("C", {1: (T, "action", "wrong_tool", "major"), 2: (T, "action", "wrong_arguments", "major"),
                   3: (T, "perception", "missed_element", "critical")}, "partial", 80),
        ],
        "bob": [
            ("A", {2: (T, "action", "wrong_tool", "critical")}, "failure", 90),
            ("B", {1: (T, "communication", "unclear_explanation", "minor")}, "ABSENT", 99),
            ("C", {3: (T, "perception", "missed_element", "major")}, "partial", 95),
            ("D", {i: (T, "action", "destructive_action", "critical") for i in range(12)}, "failure", 0),
        ],
    }
    types = {"A": ["thought", "action", "observation"], "B": ["thought", "code"],
             "C": ["thought", "action", "action", "observation", "thought"], "D": ["action"] * 12}
    directory.mkdir(parents=True)
    for who, items in data.items():
        if added_keys:
            lines = [json.dumps(_with_added_keys(t, who, e, o, f, types[t])) for t, e, o, f in items]
        else:
            lines = [json.dumps(export_line(t, who, e, o, f, step_types=types[t])) for t, e, o, f in items]
        (directory / f"{who}.jsonl").write_text("\n".join(lines) + "\n")


def _with_added_keys(trace_id, who, errors, outcome, final, step_types) -> dict:
    steps = [(st, f"{trace_id} step {i} ({st})") for i, st in enumerate(step_types)]
    first = min(errors, default=None)
    marks = {i: {"correctness": c, "error_category": cat, "error_type": typ, "severity": sev,
                 "evidence": [(0, len(trace_id))], "caused_by": [first] if i != first else [],
                 "correction": f"what step {i} should have done"} for i, (c, cat, typ, sev) in errors.items()}
    line = deep_line(trace_id, who, steps, marks, whole={} if outcome == "ABSENT" else {"overall_success": outcome})
    assert line["final_score"] == final  # the same labels as the guide-shaped line
    return line


@pytest.fixture(scope="module", params=["guide shape", "with the added keys"])
def snippet_run(tmp_path_factory, request):
    if not GUIDE.exists():
        pytest.skip(f"guide not found at {GUIDE}")
    work = tmp_path_factory.mktemp("guide")
    _incorrect_only_export(work / "output", added_keys=request.param == "with the added keys")
    ns: dict = {}
    out = io.StringIO()
    import os

    import matplotlib

    matplotlib.use("Agg")
    old = os.getcwd()
    os.chdir(work)
    try:
        with contextlib.redirect_stdout(out):
            for snip in guide_snippets():
                code = reindent(snip)
                exec(compile(code, "<guide snippet>", "exec"), ns)
    finally:
        os.chdir(old)
        import matplotlib.pyplot as plt

        plt.close("all")
    return ns, out.getvalue(), build_tables(aggregate([str(work / "output")]))


def test_reindent_rebuilds_the_loops():
    snips = guide_snippets()
    assert len(snips) == 5
    code = reindent(snips[3])
    # the score is appended once per annotation, after the loop over its steps
    assert "\n    final_scores.append(" in code
    assert "\nscore_df = pd.DataFrame(final_scores)" in code
    assert "\n            score += severity_weights" in code
    assert "\n        print(f\"{label}" in code


def test_snippet_category_counts_equal_report(snippet_run):
    ns, _, tables = snippet_run
    snippet = ns["error_df"]["category"].value_counts().to_dict()
    assert snippet == dict(zip(tables["errors_by_category"]["category"], tables["errors_by_category"]["count"]))
    assert snippet == {"action": 16, "perception": 2, "reasoning": 1, "communication": 1}
    et = ns["error_df"]["error_type"].value_counts().to_dict()
    assert et == dict(zip(tables["error_types"]["error_type"], tables["error_types"]["count"]))
    sev = ns["error_df"]["severity"].value_counts().to_dict()
    assert sev == dict(zip(tables["severity_distribution"]["severity"], tables["severity_distribution"]["count"]))


def test_snippet_score_stats_equal_report(snippet_run):
    ns, printed, tables = snippet_run
    desc = ns["score_df"]["final_score"].describe()
    fs = tables["final_score_stats"].set_index("group")
    for ours, theirs in (("n", "count"), ("mean", "mean"), ("std", "std"), ("min", "min"), ("q25", "25%"),
                         ("median", "50%"), ("q75", "75%"), ("max", "max")):
        assert fs.loc["all", ours] == pytest.approx(desc[theirs]), ours
    assert desc["min"] == 0  # trace D: 12 critical errors, clamped at the floor
    for label in ("success", "partial", "failure"):
        m = re.search(rf"^{label}: mean=([\d.]+), median=([\d.]+), n=(\d+)$", printed, re.M)
        assert m, printed
        row = fs.loc[f"overall_success={label}"]
        assert ((f"{row['mean']:.1f}", f"{row['median']:.1f}", int(row["n"]))
                == (m.group(1), m.group(2), int(m.group(3))))


def test_snippet_failure_modes_equal_report(snippet_run):
    ns, _, tables = snippet_run
    fm = ns["failure_modes"].reset_index()
    theirs = {(r.category, r.error_type): (r.count, r.avg_severity_weight, r.impact) for r in fm.itertuples()}
    ours = {(r.category, r.error_type): (r.count, r.mean_severity_weight, r.impact)
            for r in tables["failure_modes_by_impact"].itertuples()}
    assert ours.keys() == theirs.keys()
    for k in ours:
        assert ours[k] == pytest.approx(theirs[k]), k


def test_snippet_error_positions_equal_report(snippet_run, tmp_path):
    ns, _, _ = snippet_run
    _incorrect_only_export(tmp_path / "output")
    ours = aggregate([str(tmp_path / "output")]).errors["position"]
    assert len(ns["positions"]) == 20
    assert sorted(ns["positions"]) == pytest.approx(sorted(ours))
