"""Repeat a benchmark and report each measure as median, min and max.

A shared 2-core machine is noisy: one run can land 10-15% either way. Every benchmark here
measures its ratios within one run (ours and the baseline side by side, so noise hits both),
repeats the run, and reports the median with the range, so a newcomer re-running the same
command can tell whether a difference is real.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Measure", "machine", "repeat", "table"]


@dataclass(frozen=True)
class Measure:
    """One reported quantity: its value in one run, how to print it and what it is aimed at."""

    name: str
    value: float
    unit: str = ""
    digits: int = 3
    target: str = ""


def machine() -> str:
    """Python, cores and CPU model: what a reader needs to compare numbers fairly."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {model}, "
        f"{platform.system()} {platform.release()}"
    )


def repeat(run: Callable[[int], Sequence[Measure]], runs: int) -> list[list[Measure]]:
    """Call ``run(i)`` for i in 0..runs-1 and print a progress line after each."""
    if runs < 3:
        print(
            f"note: {runs} run(s); the README's numbers are medians of at least 3", file=sys.stderr
        )
    results: list[list[Measure]] = []
    for index in range(runs):
        measures = list(run(index))
        results.append(measures)
        brief = ", ".join(f"{m.name} {m.value:.{m.digits}f}{m.unit}" for m in measures[:3])
        print(f"run {index + 1}/{runs}: {brief}", file=sys.stderr, flush=True)
    return results


def table(title: str, results: list[list[Measure]]) -> str:
    """Median, min and max of every measure over the runs, one row each, in first-run order."""
    names = [m.name for m in results[0]]
    rows: list[tuple[str, str, str, str]] = []
    for name in names:
        found = [m for run in results for m in run if m.name == name]
        values = [m.value for m in found]
        first = found[0]

        def fmt(value: float, m: Measure = first) -> str:
            return f"{value:.{m.digits}f}{m.unit}"

        spread = f"{fmt(min(values))} – {fmt(max(values))}"
        rows.append((name, fmt(statistics.median(values)), spread, first.target))
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    spread_width = max(len(r[2]) for r in rows)
    lines = [
        f"\n{title}: median of {len(results)} runs [min – max]",
        f"machine: {machine()}",
    ]
    for name, median, spread, target in rows:
        lines.append(
            f"  {name:<{width}}  {median:>{value_width}}  [{spread:<{spread_width}}]  {target}".rstrip()
        )
    return "\n".join(lines)
