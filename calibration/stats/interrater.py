"""Agreement among human raters: the ceiling a judge's agreement with humans is read against.

* **Cohen's kappa** for every pair of raters, over the items both of them labelled.
* **Fleiss' kappa** (Fleiss 1971) for three or more raters, over the items *every* rater labelled:
  ``(P - P_e) / (1 - P_e)`` with ``P`` the mean share of agreeing rater pairs per item and ``P_e``
  the sum of squared overall label shares.
* **Krippendorff's alpha** (Krippendorff 2011, *Computing Krippendorff's Alpha-Reliability*):
  ``1 - D_o / D_e`` from the coincidence matrix of pairable values, with a nominal, ordinal or
  interval distance. It uses every item with at least two labels, so raters may skip items.

Written here rather than imported: the `krippendorff` package on PyPI is GPL-3.0 (this project
is Apache-2.0) and needs Python >= 3.11; statsmodels has Fleiss' kappa but is a heavy dependency
for twenty lines. Both are checked against hand-worked published examples in the tests.

Labels by rater are given either as a mapping ``{rater_name: labels}`` or as a sequence of
per-rater sequences (rows are raters, columns items; raters are then named ``rater1``...). Items
are aligned by position; ``None`` or NaN marks a label a rater did not give. Intervals are
percentile bootstraps over items from `judgecards.metrics.stats.bootstrap_ci`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from calibration.stats._core import (
    Labels,
    Weights,
    agreement_estimate,
    as_list,
    format_estimate,
    is_missing,
    kappa_estimate,
    label_order,
    to_codes,
    warn_if_small,
)
from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = [
    "InterAnnotatorReport",
    "Metric",
    "RaterPair",
    "fleiss_kappa",
    "inter_annotator",
    "krippendorff_alpha",
]

Metric = Literal["nominal", "ordinal", "interval"]
RaterLabels = Mapping[str, Labels] | Sequence[Labels] | NDArray[Any]
Matrix = NDArray[np.intp]
Floats = NDArray[np.float64]
DistanceFn = Callable[[Floats], Floats]  # label marginals -> label x label distance matrix


@dataclass(frozen=True)
class RaterPair:
    """Two raters compared over the items both labelled.

    Attributes:
        raters: the two rater names.
        agreement: share of those items given the same label.
        kappa: Cohen's kappa (weighted if `inter_annotator` was asked for weights).
    """

    raters: tuple[str, str]
    agreement: Estimate
    kappa: Estimate


@dataclass(frozen=True)
class InterAnnotatorReport:
    """Inter-rater agreement, pairwise and overall.

    Attributes:
        raters: rater names, in input order.
        labels: the label scale used.
        n_items: items with labels from at least two raters.
        metric: Krippendorff distance used.
        pairs: one `RaterPair` per pair of raters.
        fleiss_kappa: Fleiss' kappa over the items every rater labelled; ``None`` with only two
            raters (read the single pair's Cohen's kappa instead).
        krippendorff_alpha: Krippendorff's alpha over all pairable items.
    """

    raters: tuple[str, ...]
    labels: tuple[Hashable, ...]
    n_items: int
    metric: Metric
    pairs: tuple[RaterPair, ...]
    fleiss_kappa: Estimate | None
    krippendorff_alpha: Estimate

    @property
    def mean_pairwise_kappa(self) -> float:
        """Mean of the pairwise Cohen's kappas (``nan`` if any is undefined)."""
        return float(np.mean([p.kappa.value for p in self.pairs]))

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-ready apart from ``nan`` and non-string labels)."""
        return {
            "raters": list(self.raters),
            "labels": list(self.labels),
            "n_items": self.n_items,
            "metric": self.metric,
            "pairs": [
                {
                    "raters": list(p.raters),
                    "agreement": p.agreement.to_dict(),
                    "kappa": p.kappa.to_dict(),
                }
                for p in self.pairs
            ],
            "mean_pairwise_kappa": self.mean_pairwise_kappa,
            "fleiss_kappa": None if self.fleiss_kappa is None else self.fleiss_kappa.to_dict(),
            "krippendorff_alpha": self.krippendorff_alpha.to_dict(),
        }

    def as_text(self) -> str:
        """A readable table: one row per rater pair, then the overall measures."""
        pct = round(self.krippendorff_alpha.level * 100)
        names = [" vs ".join(p.raters) for p in self.pairs]
        width = max([len(n) for n in names] + [len(f"Krippendorff's alpha ({self.metric})")])
        title = f"Inter-annotator agreement: {len(self.raters)} raters, {self.n_items} items"
        lines = [
            f"{title} ({pct}% CI)",
            f"  {'':<{width}}  {'kappa':<22}  {'agreement':<22}  n",
        ]
        for name, p in zip(names, self.pairs, strict=True):
            lines.append(
                f"  {name:<{width}}  {format_estimate(p.kappa):<22}  "
                f"{format_estimate(p.agreement):<22}  {p.kappa.n}"
            )
        if self.fleiss_kappa is not None:
            lines.append(
                f"  {'Fleiss kappa':<{width}}  {format_estimate(self.fleiss_kappa):<22}  "
                f"{'':<22}  {self.fleiss_kappa.n}"
            )
        alpha_name = f"Krippendorff's alpha ({self.metric})"
        lines.append(
            f"  {alpha_name:<{width}}  {format_estimate(self.krippendorff_alpha):<22}  "
            f"{'':<22}  {self.krippendorff_alpha.n}"
        )
        return "\n".join(lines)


def inter_annotator(
    labels_by_rater: RaterLabels,
    *,
    metric: Metric = "nominal",
    labels: Iterable[Hashable] | None = None,
    weights: Weights | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> InterAnnotatorReport:
    """Agreement among two or more human raters who labelled the same items.

    Args:
        labels_by_rater: ``{rater: labels}`` or a sequence of per-rater label sequences, aligned
            by item; ``None``/NaN where a rater gave no label.
        metric: Krippendorff distance: ``"nominal"`` (categories), ``"ordinal"`` (ranked scale)
            or ``"interval"`` (numeric labels, squared difference).
        labels: the label scale in order (e.g. ``range(1, 6)``); defaults to the sorted observed
            labels.
        weights: weights for the pairwise Cohen's kappas (``None``, ``"linear"``,
            ``"quadratic"``).
        level: confidence level of the bootstrap intervals.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `InterAnnotatorReport`.

    Raises:
        ValueError: fewer than two raters, label lists of unequal length, an unknown metric, or
            non-numeric labels with ``metric="interval"``.

    Warns:
        SmallSampleWarning: fewer than 30 items have two or more labels.
    """
    names, order, codes = _rater_codes(labels_by_rater, labels)
    distance = _distance_fn(metric, order)
    labelled = (codes >= 0).sum(axis=1)
    n_items = int((labelled >= 2).sum())
    warn_if_small(n_items, "inter-annotator agreement", stacklevel=2)
    pairs = []
    for a, b in itertools.combinations(range(len(names)), 2):
        both = (codes[:, a] >= 0) & (codes[:, b] >= 0)
        x, y = codes[both, a], codes[both, b]
        pairs.append(
            RaterPair(
                (names[a], names[b]),
                agreement_estimate(x, y, level=level, n_resamples=n_resamples, seed=seed),
                kappa_estimate(
                    x,
                    y,
                    len(order),
                    weights=weights,
                    level=level,
                    n_resamples=n_resamples,
                    seed=seed,
                ),
            )
        )
    fleiss = (
        _fleiss_estimate(codes, len(order), level, n_resamples, seed) if len(names) >= 3 else None
    )
    alpha = _alpha_estimate(
        codes, len(order), distance, level=level, n_resamples=n_resamples, seed=seed
    )
    return InterAnnotatorReport(names, order, n_items, metric, tuple(pairs), fleiss, alpha)


def fleiss_kappa(
    labels_by_rater: RaterLabels,
    *,
    labels: Iterable[Hashable] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Fleiss' kappa over the items that every rater labelled.

    Raters need not be the same people from item to item, but each item must have the same
    number of labels, so items missing any label are left out (``n`` says how many were used;
    use `krippendorff_alpha` to keep them). With two raters this is Scott's pi. The value is
    ``nan`` when every label given is the same (chance agreement is then 1).

    Args:
        labels_by_rater: ``{rater: labels}`` or a sequence of per-rater label sequences.
        labels: the label scale (only needed to fix the order in reports).
        level: confidence level of the bootstrap interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` in [-1, 1] (or ``nan``) with a bootstrap interval over items.

    Warns:
        SmallSampleWarning: fewer than 30 complete items.
    """
    _, order, codes = _rater_codes(labels_by_rater, labels)
    warn_if_small(int((codes >= 0).all(axis=1).sum()), "Fleiss' kappa", stacklevel=2)
    return _fleiss_estimate(codes, len(order), level, n_resamples, seed)


def krippendorff_alpha(
    labels_by_rater: RaterLabels,
    *,
    metric: Metric = "nominal",
    labels: Iterable[Hashable] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Krippendorff's alpha with a nominal, ordinal or interval distance; missing labels allowed.

    ``alpha = 1 - (n - 1) * sum(o_ck * d_ck) / sum(n_c * n_k * d_ck)``, where ``o`` is the
    coincidence matrix of pairable values (each item with ``m >= 2`` labels adds its
    ``m * (m - 1)`` ordered label pairs with weight ``1 / (m - 1)``), ``n_c`` its marginals and
    ``n`` the number of pairable values. Distances: nominal ``d = [c != k]``; ordinal
    ``d = (sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2`` over the ``labels`` order; interval
    ``d = (c - k) ** 2`` on the numeric labels. 1 is perfect reliability, 0 chance level. The value
    is ``nan`` when no item has two labels or all pairable values are equal.

    The interval resamples items (not Krippendorff's own bootstrap of pairable values), so
    ``n`` is the number of items with at least two labels.

    Args:
        labels_by_rater: ``{rater: labels}`` or a sequence of per-rater label sequences;
            ``None``/NaN for a missing label.
        metric: ``"nominal"``, ``"ordinal"`` or ``"interval"``.
        labels: the label scale in order; defaults to the sorted observed labels.
        level: confidence level of the bootstrap interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` (at most 1) with a bootstrap interval over items.

    Warns:
        SmallSampleWarning: fewer than 30 items with two or more labels.
    """
    _, order, codes = _rater_codes(labels_by_rater, labels)
    distance = _distance_fn(metric, order)
    warn_if_small(int(((codes >= 0).sum(axis=1) >= 2).sum()), "Krippendorff's alpha", stacklevel=2)
    return _alpha_estimate(
        codes, len(order), distance, level=level, n_resamples=n_resamples, seed=seed
    )


# --- implementation -------------------------------------------------------------------------------


def _rater_codes(
    labels_by_rater: RaterLabels, labels: Iterable[Hashable] | None
) -> tuple[tuple[str, ...], tuple[Hashable, ...], Matrix]:
    """Rater names, the label scale and an items x raters code matrix (-1 = missing)."""
    if isinstance(labels_by_rater, Mapping):
        names = tuple(str(name) for name in labels_by_rater)
        columns = [as_list(v, f"labels of rater {n!r}") for n, v in labels_by_rater.items()]
    else:
        columns = [as_list(v, "labels of a rater") for v in as_list(labels_by_rater, "raters")]
        names = tuple(f"rater{i + 1}" for i in range(len(columns)))
    if len(columns) < 2:
        raise ValueError(f"inter-annotator agreement needs at least two raters, got {len(columns)}")
    lengths = {len(c) for c in columns}
    if len(lengths) != 1:
        raise ValueError(f"every rater must have one entry per item; lengths {sorted(lengths)}")
    observed = [v for column in columns for v in column if not is_missing(v)]
    order = label_order(observed, labels)
    codes = np.stack([to_codes(column, order) for column in columns], axis=1)
    return names, order, codes


def _value_counts(codes: Matrix, n_labels: int) -> NDArray[np.int64]:
    """items x labels matrix: how many raters gave each label to each item."""
    rows, cols = np.nonzero(codes >= 0)
    flat = rows * n_labels + codes[rows, cols]
    counts = np.bincount(flat, minlength=codes.shape[0] * n_labels)
    return counts.reshape(codes.shape[0], n_labels).astype(np.int64)


def _fleiss_from_codes(codes: Matrix, n_labels: int) -> float:
    n_items, n_raters = codes.shape
    if n_items == 0:
        return math.nan
    counts = _value_counts(codes, n_labels)
    per_item = ((counts**2).sum(axis=1) - n_raters) / (n_raters * (n_raters - 1))
    observed = float(per_item.mean())
    shares = counts.sum(axis=0) / (n_items * n_raters)
    expected = float((shares**2).sum())
    if expected >= 1.0:
        return math.nan
    return (observed - expected) / (1.0 - expected)


def _fleiss_estimate(
    codes: Matrix, n_labels: int, level: float, n_resamples: int, seed: int | None
) -> Estimate:
    complete = codes[(codes >= 0).all(axis=1)]

    def statistic(sample: Matrix) -> float:
        return _fleiss_from_codes(sample, n_labels)

    return bootstrap_ci(
        complete, statistic=statistic, level=level, n_resamples=n_resamples, seed=seed
    )


def _distance_fn(metric: str, order: Sequence[Hashable]) -> DistanceFn:
    k = len(order)
    if metric == "nominal":
        nominal = 1.0 - np.eye(k)
        return lambda marginals: nominal
    if metric == "ordinal":
        return _ordinal_distance
    if metric == "interval":
        if not all(_is_number(v) for v in order):
            raise ValueError(f"metric='interval' needs numeric labels, got {tuple(order)!r}")
        values = np.asarray(order, dtype=np.float64)
        interval = (values[:, None] - values[None, :]) ** 2
        return lambda marginals: interval
    raise ValueError(f"metric must be 'nominal', 'ordinal' or 'interval', got {metric!r}")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def _ordinal_distance(marginals: Floats) -> Floats:
    # d(c, k) = (n_c + ... + n_k - (n_c + n_k) / 2) ** 2 for c <= k, symmetric.
    cumulative = np.cumsum(marginals)
    position = np.arange(marginals.size)
    lo = np.minimum(position[:, None], position[None, :])
    hi = np.maximum(position[:, None], position[None, :])
    between = cumulative[hi] - cumulative[lo] + marginals[lo]
    result: Floats = (between - (marginals[:, None] + marginals[None, :]) / 2.0) ** 2
    return result


def _alpha_from_codes(codes: Matrix, n_labels: int, distance: DistanceFn) -> float:
    counts = _value_counts(codes, n_labels).astype(np.float64)
    per_item = counts.sum(axis=1)
    pairable = per_item >= 2
    counts, per_item = counts[pairable], per_item[pairable]
    if counts.shape[0] == 0:
        return math.nan
    weighted = counts / (per_item - 1.0)[:, None]
    coincidence = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    marginals = coincidence.sum(axis=1)
    n = float(marginals.sum())
    d = distance(marginals)
    expected = float((np.outer(marginals, marginals) * d).sum())
    if expected == 0.0:
        return math.nan
    return 1.0 - (n - 1.0) * float((coincidence * d).sum()) / expected


def _alpha_estimate(
    codes: Matrix,
    n_labels: int,
    distance: DistanceFn,
    *,
    level: float,
    n_resamples: int,
    seed: int | None,
) -> Estimate:
    pairable = codes[(codes >= 0).sum(axis=1) >= 2]

    def statistic(sample: Matrix) -> float:
        return _alpha_from_codes(sample, n_labels, distance)

    return bootstrap_ci(
        pairable, statistic=statistic, level=level, n_resamples=n_resamples, seed=seed
    )
