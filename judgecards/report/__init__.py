"""Reports people would rather look at than read: ``judgecards report`` and the served /reports.

`build_report` reads one database into a `Report` (one `JudgeReport` per card@version and
judge model) using the functions the commands use, so its numbers are theirs
(`judgecards.report.model`); `judgecards.report.views` turns it into parts, each plot beside
the table of its numbers; `render_html` writes one self-contained HTML file (inline SVG plots,
inline CSS, no script, nothing fetched). matplotlib and Jinja2 are imported only here, on use:
``pip install 'judgecards[serve]'``.
"""

from __future__ import annotations

from judgecards.report.model import JudgeReport, Report, build_report

__all__ = ["JudgeReport", "Report", "build_report", "render_html"]


def render_html(report: Report) -> str:
    """The report as one self-contained HTML document (see `judgecards.report.html`)."""
    from judgecards.report.html import render_html as render

    return render(report)
