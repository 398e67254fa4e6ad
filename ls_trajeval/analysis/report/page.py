"""What a report writes: every table as CSV (and Parquet with the ``parquet`` extra), the plots as PNG, and one
self-contained ``report.html`` (Jinja2, autoescaped) showing them all; and the summary the terminal shows."""
from __future__ import annotations

import base64
import importlib.util
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from jinja2 import Environment, PackageLoader

from ...core.jsonfiles import atomic_output
from .. import breakdown, causes
from .aggregation import ReportData
from .plots import plot_error_positions, plot_final_scores, plot_heatmap, plot_running_scores
from .tables import build_tables, comparison_tables, fmt, summary_facts, with_intervals

TABLE_TITLES = {
    "errors_by_category": "Errors by category",
    "error_types": "Most common error types",
    "severity_distribution": "Severity distribution",
    "final_score_stats": "Final-score statistics",
    "failure_modes_by_frequency": "Failure modes by frequency",
    "failure_modes_by_impact": "Failure modes by impact (count × mean |severity weight|)",
    "first_error_summary": "First error",
    "first_error_position": "First-error step",
    "errors_by_step_type": "Errors by step type",
    "category_by_severity": "Category × severity",
    "corrected_error_rates": "Error rates corrected for the judge's measured error (Rogan–Gladen)",
    "groups": "By {by}: errors, scores and the first error",
    "group_error_rates": "By {by}: error rate per category",
    "traces_worst_first": "Traces, worst first",
    "annotators": "Annotators",
    "agreement": "Agreement between annotators",
    "first_error_agreement": "Agreement on the first error step",
    "agreement_per_annotator": "Each annotator against the majority of the others",
    "adjudication": "Adjudication list: the most disputed traces",
    **causes.TABLE_TITLES,
}
#: what a table's HTML view says under its title
TABLE_NOTES = {
    "corrected_error_rates": "The labels came from a judge whose sensitivity and specificity align measured against "
                             "gold labels: true rate = (apparent + specificity − 1) / (sensitivity + specificity − 1), "
                             "clipped to [0, 1]; 95% delta-method intervals over traces (docs/analysis.md).",
    "groups": breakdown.INTERVAL_NOTE + ". first_error_position: 0 = first step, 1 = last; first_error_step: mean, "
              "as the UI numbers steps.",
    "group_error_rates": breakdown.INTERVAL_NOTE + "; error steps of the category per step.",
    "traces_worst_first": "Lowest mean final score first, then the most errors; first errors as the UI numbers steps.",
    "annotators": "Time from Label Studio's lead_time (opening the task to submitting), in seconds.",
    "agreement": "Traces with two or more annotators; one unit is one step of one trace. kappa: Cohen's for two "
                 "annotators, Fleiss' for more; the severity's alpha is ordinal.",
    "agreement_per_annotator": "Against the majority of the other annotators of each step; ties left out.",
    "adjudication": "Most disputed first (see docs/analysis.md); steps as the UI numbers them.",
    **causes.TABLE_NOTES,
}
#: tables whose HTML view shows only the first --top rows (the CSV holds all)
LIMITED = {"error_types", "failure_modes_by_frequency", "failure_modes_by_impact", "traces_worst_first"}


def _table_view(df: pd.DataFrame, limit: int | None = None) -> dict:
    """Cells for the HTML template: ``{"text"}``, and ``{"text", "href"}`` for a ``link`` column's addresses."""
    df = with_intervals(df)
    rows = df.head(limit) if limit else df
    link = list(df.columns).index("link") if "link" in df.columns else -1

    def cell(i: int, v) -> dict:
        if i == link:
            return {"text": "open", "href": v} if isinstance(v, str) else {"text": "–"}
        return {"text": fmt(v)}

    return {"columns": [str(c) for c in df.columns],
            "rows": [[cell(i, v) for i, v in enumerate(r)] for r in rows.itertuples(index=False, name=None)],
            "more": max(len(df) - len(rows), 0)}


@dataclass
class ReportOutput:
    """What :func:`write_report` wrote: the directory, its files, the tables and the data behind them."""
    directory: Path
    files: list
    tables: dict
    data: ReportData


def write_report(d: ReportData, out_dir: str | Path, *, top: int = 10, curve_x: str = "position",
                 plots: bool = True, inputs: Iterable[str] = (), task_link: Callable[[int, int], str] | None = None,
                 agreement=None, resamples: int = 2000, seed: int = 0, judge=None) -> ReportOutput:
    """The tables (CSV, Parquet when pyarrow is there), the plots and report.html in ``out_dir``. ``task_link``
    (project id, task id -> address) links each trace to its Label Studio task; ``agreement`` (an
    :class:`~.agreement.AgreementResult`) adds the agreement and the adjudication list; ``resamples`` and ``seed``
    are the bootstrap's, for the group figures; ``judge`` (:class:`~..correction.JudgeErrors`) adds the error rates
    corrected for a judge's measured error."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = build_tables(d, top)
    top = tables.pop("_top")
    compare = comparison_tables(d, task_link=task_link, agreement=agreement, resamples=resamples, seed=seed,
                                judge=judge)
    # what answers "which agent fails where" comes first; agreement after the error tables
    front = ("corrected_error_rates", "groups", "group_error_rates", "traces_worst_first", "annotators")
    tables = {**{k: compare[k] for k in front if k in compare}, **tables,
              **{k: v for k, v in compare.items() if k not in front}}
    files = []
    # the ``parquet`` extra: pandas writes Parquet through pyarrow when it is installed
    have_parquet = importlib.util.find_spec("pyarrow") is not None
    for name, df in tables.items():
        p = out / f"{name}.csv"
        with atomic_output(p) as fh:
            df.to_csv(fh, index=False)
        files.append(p)
        if have_parquet:
            q = out / f"{name}.parquet"
            with atomic_output(q, "wb") as fh:
                df.to_parquet(fh, index=False)
            files.append(q)
    images = {}
    if plots:
        pngs = {
            "error_positions": ("Where errors occur", plot_error_positions(d)),
            "final_scores": ("Final-score distribution", plot_final_scores(d)),
            "running_scores": ("Running score (median and interquartile range)", plot_running_scores(d, curve_x)),
            "category_severity": ("Category × severity", plot_heatmap(d, tables["category_by_severity"])),
        }
        for key, (title, data) in pngs.items():
            p = out / f"{key}.png"
            with atomic_output(p, "wb") as fh:
                fh.write(data)
            files.append(p)
            images[key] = {"title": title, "uri": "data:image/png;base64," + base64.b64encode(data).decode("ascii")}
    env = Environment(loader=PackageLoader("ls_trajeval", "templates"), autoescape=True)
    views = [
        {"key": k, "title": TABLE_TITLES.get(k, k).format(by=d.by), "note": TABLE_NOTES.get(k, ""),
         **_table_view(df, top if k in LIMITED else None)}
        for k, df in tables.items()
    ]
    html = env.get_template("report.html.j2").render(
        summary=summary_facts(d), tables=views, images=images, inputs=list(inputs),
        input_errors=[str(e) for e in d.errors_input[:200]], n_input_errors=len(d.errors_input),
    )
    p = out / "report.html"
    with atomic_output(p) as fh:
        fh.write(html)
    files.append(p)
    return ReportOutput(out, files, tables, d)


def terminal_summary(out: ReportOutput, top: int = 5) -> str:
    """The headline figures and the top rows of the main tables, as the terminal shows them."""
    d, tables = out.data, out.tables
    lines = ["Trajectory error report", ""]
    width = max(len(k) for k, _ in summary_facts(d))
    lines += [f"  {k:<{width}}  {v}" for k, v in summary_facts(d)]

    def block(title: str, df: pd.DataFrame, cols: list, limit: int) -> None:
        if not len(df):
            return
        lines.extend(["", title])
        sub = df[cols].head(limit)
        cells = [[fmt(v) for v in r] for r in sub.itertuples(index=False, name=None)]
        widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(cols)]
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(cols, widths)))
        for r in cells:
            lines.append("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)))

    block("Errors by category", tables["errors_by_category"], ["category", "count", "share"], top)
    block("Top failure modes by impact", tables["failure_modes_by_impact"],
          ["category", "error_type", "count", "mean_severity_weight", "impact"], top)
    block("Final score", tables["final_score_stats"], ["group", "n", "mean", "median"], 20)
    if "corrected_error_rates" in tables:
        block("Error rates corrected for the judge's measured error (Rogan–Gladen, 95% intervals)",
              with_intervals(tables["corrected_error_rates"]),
              ([d.by] if d.by else []) + ["what", "apparent_rate", "sensitivity", "specificity", "corrected_rate"], 40)
    if "groups" in tables:
        block(f"By {d.by} (95% intervals)", with_intervals(tables["groups"]),
              [d.by, "annotations", "error_rate", "mean_final_score", "first_error_position"], 20)
    if causes.has_causes(tables):
        block("Origin and propagated errors", tables["errors_by_role"], ["category", "origin", "propagated"], top + 1)
        block("Root cause against the first error", tables["root_cause_vs_first_error"], ["metric", "value"], 6)
    if len(tables.get("adjudication", ())):
        block("Most disputed traces", tables["adjudication"], ["trace_id", "disputedness", "steps_in_dispute"], top)
    lines += ["", f"Wrote {out.directory / 'report.html'} and {len(out.files) - 1} more files"]
    return "\n".join(lines)
