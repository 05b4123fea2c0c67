"""A corrected mean's interval that holds for any sample size when the scores are bounded.

The t-based interval of `calibration.stats._ppi_core` estimates the spread from the labels. When a
score is almost constant (95 of a system's 100 SummEval summaries score 5 on consistency), a
sample that missed the few low ones shows no spread at all and the interval shrinks to a point:
per system, 25–50 labels covered the true mean 39–44% of the time. No interval built from the
sample spread alone can avoid that. A known scale can: a mean of scores in [lo, hi] cannot move
by more than the unseen items' share times the distance to the far bound.

This is the *betting* confidence interval of Waudby-Smith and Ramdas ("Estimating means of
bounded random variables by betting", JRSS B 86, 2024), in its sampling-without-replacement form
(Waudby-Smith and Ramdas, "Confidence sequences for sampling without replacement", NeurIPS
2020). For each candidate population mean μ a gambler bets, label by label, that the next label
lies above (or below) the mean the remaining items must have if μ were true; the interval is
every μ whose hedged wealth stays below 1/α. Wealth is a nonnegative martingale under μ, so by
Markov's inequality the interval covers with probability ≥ 1 − α for every sample size and
every population in [lo, hi] — no normal approximation. Bets are the authors' predictable
plug-in sizes, sqrt(2·log(2/α)/(n·σ̂²)), truncated at 0.9 of what keeps wealth nonnegative.

The judge enters as a control variate, as in PPI: the bet is on y − λ_t·(f − φ_t), where φ_t
is the mean judge score of the items not yet drawn (known: every item is judged) and λ_t the
regression slope fitted on the labels drawn *before* item t, so each bet still has mean μ_t.
The labels are taken in random orders (seeded) and the final wealth averaged over them, which
keeps the guarantee (an average of e-values is one) and removes most of the order's luck.

No maintained Python library does this for Python < 3.12 (``confseq`` builds C++ from source
and pulls in matplotlib; ``expectation`` needs 3.12), so it is written here in numpy.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from calibration.stats._ppi_core import Floats, Tuning, shrink_factor
from judgecards.metrics.stats import Estimate

_TRUNCATION = 0.9  # fraction of the largest bet that keeps wealth nonnegative (WSR: c < 1)
_PRIOR_VARIANCE = 0.25  # σ̂² before any label, on the [0, 1] scale (the largest possible)
_ORDERS = 4
_GRID = 41  # candidate means on the [0, 1] scale; each end is then refined 40-fold
_FINE = 41
_SLOPE_LABELS = 25  # labels drawn before the judge's slope is used at all

Bools = NDArray[np.bool_]


def check_design(
    finite_population: bool,
    bounds: tuple[float, float] | None,
    weighted: bool,
    human: Floats,
) -> None:
    """Refuse combinations the finite-population and bounded intervals do not cover."""
    if finite_population and weighted:
        raise ValueError(
            "finite_population=True assumes the labelled items are a simple random sample "
            "without replacement; with weights (an unequal-probability design) leave it False"
        )
    if bounds is None:
        return
    if not finite_population:
        raise ValueError(
            "bounds needs finite_population=True: the bounded interval is for labelled items "
            "drawn without replacement from judged items whose judge scores are all given"
        )
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bounds must be (low, high) numbers, got {bounds!r}") from exc
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with low < high, got {bounds!r}")
    outside = np.flatnonzero((human < lo) | (human > hi))
    if outside.size:
        raise ValueError(
            f"human[{outside[0]}] is {human[outside[0]]}, outside bounds {bounds!r} "
            f"({outside.size} value(s) outside)"
        )


def bounded_estimate(  # noqa: PLR0917  the arrays of one estimate and its fit settings, in the fit's order
    estimate: Estimate,
    y: Floats,
    f: Floats,
    f_u: Floats,
    bounds: tuple[float, float],
    alpha: float,
    tuning: Tuning,
    seed: int | None,
) -> Estimate:
    """``estimate`` with the betting interval (widened to hold the value if it ever missed it)."""
    if len(f_u) == 0:  # a census is exact
        return estimate
    low, high = betting_interval(
        y, f, f_u, (float(bounds[0]), float(bounds[1])), alpha, tuning, seed, estimate.value
    )
    return Estimate(
        estimate.value,
        min(low, estimate.value),
        max(high, estimate.value),
        estimate.level,
        estimate.n,
    )


def betting_interval(  # noqa: PLR0917  the arrays of one estimate and its fit settings, in the fit's order
    y: Floats,
    f: Floats,
    f_u: Floats,
    bounds: tuple[float, float],
    alpha: float,
    tuning: Tuning,
    seed: int | None,
    value: float,
) -> tuple[float, float]:
    """The 1 − α interval for the mean of y over the labelled + unlabelled items.

    ``y`` (labelled, a simple random sample without replacement of all ``len(y) + len(f_u)``
    items) must lie within ``bounds``; ``f`` and ``f_u`` are the judge's scores of the labelled
    and unlabelled items (any finite values). ``tuning`` ``"ppi++"`` fits λ_t as it goes; a fixed
    λ (``"ppi"`` = 1, or a number) is used as given.
    """
    lo, hi = bounds
    scale = hi - lo
    n, big_n = len(y), len(y) + len(f_u)
    y01, f01 = (y - lo) / scale, (f - lo) / scale
    population = np.concatenate([f01, (f_u - lo) / scale])
    fixed = None if tuning == "ppi++" else (1.0 if tuning == "ppi" else float(tuning))
    rng = np.random.default_rng(seed)
    paths = [_Path(y01[o], f01[o], population, big_n, alpha, fixed) for o in _orders(n, rng)]

    def rejected(mu: Floats) -> Bools:
        wealth = np.mean([path.final_wealth(mu) for path in paths], axis=0)
        # The items not drawn must be able to average what μ requires of them.
        rest = (big_n * mu - y01.sum()) / (big_n - n)
        out: Bools = (wealth >= 1.0 / alpha) | (rest < -1e-12) | (rest > 1.0 + 1e-12)
        return out

    # A coarse grid (with the point estimate on it, so a narrow interval is not stepped over),
    # then both ends refined in one more pass between the last kept and first rejected points.
    centre = float(np.clip((value - lo) / scale, 0.0, 1.0))
    grid = np.unique(np.append(np.linspace(0.0, 1.0, _GRID), centre))
    kept = np.flatnonzero(~rejected(grid))
    if kept.size == 0:  # every μ rejected: only possible with probability < α; stay honest
        return lo, hi
    first, last = int(kept[0]), int(kept[-1])
    below = np.linspace(float(grid[max(first - 1, 0)]), float(grid[first]), _FINE)
    above = np.linspace(float(grid[last]), float(grid[min(last + 1, len(grid) - 1)]), _FINE)
    fine_out = rejected(np.concatenate([below, above]))
    low = _end(below, fine_out[:_FINE], -1)
    high = _end(above, fine_out[_FINE:], +1)
    return lo + scale * low, lo + scale * high


def _orders(n: int, rng: np.random.Generator) -> list[NDArray[np.intp]]:
    return [rng.permutation(n) for _ in range(_ORDERS)]


def _end(points: Floats, rejected: Bools, direction: int) -> float:
    """The outermost kept point of a fine segment, moved one step outward (never narrower)."""
    step = abs(float(points[-1] - points[0])) / (len(points) - 1)
    kept = np.flatnonzero(~rejected)
    if kept.size == 0:  # a degenerate segment (the grid's end): its inner point was kept
        edge = float(points[-1] if direction < 0 else points[0])
    else:
        edge = float(points[kept[0]] if direction < 0 else points[kept[-1]])
    return float(np.clip(edge + direction * step, 0.0, 1.0))


class _Path:
    """One order of the labels: what the bets need, computed once for every candidate μ."""

    def __init__(  # noqa: PLR0917  the arrays of one betting run, as its caller holds them
        self,
        y: Floats,
        f: Floats,
        population: Floats,
        big_n: int,
        alpha: float,
        fixed: float | None,
    ) -> None:
        n = len(y)
        t = np.arange(1, n + 1, dtype=np.float64)
        self.big_n, self.remaining = big_n, big_n - t + 1.0
        self.drawn_y = np.concatenate([[0.0], np.cumsum(y)[:-1]])  # Σ y before item t
        drawn_f = np.concatenate([[0.0], np.cumsum(f)[:-1]])
        self.phi = (population.sum() - drawn_f) / self.remaining  # judge mean of items left
        self.lam = np.full(n, fixed) if fixed is not None else _predictable_slope(y, f)
        self.f_max, self.f_min = float(population.max()), float(population.min())
        self.x = y - self.lam * (f - self.phi)
        # Predictable regularised mean and variance of x (WSR's σ̂²_{t−1}).
        running_mean = np.concatenate([[0.5], (0.5 + np.cumsum(self.x)) / (t + 1.0)])[:-1]
        squares = np.concatenate([[0.0], np.cumsum((self.x - running_mean) ** 2)[:-1]])
        variance = (_PRIOR_VARIANCE + squares) / t
        self.bet = np.sqrt(2.0 * math.log(2.0 / alpha) / (n * variance))

    def final_wealth(self, mu: Floats) -> Floats:
        """The hedged wealth ½·K⁺ + ½·K⁻ after every label, for each candidate mean μ."""
        m = (self.big_n * mu[:, None] - self.drawn_y[None, :]) / self.remaining[None, :]
        d = self.x[None, :] - m
        # d ranges over [−down, up] whatever item t turns out to be; bets keep 1 ± b·d > 0.
        down = np.maximum(m + self.lam * (self.f_max - self.phi), 1e-12)
        up = np.maximum(1.0 - m - self.lam * (self.f_min - self.phi), 1e-12)
        impossible = (m < -1e-12) | (m > 1.0 + 1e-12)  # the items left cannot average m
        with np.errstate(divide="ignore", invalid="ignore"):
            log_up = np.log1p(np.minimum(self.bet, _TRUNCATION / down) * d).sum(axis=1)
            log_down = np.log1p(-np.minimum(self.bet, _TRUNCATION / up) * d).sum(axis=1)
            wealth: Floats = 0.5 * np.exp(log_up) + 0.5 * np.exp(log_down)
        wealth = np.where(impossible.any(axis=1) | np.isnan(wealth), np.inf, wealth)
        return wealth


def _predictable_slope(y: Floats, f: Floats) -> Floats:
    """λ_t: the slope of y on f over the labels before item t, clipped to [0, 1] (0 before
    `_SLOPE_LABELS` labels), shrunk toward 0 by `calibration.stats._ppi_core.shrink_factor`
    (1 − 1/F of the labels before item t, 0 below F = 4).

    Unshrunk, a slope fitted on a handful of labels is mostly noise, and betting on y − λ·f
    with a noisy λ adds variance: per SummEval system the judge made the interval 6–13% wider
    than λ = 0.
    """
    t = np.arange(len(y), dtype=np.float64)  # labels before item t
    sy, sf = np.cumsum(y) - y, np.cumsum(f) - f
    syf, sff = np.cumsum(y * f) - y * f, np.cumsum(f * f) - f * f
    syy = np.cumsum(y * y) - y * y
    with np.errstate(divide="ignore", invalid="ignore"):
        covariance = syf / t - (sy / t) * (sf / t)
        variance = sff / t - (sf / t) ** 2
        variance_y = syy / t - (sy / t) ** 2
        slope = covariance / variance
        shrink = shrink_factor(covariance**2 / (variance * variance_y), t)
    usable = (t >= _SLOPE_LABELS) & (variance > 1e-12) & np.isfinite(slope)
    lam: Floats = np.where(usable, np.clip(slope, 0.0, 1.0) * shrink, 0.0)
    return lam
