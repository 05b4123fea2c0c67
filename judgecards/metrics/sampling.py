"""pass@k and pass^k from repeated samples per problem (HumanEval, tau-bench style).

For one problem, ``n`` samples were drawn and ``c`` of them passed. With ``k <= n``:

* pass@k, the chance that at least one of ``k`` samples drawn without replacement passes, is
  estimated without bias by ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large
  Language Models Trained on Code"). It is 1.0 when ``n - c < k`` (every draw of ``k`` contains
  a pass). We evaluate it in the product form
  ``C(n-c, k) / C(n, k) = prod_{i=n-c+1..n} (1 - k/i)``, summing ``log1p(-k/i)`` and taking
  ``-expm1`` of the sum, so no binomial coefficient is ever formed (``C(10000, 5000)``
  overflows a float) and small values keep full relative precision.
* pass^k, the chance that all ``k`` samples pass, is estimated without bias by
  ``C(c, k) / C(n, k) = prod_{i=0..k-1} (c-i)/(n-i)`` (Yao et al. 2024, tau-bench); 0 when
  ``c < k``.

A data set's score is the mean over problems (`mean_pass_at_k`, `mean_pass_hat_k`). Their
intervals are bootstrap intervals over problems: they describe how much the score would move
with a different draw of problems, not the sampling noise within each problem (which shrinks
as ``n`` grows). The conversation-level forms ``1 - (1-p)^k`` and ``p^k`` for a single success
rate ``p`` live in `judgecards.metrics.agent`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable

from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = ["mean_pass_at_k", "mean_pass_hat_k", "pass_at_k", "pass_hat_k"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem: ``1 - C(n-c, k) / C(n, k)``.

    Examples: n=10, c=2, k=5 gives 1 - C(8,5)/C(10,5) = 1 - 56/252 = 0.7778; n=20, c=5, k=10
    gives 1 - 3003/184756 = 0.9837.

    Args:
        n: samples drawn for the problem (n >= 1).
        c: samples that passed (0 <= c <= n).
        k: attempts allowed (1 <= k <= n).

    Returns:
        pass@k in [0, 1]; exactly 1.0 when ``n - c < k`` and 0.0 when ``c == 0``.

    Raises:
        ValueError: when the counts are inconsistent.
    """
    n, c, k = _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    return -math.expm1(math.fsum(math.log1p(-k / i) for i in range(n - c + 1, n + 1)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k for one problem: ``C(c, k) / C(n, k)``, the chance all k attempts pass.

    Example: n=5, c=4, k=3 gives C(4,3)/C(5,3) = 4/10 = 0.4 (while the plug-in (4/5)^3 = 0.512).

    Args:
        n: samples (trials) run for the problem (n >= 1).
        c: samples that passed (0 <= c <= n).
        k: consecutive attempts that must all pass (1 <= k <= n).

    Returns:
        pass^k in [0, 1]; 0.0 when ``c < k`` and 1.0 when ``c == n``.

    Raises:
        ValueError: when the counts are inconsistent.
    """
    n, c, k = _check_counts(n, c, k)
    if c < k:
        return 0.0
    return math.prod((c - i) / (n - i) for i in range(k))


def mean_pass_at_k(
    n: int | Iterable[int],
    c: Iterable[int],
    k: int,
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean `pass_at_k` over problems, with a bootstrap interval over problems.

    Args:
        n: samples per problem, one number for all problems or one per problem (as in
            HumanEval's ``estimate_pass_at_k``).
        c: passing samples per problem.
        k: attempts allowed; must not exceed any problem's ``n``.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of pass@k over the problems.
    """
    values = [pass_at_k(ni, ci, k) for ni, ci in _problems(n, c)]
    return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)


def mean_pass_hat_k(
    n: int | Iterable[int],
    c: Iterable[int],
    k: int,
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean `pass_hat_k` over problems, with a bootstrap interval over problems.

    Args:
        n: trials per problem, one number or one per problem.
        c: passing trials per problem.
        k: attempts that must all pass; must not exceed any problem's ``n``.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of pass^k over the problems.
    """
    values = [pass_hat_k(ni, ci, k) for ni, ci in _problems(n, c)]
    return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)


def _check_counts(n: int, c: int, k: int) -> tuple[int, int, int]:
    n, c, k = _count(n, "n"), _count(c, "c"), _count(k, "k")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= c <= n:
        raise ValueError(f"c must be between 0 and n={n}, got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")
    return n, c, k


def _count(value: int, name: str) -> int:
    # numpy integers are welcome; floats such as 5.0 and bools are not silently accepted.
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None


def _problems(n: int | Iterable[int], c: Iterable[int]) -> list[tuple[int, int]]:
    counts = list(c)
    if isinstance(n, Iterable):
        totals = list(n)
        if len(totals) != len(counts):
            raise ValueError(f"{len(totals)} sample counts but {len(counts)} pass counts")
    else:
        totals = [n] * len(counts)
    return list(zip(totals, counts))
