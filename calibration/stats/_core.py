"""Machinery shared by the calibration measures: label coding, kappa from codes, warnings.

Private to the package; the public names are re-exported from `calibration`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from judgecards.metrics.stats import Estimate, bootstrap_ci

MIN_ITEMS = 30
"""Below this many items every measure warns with `SmallSampleWarning`."""

Weights = Literal["linear", "quadratic"]
Labels = Sequence[Any] | NDArray[Any]
Codes = NDArray[np.intp]


class SmallSampleWarning(UserWarning):
    """A measure was computed over fewer than 30 items (``calibration.stats._core.MIN_ITEMS``).

    The value is still returned, but its confidence interval is wide and, with so few items, the
    percentile bootstrap covers the true value less often than its nominal level.
    """


SmallSampleWarning.__module__ = "calibration"


def warn_if_small(n: int, what: str, *, stacklevel: int) -> None:
    """Warn with `SmallSampleWarning` when ``n`` is below `MIN_ITEMS`."""
    if n < MIN_ITEMS:
        warnings.warn(
            SmallSampleWarning(
                f"{what} computed over {n} items (fewer than {MIN_ITEMS}): "
                "the interval is wide and may undercover"
            ),
            stacklevel=stacklevel + 1,
        )


def agreement_estimate(
    judge: Codes,
    human: Codes,
    *,
    level: float,
    n_resamples: int,
    seed: int | None,
    sample_weight: NDArray[np.float64] | None = None,
) -> Estimate:
    """Bootstrap `Estimate` of the agreement rate between two code arrays (no warning); with
    ``sample_weight`` a weighted rate, the weights resampled with their items."""
    if sample_weight is None:
        return bootstrap_ci(
            judge,
            human,
            statistic=_agreement_codes,
            level=level,
            n_resamples=n_resamples,
            seed=seed,
        )
    return bootstrap_ci(
        judge,
        human,
        sample_weight,
        statistic=_weighted_agreement_codes,
        level=level,
        n_resamples=n_resamples,
        seed=seed,
    )


def kappa_estimate(
    judge: Codes,
    human: Codes,
    n_labels: int,
    *,
    weights: Weights | None,
    level: float,
    n_resamples: int,
    seed: int | None,
    sample_weight: NDArray[np.float64] | None = None,
) -> Estimate:
    """Bootstrap `Estimate` of (weighted) Cohen's kappa between two code arrays (no warning);
    ``sample_weight`` weights the items (inverse inclusion probabilities)."""
    w = weight_matrix(n_labels, weights)

    def statistic(a: Codes, b: Codes, item_weight: NDArray[np.float64] | None = None) -> float:
        return kappa_from_codes(a, b, w, item_weight)

    samples = (judge, human) if sample_weight is None else (judge, human, sample_weight)
    return bootstrap_ci(
        *samples, statistic=statistic, level=level, n_resamples=n_resamples, seed=seed
    )


def weight_matrix(n_labels: int, weights: Weights | None) -> NDArray[np.float64]:
    """Disagreement weights between label positions: 0/1, ``|i-j|`` or ``(i-j)**2``."""
    position = np.arange(n_labels)
    distance: NDArray[np.float64] = np.abs(position[:, None] - position[None, :]).astype(np.float64)
    if weights is None:
        return (distance > 0).astype(np.float64)
    if weights == "linear":
        return distance
    if weights == "quadratic":
        return np.square(distance)
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def kappa_from_codes(
    a: Codes,
    b: Codes,
    w: NDArray[np.float64],
    sample_weight: NDArray[np.float64] | None = None,
) -> float:
    """Weighted Cohen's kappa of two label-code arrays; ``nan`` when undefined.

    ``kappa = 1 - sum(w * observed) / sum(w * expected)`` with ``expected`` the outer product of
    the two marginals divided by n; with 0/1 weights this is ``(p_o - p_e) / (1 - p_e)``. With
    ``sample_weight`` each item counts that much in ``observed`` (and n is the weights' sum), as
    ``sklearn.metrics.cohen_kappa_score(sample_weight=...)``.
    """
    k = w.shape[0]
    if a.size == 0:
        return math.nan
    observed = np.bincount(a * k + b, weights=sample_weight, minlength=k * k).reshape(k, k)
    n = float(observed.sum())
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    denominator = float((w * expected).sum())
    if denominator == 0.0:
        return math.nan
    return 1.0 - float((w * observed).sum()) / denominator


def item_weights(sample_weight: Iterable[float] | None, n: int) -> NDArray[np.float64] | None:
    """Checked per-item weights (finite, > 0, one per item), or ``None`` for unweighted."""
    if sample_weight is None:
        return None
    weight = np.asarray(list(sample_weight), dtype=np.float64)
    if weight.shape != (n,):
        raise ValueError(f"sample_weight must have one weight per item ({n}), got {weight.size}")
    if not (np.isfinite(weight) & (weight > 0)).all():
        raise ValueError("sample_weight must be finite and > 0 (an inverse inclusion probability)")
    return weight


def _weighted_agreement_codes(a: Codes, b: Codes, weight: NDArray[np.float64]) -> float:
    total = float(weight.sum())
    return float(weight[a == b].sum()) / total if total > 0 else math.nan


def _agreement_codes(a: Codes, b: Codes) -> float:
    return float(np.mean(a == b)) if a.size else math.nan


def as_list(values: Labels | Iterable[Any], what: str) -> list[Any]:
    """A plain list of Python values (numpy scalars converted), refusing a bare string."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of labels, not a string")
    if isinstance(values, np.ndarray):
        return list(values.tolist())
    return list(values)


def is_missing(value: Any) -> bool:
    """``None`` or a float NaN."""
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


def label_order(
    observed: Iterable[Hashable], labels: Iterable[Hashable] | None
) -> tuple[Hashable, ...]:
    """The label scale: ``labels`` as given (checked), else the sorted observed labels."""
    seen = set(observed)
    if labels is not None:
        order = tuple(as_list(labels, "labels"))
        if len(set(order)) != len(order):
            raise ValueError(f"labels has duplicates: {order!r}")
        unknown = seen - set(order)
        if unknown:
            raise ValueError(
                f"observed labels not in `labels`: {sorted(map(repr, unknown))}; labels={order!r}"
            )
        return order
    try:
        return tuple(sorted(seen))  # type: ignore[type-var]
    except TypeError as exc:
        raise ValueError(
            "labels of mixed types cannot be put in order; pass labels=[...] explicitly"
        ) from exc


def to_codes(values: list[Any], order: Sequence[Hashable]) -> Codes:
    """Positions of ``values`` in ``order``; missing values become -1."""
    index = {label: i for i, label in enumerate(order)}
    return np.fromiter(
        (-1 if is_missing(v) else index[v] for v in values), dtype=np.intp, count=len(values)
    )


def encode_pair(
    judge: Labels, human: Labels, *, labels: Iterable[Hashable] | None = None
) -> tuple[tuple[Hashable, ...], Codes, Codes]:
    """Check two aligned label sequences and turn them into codes on one label scale."""
    judge_list = as_list(judge, "judge")
    human_list = as_list(human, "human")
    if len(judge_list) != len(human_list):
        raise ValueError(
            f"judge and human labels differ in length: {len(judge_list)} != {len(human_list)}"
        )
    for name, values in (("judge", judge_list), ("human", human_list)):
        for i, v in enumerate(values):
            if is_missing(v):
                raise ValueError(
                    f"{name} label at position {i} is missing; drop the item or map it to a label"
                )
    order = label_order(judge_list + human_list, labels)
    return order, to_codes(judge_list, order), to_codes(human_list, order)


def format_estimate(estimate: Estimate) -> str:
    """``0.742 [0.658, 0.817]`` (``nan`` shown as such)."""
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"
