"""Corrected estimates when strata were labelled at different rates (stratified PPI++).

Each stratum (a model, a category, a confidence band) gets its own PPI++ estimate and λ, and the
strata are combined by their share of the population (Fisch, Maynez, Hofer, Dhingra, Globerson
and Cohen, "Stratified Prediction-Powered Inference for Hybrid Language Model Evaluation",
NeurIPS 2024). See `calibration.stats.ppi` for the one-stratum method.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibration.stats._core import warn_if_small
from calibration.stats._ppi_core import (
    Floats,
    Tuning,
    as_labels,
    check_alpha,
    checked_inputs,
    clip_share,
    fit_ppi,
    indicator,
    small_sample_interval,
)
from judgecards.metrics.stats import Estimate

__all__ = ["stratified_corrected_mean", "stratified_corrected_rate"]


def stratified_corrected_mean(  # noqa: PLR0913  public API: keyword-only options
    human: Sequence[float] | NDArray[Any],
    judge_on_labeled: Sequence[float] | NDArray[Any],
    judge_on_unlabeled: Sequence[float] | NDArray[Any],
    *,
    strata: Sequence[Hashable] | NDArray[Any],
    unlabeled_strata: Sequence[Hashable] | NDArray[Any],
    shares: Mapping[Hashable, float] | None = None,
    alpha: float = 0.05,
    tuning: Tuning = "ppi++",
    folds: int = 5,
    seed: int | None = 0,
    finite_population: bool = False,
) -> Estimate:
    """Corrected mean when strata were labelled at different rates (stratified PPI++).

    Each stratum gets its own PPI++ estimate, with its own λ, and the strata are weighted by
    their share of the population: ``θ̂ = Σ_k share_k·θ̂_k`` with variance ``Σ_k share_k²·σ_k²``
    and skew term ``Σ_k share_k³·κ₃,k``; the interval is `corrected_mean`'s small-sample one,
    with Welch–Satterthwaite degrees of freedom.
    This is unbiased when labels were drawn uniformly *within* each stratum, whatever the rate
    per stratum, and narrower than one pooled estimate when the judge's bias differs by stratum.

    Args:
        human: the human score of each labelled item.
        judge_on_labeled: the judge's score of the same items.
        judge_on_unlabeled: the judge's score of the unlabelled items.
        strata: the stratum of each labelled item (any hashable).
        unlabeled_strata: the stratum of each unlabelled item.
        shares: each stratum's share of the population (normalised to sum to 1); ``None``
            takes the shares of labelled plus unlabelled items per stratum.
        alpha: error level of the interval.
        tuning: ``"ppi++"``, ``"ppi"`` or a fixed λ in [0, 1], applied in every stratum.
        folds: cross-fitting folds for ``"ppi++"``'s λ (``1``: no cross-fitting), as in
            `corrected_mean`.
        seed: seed of the fold assignment.
        finite_population: each stratum's labelled items are a sample without replacement of
            its labelled + unlabelled ones, whose mean is wanted (as in `corrected_mean`): each
            stratum's variance shrinks by 1 − n_k/N_k, and a fully labelled stratum is exact.

    Returns:
        An `Estimate` of the population mean; ``n`` = the number of labelled items.

    Raises:
        ValueError: as `corrected_mean`; also a stratum with fewer than 2 labelled or no
            unlabelled items, a labelled stratum missing from ``shares``, or a share for a
            stratum with no items.

    Warns:
        SmallSampleWarning: fewer than 30 labelled items in all.
    """
    y, f, f_u, _, _ = checked_inputs(
        human, judge_on_labeled, judge_on_unlabeled, None, None, finite_population
    )
    check_alpha(alpha)
    warn_if_small(len(y), "stratified corrected mean", stacklevel=2)
    return _stratified(
        y,
        f,
        f_u,
        strata,
        unlabeled_strata,
        shares=shares,
        alpha=alpha,
        tuning=tuning,
        folds=folds,
        seed=seed,
        finite=finite_population,
    )


def stratified_corrected_rate(  # noqa: PLR0913  public API: keyword-only options
    human: Sequence[Hashable] | NDArray[Any],
    judge_on_labeled: Sequence[Hashable] | NDArray[Any],
    judge_on_unlabeled: Sequence[Hashable] | NDArray[Any],
    *,
    category: Hashable,
    strata: Sequence[Hashable] | NDArray[Any],
    unlabeled_strata: Sequence[Hashable] | NDArray[Any],
    shares: Mapping[Hashable, float] | None = None,
    alpha: float = 0.05,
    tuning: Tuning = "ppi++",
    folds: int = 5,
    seed: int | None = 0,
    finite_population: bool = False,
) -> Estimate:
    """Share of one category, corrected per stratum (see `stratified_corrected_mean`).

    Args:
        human: the human label of each labelled item.
        judge_on_labeled: the judge's label of the same items.
        judge_on_unlabeled: the judge's label of the unlabelled items.
        category: the label whose share is estimated.
        strata: the stratum of each labelled item.
        unlabeled_strata: the stratum of each unlabelled item.
        shares: each stratum's share of the population, or ``None`` for the observed shares.
        alpha: error level of the interval.
        tuning: ``"ppi++"``, ``"ppi"`` or a fixed λ in [0, 1].
        folds: cross-fitting folds for ``"ppi++"``'s λ (``1``: no cross-fitting), as in
            `corrected_mean`.
        seed: seed of the fold assignment.
        finite_population: strata sampled without replacement, as in
            `stratified_corrected_mean`.

    Returns:
        An `Estimate` of the share in [0, 1]; ``n`` = the number of labelled items.

    Raises:
        ValueError: as `stratified_corrected_mean`, and for a missing label.

    Warns:
        SmallSampleWarning: fewer than 30 labelled items in all.
    """
    y, f, f_u = (
        indicator(values, category, name)
        for values, name in (
            (human, "human"),
            (judge_on_labeled, "judge_on_labeled"),
            (judge_on_unlabeled, "judge_on_unlabeled"),
        )
    )
    y, f, f_u, _, _ = checked_inputs(y, f, f_u, None, None, finite_population)
    check_alpha(alpha)
    warn_if_small(len(y), "stratified corrected rate", stacklevel=2)
    return clip_share(
        _stratified(
            y,
            f,
            f_u,
            strata,
            unlabeled_strata,
            shares=shares,
            alpha=alpha,
            tuning=tuning,
            folds=folds,
            seed=seed,
            finite=finite_population,
        )
    )


def _stratified(  # noqa: PLR0913  the public functions' checked options, passed on
    y: Floats,
    f: Floats,
    f_u: Floats,
    strata: Sequence[Hashable] | NDArray[Any],
    unlabeled_strata: Sequence[Hashable] | NDArray[Any],
    *,
    shares: Mapping[Hashable, float] | None,
    alpha: float,
    tuning: Tuning,
    folds: int,
    seed: int | None,
    finite: bool,
) -> Estimate:
    s = as_labels(strata, "strata")
    s_u = as_labels(unlabeled_strata, "unlabeled_strata")
    if len(s) != len(y):
        raise ValueError(f"strata has {len(s)} entries for {len(y)} labelled items")
    if len(s_u) != len(f_u):
        raise ValueError(f"unlabeled_strata has {len(s_u)} entries for {len(f_u)} unlabelled items")
    observed = list(dict.fromkeys([*s, *s_u]))
    population = _stratum_weights(observed, [*s, *s_u], shares)
    codes = {k: i for i, k in enumerate(observed)}
    s_codes = np.fromiter((codes[k] for k in s), dtype=np.intp, count=len(s))
    s_u_codes = np.fromiter((codes[k] for k in s_u), dtype=np.intp, count=len(s_u))
    value, variance, third_cumulant, df_terms = 0.0, 0.0, 0.0, 0.0
    for k in observed:
        share = population[k]
        if share == 0.0:
            continue
        in_l = s_codes == codes[k]
        in_u = s_u_codes == codes[k]
        if in_l.sum() < 2:
            raise ValueError(
                f"stratum {k!r} has {int(in_l.sum())} labelled item(s); each stratum needs "
                "at least 2 (merge small strata or label more items)"
            )
        if not in_u.any() and not finite:
            raise ValueError(f"stratum {k!r} has no unlabelled items")
        ones_l, ones_u = np.ones(int(in_l.sum())), np.ones(int(in_u.sum()))
        fit = fit_ppi(
            y[in_l], f[in_l], f_u[in_u], ones_l, ones_u, alpha, tuning, folds, seed, finite
        )
        value += share * fit.estimate.value
        variance += (share * fit.se) ** 2
        third_cumulant += share**3 * fit.third_cumulant
        df_terms += (share * fit.se) ** 4 / (int(in_l.sum()) - 1)
    # Welch–Satterthwaite degrees of freedom for the weighted sum of the strata's estimates.
    df = variance**2 / df_terms if df_terms > 0 else float(len(y) - 1)
    return small_sample_interval(value, math.sqrt(variance), third_cumulant, df, alpha, len(y))


def _stratum_weights(
    observed: list[Hashable], every: list[Hashable], shares: Mapping[Hashable, float] | None
) -> dict[Hashable, float]:
    if shares is None:
        counts = dict.fromkeys(observed, 0.0)
        for k in every:
            counts[k] += 1.0
        population = counts
    else:
        population = {}
        for k, v in shares.items():
            share = float(v)
            if not math.isfinite(share) or share < 0:
                raise ValueError(f"shares[{k!r}] must be a finite number >= 0, got {v!r}")
            if share > 0 and k not in observed:
                raise ValueError(f"shares names stratum {k!r}, which has no items")
            population[k] = share
        missing = [k for k in observed if k not in population]
        if missing:
            raise ValueError(f"shares has no entry for strata {missing!r}")
    total = sum(population.values())
    if total <= 0:
        raise ValueError("shares must not all be zero")
    return {k: v / total for k, v in population.items()}
