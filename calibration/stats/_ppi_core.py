"""The arithmetic behind `calibration.stats.ppi`: PPI / PPI++ for one mean, and input checks.

Private to the package (see `calibration.stats.ppi` for the method and its references).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from judgecards.metrics.stats import Estimate

Tuning = Literal["ppi++", "ppi"] | float
Interval = Literal["auto", "t", "normal", "bounded"]
Floats = NDArray[np.float64]

# The t interval is used for at least this many labels of one estimate (and Cochran's rule).
T_MIN_LABELS = 50
# Cochran (Sampling Techniques, 1977, §2.15): a mean is near normal for n > 25·g₁².
COCHRAN_FACTOR = 25.0


@dataclass(frozen=True)
class IntervalChoice:
    """Which interval an estimate uses and why, in words a report can print."""

    kind: Literal["t", "normal", "bounded"]
    reason: str


def choose_interval(
    interval: Interval, y: Floats, bounds: tuple[float, float] | None, finite: bool
) -> IntervalChoice:
    """The interval for ``interval="auto"`` (or the one asked for, with its reason).

    The t interval (PPI++ with the small-sample step) is the narrower one and is used wherever
    the labels allow it: at least `T_MIN_LABELS` of them and Cochran's rule n > 25·g₁², g₁ the
    skewness of the labelled human values. Below that a sample of an almost constant score can
    miss the rare low values and show no spread, and the t interval collapses (39–44% coverage
    per SummEval system), so where the scale is known the bounded (betting) interval, valid for
    any n, is used instead. The choice reads the labels; `recheck_interval` then reads the
    corrected values the t interval is a mean of, and the human-only column (λ = 0) always gets
    the same kind as the corrected one.
    """
    if interval not in ("auto", "t", "normal", "bounded"):
        raise ValueError(f"interval must be 'auto', 't', 'normal' or 'bounded', got {interval!r}")
    if interval == "normal":
        return IntervalChoice("normal", "asked for: the papers' normal interval (as ppi-python)")
    if interval == "t":
        return IntervalChoice("t", "asked for: small-sample t interval")
    if interval == "bounded":
        if bounds is None or not finite:
            raise ValueError(
                "interval='bounded' needs bounds=(low, high) and finite_population=True"
            )
        return IntervalChoice("bounded", "asked for: bounded (betting) interval")
    if bounds is None or not finite:
        return IntervalChoice("t", "scale not known: small-sample t interval")
    refusal = t_refusal(y, "labels")
    if refusal is not None:
        return IntervalChoice("bounded", f"{refusal}: bounded (betting) interval, valid for any n")
    return IntervalChoice(
        "t", f"{len(y)} labels, skewness {sample_skewness(y):.2f}: PPI++ small-sample t interval"
    )


def t_refusal(values: Floats, what: str) -> str | None:
    """Why a t interval cannot be trusted for the mean of ``values`` (``what`` they are, in
    words), or ``None`` if it can: fewer than `T_MIN_LABELS`, no spread, or Cochran's rule
    n > 25·g₁² fails."""
    n = len(values)
    if n < T_MIN_LABELS:
        return f"{n} labels (fewer than {T_MIN_LABELS})"
    skew = sample_skewness(values)
    if not math.isfinite(skew):
        return f"the {what} show no spread"
    needed = COCHRAN_FACTOR * skew * skew
    if n <= needed:
        return (
            f"{what} too skewed for a t interval (skewness {skew:.2f} needs more than "
            f"{needed:.0f} labels, Cochran's rule)"
        )
    return None


def recheck_interval(interval: Interval, choice: IntervalChoice, fit: Fit) -> IntervalChoice:
    """The ``"auto"`` choice once the fit is known: the t interval is of the mean of the
    corrected values y − λᵢ·(f − F̄), not of the labels, and a judge that agrees with people on
    almost every labelled item makes them almost constant. Their spread then says nothing of
    the disagreements the sample missed, and the t interval collapsed to ±0.0015 around a
    share (an effective n of 550,447 from 60 labels); the same rule as for the labels sends it
    to the bounded interval."""
    if interval != "auto" or choice.kind != "t" or fit.corrected_values is None:
        return choice
    if fit.tuning == 0.0:
        return choice
    refusal = t_refusal(fit.corrected_values, "corrected values")
    if refusal is None:
        return choice
    return IntervalChoice(
        "bounded", f"{choice.reason}, but the {refusal}: bounded (betting) interval"
    )


# The labelled judge scores off the judge's most common one a slope needs (the "at least 5
# per cell" habit of count approximations).
SLOPE_MINORITY = 5


def slope_measurable(f: Floats) -> bool:
    """Whether the judge's scores on the labelled items can carry a slope: at least
    `SLOPE_MINORITY` of them differ from its most common score. A judge that gives 97 of 100
    summaries a 5 shows a slope set by its one or two other scores; fitted on them, λ made the
    interval 4–7% wider than λ = 0 (SummEval relevance, one system, 50 labelled)."""
    _, counts = np.unique(f, return_counts=True)
    return len(f) - int(counts.max()) >= SLOPE_MINORITY


def sample_skewness(values: Floats) -> float:
    """g₁ = m₃ / m₂^1.5 of the values; ``nan`` when they do not vary."""
    centred = values - values.mean()
    m2 = float(np.mean(centred**2))
    if m2 <= 1e-12 * max(1.0, float(np.max(np.abs(values)))) ** 2:
        return math.nan
    return float(np.mean(centred**3)) / float(m2**1.5)


@dataclass(frozen=True)
class Fit:
    """One PPI fit: the small-sample interval in use, and what it is built from.

    ``se`` uses unbiased (n − 1) variances; ``third_cumulant`` is the estimate's skew term that
    `small_sample_interval` corrects for; ``papers`` is the normal interval of the papers and of
    ``ppi-python`` (population variances, normal quantile), kept to check agreement with it.
    """

    estimate: Estimate
    se: float
    third_cumulant: float
    tuning: float
    papers: Estimate
    # A finite population's corrected values y − λᵢ·(f − F̄), whose mean the t interval is of.
    corrected_values: Floats | None = None


def fit_ppi(  # noqa: PLR0913, PLR0917  the arrays and settings of one fit, passed through from the public estimators
    y: Floats,
    f: Floats,
    f_u: Floats,
    w: Floats,
    w_u: Floats,
    alpha: float,
    tuning: Tuning,
    folds: int,
    seed: int | None,
    finite: bool = False,
    shrink: bool = False,
) -> Fit:
    """PPI / PPI++ for one mean (``shrink``: PPI++'s λ shrunk as `shrink_factor` says); ``finite``: the labelled items are a simple random sample
    *without replacement* of the labelled + unlabelled items, whose own mean is the target.

    A finite population changes three things (the regression estimator of survey sampling,
    Cochran 1977, §7): the judge's mean is taken over all N items, and being known exactly it
    adds no variance; the rectifier's variance shrinks by the finite-population correction
    1 − n/N (a census, n = N, is exact); and PPI++'s λ minimising that variance is the
    regression slope Cov(y, f)/Var(f), without the 1 + n/N of an infinite population.
    """
    n, big_n = len(y), len(f_u)
    if finite and big_n == 0:  # a census: the human mean is the population mean, exactly
        value = float(np.average(y, weights=w))
        exact = Estimate(value, value, value, 1.0 - alpha, n)
        return Fit(exact, 0.0, 0.0, 0.0, exact)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 1:
        raise ValueError(f"folds must be an integer >= 1, got {folds!r}")
    if tuning == "ppi++":
        # Cross-fitting: item i's rectifier uses a λ estimated without item i's fold, so λ is
        # independent of the bias it measures there (λ fitted on the same items made 95%
        # intervals cover 89% of the time on SummEval consistency at n = 50; cross-fitted, 91%,
        # as the human-only interval does).
        k = min(folds, n)
        fold = np.empty(n, dtype=np.intp)
        fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % k
        lam_k = ppi_plus_plus_tuning(y, f, f_u, w, w_u, fold, k, finite, shrink)
        lam_i = lam_k[fold]
        lam = float(lam_i.mean())
        slope_noise = (
            fold_slope_noise(f, f_u, fold_slope_variance(y, f, fold, k) * (lam_k > 0), fold, k)
            if finite and k > 1
            else 0.0
        )
    else:
        lam = fixed_tuning(tuning)
        lam_i = np.full(n, lam)
        slope_noise = 0.0
    imputed = w_u * lam * f_u
    rectifier = w * (y - lam_i * f)
    if finite:
        return _finite_fit(y, f, f_u, w, lam, lam_i, alpha, slope_noise)
    value = float(imputed.mean() + rectifier.mean())
    # Var(w·(y − λ_i·f)) item by item, averaged over the λ_i in use: with one λ this is the
    # plain variance of the rectifier; with cross-fitted λs it leaves out the spread the
    # different λs alone would add (λ_i·mean(f) differs between folds but is not noise).
    wy, wf = w * y, w * f
    cov = float(np.mean((wy - wy.mean()) * (wf - wf.mean())))
    rectifier_var = max(float(np.mean(wy.var() - 2.0 * lam_i * cov + lam_i**2 * wf.var())), 0.0)
    imputed_var = float(imputed.var())
    # The papers (and ppi-python) use population (ddof=0) variances and a normal quantile.
    papers_se = math.sqrt(imputed_var / big_n + rectifier_var / n)
    se = math.sqrt(imputed_var / max(big_n - 1, 1) + rectifier_var / (n - 1))
    third_cumulant = float(
        np.mean((rectifier - rectifier.mean()) ** 3) / n**2
        + np.mean((imputed - imputed.mean()) ** 3) / big_n**2
    )
    return Fit(
        small_sample_interval(value, se, third_cumulant, n - 1, alpha, n),
        se,
        third_cumulant,
        lam,
        normal_estimate(value, papers_se, alpha, n),
    )


def _finite_fit(  # noqa: PLR0917  the arrays of one fit and what the fit has found
    y: Floats,
    f: Floats,
    f_u: Floats,
    w: Floats,
    lam: float,
    lam_i: Floats,
    alpha: float,
    slope_noise: float = 0.0,
) -> Fit:
    n, big_n = len(y), len(y) + len(f_u)
    sampled = n / big_n
    # Each labelled item's own λ_i (cross-fitted) applied to its judge score's distance from
    # the known population mean: y_i − λ_i·(f_i − F̄) has mean Ȳ for any λ_i fitted without
    # item i. (λ̄·F̄ + mean(y_i − λ_i·f_i) would not: with a judge that is right on every
    # labelled item, the differing λ_i add a bias the near-zero variance does not cover.)
    population_mean = float((f.sum() + f_u.sum()) / big_n)
    rectifier = w * (y - lam_i * (f - population_mean))
    value = float(rectifier.mean())
    variance = float(rectifier.var(ddof=1))
    se = math.sqrt((1.0 - sampled) * variance / n + slope_noise)
    # The third cumulant of a mean drawn without replacement: (1 − n/N)(1 − 2n/N)·μ₃/n²
    # (its skew changes sign once more than half the population is sampled).
    third_cumulant = float(
        (1.0 - sampled) * (1.0 - 2.0 * sampled) * np.mean((rectifier - value) ** 3) / n**2
    )
    papers_se = math.sqrt((1.0 - sampled) * float(rectifier.var()) / n)
    return Fit(
        small_sample_interval(value, se, third_cumulant, n - 1, alpha, n),
        se,
        third_cumulant,
        lam,
        normal_estimate(value, papers_se, alpha, n),
        rectifier,
    )


def fold_slope_variance(y: Floats, f: Floats, fold: NDArray[np.intp], k: int) -> Floats:
    """The variance of each fold's least-squares slope of y on f, fitted on the other folds:
    s²/Σ(f − f̄)² with s² the residual variance on n_train − 2 degrees of freedom."""
    columns = np.stack([np.ones_like(y), y, f, y * y, f * f, y * f])
    per_fold = np.stack([np.bincount(fold, weights=c, minlength=k) for c in columns])
    m, sy, sf, syy, sff, syf = columns.sum(axis=1, keepdims=True) - per_fold
    with np.errstate(divide="ignore", invalid="ignore"):
        s_ff = sff - sf * sf / m
        s_yf = syf - sy * sf / m
        s_yy = syy - sy * sy / m
        residual = np.maximum(s_yy - s_yf * s_yf / s_ff, 0.0) / (m - 2.0)
        variance = residual / s_ff
    out: Floats = np.where(np.isfinite(variance) & (m > 2), variance, 0.0)
    return out


def fold_slope_noise(
    f: Floats, f_u: Floats, slope_variance: Floats, fold: NDArray[np.intp], k: int
) -> float:
    """The variance a cross-fitted slope adds to a finite population's regression estimate.

    Item i's rectifier is y_i − λ_k(f_i − F̄) with λ_k fitted on the other folds, so the estimate
    carries −Σ_k (n_k/n)·(λ_k − λ)·d_k, d_k the fold's mean judge score off the population's F̄.
    The rectifier's spread does not see it, and with half of a population labelled (whose
    1 − n/N halves the rest) it is a few per cent of the variance: 95% intervals covered
    92.4% per SummEval system (relevance, 50 of 100 labelled) without it.
    """
    n = len(f)
    population_mean = float((f.sum() + f_u.sum()) / (n + len(f_u)))
    size = np.bincount(fold, minlength=k).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = np.bincount(fold, weights=f - population_mean, minlength=k) / size
    terms = (size / n) ** 2 * slope_variance * offset**2
    return float(np.sum(np.where(np.isfinite(terms), terms, 0.0)))


def small_sample_interval(  # noqa: PLR0917  the moments of one estimate, named as in Hall (1992)
    value: float, se: float, third_cumulant: float, df: float, alpha: float, n: int
) -> Estimate:
    """The interval for a mean-like estimate from few, skewed labels: Hall's transformation.

    With 50 labels of a skewed 1–5 score (most summaries a 5), a sample that happens to miss
    the low tail has a high mean *and* a small variance, so the symmetric normal interval
    misses the truth from above far more often than from below: 95% intervals covered 91% on
    SummEval consistency and fluency. The t-quantile with the labelled degrees of freedom only
    widens both sides (92%). Hall (1992, "On the removal of skewness by transformation",
    JRSS B 54) removes the O(n^-1/2) skew of the studentised statistic T = (θ̂ − θ)/se with
    the monotone map g(T) = T + aT² + a²T³/3 + a/2, where a = skew(θ̂)/3 and skew(θ̂) =
    κ₃(θ̂)/se³ (κ₃ estimated from the labelled rectifier and the unlabelled judge scores, whose
    covariances with se² are exactly κ₃(θ̂), as for one sample mean). Inverting g at the
    t-quantiles gives an asymmetric interval; with no skew it is the t interval.
    """
    level = 1.0 - alpha
    if se <= 0.0 or not math.isfinite(se):
        return Estimate(value, value, value, level, n)
    q = t_quantile(1.0 - alpha / 2.0, df)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        a = float(np.float64(third_cumulant) / np.float64(se) ** 3 / 3.0)
    if not math.isfinite(a) or abs(a) < 1e-12:  # no skew, or se too small to measure it
        return Estimate(value, value - q * se, value + q * se, level, n)

    def inverse(u: float) -> float:
        return float((np.cbrt(1.0 + 3.0 * a * (u - a / 2.0)) - 1.0) / a)

    return Estimate(value, value - se * inverse(q), value - se * inverse(-q), level, n)


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile; cached because simulations and reports ask for the same few."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(p, df))


def fixed_tuning(tuning: Tuning) -> float:
    if tuning == "ppi":
        return 1.0
    if isinstance(tuning, bool) or not isinstance(tuning, (int, float)):
        raise ValueError(f"tuning must be 'ppi++', 'ppi' or a number in [0, 1], got {tuning!r}")
    if not 0.0 <= float(tuning) <= 1.0:
        raise ValueError(f"a fixed tuning λ must be in [0, 1], got {tuning}")
    return float(tuning)


def ppi_plus_plus_tuning(  # noqa: PLR0913, PLR0917  the arrays of one fit and its fold design
    y: Floats,
    f: Floats,
    f_u: Floats,
    w: Floats,
    w_u: Floats,
    fold: NDArray[np.intp],
    k: int,
    finite: bool = False,
    shrink: bool = False,
) -> Floats:
    """PPI++'s λ for each fold, fitted on the labelled items outside it (all of them if k = 1).

    λ = Cov(g, ĝ) / ((1 + n/N)·Var(ĝ over labelled and unlabelled)), with the "gradients"
    g = w·(y − θ) and ĝ = w·(f − θ) at the plain-PPI estimate θ (θ only matters when weights
    differ), clipped to [0, 1]. For a finite population whose judge scores are all known the
    judge's mean adds no variance, so the 1 + n/N factor is 1 (the regression slope). Every fold
    is done at once from per-fold sums, so cross-fitting costs no more than one fit.
    """
    # The same shift of y, f and f_u shifts θ alike and leaves λ unchanged: centre for accuracy.
    shift = float(np.mean(f_u))
    y, f, f_u = y - shift, f - shift, f_u - shift
    w2 = w * w
    columns = np.stack(
        [w, w * y, w * f, w2 * y * f, w2 * y, w2 * f, w2, w2 * f * f, np.ones_like(w), w2 * y * y]
    )
    totals = columns.sum(axis=1, keepdims=True)
    if k == 1:
        sums = totals
    else:
        per_fold = np.stack([np.bincount(fold, weights=c, minlength=k) for c in columns])
        sums = totals - per_fold
    sw, swy, swf, sw2yf, sw2y, sw2f, sw2, sw2ff, n_t, sw2yy = sums
    big_n = len(f_u)
    wu2 = w_u * w_u
    u1, u0 = float(np.sum(w_u * f_u)), float(np.sum(w_u))
    u2f, u2, u2w = float(np.sum(wu2 * f_u * f_u)), float(np.sum(wu2 * f_u)), float(np.sum(wu2))
    with np.errstate(divide="ignore", invalid="ignore"):
        c = n_t / sw  # rescales the training weights to mean 1
        theta = u1 / big_n + c / n_t * (swy - swf)
        sum_g = c * (swy - theta * sw)
        sum_gh = c * (swf - theta * sw)
        sum_g_gh = c * c * (sw2yf - theta * (sw2y + sw2f) + theta * theta * sw2)
        covariance = sum_g_gh / n_t - (sum_g / n_t) * (sum_gh / n_t)
        sum_gh2 = c * c * (sw2ff - 2.0 * theta * sw2f + theta * theta * sw2)
        s1 = sum_gh + (u1 - theta * u0)
        s2 = sum_gh2 + (u2f - 2.0 * theta * u2 + theta * theta * u2w)
        m = n_t + big_n
        variance = (s2 - s1 * s1 / m) / (m - 1.0)
        inflation = 1.0 if finite else 1.0 + n_t / big_n
        lam = covariance / (inflation * variance)
        if shrink:
            var_g = c * c * (sw2yy - 2.0 * theta * sw2y + theta * theta * sw2) / n_t
            var_g -= (sum_g / n_t) ** 2
            var_gh = sum_gh2 / n_t - (sum_gh / n_t) ** 2
            lam = lam * shrink_factor(covariance**2 / (var_g * var_gh), n_t)
    # Fewer than 2 training items, or a judge that never varies, carry no information about λ:
    # fall back to the human labels alone (λ = 0).
    usable = (n_t >= 2) & (variance > 1e-12 * max(1.0, float(np.max(np.abs(s2)))) / m)
    result: Floats = np.where(usable & np.isfinite(lam), np.clip(lam, 0.0, 1.0), 0.0)
    return result


# λ is used only once the labels show the judge's slope (F ≥ 4, about the 5% level).
SLOPE_F = 4.0


def shrink_factor(r2: Floats, n: Floats | float) -> Floats:
    """How much of a fitted slope to keep: 1 − 1/F (James–Stein's positive part), 0 below
    F = `SLOPE_F`, with F = (n − 2)·r²/(1 − r²) the regression F statistic of n labels.

    A slope fitted on few labels of a judge that carries little information is mostly noise,
    and y − λ·f with a noisy λ is *more* variable than y: per SummEval system (50 of 100
    labelled) a useless judge made the t interval 5% wider than λ = 0. A clear slope is kept
    almost whole.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.clip(np.nan_to_num(r2, nan=0.0), 0.0, 1.0)
        f_stat = (np.asarray(n, dtype=np.float64) - 2.0) * r2 / (1.0 - r2)
        keep = np.where(r2 >= 1.0, 1.0, np.clip(1.0 - 1.0 / f_stat, 0.0, 1.0))
    factor: Floats = np.where(np.isfinite(f_stat) & (f_stat < SLOPE_F), 0.0, keep)
    return np.where(np.isnan(factor), 0.0, factor)


def normal_estimate(value: float, se: float, alpha: float, n: int) -> Estimate:
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    return Estimate(value, value - z * se, value + z * se, 1.0 - alpha, n)


def clip_share(estimate: Estimate) -> Estimate:
    return Estimate(
        estimate.value,
        max(0.0, estimate.low),
        min(1.0, estimate.high),
        estimate.level,
        estimate.n,
    )


def check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def as_labels(values: Sequence[Hashable] | NDArray[Any], name: str) -> list[Hashable]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of labels, not a string")
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    for i, v in enumerate(items):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise ValueError(f"{name}[{i}] is missing; drop the item or give it a label")
    return items


def indicator(values: Sequence[Any] | NDArray[Any], category: Hashable, name: str) -> Floats:
    items = as_labels(values, name)
    return np.fromiter((v == category for v in items), dtype=np.float64, count=len(items))


def as_floats(values: Sequence[Any] | NDArray[Any], name: str) -> Floats:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of numbers, not a string")
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numbers: {exc}") from exc
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(
            f"{name}[{bad[0]}] is {array[bad[0]]}: every value must be a finite number "
            f"({bad.size} bad value(s)); drop unscored items first"
        )
    return array


def as_weights(values: Sequence[float] | NDArray[Any] | None, size: int, name: str) -> Floats:
    if values is None:
        return np.ones(size)
    array = as_floats(values, name)
    if len(array) != size:
        raise ValueError(f"{name} has {len(array)} entries for {size} items")
    bad = np.flatnonzero(array <= 0)
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] is {array[bad[0]]}: weights must be positive")
    normalised: Floats = array / array.sum() * size
    return normalised


def checked_inputs(  # noqa: PLR0917  the public estimators' inputs, checked in one place
    human: Sequence[Any] | NDArray[Any],
    judge_on_labeled: Sequence[Any] | NDArray[Any],
    judge_on_unlabeled: Sequence[Any] | NDArray[Any],
    weights: Sequence[float] | NDArray[Any] | None,
    unlabeled_weights: Sequence[float] | NDArray[Any] | None,
    census_allowed: bool = False,
) -> tuple[Floats, Floats, Floats, Floats, Floats]:
    y = as_floats(human, "human")
    f = as_floats(judge_on_labeled, "judge_on_labeled")
    f_u = as_floats(judge_on_unlabeled, "judge_on_unlabeled")
    if len(y) != len(f):
        raise ValueError(
            f"human and judge_on_labeled differ in length: {len(y)} != {len(f)} "
            "(item i of each must be the same item)"
        )
    if len(y) < 2:
        raise ValueError(f"a corrected estimate needs at least 2 labelled items, got {len(y)}")
    if len(f_u) < 1 and not census_allowed:
        raise ValueError("judge_on_unlabeled is empty: nothing to correct")
    return (
        y,
        f,
        f_u,
        as_weights(weights, len(y), "weights"),
        as_weights(unlabeled_weights, len(f_u), "unlabeled_weights"),
    )
