"""Coverage of corrected means per SummEval system: the finite-population and bounded intervals.

SummEval (../shared/data/summeval) has 12 systems × 100 summaries, each scored 1–5 by three
experts (mean) and by GPT-4. The truth is a system's all-human mean over its summaries; each
subset of labels is drawn without replacement, as an audit draws stored results. Printed per
labelled count n: the min and median over the 48 system × dimension cells of the 95%
intervals' coverage, and of their mean width relative to the textbook human-only t interval.

    .venv/bin/python -m bench.ppi_coverage_systems            # 500 subsets per cell (~10 min)
    .venv/bin/python -m bench.ppi_coverage_systems --reps 50  # a quick look
    .venv/bin/python -m bench.ppi_coverage_systems --design A  # one design only

Design A labels n ∈ {10, 25, 50} of a system's own 100 summaries. Design B, the one issue 12
names, labels n ∈ {50, 100, 200} of all 1,200 and estimates each system's mean from the labels
that fall in it (a system with fewer than 2 of them gets no estimate: counted apart).
"""

from __future__ import annotations

import argparse
import math
import statistics
import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.stats import t as student_t

from calibration import SmallSampleWarning
from calibration.stats import corrected_estimate, corrected_mean
from judgecards.metrics.stats import Estimate
from tests.builders import SUMMEVAL_DIMENSIONS, summeval

Floats = NDArray[np.float64]
Method = Callable[[Floats, Floats, Floats], Estimate]

METHODS: dict[str, Method] = {
    "PPI++ (infinite population)": lambda y, f, f_u: corrected_mean(y, f, f_u),
    "PPI++ finite population": lambda y, f, f_u: corrected_mean(y, f, f_u, finite_population=True),
    "PPI++ finite, bounds 1-5": lambda y, f, f_u: corrected_mean(
        y, f, f_u, finite_population=True, bounds=(1.0, 5.0), interval="bounded"
    ),
    # The same bounded interval without the judge: the like-for-like human-only comparison.
    "human-only finite, bounds 1-5": lambda y, f, f_u: (
        corrected_estimate(
            y, f, f_u, finite_population=True, bounds=(1.0, 5.0), interval="bounded"
        ).human_only
    ),
}


def human_t_width(y: Floats) -> float:
    n = len(y)
    return float(2 * student_t.ppf(0.975, n - 1) * y.std(ddof=1) / math.sqrt(n))


def cells() -> list[tuple[str, str, Floats, Floats]]:
    data = summeval()
    out = []
    for dimension in SUMMEVAL_DIMENSIONS:
        human, gpt4, system = data[dimension]
        for name in sorted(set(system.tolist())):
            keep = system == name
            out.append((dimension, name, human[keep], gpt4[keep]))
    return out


def design_a(n: int, reps: int) -> dict[str, list[tuple[float, float]]]:
    """Per method, (coverage, width / human-only width) of each cell."""
    found: dict[str, list[tuple[float, float]]] = {m: [] for m in [*METHODS, "human-only t"]}
    for _, _, human, gpt4 in cells():
        truth, rng = float(human.mean()), np.random.default_rng(n)
        hits = dict.fromkeys(found, 0)
        widths = dict.fromkeys(found, 0.0)
        for _ in range(reps):
            order = rng.permutation(len(human))
            y, f, f_u = human[order[:n]], gpt4[order[:n]], gpt4[order[n:]]
            h = human_t_width(y)
            widths["human-only t"] += h
            hits["human-only t"] += abs(float(y.mean()) - truth) <= h / 2
            for name, method in METHODS.items():
                e = method(y, f, f_u)
                hits[name] += e.low <= truth <= e.high
                widths[name] += e.high - e.low
        for name in found:
            ratio = widths[name] / widths["human-only t"] if widths["human-only t"] else math.inf
            found[name].append((hits[name] / reps, ratio))
    return found


def design_b(n: int, reps: int) -> tuple[dict[str, list[tuple[float, float]]], float]:
    """As `design_a`, labels drawn from all 1,200; also the share of (subset, system) left out."""
    data = summeval()
    found: dict[str, list[tuple[float, float]]] = {m: [] for m in [*METHODS, "human-only t"]}
    skipped, total = 0, 0
    for dimension in SUMMEVAL_DIMENSIONS:
        human, gpt4, system = data[dimension]
        names = sorted(set(system.tolist()))
        rng = np.random.default_rng(n)
        hits = {s: dict.fromkeys(found, 0) for s in names}
        widths = {s: dict.fromkeys(found, 0.0) for s in names}
        counted = dict.fromkeys(names, 0)
        for _ in range(reps):
            labelled = np.zeros(len(human), dtype=bool)
            labelled[rng.choice(len(human), n, replace=False)] = True
            for s in names:
                total += 1
                mine = system == s
                y, f, f_u = human[mine & labelled], gpt4[mine & labelled], gpt4[mine & ~labelled]
                if len(y) < 2:
                    skipped += 1
                    continue
                truth = float(human[mine].mean())
                counted[s] += 1
                h = human_t_width(y)
                widths[s]["human-only t"] += h
                hits[s]["human-only t"] += abs(float(y.mean()) - truth) <= h / 2
                for name, method in METHODS.items():
                    e = method(y, f, f_u)
                    hits[s][name] += e.low <= truth <= e.high
                    widths[s][name] += e.high - e.low
        for s in names:
            for name in found:
                base = widths[s]["human-only t"]
                ratio = widths[s][name] / base if base else math.inf
                found[name].append((hits[s][name] / max(counted[s], 1), ratio))
    return found, skipped / total


def summary(rows: list[tuple[float, float]]) -> str:
    coverage = [c for c, _ in rows]
    ratio = [r for _, r in rows if math.isfinite(r)]
    return (
        f"coverage min {min(coverage):.1%} median {statistics.median(coverage):.1%}; "
        f"width/human-t median {statistics.median(ratio):.2f}x (max {max(ratio):.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--design", choices=["A", "B", "both"], default="both")
    args = parser.parse_args()
    reps = args.reps
    warnings.simplefilter("ignore", SmallSampleWarning)
    print(f"SummEval per system, {reps} random labelled subsets per cell (48 cells)", flush=True)
    for n in (10, 25, 50) if args.design in ("A", "both") else ():
        print(f"design A: n = {n} of a system's 100")
        for name, rows in design_a(n, reps).items():
            print(f"  {name:30s} {summary(rows)}", flush=True)
    for n in (50, 100, 200) if args.design in ("B", "both") else ():
        found, skipped = design_b(n, reps)
        print(f"design B: n = {n} of 1,200 ({skipped:.1%} of system estimates had < 2 labels)")
        for name, rows in found.items():
            print(f"  {name:30s} {summary(rows)}", flush=True)


if __name__ == "__main__":
    main()
