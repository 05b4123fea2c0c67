"""Uncertainty for evaluation numbers: every headline metric should travel with an interval.

`bootstrap_ci` is the one bootstrap in judgecards. Calibration (kappa, agreement), pairwise
reports (win-rate) and the deterministic metrics all call it, so an interval means the same thing
everywhere: a paired, percentile-or-BCa bootstrap over items, seeded, computed by
`scipy.stats.bootstrap` (scipy comes with scikit-learn).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["Estimate", "bootstrap_ci"]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a two-sided confidence interval.

    Attributes:
        value: the statistic on the full sample.
        low: lower bound of the interval (``nan`` when it cannot be computed, e.g. n < 2).
        high: upper bound of the interval (``nan`` likewise).
        level: confidence level of the interval, e.g. 0.95.
        n: number of items the statistic was computed over.
    """

    value: float
    low: float
    high: float
    level: float
    n: int

    def __float__(self) -> float:
        return self.value

    def as_dict(self) -> dict[str, float | int]:
        return {"value": self.value, "low": self.low, "high": self.high, "level": self.level, "n": self.n}

    def __str__(self) -> str:
        pct = round(self.level * 100)
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}] ({pct}% CI, n={self.n})"


def bootstrap_ci(
    *samples: Sequence[Any] | np.ndarray,
    statistic: Callable[..., float] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
    method: Literal["percentile", "BCa", "basic"] = "percentile",
) -> Estimate:
    """Bootstrap confidence interval for a statistic of one or more paired samples.

    The samples are resampled *jointly by item* (row ``i`` of every sample stays together), which
    is what agreement, kappa and paired differences need. ``statistic`` receives the resampled
    arrays positionally and returns a float; it defaults to the mean of a single sample.

    The percentile method is the default because it is well defined for bounded, discrete
    statistics such as kappa and accuracy on small samples, where BCa's jackknife can be undefined.
    When every resample gives the same value (e.g. all items agree) the interval collapses to that
    value instead of raising, and with fewer than two items the bounds are ``nan``.

    Args:
        *samples: one or more equal-length sequences (numbers or labels).
        statistic: function of the resampled samples; default ``np.mean`` of one sample.
        level: confidence level in (0, 1).
        n_resamples: number of bootstrap resamples.
        seed: seed for reproducibility (``None`` for fresh randomness).
        method: ``"percentile"``, ``"basic"`` or ``"BCa"`` as in ``scipy.stats.bootstrap``.

    Returns:
        An `Estimate` with the statistic on the full sample and the interval.
    """
    from scipy import stats as scipy_stats

    if not samples:
        raise ValueError("bootstrap_ci needs at least one sample")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    arrays = [np.asarray(s) for s in samples]
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError(f"samples must have equal length, got {[len(a) for a in arrays]}")
    if statistic is None:
        if len(arrays) != 1:
            raise ValueError("pass a statistic when bootstrapping more than one sample")
        statistic = _mean
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, level, 0)
    value = float(statistic(*arrays))
    if n < 2:
        return Estimate(value, math.nan, math.nan, level, n)

    # Resample indices once and index every sample with them: this keeps rows paired and lets
    # the statistic take labels of any dtype (scipy only resamples numeric arrays).
    index = np.arange(n)

    def on_index(idx: np.ndarray) -> float:
        idx = idx.astype(np.intp, copy=False)
        return float(statistic(*(a[idx] for a in arrays)))

    with warnings.catch_warnings():
        # A degenerate bootstrap distribution (all resamples equal) is a normal outcome for
        # perfectly agreeing labels; we handle it below rather than let scipy warn.
        warnings.simplefilter("ignore", category=RuntimeWarning)
        warnings.simplefilter("ignore", category=getattr(scipy_stats, "DegenerateDataWarning", RuntimeWarning))
        result = scipy_stats.bootstrap(
            (index,),
            on_index,
            n_resamples=n_resamples,
            vectorized=False,
            confidence_level=level,
            method=method,
            rng=np.random.default_rng(seed),
        )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):
        spread = result.bootstrap_distribution
        if np.all(spread == spread.flat[0]):
            low = high = float(spread.flat[0])
    return Estimate(value, low, high, level, n)


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values))
