"""Corrected means over a finite population of judged items, and the bounded (betting) interval.

An audit labels a random sample, without replacement, of the results a judge stored, and the
number wanted is the one over those results: a finite population. The coverage tests use
SummEval's 12 systems × 100 summaries, each system's all-human mean as the truth.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import calibration
from calibration.stats import (
    corrected_estimate,
    corrected_mean,
    corrected_rate,
    stratified_corrected_mean,
)
from calibration.stats._ppi_core import fit_ppi
from tests.builders import summeval


def _t95(df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, df))


@pytest.fixture(autouse=True)
def _quiet() -> None:
    warnings.simplefilter("ignore", calibration.SmallSampleWarning)


# --- the finite-population estimate ---------------------------------------------------------


def test_finite_population_estimate_by_hand() -> None:
    # 8 labelled of N = 20. λ = 1: value = mean of f over all 20 + mean of (y − f) over the 8.
    # y − f = (0, 1, 0, −1, 0, 1, 0, −1): symmetric, no skew, so the interval is the t one;
    # its variance 4/7 shrinks by 1 − 8/20 = 0.6 (sampling without replacement).
    f = np.array([3.0, 2, 4, 5, 1, 3, 2, 4])
    y = f + np.array([0.0, 1, 0, -1, 0, 1, 0, -1])
    f_u = np.array([3.0, 4, 2, 5, 1, 3, 3, 4, 2, 5, 1, 3])
    e = corrected_mean(y, f, f_u, tuning="ppi", finite_population=True)
    value = (f.sum() + f_u.sum()) / 20 + 0.0
    se = math.sqrt(0.6 * (4 / 7) / 8)
    assert e.value == pytest.approx(value)
    assert (e.low, e.high) == pytest.approx((value - _t95(7) * se, value + _t95(7) * se))
    # The infinite-population interval adds the judge's own sampling noise and no 1 − n/N.
    wide = corrected_mean(y, f, f_u, tuning="ppi")
    assert wide.high - wide.low > (e.high - e.low) / math.sqrt(0.6)


def test_a_census_is_the_human_mean_exactly() -> None:
    y, f = np.array([5.0, 4, 5, 1, 3]), np.array([5.0, 5, 5, 2, 3])
    e = corrected_mean(y, f, [], finite_population=True)
    assert (e.value, e.low, e.high, e.n) == (3.6, 3.6, 3.6, 5)
    rate = corrected_rate(
        ["a", "b", "a"], ["a", "a", "a"], [], category="a", finite_population=True
    )
    assert (rate.low, rate.value, rate.high) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    with pytest.raises(ValueError, match="judge_on_unlabeled is empty"):
        corrected_mean(y, f, [])


def test_finite_population_lambda_is_the_regression_slope() -> None:
    # The judge's mean over a finite population is known exactly, so the variance to minimise
    # is Var(y − λf) alone: λ = Cov(y, f)/Var(f), without PPI++'s 1 + n/N.
    rng = np.random.default_rng(3)
    truth = rng.normal(3, 1, 120)
    judge = 1.5 * truth + rng.normal(0, 0.3, 120)
    y, f, f_u = truth[:40], judge[:40], judge[40:]
    slope = np.mean((y - y.mean()) * (f - f.mean())) / np.var(judge, ddof=1)
    # interval="t": the papers' power-tuned λ ("auto" shrinks it with few labels).
    finite = corrected_estimate(y, f, f_u, folds=1, finite_population=True, interval="t")
    infinite = corrected_estimate(y, f, f_u, folds=1)
    assert 0.3 < slope < 1.0
    assert finite.tuning == pytest.approx(slope, rel=1e-9)
    assert infinite.tuning == pytest.approx(finite.tuning / (1 + 40 / 80), rel=1e-9)


def test_the_cross_fitted_slope_noise_is_in_the_standard_error() -> None:
    # Half of one SummEval system labelled (relevance, M9: ρ 0.49). Each fold's λ is fitted on
    # the other folds, and its error times the fold's mean judge score off the population's
    # adds variance the rectifier's spread does not show; 1 − n/N = 0.5 halves everything else,
    # so it matters. Over 3,000 seeded draws the mean se² must match the estimate's variance:
    # without the slope term it was 0.904 of it (95% intervals covered 92.0–92.5%), with it 0.956.
    human, judge, systems = summeval()["relevance"]
    keep = systems == "M9"
    y_all, f_all = human[keep], judge[keep]
    rng = np.random.default_rng(5)
    values, variances = [], []
    for _ in range(3000):
        order = rng.permutation(100)
        fit = fit_ppi(
            y_all[order[:50]],
            f_all[order[:50]],
            f_all[order[50:]],
            np.ones(50),
            np.ones(50),
            0.05,
            "ppi++",
            5,
            int(rng.integers(2**31)),
            True,
            True,
        )
        values.append(fit.estimate.value)
        variances.append(fit.se**2)
    assert float(np.mean(variances)) / float(np.var(values)) >= 0.93


def test_more_than_half_sampled_flips_the_skew_term() -> None:
    # κ₃ of a mean drawn without replacement is (1 − n/N)(1 − 2n/N)·μ₃/n²: past half the
    # population the long tail of the unsampled rest is what is left to miss.
    y = np.array([5.0] * 14 + [1.0, 2.0])
    ones = np.ones(16)
    for big_n, sign in ((100, 1.0), (20, -1.0)):
        f_u = np.full(big_n - 16, 4.0)
        fit = fit_ppi(y, y, f_u, ones, np.ones(big_n - 16), 0.05, 0.0, 1, None, True)
        share = 16 / big_n
        mu3 = np.mean((y - y.mean()) ** 3)
        assert fit.third_cumulant == pytest.approx((1 - share) * (1 - 2 * share) * mu3 / 16**2)
        assert np.sign(fit.third_cumulant) == -sign  # μ₃ < 0 here (a long low tail)


def test_stratified_finite_population_with_a_census_stratum() -> None:
    # Stratum a is fully labelled (exact, no variance); b is sampled: the combined estimate is
    # a's human mean and b's finite-population estimate, weighted by their sizes (10 and 30).
    rng = np.random.default_rng(9)
    y_a, y_b = rng.normal(2, 1, 10), rng.normal(4, 1, 12)
    f_b, f_bu = y_b + rng.normal(0.5, 0.5, 12), rng.normal(4.5, 1, 18)
    got = stratified_corrected_mean(
        np.concatenate([y_a, y_b]),
        np.concatenate([y_a + 1, f_b]),
        f_bu,
        strata=["a"] * 10 + ["b"] * 12,
        unlabeled_strata=["b"] * 18,
        finite_population=True,
    )
    b = fit_ppi(y_b, f_b, f_bu, np.ones(12), np.ones(18), 0.05, "ppi++", 5, 0, True)
    assert got.value == pytest.approx(0.25 * y_a.mean() + 0.75 * b.estimate.value)
    half = _t95(11) * 0.75 * b.se
    assert got.high - got.low == pytest.approx(2 * half, rel=0.05)  # skew step aside
    with pytest.raises(ValueError, match="stratum 'a' has no unlabelled items"):
        stratified_corrected_mean(
            np.concatenate([y_a, y_b]), np.concatenate([y_a + 1, f_b]), f_bu,
            strata=["a"] * 10 + ["b"] * 12, unlabeled_strata=["b"] * 18,
        )  # fmt: skip


# --- the bounded interval -------------------------------------------------------------------


def test_a_constant_sample_no_longer_collapses_when_the_scale_is_known() -> None:
    # 96 of 100 items score 5 (SummEval consistency of one system); a sample of 20 that missed
    # the 4 low ones is constant. The t interval is a point and misses the mean (4.91); the
    # bounded interval reaches below it.
    population = np.array([5.0] * 96 + [1.0, 3.0, 3.0, 4.0])
    y, f, f_u = population[:20], population[:20], population[20:]
    t_based = corrected_mean(y, f, f_u, finite_population=True)
    assert t_based.low == t_based.high == 5.0
    bounded = corrected_mean(y, f, f_u, finite_population=True, bounds=(1, 5))
    assert bounded.value == 5.0 and bounded.high == 5.0
    assert 4.0 < bounded.low < population.mean()


def test_the_bounded_interval_covers_where_the_t_interval_cannot() -> None:
    # Over random samples without replacement from that population, the betting interval keeps
    # its guarantee (≥ 95%, for any n); the t interval covers only when a low item was drawn.
    population = np.array([5.0] * 96 + [1.0, 3.0, 3.0, 4.0])
    judge = np.where(population < 5, population + 1, 5.0)
    truth, rng = population.mean(), np.random.default_rng(0)
    for n in (10, 25):
        bounded = t_based = 0
        for _ in range(150):
            order = rng.permutation(100)
            y, f, f_u = population[order[:n]], judge[order[:n]], judge[order[n:]]
            b = corrected_mean(
                y, f, f_u, finite_population=True, bounds=(1, 5), seed=int(rng.integers(2**31))
            )
            t = corrected_mean(y, f, f_u, finite_population=True)
            bounded += b.low <= truth <= b.high
            t_based += t.low <= truth <= t.high
        assert bounded / 150 >= 0.95, (n, bounded)
        assert t_based / 150 < 0.8, (n, t_based)


def test_a_useful_judge_narrows_the_bounded_interval() -> None:
    rng = np.random.default_rng(5)
    truth = np.clip(np.round(rng.normal(3.5, 1.0, 400)), 1, 5)
    judge = np.clip(truth + rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], 400), 1, 5)
    y, f, f_u = truth[:60], judge[:60], judge[60:]
    with_judge = corrected_estimate(
        y, f, f_u, finite_population=True, bounds=(1, 5), interval="bounded"
    )
    width = with_judge.corrected.high - with_judge.corrected.low
    assert width < 0.85 * (with_judge.human_only.high - with_judge.human_only.low)
    assert with_judge.corrected.low <= with_judge.corrected.value <= with_judge.corrected.high


def test_bounds_without_them_everything_is_as_before() -> None:
    rng = np.random.default_rng(2)
    y, f, f_u = rng.normal(3, 1, 50), rng.normal(3, 1, 50), rng.normal(3, 1, 300)
    assert corrected_mean(y, f, f_u, folds=1) == corrected_mean(
        y, f, f_u, folds=1, bounds=None, finite_population=False
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bounds": (1, 5)}, "bounds needs finite_population=True"),
        ({"finite_population": True, "weights": [1, 2, 1]}, "without replacement; with weights"),
        ({"finite_population": True, "bounds": (5, 1)}, "low < high"),
        ({"finite_population": True, "bounds": (1, float("inf"))}, "finite"),
        ({"finite_population": True, "bounds": ("a", 5)}, r"\(low, high\) numbers"),
        ({"finite_population": True, "bounds": (2, 5)}, r"human\[0\] is 1.0, outside bounds"),
    ],
)
def test_bad_designs_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        corrected_mean([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [2.0, 2.0], **kwargs)  # type: ignore[arg-type]


# --- per SummEval system, real data ---------------------------------------------------------


def _cell(dimension: str, system: str) -> tuple[np.ndarray, np.ndarray]:
    human, gpt4, systems = summeval()[dimension]
    keep = systems == system
    return human[keep], gpt4[keep]


# The four hardest system × dimension cells for a t interval (bench/ppi_coverage_systems.py):
# almost constant human scores (95/100 at 5) and the widest spread.
HARD = [("consistency", "M12"), ("consistency", "M22"), ("fluency", "M17"), ("fluency", "M20")]


@pytest.mark.parametrize("n", [10, 25, 50])
def test_summeval_per_system_bounded_intervals_cover(n: int) -> None:
    """Per system (100 summaries, n labelled without replacement), 100 subsets per cell.

    Measured on all 48 cells with 500 subsets (README), the bounded interval covered ≥ 93%
    everywhere; the t-based finite-population one fell to 45% on the near-constant cells.
    """
    for dimension, system in HARD:
        human, gpt4 = _cell(dimension, system)
        truth, rng = human.mean(), np.random.default_rng(n)
        covered = 0
        for _ in range(100):
            order = rng.permutation(len(human))
            labelled, rest = order[:n], order[n:]
            e = corrected_mean(
                human[labelled],
                gpt4[labelled],
                gpt4[rest],
                finite_population=True,
                bounds=(1, 5),
                interval="bounded",
            )
            covered += e.low <= truth <= e.high
        assert covered >= 93, (dimension, system, n, covered)


@pytest.mark.slow
def test_summeval_every_system_and_dimension_is_covered_when_bounded() -> None:
    """All 48 system × dimension cells, n = 10/25/50 of 100, 100 subsets each (the README's
    table has 500): the bounded interval covers ≥ 93% in every cell; the t-based one does not."""
    data = summeval()
    worst_bounded, worst_t = 1.0, 1.0
    for dimension, (human_all, gpt4_all, systems) in data.items():
        for system in sorted(set(systems.tolist())):
            human, gpt4 = human_all[systems == system], gpt4_all[systems == system]
            truth = human.mean()
            for n in (10, 25, 50):
                rng = np.random.default_rng(n)
                bounded = t_based = 0
                for _ in range(100):
                    order = rng.permutation(len(human))
                    y, f, f_u = human[order[:n]], gpt4[order[:n]], gpt4[order[n:]]
                    b = corrected_mean(
                        y, f, f_u, finite_population=True, bounds=(1, 5), interval="bounded"
                    )
                    t = corrected_mean(y, f, f_u, finite_population=True)
                    bounded += b.low <= truth <= b.high
                    t_based += t.low <= truth <= t.high
                assert bounded >= 93, (dimension, system, n, bounded)
                worst_bounded = min(worst_bounded, bounded / 100)
                worst_t = min(worst_t, t_based / 100)
    assert worst_t < 0.8 < worst_bounded
