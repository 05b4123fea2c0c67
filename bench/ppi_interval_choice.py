"""Which interval `judgecards estimate` reports, checked against the same interval at λ = 0.

Issue 21 part 1. The method and the criteria were written down here before any number was
looked at (this file was committed first):

**The rule** (``interval="auto"``, `calibration.corrected_estimate`). With a known scale and a
finite population (what `calibration.estimate` has for every share, win rate and score axis
of a card with a schema):

* the small-sample t interval of PPI++ (cross-fitted λ, Hall's skew step) where the labels of
  that estimate allow it: at least 50 labels *and* Cochran's (1977, §2.15) rule for a mean to
  be near normal, n > 25·g₁², with g₁ the skewness of the labelled human values (a sample with
  a single value fails it);
* otherwise the bounded (betting) interval, valid for any n, with the running slope λ_t shrunk
  toward 0 by the positive-part factor 1 − 1/F (F the regression F statistic of the labels
  drawn so far), so a judge whose slope is still noise adds no width.

The rule looks at the labels only, never at the judge, so "the same construction at λ = 0" is
the same interval kind with λ = 0: the human-only column of the report.

**Amended after the first runs** (said here, not hidden; the commits have the numbers). The
betting slope is 0 before 25 labels and 0 below F = 4 (the F-shrink alone left 3 cells of few
labels at 1.02–1.05×). In the t interval of ``"auto"`` (finite population) PPI++'s λ gets the
same shrink, and λ = 0 when fewer than 5 labelled judge scores differ from the judge's most
common one: per system with 50 of 100 labelled, a judge that scores 97 of 100 summaries 5 made
the interval 4–5% wider than λ = 0 (relevance M22).

**The criteria** (95% intervals; the truth is the all-human mean of the target):

* Enough labels: SummEval per-dimension means over all 1,200 summaries and MT-Bench per-model
  win rates at n ∈ {50, 100, 200}; SummEval per system with 50 of the system's 100 labelled.
  Coverage ≥ 93% for every target; mean width ≤ 0.97× λ = 0 where the judge–human correlation
  ρ ≥ 0.3, ≤ 1.02× everywhere.
* Few labels: SummEval per system (48 system × dimension cells) with n ∈ {50, 100, 200} drawn
  from all 1,200 (each system gets ≈ n/12), and n ∈ {10, 25} of a system's own 100. Coverage
  ≥ 93% in every cell; mean width ≤ 1.02× λ = 0 in every cell, median ≤ 1.00×. The gain is shown
  as a share of the oracle bound 1 − √(1 − ρ²) (ρ over the cell's population), not required.
* Beside each: how often the textbook human-only t interval misses.

    .venv/bin/python -m bench.ppi_interval_choice               # 500 subsets per target
    .venv/bin/python -m bench.ppi_interval_choice --reps 100    # a quicker look
    .venv/bin/python -m bench.ppi_interval_choice --part few    # one part only
"""

from __future__ import annotations

import argparse
import math
import statistics
import warnings
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.stats import t as student_t

from calibration import SmallSampleWarning
from calibration.stats import corrected_estimate
from tests.builders import SUMMEVAL_DIMENSIONS, mt_bench, summeval

Floats = NDArray[np.float64]


@dataclass
class Tally:
    """One target's running counts over the subsets drawn."""

    rho: float
    draws: int = 0
    covered: int = 0
    width: float = 0.0
    width_zero: float = 0.0
    t_missed: int = 0
    kinds: dict[str, int] = field(default_factory=dict)

    def add(
        self,
        y: Floats,
        f: Floats,
        f_u: Floats,
        truth: float,
        bounds: tuple[float, float],
        *,
        rng: np.random.Generator,
    ) -> None:
        seed = int(rng.integers(2**31))  # each estimate's folds and betting order, reproducibly
        e = corrected_estimate(y, f, f_u, finite_population=True, bounds=bounds, seed=seed)
        self.draws += 1
        self.covered += e.corrected.low <= truth <= e.corrected.high
        self.width += e.corrected.high - e.corrected.low
        self.width_zero += e.human_only.high - e.human_only.low
        self.kinds[e.interval] = self.kinds.get(e.interval, 0) + 1
        n = len(y)
        half = float(student_t.ppf(0.975, n - 1) * y.std(ddof=1) / math.sqrt(n))
        self.t_missed += abs(float(y.mean()) - truth) > half

    @property
    def coverage(self) -> float:
        return self.covered / self.draws

    @property
    def ratio(self) -> float:
        return self.width / self.width_zero if self.width_zero > 0 else math.nan

    @property
    def oracle_share(self) -> float:
        """The width gained as a share of the oracle gain 1 − √(1 − ρ²)."""
        oracle = 1.0 - math.sqrt(max(1.0 - self.rho**2, 0.0))
        return (1.0 - self.ratio) / oracle if oracle > 1e-9 else math.nan

    def line(self, name: str) -> str:
        kinds = ", ".join(f"{k} {v / self.draws:.0%}" for k, v in sorted(self.kinds.items()))
        return (
            f"  {name:32s} ρ {self.rho:5.2f}  cover {self.coverage:6.1%}  width/λ=0 "
            f"{self.ratio:5.3f}x  of oracle {self.oracle_share:6.1%}  "
            f"human t misses {self.t_missed / self.draws:5.1%}  ({kinds})"
        )


def _rho(y: Floats, f: Floats) -> float:
    if y.std() == 0 or f.std() == 0:
        return 0.0
    return float(np.corrcoef(y, f)[0, 1])


def enough(reps: int) -> None:
    """Targets with ≥ 50 labels per estimate."""
    data = summeval()
    for n in (50, 100, 200):
        print(f"enough labels, n = {n}, {reps} subsets per target", flush=True)
        for dimension in SUMMEVAL_DIMENSIONS:
            human, gpt4, _ = data[dimension]
            tally, rng = Tally(_rho(human, gpt4)), np.random.default_rng(n)
            for _ in range(reps):
                order = rng.permutation(len(human))
                tally.add(
                    human[order[:n]],
                    gpt4[order[:n]],
                    gpt4[order[n:]],
                    float(human.mean()),
                    (1.0, 5.0),
                    rng=rng,
                )
            print(tally.line(f"SummEval {dimension}"), flush=True)
        bench = mt_bench()
        for model in bench.models:
            human, gpt4 = bench.win_scores(model)
            tally, rng = Tally(_rho(human, gpt4)), np.random.default_rng(n)
            for _ in range(reps):
                order = rng.permutation(len(human))
                tally.add(
                    human[order[:n]],
                    gpt4[order[:n]],
                    gpt4[order[n:]],
                    float(human.mean()),
                    (0.0, 1.0),
                    rng=rng,
                )
            print(tally.line(f"MT-Bench {model} win rate"), flush=True)
    print(f"enough labels per system: 50 of a system's 100, {reps} subsets per cell", flush=True)
    _per_system_own(50, reps)


def _cells() -> list[tuple[str, str, Floats, Floats]]:
    out = []
    for dimension, (human, gpt4, systems) in summeval().items():
        for system in sorted(set(systems.tolist())):
            keep = systems == system
            out.append((dimension, system, human[keep], gpt4[keep]))
    return out


def _summarise(tallies: list[Tally]) -> None:
    coverage = [t.coverage for t in tallies]
    ratios = [t.ratio for t in tallies if math.isfinite(t.ratio)]
    shares = [t.oracle_share for t in tallies if math.isfinite(t.oracle_share)]
    missed = [t.t_missed / t.draws for t in tallies]
    print(
        f"  {len(tallies)} cells: coverage min {min(coverage):.1%} median "
        f"{statistics.median(coverage):.1%}; width/λ=0 median {statistics.median(ratios):.3f}x "
        f"max {max(ratios):.3f}x ({sum(r > 1.02 for r in ratios)} cells > 1.02x); gain as share "
        f"of oracle median {statistics.median(shares):.0%}; human-only t misses median "
        f"{statistics.median(missed):.1%} max {max(missed):.1%}",
        flush=True,
    )


def _per_system_own(n: int, reps: int) -> None:
    tallies, names = [], []
    for dimension, system, human, gpt4 in _cells():
        names.append(f"{dimension} {system}")
        tally, rng = Tally(_rho(human, gpt4)), np.random.default_rng(n)
        for _ in range(reps):
            order = rng.permutation(len(human))
            tally.add(
                human[order[:n]],
                gpt4[order[:n]],
                gpt4[order[n:]],
                float(human.mean()),
                (1.0, 5.0),
                rng=rng,
            )
        tallies.append(tally)
    _summarise(tallies)
    if n >= 50:  # the enough-labels criteria, cell by cell
        informative = [(name, t) for name, t in zip(names, tallies, strict=True) if t.rho >= 0.3]
        wide = [(name, t) for name, t in informative if t.ratio > 0.97]
        print(
            f"  ρ ≥ 0.3 in {len(informative)} cells; {len(informative) - len(wide)} at ≤ 0.97x",
            flush=True,
        )
        for name, t in wide + [
            (m, t) for m, t in zip(names, tallies, strict=True) if t.ratio > 1.02
        ]:
            print(t.line(name), flush=True)


def few(reps: int) -> None:
    """SummEval per system: labels drawn from all 1,200, then n of a system's own 100."""
    for n in (50, 100, 200):
        print(f"few labels: n = {n} of all 1,200, per system, {reps} subsets", flush=True)
        tallies: list[Tally] = []
        skipped = 0
        for human, gpt4, systems in summeval().values():
            names = sorted(set(systems.tolist()))
            rng = np.random.default_rng(n)
            mine = {s: systems == s for s in names}
            cell = {s: Tally(_rho(human[mine[s]], gpt4[mine[s]])) for s in names}
            for _ in range(reps):
                labelled = np.zeros(len(human), dtype=bool)
                labelled[rng.choice(len(human), n, replace=False)] = True
                for s in names:
                    y, f = human[mine[s] & labelled], gpt4[mine[s] & labelled]
                    if len(y) < 2:
                        skipped += 1
                        continue
                    cell[s].add(
                        y,
                        f,
                        gpt4[mine[s] & ~labelled],
                        float(human[mine[s]].mean()),
                        (1.0, 5.0),
                        rng=rng,
                    )
            tallies += cell.values()
        _summarise(tallies)
        print(f"  ({skipped} system estimates with < 2 labels left out)")
    for n in (10, 25):
        print(f"few labels: n = {n} of a system's 100, {reps} subsets per cell", flush=True)
        _per_system_own(n, reps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--part", choices=["enough", "few", "both"], default="both")
    args = parser.parse_args()
    warnings.simplefilter("ignore", SmallSampleWarning)
    if args.part in ("enough", "both"):
        enough(args.reps)
    if args.part in ("few", "both"):
        few(args.reps)


if __name__ == "__main__":
    main()
