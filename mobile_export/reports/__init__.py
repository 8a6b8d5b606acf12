"""report.json and the human reports rendered from it: ``records`` is its schema (written and read by the same
records), ``assembly`` builds what a run found, ``render`` writes ``report.md`` and ``report.html``
(``mobile-export report DIR`` rewrites both from report.json)."""

from __future__ import annotations

from .charts import plots
from .records import REPORT_SCHEMA, ReportRecord
from .render import html_report, markdown, regenerate, summary, write_reports

__all__ = [
    "REPORT_SCHEMA",
    "ReportRecord",
    "html_report",
    "markdown",
    "plots",
    "regenerate",
    "summary",
    "write_reports",
]
