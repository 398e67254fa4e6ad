"""The error report: tables, plots and one self-contained HTML page from a trajectory_eval export.

:mod:`.aggregation` reads the export in one streaming pass; :mod:`.tables` builds the tables from it; :mod:`.plots`
draws the plots; :mod:`.page` writes them all (CSV, Parquet, PNG, ``report.html``) and the terminal's summary.
The names below are the package's API (``ls-trajeval report`` is ``aggregate`` then ``write_report``).
"""
from .aggregation import ReportAggregator, ReportData, aggregate, group_value
from .page import ReportOutput, terminal_summary, write_report
from .tables import build_tables, comparison_tables, summary_facts

__all__ = ["ReportAggregator", "ReportData", "ReportOutput", "aggregate", "build_tables", "comparison_tables",
           "group_value", "summary_facts", "terminal_summary", "write_report"]
