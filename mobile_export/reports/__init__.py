"""report.json and the human reports rendered from it: ``assembly`` builds what a run found, ``render``
writes ``report.md`` and ``report.html`` (``mobile-export report DIR`` rewrites both from report.json)."""

from __future__ import annotations

from .assembly import REPORT_SCHEMA, ExportReport
from .charts import plots
from .render import html_report, markdown, regenerate, summary, write_reports

__all__ = [
    "REPORT_SCHEMA",
    "ExportReport",
    "html_report",
    "markdown",
    "plots",
    "regenerate",
    "summary",
    "write_reports",
]
