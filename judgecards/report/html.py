"""The report as HTML: one self-contained file, or the body of a served page.

Both are rendered from the same `judgecards.report.views` through one Jinja2 template
(``sections.html``, autoescaped: item text, model names and labels are shown, never run). The
file inlines its stylesheet (``judgecards/serve/static/report.css``, which served pages link
from ``/static``) and carries a Content-Security-Policy of its own that allows no request at
all, so opening it from disk or a mail attachment fetches nothing even if something slipped in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from judgecards.report.model import Report
from judgecards.report.views import JudgeView, judge_views, plot_count

__all__ = ["render_html", "render_sections", "stylesheet"]


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("judgecards.report", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def stylesheet() -> str:
    """The report stylesheet (the one served as ``/static/report.css``)."""
    return resources.files("judgecards.serve").joinpath("static/report.css").read_text("utf-8")


def render_sections(
    views: Sequence[JudgeView],
    *,
    link: Callable[[JudgeView], str] = lambda view: f"#{view.anchor}",
    contents: bool = True,
) -> Markup:
    """The sections of ``views`` (and a contents list when there are several) as safe markup."""
    template = _environment().get_template("sections.html")
    return Markup(template.render(views=views, link=link, contents=contents))


def render_html(report: Report) -> str:
    """The whole report as one HTML document with no external reference."""
    views = judge_views(report)
    template = _environment().get_template("report.html")
    return template.render(
        db=report.db,
        db_name=report.db.rsplit("/", 1)[-1],
        generated=report.generated_at.strftime("%Y-%m-%d %H:%M"),
        level=round(report.level * 100),
        resamples=report.n_resamples,
        seed=report.seed,
        min_kappa=f"{report.min_kappa:.2f}",
        n_plots=plot_count(views),
        css=Markup(stylesheet()),
        body=render_sections(views),
    )
