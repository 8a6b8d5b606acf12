"""Human reports from report.json: ``report.md`` (for a pull request) and ``report.html`` (one self-contained file
with tables and plots, images inline), both laid out from the same section tables (``tables``)."""

from __future__ import annotations

import html
from pathlib import Path

from ..core.files import REPORT_HTML, REPORT_MD
from ..core.fsutil import write_bytes
from .charts import plots
from .records import ReportRecord
from .tables import sections, summary_lines


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |" for r in rows]
    return "\n".join(out)


def markdown(report: dict) -> str:
    """report.md from report.json's contents."""
    record = ReportRecord.from_json(report)
    out = ["# mobile-export parity report", ""] + summary_lines(record) + [""]
    for title, head, rows in sections(record):
        out += [f"## {title}", "", _md_table(head, rows), ""]
    return "\n".join(out)


# CJK fonts by name after the system's: the worst examples of a Chinese model are Chinese (Debian: fonts-noto-cjk or
# fonts-wqy-microhei; macOS PingFang; Windows Microsoft YaHei), and without one they show as empty boxes
FONT_STACK = (
    "system-ui,'Noto Sans','Noto Sans CJK SC','Source Han Sans SC','WenQuanYi Micro Hei','PingFang SC',"
    "'Microsoft YaHei',sans-serif"
)
CSS = (
    "body{font-family:"
    + FONT_STACK
    + """;margin:2em;max-width:1100px}table{border-collapse:collapse;
margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}
th{background:#f3f3f3}.pass{color:#070}.fail{color:#b00}figure{display:inline-block;margin:0 1em 1em 0}
figcaption{font-size:12px;color:#555}"""
)


def html_report(report: dict) -> str:
    """report.html (self-contained: tables and embedded plots) from report.json's contents."""
    record = ReportRecord.from_json(report)
    e = html.escape
    verdict = "pass" if record.passed else "fail"
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>mobile-export parity report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>mobile-export parity report</h1>",
        "<ul>",
    ]
    for line in summary_lines(record):
        if line.startswith("- verdict:"):  # said once, below the list
            continue
        text = (
            e(line[2:]).replace("**PASS**", "<b class='pass'>PASS</b>").replace("**FAIL**", "<b class='fail'>FAIL</b>")
        )
        parts.append(f"<li>{text.replace('`', '')}</li>")
    parts.append(f"</ul><p id='verdict' class='{verdict}'>verdict: {verdict.upper()}</p>")
    for title, head, rows in sections(record):
        parts.append(f"<h2>{e(title)}</h2><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>")
        for r in rows:
            parts.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>")
        parts.append("</table>")
    figs = plots(record)
    if figs:
        parts.append("<h2>Plots</h2>")
        for caption, uri in figs:
            parts.append(f"<figure><img src='{uri}' alt='{e(caption)}'><figcaption>{e(caption)}</figcaption></figure>")
    # Marks the page once loaded: "ok" when every plot decoded (checked by the headless-browser test).
    parts.append(
        "<script>window.addEventListener('load',function(){var bad=0;for(var i=0;i<document.images.length;"
        "i++){var im=document.images[i];if(!(im.complete&&im.naturalWidth>0))bad++;}"
        "document.body.setAttribute('data-rendered',bad?'broken:'+bad:'ok');});</script>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def write_reports(report: dict, dest: Path) -> list[str]:
    """Write report.md and report.html beside report.json; returns their names."""
    write_bytes(dest / REPORT_MD, markdown(report).encode("utf-8"))
    write_bytes(dest / REPORT_HTML, html_report(report).encode("utf-8"))
    return [REPORT_MD, REPORT_HTML]
