"""Uncertainty for evaluation numbers: every headline metric should travel with an interval.

`bootstrap_ci` is the one bootstrap in judgecards. Calibration (kappa, agreement), pairwise
reports (win-rate) and the deterministic metrics all call it, so an interval means the same thing
everywhere: a paired, percentile-or-BCa bootstrap over items, seeded, computed by
`scipy.stats.bootstrap` (scipy comes with scikit-learn).

Two systems scored on the same items are compared with `paired_bootstrap` (any per-item score:
an interval for the difference of means) or `mcnemar` (right/wrong outcomes: an exact binomial
or chi-squared test on the discordant items). Both say so when the difference is inside the
noise.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "Estimate",
    "McNemarResult",
    "PairedComparison",
    "bootstrap_ci",
    "mcnemar",
    "paired_bootstrap",
]


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

    def to_dict(self) -> dict[str, float | int | None]:
        """A strict-JSON dict: an undefined (``nan``) value or bound becomes ``None``."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "value": clean(self.value),
            "low": clean(self.low),
            "high": clean(self.high),
            "level": self.level,
            "n": self.n,
        }

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
    value instead of raising, and with fewer than two items the bounds are ``nan``. Resamples in
    which the statistic is undefined (``nan``) are left out of a percentile interval when they
    are a minority; with more than half undefined the bounds are ``nan``.

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
        warnings.simplefilter(
            "ignore", category=getattr(scipy_stats, "DegenerateDataWarning", RuntimeWarning)
        )
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
        spread = np.asarray(result.bootstrap_distribution, dtype=float)
        finite = spread[~np.isnan(spread)]
        if finite.size and np.all(finite == finite[0]):
            low = high = float(finite[0])
        elif finite.size >= 0.5 * spread.size and method == "percentile":
            # Some resamples leave the statistic undefined (e.g. kappa when a resample holds a
            # single class). The interval is taken over the resamples where it is defined, as
            # long as they are the majority; otherwise it stays nan rather than mislead.
            tail = (1.0 - level) / 2.0 * 100.0
            low, high = (float(v) for v in np.percentile(finite, [tail, 100.0 - tail]))
    return Estimate(value, low, high, level, n)


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values))


@dataclass(frozen=True)
class PairedComparison:
    """Two systems scored on the same items: the difference of a statistic, with an interval.

    Attributes:
        a: the statistic for system A on all items.
        b: the statistic for system B on all items.
        difference: ``a - b`` with its paired bootstrap interval.
    """

    a: float
    b: float
    difference: Estimate

    @property
    def inside_noise(self) -> bool:
        """True when the interval for ``a - b`` includes 0 (or cannot be computed)."""
        low, high = self.difference.low, self.difference.high
        return math.isnan(low) or math.isnan(high) or low <= 0.0 <= high

    @property
    def note(self) -> str:
        """One sentence saying whether the difference is distinguishable from noise."""
        pct = round(self.difference.level * 100)
        if self.inside_noise:
            return f"the difference is inside the noise: the {pct}% interval includes 0"
        better = "A" if self.difference.value > 0 else "B"
        return f"{better} is higher; the {pct}% interval excludes 0"

    def __str__(self) -> str:
        d = self.difference
        return f"A - B = {d.value:+.3f} [{d.low:+.3f}, {d.high:+.3f}] (n={d.n}): {self.note}"


def paired_bootstrap(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    statistic: Callable[[np.ndarray], float] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
    method: Literal["percentile", "BCa", "basic"] = "percentile",
) -> PairedComparison:
    """Paired bootstrap for the difference between two systems scored on the same items.

    Item ``i`` of ``a`` and item ``i`` of ``b`` must be the same example. Items are resampled
    together (via `bootstrap_ci`), so per-item difficulty cancels out and the interval is
    narrower than comparing two independent intervals.

    Args:
        a: per-item scores of system A (any per-example metric: EM, F1, ROUGE, 0/1 pass).
        b: per-item scores of system B, same length and order.
        statistic: maps one system's scores to a number; default the mean.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.
        method: bootstrap interval method, as in `bootstrap_ci`.

    Returns:
        A `PairedComparison`; its ``note`` says whether the difference is inside the noise
        (the interval includes 0).
    """
    stat = statistic or _mean
    left, right = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if left.ndim != 1 or right.ndim != 1 or len(left) != len(right):
        raise ValueError(
            f"a and b must be flat and equally long, got {left.shape} and {right.shape}"
        )

    def difference(x: np.ndarray, y: np.ndarray) -> float:
        return float(stat(x)) - float(stat(y))

    estimate = bootstrap_ci(
        left,
        right,
        statistic=difference,
        level=level,
        n_resamples=n_resamples,
        seed=seed,
        method=method,
    )
    value_a = float(stat(left)) if len(left) else math.nan
    value_b = float(stat(right)) if len(right) else math.nan
    return PairedComparison(value_a, value_b, estimate)


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test for two systems judged right/wrong on the same items.

    Attributes:
        only_a: items A got right and B got wrong.
        only_b: items B got right and A got wrong.
        both_right: items both got right.
        both_wrong: items both got wrong.
        statistic: for ``method="exact"`` the smaller discordant count; for ``"chi2"`` the
            continuity-corrected chi-squared value
            ``(|only_a - only_b| - 1)^2 / (only_a + only_b)``.
        p_value: two-sided p-value (1.0 when there are no discordant items).
        method: ``"exact"`` (binomial test of ``only_a`` out of the discordant items at 1/2) or
            ``"chi2"`` (chi-squared with one degree of freedom).
        alpha: significance level used by `significant` and `note`.
    """

    only_a: int
    only_b: int
    both_right: int
    both_wrong: int
    statistic: float
    p_value: float
    method: Literal["exact", "chi2"]
    alpha: float

    @property
    def n(self) -> int:
        """Number of items."""
        return self.only_a + self.only_b + self.both_right + self.both_wrong

    @property
    def significant(self) -> bool:
        """True when ``p_value < alpha``."""
        return self.p_value < self.alpha

    @property
    def note(self) -> str:
        """One sentence saying whether the difference is distinguishable from noise."""
        if not self.significant:
            return f"the difference is inside the noise (p = {self.p_value:.3g} >= {self.alpha})"
        better = "A" if self.only_a > self.only_b else "B"
        return f"{better} is better (p = {self.p_value:.3g} < {self.alpha})"

    def __str__(self) -> str:
        return (
            f"McNemar ({self.method}): A only {self.only_a}, B only {self.only_b}, "
            f"n={self.n}: {self.note}"
        )


def mcnemar(
    a_correct: Sequence[bool | int] | np.ndarray,
    b_correct: Sequence[bool | int] | np.ndarray,
    *,
    method: Literal["auto", "exact", "chi2"] = "auto",
    alpha: float = 0.05,
) -> McNemarResult:
    """McNemar's test: do two systems differ in accuracy on the same items?

    Only the discordant items (one system right, the other wrong) carry information. Under the
    null hypothesis each discordant item is equally likely to favour A or B.

    Args:
        a_correct: per-item correctness of system A (bools or 0/1).
        b_correct: per-item correctness of system B, same length and order.
        method: ``"exact"`` binomial test, ``"chi2"`` with continuity correction, or ``"auto"``:
            exact when there are fewer than 25 discordant items, chi-squared otherwise.
        alpha: significance level for the result's ``significant`` flag and ``note``.

    Returns:
        A `McNemarResult`.
    """
    from scipy import stats as scipy_stats

    a, b = _as_bools(a_correct, "a_correct"), _as_bools(b_correct, "b_correct")
    if len(a) != len(b):
        raise ValueError(f"a_correct and b_correct must be equally long, got {len(a)} and {len(b)}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    both_right, both_wrong = int(np.sum(a & b)), int(np.sum(~a & ~b))
    discordant = only_a + only_b
    chosen: Literal["exact", "chi2"]
    if method == "auto":
        chosen = "exact" if discordant < 25 else "chi2"
    elif method in ("exact", "chi2"):
        chosen = method
    else:
        raise ValueError(f"method must be 'auto', 'exact' or 'chi2', got {method!r}")
    if discordant == 0:
        statistic, p_value = 0.0, 1.0
    elif chosen == "exact":
        statistic = float(min(only_a, only_b))
        p_value = float(scipy_stats.binomtest(only_a, discordant, 0.5).pvalue)
    else:
        statistic = (abs(only_a - only_b) - 1) ** 2 / discordant
        p_value = float(scipy_stats.chi2.sf(statistic, 1))
    return McNemarResult(
        only_a, only_b, both_right, both_wrong, statistic, min(p_value, 1.0), chosen, alpha
    )


def _as_bools(values: Sequence[bool | int] | np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence")
    if array.dtype != bool:
        if array.size and not np.isin(array, (0, 1)).all():
            raise ValueError(f"{name} must hold booleans or 0/1")
        array = array.astype(bool)
    return array
