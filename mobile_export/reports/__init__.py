"""report.json and the human reports rendered from it: ``records`` is its schema (written and read by the same
records), ``assembly`` builds what a run found, ``tables`` its sections, ``render`` writes ``report.md`` and
``report.html``, ``regenerate`` rewrites both from report.json (``mobile-export report DIR``), ``summary`` is the
CLI's text."""

from __future__ import annotations

from .charts import plots
from .records import REPORT_SCHEMA, ReportRecord
from .regenerate import regenerate
from .render import html_report, markdown, write_reports
from .summary import summary

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
