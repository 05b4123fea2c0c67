"""Per SummEval system: can sharing λ and the variance across systems narrow a valid interval?

A negative result, kept so it can be reproduced. bench/ppi_coverage_systems.py shows that per
SummEval system (100 summaries, 1–50 labels each) the t-based intervals undercover on
near-constant systems and the bounded (betting) interval covers but is no narrower than the
bounded human-only one. Here every system keeps its own rectifier mean (the judge's bias may
differ by system), finite population, but λ and the rectifier's variance are shared:

* λ: the within-system slope of y on f pooled over all labels, clipped to [0, 1];
* ``pool``: the rectifier variance pooled over systems (within-system deviations, df = n − K − 1,
  K = systems with a label; n − K without the judge), t quantile with that df;
* ``max``: max(own, pooled) for a system with ≥ 2 labels;
* ``union``: the wider of the pooled interval and the system's own t interval (n_s − 1 df);
* ``jvar``: the variance a system would have if the spread of people around a system's mean,
  given the judge's score, were shared: Σ_g π_s(g)·v(g), v(g) pooled over labels the judge
  scored g, π_s(g) the share of the system's items the judge scored g (known for every item);
  ``jmax``: max(own, jvar);
* ``--betting``: the betting interval (`calibration.stats._ppi_bounded`, bounds 1–5) with a fixed λ
  fitted on the *other* systems' labels (independent of the system's own), against the same
  interval with λ = 0.

Each method without the judge (λ = 0, ``H-…``) is the like-for-like human-only comparison; ``H-t``
is the textbook per-system t (no finite-population correction, as in ppi_coverage_systems).
Printed per labelled count n: coverage min / median / mean over the 48 system × dimension cells
(and how many are below 93%), and the mean over cells of (mean width / mean H-t width, on the
estimates where H-t exists) and of (mean width / mean width of the same method without the judge).

    .venv/bin/python -m bench.ppi_pooled_systems              # 500 subsets per cell (~1 min)
    .venv/bin/python -m bench.ppi_pooled_systems --betting   # the betting variant (~10 min)

Design A labels n ∈ {10, 25, 50} of *every* system's 100 at once (12n labels per subset);
design B, the one issue 12 names, n ∈ {50, 100, 200} of all 1,200, each system estimated from
the labels that fall in it (one label is enough for the pooled variances; none: no estimate).
The methods were written down before their numbers were seen; the output is deterministic
given the seeds (one per n).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import t as student_t

from calibration.stats._ppi_bounded import betting_interval
from tests.builders import SUMMEVAL_DIMENSIONS, summeval

Floats = NDArray[np.float64]
Ints = NDArray[np.intp]
LEVELS = 5  # GPT-4 scores SummEval 1–5 in whole points
KINDS = ("pool", "max", "union", "jvar", "jmax")


@dataclass(frozen=True)
class Dimension:
    """One SummEval dimension: scores, each item's system code, and what is known per system."""

    human: Floats
    judge: Floats
    code: Ints
    size: Floats  # N_s
    judge_mean: Floats  # F_s, the judge's mean over all of a system's items
    level_share: Floats  # π_s(g), shape (K, LEVELS)
    truth: Floats  # the system's all-human mean

    @property
    def systems(self) -> int:
        return len(self.size)


def dimensions() -> Iterator[Dimension]:
    data = summeval()
    for name in SUMMEVAL_DIMENSIONS:
        human, judge, system = data[name]
        names = sorted(set(system.tolist()))
        code = np.array([names.index(s) for s in system], dtype=np.intp)
        k = len(names)
        size = np.bincount(code, minlength=k).astype(np.float64)
        level_share = np.zeros((k, LEVELS))
        np.add.at(level_share, (code, judge_level(judge)), 1.0)
        yield Dimension(
            human,
            judge,
            code,
            size,
            np.bincount(code, judge, k) / size,
            level_share / size[:, None],
            np.bincount(code, human, k) / size,
        )


def judge_level(f: Floats) -> Ints:
    level: Ints = np.clip(np.rint(f).astype(np.intp), 1, LEVELS) - 1
    return level


def pooled_slope(y: Floats, f: Floats, code: Ints, k: int) -> float:
    """The within-system regression slope of y on f over all labels, clipped to [0, 1]."""
    count = np.maximum(np.bincount(code, minlength=k), 1)
    yc = y - (np.bincount(code, y, k) / count)[code]
    fc = f - (np.bincount(code, f, k) / count)[code]
    sff = float(fc @ fc)
    return float(np.clip((yc @ fc) / sff, 0.0, 1.0)) if sff > 1e-12 else 0.0


def intervals(d: Dimension, pick: Ints) -> dict[str, tuple[Floats, Floats]]:
    """Per method, each system's (estimate, half-width); nan where the method gives none."""
    y, f, code, k = d.human[pick], d.judge[pick], d.code[pick], d.systems
    n_s = np.bincount(code, minlength=k).astype(np.float64)
    has, two = n_s > 0, n_s >= 2
    safe_n = np.where(has, n_s, 1.0)
    fpc = 1.0 - n_s / d.size
    n, labelled_systems = len(y), int(has.sum())
    out: dict[str, tuple[Floats, Floats]] = {}
    for tag, lam, fitted in (("P", pooled_slope(y, f, code, k), 1), ("H", 0.0, 0)):
        r = y - lam * (f - d.judge_mean[code])
        centre = np.bincount(code, r, k) / safe_n
        dev2 = (r - centre[code]) ** 2
        df = n - labelled_systems - fitted
        if df <= 0:
            continue
        pooled = float(dev2.sum()) / df
        own = np.bincount(code, dev2, k) / np.maximum(n_s - 1.0, 1.0)
        level = judge_level(f)
        count = np.bincount(level, minlength=LEVELS).astype(np.float64)
        by_level = np.bincount(level, dev2, LEVELS) / np.maximum(count, 1.0) * (n / df)
        jvar = d.level_share @ np.where(count >= 2, by_level, pooled)
        q = float(student_t.ppf(0.975, df))
        q_own = np.where(two, student_t.ppf(0.975, np.maximum(n_s - 1.0, 1.0)), 0.0)
        variances = {
            "pool": np.full(k, pooled),
            "max": np.where(two, np.maximum(own, pooled), pooled),
            "jvar": jvar,
            "jmax": np.where(two, np.maximum(own, jvar), jvar),
        }
        half = {kind: q * np.sqrt(fpc * v / safe_n) for kind, v in variances.items()}
        half["union"] = np.maximum(half["pool"], q_own * np.sqrt(fpc * own / safe_n))
        for kind in KINDS:
            out[f"{tag}-{kind}"] = (
                np.where(has, centre, np.nan),
                np.where(has, half[kind], np.nan),
            )
    ybar = np.bincount(code, y, k) / safe_n
    own_y = np.bincount(code, (y - ybar[code]) ** 2, k) / np.maximum(n_s - 1.0, 1.0)
    q_t = student_t.ppf(0.975, np.maximum(n_s - 1.0, 1.0))
    out["H-t"] = (np.where(two, ybar, np.nan), np.where(two, q_t * np.sqrt(own_y / safe_n), np.nan))
    return out


def betting(d: Dimension, pick: Ints) -> dict[str, tuple[Floats, Floats]]:
    """The betting interval per system, λ from the other systems' labels (B-loso) or 0."""
    labelled = np.zeros(len(d.human), dtype=bool)
    labelled[pick] = True
    k = d.systems
    out = {m: (np.full(k, np.nan), np.full(k, np.nan)) for m in ("B-loso", "B-human")}
    for s in range(k):
        mine = d.code == s
        here, rest = mine & labelled, mine & ~labelled
        if not here.any():
            continue
        other = labelled & ~mine
        lam_other = pooled_slope(d.human[other], d.judge[other], d.code[other], k)
        for name, lam in (("B-loso", lam_other), ("B-human", 0.0)):
            y, f = d.human[here], d.judge[here]
            value = float(np.mean(y - lam * (f - d.judge_mean[s])))
            low, high = betting_interval(y, f, d.judge[rest], (1.0, 5.0), 0.05, lam, 0, value)
            low, high = min(low, value), max(high, value)
            # Stored as a centre and half-width so the tally below treats every method alike.
            out[name][0][s], out[name][1][s] = (low + high) / 2.0, (high - low) / 2.0
    return out


def simulate(design: str, n: int, reps: int, with_betting: bool) -> dict[str, list[Floats]]:
    """Per method, one row per cell: coverage, width / H-t width, width / human-only width."""
    cells: dict[str, list[Floats]] = {}
    for d in dimensions():
        rng = np.random.default_rng(n)
        groups = [np.flatnonzero(d.code == s) for s in range(d.systems)]
        tally: dict[str, Floats] = {}
        for _ in range(reps):
            if design == "A":
                pick = np.concatenate([rng.choice(g, n, replace=False) for g in groups])
            else:
                pick = rng.choice(len(d.human), n, replace=False)
            found = intervals(d, pick)
            if with_betting:
                found = {"H-t": found["H-t"], **betting(d, pick)}
            t_half = found["H-t"][1]
            t_ok = ~np.isnan(t_half)
            for name, (value, half) in found.items():
                like = {"P": f"H-{name[2:]}", "B": "B-human"}.get(name[0], name)
                base = found[like]
                ok = ~np.isnan(half)
                a = tally.setdefault(name, np.zeros((6, d.systems)))
                a[0] += ok & (np.abs(np.nan_to_num(value) - d.truth) <= np.nan_to_num(half) + 1e-12)
                a[1] += ok
                a[2] += np.where(t_ok & ok, np.nan_to_num(half), 0.0)
                a[3] += np.where(t_ok & ok, np.nan_to_num(t_half), 0.0)
                a[4] += np.where(ok, np.nan_to_num(half), 0.0)
                a[5] += np.where(ok, np.nan_to_num(base[1]), 0.0)
        for name, a in tally.items():
            with np.errstate(invalid="ignore", divide="ignore"):
                rows = np.stack([a[0] / a[1], a[2] / a[3], a[4] / a[5]], axis=1)
            cells.setdefault(name, []).extend(rows)
    return cells


def summary(rows: list[Floats]) -> str:
    table = np.array(rows)
    coverage = table[:, 0]
    to_t = table[np.isfinite(table[:, 1]), 1]
    to_like = table[np.isfinite(table[:, 2]), 2]
    return (
        f"coverage min {coverage.min():.1%} median {statistics.median(coverage):.1%} "
        f"mean {coverage.mean():.1%} ({int((coverage < 0.93).sum())} < 93%); "
        f"width / H-t mean {to_t.mean():.2f}x "
        f"(median {statistics.median(to_t):.2f}x); / without judge {to_like.mean():.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--design", choices=["A", "B", "both"], default="both")
    parser.add_argument("--betting", action="store_true", help="the betting variant only")
    args = parser.parse_args()
    print(f"SummEval per system, {args.reps} random labelled subsets per n (48 cells)", flush=True)
    plan = [("A", n) for n in (10, 25, 50)] + [("B", n) for n in (50, 100, 200)]
    for design, n in plan:
        if args.design not in (design, "both"):
            continue
        print(f"design {design}: n = {n}" + (" per system" if design == "A" else " of 1,200"))
        for name, rows in simulate(design, n, args.reps, args.betting).items():
            print(f"  {name:8s} {summary(rows)}", flush=True)


if __name__ == "__main__":
    main()
