"""Matplotlib figures as inline SVG that is safe to put in any page, served or saved.

matplotlib's SVG is a standalone document: an XML prolog and DOCTYPE naming w3.org, an RDF
metadata block, a ``<style>`` element and a ``style="..."`` attribute on every shape. Inline in
HTML that is three problems: a served page's Content-Security-Policy (``style-src 'self'``)
blocks every ``style`` attribute, so the plot would lose its colours; two figures on one page
share ids (``patch_1``, clip paths), so one plot could clip another; and the URLs in the
prolog and metadata are external references a self-contained file should not carry. So the
prolog, metadata and ``<style>`` are dropped, each ``style`` attribute becomes SVG presentation
attributes (which no CSP governs), every id gets a per-figure prefix, and the result is checked
to hold no script, no event handler and no reference outside itself.

Text is kept as text (``svg.fonttype: none``) with math parsing off, so a model name holding
``$`` is shown as written; matplotlib escapes every string it writes.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["RC", "figure_svg", "inline_svg"]

RC: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "judgecards-report",  # the same ids on every run: reports diff cleanly
    "text.parse_math": False,
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
}

_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_STYLE_ELEMENT = re.compile(r"<style\b[^>]*>.*?</style>\s*", re.S)
_STYLE_ATTRIBUTE = re.compile(r'\sstyle="([^"]*)"')
_NAMESPACES = re.compile(r'\sxmlns(?::\w+)?="[^"]*"')
_ID = re.compile(r'\bid="([^"]+)"')
_HREF = re.compile(r'(xlink:href|href)="#([^"]+)"')
_URL = re.compile(r"url\(#([^)]+)\)")
_FONT = re.compile(
    r"^\s*(?:(italic|oblique|normal)\s+)?(?:(bold|normal|\d{3})\s+)?([\d.]+px)\s+(.+)$"
)
_COMMENT = re.compile(r"<!--.*?-->\s*", re.S)
_TEXT = re.compile(r">[^<]*<")
_UNSAFE = re.compile(
    r"<script|<foreignObject|<iframe|<image|\son\w+\s*=|javascript:|https?:|url\((?!#)|href=\"(?!#)",
    re.I,
)


class UnsafeSvg(ValueError):
    """The cleaned SVG still holds something that could run or fetch (never expected)."""


def _presentation(match: re.Match[str]) -> str:
    """``style="fill: #fff; font: 9px 'DejaVu Sans'"`` -> ``fill="#fff" font-size="9px" ...``."""
    attributes: list[str] = []
    for declaration in match.group(1).split(";"):
        name, _, value = declaration.partition(":")
        name, value = name.strip(), value.strip().replace('"', "'")
        if not name or not value:
            continue
        if name == "font":  # the shorthand is CSS only; SVG has one attribute per part
            parts = _FONT.match(value)
            if parts is None:
                continue
            style, weight, size, family = parts.groups()
            if style and style != "normal":
                attributes.append(f'font-style="{style}"')
            if weight and weight != "normal":
                attributes.append(f'font-weight="{weight}"')
            attributes += [f'font-size="{size}"', f'font-family="{family}"']
        else:
            attributes.append(f'{name}="{value}"')
    return "".join(f" {a}" for a in attributes)


def inline_svg(svg: str, *, prefix: str) -> str:
    """matplotlib's SVG document as one ``<svg>`` element for an HTML page (see module docs).

    Args:
        svg: what ``Figure.savefig(format="svg")`` wrote.
        prefix: prepended to every id (and every reference to one), unique per page.

    Raises:
        UnsafeSvg: the result would hold a script, an event handler or an outside reference.
    """
    text = _PROLOG.sub("", svg, count=1)
    text = _METADATA.sub("", text)
    text = _COMMENT.sub("", text)
    text = _STYLE_ELEMENT.sub("", text)
    text = _NAMESPACES.sub("", text)
    text = _STYLE_ATTRIBUTE.sub(_presentation, text)
    text = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = _HREF.sub(lambda m: f'{m.group(1)}="#{prefix}{m.group(2)}"', text)
    text = _URL.sub(lambda m: f"url(#{prefix}{m.group(1)})", text)
    text = text.replace("<svg ", '<svg role="img" ', 1).strip()
    found = _UNSAFE.search(_TEXT.sub("><", text))  # markup only: shown text is never fetched
    if found:
        raise UnsafeSvg(f"the plot's SVG holds {found.group(0)!r}")
    return text


def figure_svg(figure: Figure, *, prefix: str) -> str:
    """Save ``figure`` as SVG (no metadata) and clean it with `inline_svg`."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return inline_svg(buffer.getvalue(), prefix=prefix)
