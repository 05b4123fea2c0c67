"""Judge numbers corrected with a few human labels: prediction-powered inference (PPI, PPI++).

A judge's mean score or verdict rate carries the judge's bias; the human-only mean from a small
labelled sample is unbiased but wide. Prediction-powered inference (Angelopoulos, Bates, Fannjiang,
Jordan and Zrnic, *Science* 2023) keeps the best of both: it averages the judge over every item and
removes the judge's bias measured on the items people labelled,

    θ̂ = mean(λ·f(unlabelled)) + mean(y − λ·f(labelled)),

an unbiased estimate whatever the judge's errors, with a normal interval whose variance is
``λ²·Var(f)/N + Var(y − λ·f)/n``. With λ = 1 this is PPI. PPI++ (Angelopoulos, Duchi and Zrnic,
2024, "power tuning") picks the λ that minimises that variance,
``λ = Cov(y, f) / ((1 + n/N)·Var(f))``, clipped to [0, 1]: a useless judge gets λ ≈ 0 and the
interval falls back to the human-only one. Our formulas follow the papers; with ``folds=1`` the
estimate and the papers' normal interval agree with the authors' package ``ppi-python``
(``ppi_mean_pointestimate``, ``ppi_mean_ci``) to 1e-6, weights included
(tests/calibration/test_ppi.py).

Two departures, both for few labels. First, λ is *cross-fitted*. Fitting λ on the same labels whose bias it
then corrects makes the interval optimistic with few labels: on SummEval consistency (skewed 1–5
scores) 95% intervals from 50 labels covered the all-human mean 89% of the time. With λ for each
fold of labels fitted on the other folds (``folds=5``) they cover about as often as the
human-only normal interval (91–92%), and are 18% narrower. Above a few hundred labels the two
agree. Second, the interval we report is not the papers' normal one but a small-sample one
(`calibration.stats._ppi_core.small_sample_interval`): unbiased (n − 1) variances, the t-quantile with
n − 1 degrees of freedom, and Hall's (1992) transformation removing the skew of the studentised
estimate. On a skewed score (SummEval consistency and fluency: most summaries a 5) a sample of
50 labels that missed the low tail has a high mean and a small variance, so the symmetric
interval missed from above: 91% coverage, 92% with the t-quantile alone; with Hall's step the
interval reaches further toward the long tail and covers ≥ 93%. With no skew it is the t
interval, which the normal one approaches as labels grow.

Where labelled items were not drawn uniformly, two variants keep the estimate unbiased:

* ``weights`` — each labelled item carries its inverse inclusion probability (an audit that
  oversampled the items the judge was least sure of); weights are rescaled to mean 1 per set, as
  ``ppi-python`` does;
* strata — `calibration.stats.ppi_stratified`, for groups labelled at different rates.

Labels are usually drawn from the judged items themselves, and the number wanted is the one
over those items: a *finite population* (``finite_population=True``; `calibration.estimate`
uses it for uniform audit samples). The judge's mean over all N items is then known exactly,
the rectifier's variance shrinks by 1 − n/N, λ is the regression slope, and labelling every
item gives the human mean exactly — the regression estimator of survey sampling (Cochran,
*Sampling Techniques*, 1977, §7).

The t-based intervals are still approximate and warn with `SmallSampleWarning` below 30
labels. Measured over 500 random labelled subsets each (tests/calibration/test_ppi.py; README
has the numbers): MT-Bench win rates of six models and SummEval per-dimension means, n =
50/100/200 labels, covered ≥ 93% and were narrower than the textbook human-only t interval.
Per SummEval system (100 summaries, 10–50 labelled) they do not hold: a sample of an almost
constant score can show no spread at all. When the scale is known (``bounds``, with a finite
population) the betting interval of `calibration.stats._ppi_bounded` is valid for any number of
labels, but wider. ``interval="auto"`` (the default) therefore picks per estimate: the t
interval where the labels allow it (≥ 50 of them and Cochran's rule n > 25·g₁² on their
skewness), the bounded one where they do not; `CorrectedEstimate.interval_reason` says which
and why. ``interval="normal"`` gives the papers' interval (bench/ppi_interval_choice.py;
tests/calibration/test_ppi_interval.py).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibration.stats._core import warn_if_small
from calibration.stats._ppi_bounded import bounded_estimate, check_design
from calibration.stats._ppi_core import (
    SLOPE_MINORITY,
    Fit,
    Floats,
    Interval,
    IntervalChoice,
    Tuning,
    check_alpha,
    checked_inputs,
    choose_interval,
    clip_share,
    fit_ppi,
    indicator,
    normal_estimate,
    recheck_interval,
    slope_measurable,
)
from judgecards.metrics.stats import Estimate

__all__ = [
    "CorrectedEstimate",
    "corrected_estimate",
    "corrected_mean",
    "corrected_rate",
]


@dataclass(frozen=True)
class CorrectedEstimate:
    """A corrected estimate beside the two it improves on, for side-by-side reporting.

    Attributes:
        corrected: the prediction-powered estimate and its interval (``n`` = labelled items).
        human_only: the mean of the human labels alone, with the same small-sample interval
            (``n`` = labelled items); unbiased but wide.
        judge_only: the judge's mean over every judged item (labelled and unlabelled), with a
            normal interval that ignores the judge's bias (``n`` = all judged items).
        tuning: the λ used (1 for plain PPI, 0 when the judge carries no information).
        n_labeled: items with a human label.
        n_unlabeled: items with only the judge's output.
        effective_labels: how many human labels the human-only interval would need to be as
            narrow as the corrected one (``n_labeled`` × variance ratio; with the bounded
            interval, × squared width ratio); ``nan`` when undefined.
        interval: the interval used for the corrected and human-only estimates: ``"t"``
            (PPI++ small-sample t), ``"normal"`` (the papers') or ``"bounded"`` (betting).
        interval_reason: why that interval, in words (``interval="auto"`` decides per
            estimate from its labels).
    """

    corrected: Estimate
    human_only: Estimate
    judge_only: Estimate
    tuning: float
    n_labeled: int
    n_unlabeled: int
    effective_labels: float
    interval: str = "t"
    interval_reason: str = ""

    @property
    def labels_gained(self) -> float:
        """Human labels the judge is worth here: ``effective_labels - n_labeled``."""
        return self.effective_labels - self.n_labeled

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict (``nan`` becomes ``None``)."""
        return {
            "corrected": self.corrected.to_dict(),
            "human_only": self.human_only.to_dict(),
            "judge_only": self.judge_only.to_dict(),
            "tuning": self.tuning,
            "n_labeled": self.n_labeled,
            "n_unlabeled": self.n_unlabeled,
            "effective_labels": None
            if math.isnan(self.effective_labels)
            else self.effective_labels,
            "interval": self.interval,
            "interval_reason": self.interval_reason,
        }

    def __str__(self) -> str:
        return (
            f"corrected {self.corrected}; human only {self.human_only}; "
            f"judge only (uncorrected) {self.judge_only}; "
            f"worth {self.effective_labels:.0f} human labels (λ = {self.tuning:.2f})"
        )


def corrected_mean(  # noqa: PLR0913  public API: keyword-only options
    human: Sequence[float] | NDArray[Any],
    judge_on_labeled: Sequence[float] | NDArray[Any],
    judge_on_unlabeled: Sequence[float] | NDArray[Any],
    *,
    alpha: float = 0.05,
    tuning: Tuning = "ppi++",
    folds: int = 5,
    seed: int | None = 0,
    weights: Sequence[float] | NDArray[Any] | None = None,
    unlabeled_weights: Sequence[float] | NDArray[Any] | None = None,
    finite_population: bool = False,
    bounds: tuple[float, float] | None = None,
    interval: Interval = "auto",
) -> Estimate:
    """Mean score corrected for the judge's bias with human labels on a subset (PPI / PPI++).

    Args:
        human: the human score of each labelled item.
        judge_on_labeled: the judge's score of the same items, in the same order.
        judge_on_unlabeled: the judge's scores that estimate its mean over the population.
            Labelled uniformly (no ``weights``): the items without a human label, a separate
            set (do not repeat the labelled items). With ``weights`` (labelled items drawn with
            unequal probabilities): every judged item, the labelled ones included, as
            `calibration.estimate` does. The unlabelled ones alone are then not a uniform
            sample (an audit that favoured the judge's ties leaves fewer of them behind), and
            their mean biases the estimate: −0.0086 on MT-Bench's tie share at n = 200, about
            8 Monte-Carlo standard errors (tests/calibration/test_ppi.py).
        alpha: error level; the interval covers the true mean with probability ≈ ``1 - alpha``.
        tuning: ``"ppi++"`` (λ estimated to minimise the variance, clipped to [0, 1]),
            ``"ppi"`` (λ = 1), or a fixed λ in [0, 1] (0 gives the human-only interval).
        folds: with ``"ppi++"``, λ for each labelled item is estimated on the other folds
            (cross-fitting), so the same labels do not both pick λ and measure the bias with it;
            ``1`` estimates λ on all labelled items, exactly as ``ppi-python`` does, and
            undercovers with few labels (see the module docstring).
        seed: seed of the random fold assignment (``None`` for fresh randomness).
        weights: inverse inclusion probabilities of the labelled items when they were not drawn
            uniformly (rescaled to mean 1); ``None`` for uniform sampling.
        unlabeled_weights: the same for the unlabelled items; ``None`` for uniform.
        finite_population: the labelled + unlabelled items are the whole population whose mean
            is wanted, and the labelled ones a simple random sample of it *without*
            replacement (an audit of stored results). The judge's mean is then taken over all
            of them, the variance shrinks by 1 − n/N, and labelling every item (no unlabelled
            ones) gives the exact human mean with a zero-width interval. Not with weights.
        bounds: ``(low, high)``, the scale every human score lies on (a card's 1–5 schema),
            with ``finite_population=True``. It makes the bounded (betting) interval of
            `calibration.stats._ppi_bounded` available: valid for any number of labels, it never
            collapses on a sample that happens to be constant, but is usually wider.
        interval: ``"auto"`` (default): the small-sample t interval, except with ``bounds``
            where the labels are too few or too skewed for it (fewer than 50, or Cochran's
            rule n > 25·g₁² fails), where it is the bounded one (`CorrectedEstimate.interval`
            says which and why); ``"t"``, ``"bounded"``: that one; ``"normal"``: the papers'
            normal interval (population variances, normal quantile), which with ``folds=1``
            reproduces ``ppi-python``'s ``ppi_mean_ci`` exactly.

    Returns:
        An `Estimate` with the corrected mean, its interval at level ``1 - alpha`` (the t one:
        t-quantile, skew removed, asymmetric when the errors are skewed) and ``n`` = the
        number of labelled items.

    Raises:
        ValueError: lengths differ, a value is missing or not finite, fewer than 2 labelled or
            1 unlabelled items, or ``alpha``/``tuning``/weights out of range.

    Warns:
        SmallSampleWarning: fewer than 30 labelled items (the interval may undercover).
    """
    fitted = _fitted(
        "corrected mean",
        human,
        judge_on_labeled,
        judge_on_unlabeled,
        alpha=alpha,
        tuning=tuning,
        folds=folds,
        seed=seed,
        weights=weights,
        unlabeled_weights=unlabeled_weights,
        finite_population=finite_population,
        bounds=bounds,
        interval=interval,
    )
    return fitted.interval(fitted.fit, fitted.tuning, bounds, alpha, seed)


def _tuning(
    tuning: Tuning, interval: Interval, finite_population: bool, f: Floats, choice: IntervalChoice
) -> tuple[Tuning, IntervalChoice]:
    """λ = 0 in the ``"auto"`` interval of an audit whose judge scores cannot carry a slope
    (`calibration.stats._ppi_core.slope_measurable`), said in the reason."""
    if tuning == "ppi++" and _shrinks(interval, finite_population) and not slope_measurable(f):
        reason = (
            f"{choice.reason}; fewer than {SLOPE_MINORITY} labelled judge scores differ from "
            "its most common one, too few for a slope: λ = 0"
        )
        return 0.0, IntervalChoice(choice.kind, reason)
    return tuning, choice


def _shrinks(interval: Interval, finite_population: bool) -> bool:
    """Whether PPI++'s λ is shrunk toward 0 (`calibration.stats._ppi_core.shrink_factor`): in the
    ``"auto"`` interval of an audit of stored results (a finite population), where a noisy λ
    from few labels made the interval wider than the people's own. Asked for by name (``"t"``,
    ``"normal"``), λ is the papers' power-tuned one, as ``ppi-python`` fits it."""
    return interval == "auto" and finite_population


@dataclass(frozen=True)
class _Fitted:
    """One estimate's checked arrays, the interval chosen for it and its PPI fit."""

    y: Floats
    f: Floats
    f_u: Floats
    w: Floats
    w_u: Floats
    choice: IntervalChoice
    tuning: Tuning
    fit: Fit

    def interval(
        self,
        fit: Fit,
        tuning: Tuning,
        bounds: tuple[float, float] | None,
        alpha: float,
        seed: int | None,
    ) -> Estimate:
        """``fit``'s estimate (this one, or the same arrays at λ = 0) with the chosen interval."""
        if self.choice.kind == "normal":
            return fit.papers
        if self.choice.kind == "bounded" and bounds is not None:
            return bounded_estimate(
                fit.estimate, self.y, self.f, self.f_u, bounds, alpha, tuning, seed
            )
        return fit.estimate


def _fitted(  # noqa: PLR0913  the public estimators' keyword options, passed through by name
    what: str,
    human: Sequence[Any] | NDArray[Any],
    judge_on_labeled: Sequence[Any] | NDArray[Any],
    judge_on_unlabeled: Sequence[Any] | NDArray[Any],
    *,
    alpha: float,
    tuning: Tuning,
    folds: int,
    seed: int | None,
    weights: Sequence[float] | NDArray[Any] | None,
    unlabeled_weights: Sequence[float] | NDArray[Any] | None,
    finite_population: bool,
    bounds: tuple[float, float] | None,
    interval: Interval,
) -> _Fitted:
    """Check the inputs, choose the interval from the labels, fit, and check the choice on
    what the fit averages (`calibration.stats._ppi_core.recheck_interval`): the one path of
    `corrected_mean`, `corrected_rate` and `corrected_estimate`."""
    y, f, f_u, w, w_u = checked_inputs(
        human, judge_on_labeled, judge_on_unlabeled, weights, unlabeled_weights, finite_population
    )
    check_alpha(alpha)
    check_design(finite_population, bounds, weights is not None, y)
    choice = choose_interval(interval, y, bounds, finite_population)
    tuning, choice = _tuning(tuning, interval, finite_population, f, choice)
    warn_if_small(len(y), what, stacklevel=3)
    fit = fit_ppi(
        y,
        f,
        f_u,
        w,
        w_u,
        alpha,
        tuning,
        folds,
        seed,
        finite_population,
        _shrinks(interval, finite_population),
    )
    choice = recheck_interval(interval, choice, fit)
    return _Fitted(y, f, f_u, w, w_u, choice, tuning, fit)


def corrected_rate(  # noqa: PLR0913  public API: keyword-only options
    human: Sequence[Hashable] | NDArray[Any],
    judge_on_labeled: Sequence[Hashable] | NDArray[Any],
    judge_on_unlabeled: Sequence[Hashable] | NDArray[Any],
    *,
    category: Hashable,
    alpha: float = 0.05,
    tuning: Tuning = "ppi++",
    folds: int = 5,
    seed: int | None = 0,
    weights: Sequence[float] | NDArray[Any] | None = None,
    unlabeled_weights: Sequence[float] | NDArray[Any] | None = None,
    finite_population: bool = False,
    bounds: tuple[float, float] | None = None,
    interval: Interval = "auto",
) -> Estimate:
    """Share of items in one category (a verdict rate, a win rate) corrected with human labels.

    The labels are turned into 0/1 indicators of ``category`` and passed to `corrected_mean`;
    the interval is then clipped to [0, 1], which only removes values a share cannot take.

    Args:
        human: the human label of each labelled item (any hashable labels).
        judge_on_labeled: the judge's label of the same items, in the same order.
        judge_on_unlabeled: the judge's label of items without a human label.
        category: the label whose share is estimated, e.g. ``"pass"`` or ``"A"``.
        alpha: error level of the interval.
        tuning: ``"ppi++"``, ``"ppi"`` or a fixed λ in [0, 1], as in `corrected_mean`.
        folds: cross-fitting folds for ``"ppi++"``'s λ (``1``: no cross-fitting), as in
            `corrected_mean`.
        seed: seed of the fold assignment.
        weights: inverse inclusion probabilities of the labelled items, or ``None``.
        unlabeled_weights: the same for the unlabelled items, or ``None``.
        finite_population: the labelled items are a sample without replacement of the labelled
            + unlabelled ones, whose share is wanted, as in `corrected_mean`.
        bounds: ``(0, 1)`` to allow the bounded (betting) interval of `corrected_mean`.
        interval: ``"auto"``, ``"t"``, ``"normal"`` or ``"bounded"``, as in `corrected_mean`.

    Returns:
        An `Estimate` of the share in [0, 1]; ``n`` = the number of labelled items.

    Raises:
        ValueError: as `corrected_mean`, and for a missing label (``None`` or NaN).

    Warns:
        SmallSampleWarning: fewer than 30 labelled items.
    """
    y, f, f_u = (
        indicator(values, category, name)
        for values, name in (
            (human, "human"),
            (judge_on_labeled, "judge_on_labeled"),
            (judge_on_unlabeled, "judge_on_unlabeled"),
        )
    )
    fitted = _fitted(
        "corrected rate",
        y,
        f,
        f_u,
        alpha=alpha,
        tuning=tuning,
        folds=folds,
        seed=seed,
        weights=weights,
        unlabeled_weights=unlabeled_weights,
        finite_population=finite_population,
        bounds=bounds,
        interval=interval,
    )
    return clip_share(fitted.interval(fitted.fit, fitted.tuning, bounds, alpha, seed))


def corrected_estimate(  # noqa: PLR0913  public API: keyword-only options
    human: Sequence[Any] | NDArray[Any],
    judge_on_labeled: Sequence[Any] | NDArray[Any],
    judge_on_unlabeled: Sequence[Any] | NDArray[Any],
    *,
    category: Hashable | None = None,
    alpha: float = 0.05,
    tuning: Tuning = "ppi++",
    folds: int = 5,
    seed: int | None = 0,
    weights: Sequence[float] | NDArray[Any] | None = None,
    unlabeled_weights: Sequence[float] | NDArray[Any] | None = None,
    finite_population: bool = False,
    bounds: tuple[float, float] | None = None,
    interval: Interval = "auto",
) -> CorrectedEstimate:
    """The corrected estimate with the judge-only and human-only ones, for a report.

    Args:
        human: human scores (or labels, with ``category``) of the labelled items.
        judge_on_labeled: the judge's scores (or labels) of the same items.
        judge_on_unlabeled: the judge's scores (or labels) of the unlabelled items.
        category: ``None`` for a mean score; a label to estimate the share of that label.
        alpha: error level of every interval.
        tuning: ``"ppi++"``, ``"ppi"`` or a fixed λ in [0, 1], as in `corrected_mean`.
        folds: cross-fitting folds for ``"ppi++"``'s λ (``1``: no cross-fitting), as in
            `corrected_mean`.
        seed: seed of the fold assignment.
        weights: inverse inclusion probabilities of the labelled items, or ``None``.
        unlabeled_weights: the same for the unlabelled items, or ``None``.
        finite_population: the labelled items are a sample without replacement of the labelled
            + unlabelled ones, whose mean is wanted, as in `corrected_mean` (the human-only
            interval gets the same 1 − n/N).
        bounds: the scale of the scores (``(0, 1)`` for a share), allowing the bounded
            interval of `corrected_mean`.
        interval: ``"auto"``, ``"t"``, ``"normal"`` or ``"bounded"``, as in `corrected_mean`;
            the corrected and the human-only estimates get the same kind, so their widths
            compare like for like (the human-only one is that interval at λ = 0).

    Returns:
        A `CorrectedEstimate`: corrected, human-only and judge-only estimates, the λ used and
        the number of human labels the correction is worth (``effective_labels``).

    Raises:
        ValueError: as `corrected_mean` / `corrected_rate`.

    Warns:
        SmallSampleWarning: fewer than 30 labelled items.
    """
    if category is not None:
        human, judge_on_labeled, judge_on_unlabeled = (
            indicator(values, category, name)
            for values, name in (
                (human, "human"),
                (judge_on_labeled, "judge_on_labeled"),
                (judge_on_unlabeled, "judge_on_unlabeled"),
            )
        )
    fitted = _fitted(
        "corrected estimate",
        human,
        judge_on_labeled,
        judge_on_unlabeled,
        alpha=alpha,
        tuning=tuning,
        folds=folds,
        seed=seed,
        weights=weights,
        unlabeled_weights=unlabeled_weights,
        finite_population=finite_population,
        bounds=bounds,
        interval=interval,
    )
    y, f, f_u, w, w_u = fitted.y, fitted.f, fitted.f_u, fitted.w, fitted.w_u
    fit, choice = fitted.fit, fitted.choice
    classical = fit_ppi(y, f, f_u, w, w_u, alpha, 0.0, 1, None, finite_population)
    judged = np.concatenate([w * f, w_u * f_u])
    judge_only = normal_estimate(
        float(judged.mean()), float(judged.std() / math.sqrt(judged.size)), alpha, judged.size
    )
    corrected = fitted.interval(fit, fitted.tuning, bounds, alpha, seed)
    human_only = fitted.interval(classical, 0.0, bounds, alpha, seed)
    if category is not None:
        corrected, human_only, judge_only = (
            clip_share(e) for e in (corrected, human_only, judge_only)
        )
    if choice.kind == "bounded":  # not ± a standard error: compare widths
        spans = (human_only.high - human_only.low, corrected.high - corrected.low)
        effective = len(y) * (spans[0] / spans[1]) ** 2 if min(spans) > 0 else math.nan
    else:
        effective = (
            len(y) * (classical.se / fit.se) ** 2 if fit.se > 0 and classical.se > 0 else math.nan
        )
    return CorrectedEstimate(
        corrected=corrected,
        human_only=human_only,
        judge_only=judge_only,
        tuning=fit.tuning,
        n_labeled=len(y),
        n_unlabeled=len(f_u),
        effective_labels=effective,
        interval=choice.kind,
        interval_reason=choice.reason,
    )
