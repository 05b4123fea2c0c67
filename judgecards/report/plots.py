"""The report's plots, drawn with matplotlib (Agg, offline) and returned as inline SVG.

Each function takes plain numbers (the same the table beside it prints) and a page-unique id
prefix; none reads the store. Intervals are drawn as error bars from ``low`` to ``high``; an
undefined bound (``nan``) draws the point alone.
"""

from __future__ import annotations

import importlib.util
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from judgecards.errors import MissingExtra
from judgecards.report.svg import RC, figure_svg

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "Interval",
    "bars",
    "confusion",
    "forest",
    "over_time",
    "require_matplotlib",
]

_LOCK = threading.Lock()

Interval = tuple[float, float, float]
"""``(value, low, high)``; ``nan`` where undefined."""

_COLOURS = ("#1f5fa8", "#d9822b", "#6b7280", "#2e8540")


def require_matplotlib() -> None:
    """Raise `MissingExtra` naming the install command when matplotlib is not installed."""
    if importlib.util.find_spec("matplotlib") is None:
        raise MissingExtra(
            "reports draw their plots with matplotlib: pip install 'judgecards[serve]'",
            extra="serve",
        )


@contextmanager
def _drawing() -> Iterator[None]:
    """matplotlib's report settings, one plot at a time.

    rcParams are global: a server drawing two reports at once in its thread pool would mix
    them, hence the lock. Figures are made without pyplot (no figure manager, no GUI backend).
    """
    require_matplotlib()
    import matplotlib

    with _LOCK, matplotlib.rc_context(RC):  # type: ignore[arg-type]
        yield


def _figure(width: float, height: float) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    return figure, figure.subplots()


def _errors(points: Sequence[Interval]) -> tuple[list[float], list[list[float]]]:
    """Values and asymmetric error lengths (0 where a bound is undefined)."""
    values = [p[0] for p in points]
    below = [0.0 if math.isnan(p[1]) or math.isnan(p[0]) else max(p[0] - p[1], 0.0) for p in points]
    above = [0.0 if math.isnan(p[2]) or math.isnan(p[0]) else max(p[2] - p[0], 0.0) for p in points]
    return values, [below, above]


def _span(points: Sequence[Interval], low: float, high: float) -> tuple[float, float]:
    """``low``-``high`` widened to every defined value and bound, with a 5% margin."""
    for point in points:
        for number in point:
            if not math.isnan(number):
                low, high = min(low, number), max(high, number)
    margin = 0.05 * (high - low or 1.0)
    return low - margin, high + margin


def forest(
    rows: Sequence[str],
    series: Sequence[tuple[str, Sequence[Interval]]],
    *,
    prefix: str,
    xlabel: str,
    reference: float | None = None,
    reference_label: str | None = None,
    limits: tuple[float, float] | None = None,
) -> str:
    """A forest plot: one line per row, one marker per series, each with its interval.

    ``limits``: the x range to show at least (a scale's ends: 0-1 for shares, -1-1 for kappa);
    it widens to take in any point or interval beyond it, so nothing is drawn off the axes.
    """
    with _drawing():
        height = 0.9 + 0.32 * len(rows) * max(1, len(series))
        figure, axes = _figure(6.4, min(height, 12.0))
        step = 0.8 / max(1, len(series))
        for index, (name, points) in enumerate(series):
            offset = (len(series) - 1) / 2 * step - index * step
            values, errors = _errors(points)
            ys = [len(rows) - 1 - i + offset for i in range(len(rows))]
            axes.errorbar(
                values,
                ys,
                xerr=errors,
                fmt="o",
                capsize=3,
                markersize=4,
                color=_COLOURS[index % len(_COLOURS)],
                label=name,
            )
        if reference is not None:
            axes.axvline(
                reference, color="#b91c1c", linestyle="--", linewidth=1, label=reference_label
            )
        axes.set_yticks(range(len(rows)), list(reversed(rows)))
        if limits is not None:
            low, high = _span([p for _, points in series for p in points], *limits)
            axes.set_xlim(low, high)
        axes.set_xlabel(xlabel)
        axes.grid(axis="x", color="#e5e7eb")
        if len(series) > 1 or reference_label:
            axes.legend(loc="best", fontsize=8, frameon=False)
        return figure_svg(figure, prefix=prefix)


def over_time(
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[Interval]]],
    *,
    prefix: str,
    threshold: float,
    ylabel: str,
) -> str:
    """Kappa and agreement per audit, oldest left, with intervals and the gate's threshold."""
    with _drawing():
        figure, axes = _figure(6.4, 3.0)
        xs = list(range(len(labels)))
        for index, (name, points) in enumerate(series):
            values, errors = _errors(points)
            shifted = [x + (index - (len(series) - 1) / 2) * 0.08 for x in xs]
            axes.errorbar(
                shifted,
                values,
                yerr=errors,
                fmt="o-",
                capsize=3,
                markersize=4,
                color=_COLOURS[index % len(_COLOURS)],
                label=name,
            )
        axes.axhline(
            threshold,
            color="#b91c1c",
            linestyle="--",
            linewidth=1,
            label=f"gate: kappa ≥ {threshold:.2f}",
        )
        axes.set_xticks(xs, list(labels))
        axes.set_ylabel(ylabel)
        # Kappa runs from -1: a judge worse than chance is drawn, not left off the axis.
        low, high = _span([p for _, points in series for p in points], min(0.0, threshold), 1.0)
        axes.set_ylim(low, high)
        axes.set_xlim(-0.5, len(xs) - 0.5)  # one audit sits in the middle, not on an edge
        axes.grid(axis="y", color="#e5e7eb")
        # Beside the axes: inside, it covered points (a negative kappa sits at lower left).
        axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
        return figure_svg(figure, prefix=prefix)


def confusion(
    labels: Sequence[str], matrix: Sequence[Sequence[int]], *, prefix: str, field: str
) -> str:
    """A confusion matrix: rows the humans' label, columns the judge's, counts in the cells."""
    with _drawing():
        size = 1.6 + 0.55 * len(labels)
        figure, axes = _figure(size + 0.6, size)
        # Vector cells (pcolormesh), not imshow's embedded bitmap; the counts are written in.
        axes.pcolormesh(
            [[float(c) for c in row] for row in matrix],
            cmap="Blues",
            edgecolors="white",
            linewidth=1,
        )
        top = max((max(row) for row in matrix), default=0)
        for i, row in enumerate(matrix):
            for j, count in enumerate(row):
                colour = "white" if top and count > top / 2 else "black"
                axes.text(j + 0.5, i + 0.5, str(count), ha="center", va="center", color=colour)
        axes.set_xticks(
            [j + 0.5 for j in range(len(labels))], list(labels), rotation=30, ha="right"
        )
        axes.set_yticks([i + 0.5 for i in range(len(labels))], list(labels))
        axes.invert_yaxis()
        axes.set_xlabel(f"judge's {field}")
        axes.set_ylabel(f"people's {field}")
        return figure_svg(figure, prefix=prefix)


def bars(
    panels: Sequence[tuple[str, Sequence[str], Sequence[float]]],
    *,
    prefix: str,
    ylabel: str,
    stacked: Sequence[tuple[str, Sequence[float]]] | None = None,
) -> str:
    """One bar chart per panel (``(title, categories, values)``), side by side.

    With ``stacked`` (a single panel's extra series), the bars are stacked series instead.
    """
    with _drawing():
        count = max(1, len(panels))
        columns = min(count, 3)
        rows = math.ceil(count / columns)
        from matplotlib.figure import Figure

        figure = Figure(figsize=(2.6 * columns + 0.8, 2.3 * rows))
        grid = figure.subplots(rows, columns, squeeze=False)
        for index, (title, categories, values) in enumerate(panels):
            axes: Any = grid[index // columns][index % columns]
            if stacked:
                bottom = [0.0] * len(categories)
                for colour, (name, series) in enumerate(stacked):
                    axes.bar(
                        list(categories),
                        list(series),
                        bottom=bottom,
                        label=name,
                        color=_COLOURS[colour % len(_COLOURS)],
                    )
                    bottom = [b + v for b, v in zip(bottom, series)]
                axes.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            else:
                axes.bar(list(categories), list(values), color=_COLOURS[0])
            axes.set_title(title)
            axes.set_ylabel(ylabel)
            axes.tick_params(axis="x", labelrotation=30)
        for index in range(len(panels), rows * columns):
            grid[index // columns][index % columns].set_visible(False)
        figure.tight_layout()
        return figure_svg(figure, prefix=prefix)
