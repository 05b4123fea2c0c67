"""agreement() and kappa(): hand-worked values, scikit-learn differential tests, edge cases,
bootstrap coverage, and LLMBar's published order-consistency kappas."""

from __future__ import annotations

import json
import math
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from calibration import SmallSampleWarning, agreement, kappa
from tests.builders import from_confusion

# --- hand-worked values ---------------------------------------------------------------------------


def test_kappa_two_classes_hand_worked() -> None:
    # Wikipedia's "Cohen's kappa" example, 50 proposals:
    #                 human yes  human no
    #   judge yes        20         5      -> judge yes 25/50 = 0.5
    #   judge no         10        15
    #   human yes 30/50 = 0.6
    # p_o = (20 + 15) / 50 = 0.7
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.30 + 0.20 = 0.5
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    judge = ["yes"] * 25 + ["no"] * 25
    human = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert kappa(judge, human).value == pytest.approx(0.4)
    assert agreement(judge, human).value == pytest.approx(0.7)


# Confusion, rows = human, columns = judge, labels 1..3, each cell x3 so that n = 30 (kappa only
# depends on proportions, so the x3 changes nothing below):
#            j1  j2  j3 | human
#     h1      3   1   0 |  4
#     h2      1   2   1 |  4
#     h3      1   0   1 |  2
#     judge   5   3   2 | 10
# Expected counts E = human_i * judge_j / 10:
#     h1   2.0  1.2  0.8
#     h2   2.0  1.2  0.8
#     h3   1.0  0.6  0.4
HAND = [[9, 3, 0], [3, 6, 3], [3, 0, 3]]


def test_unweighted_kappa_three_classes_hand_worked() -> None:
    # p_o = (3 + 2 + 1) / 10 = 0.6; p_e = (4*5 + 4*3 + 2*2) / 100 = 36 / 100 = 0.36
    # kappa = (0.6 - 0.36) / (1 - 0.36) = 0.24 / 0.64 = 0.375
    judge, human = from_confusion(HAND, [1, 2, 3])
    assert kappa(judge, human).value == pytest.approx(0.375)
    assert agreement(judge, human).value == pytest.approx(0.6)


def test_linear_weighted_kappa_hand_worked() -> None:
    # weights |i - j|; kappa_w = 1 - sum(w * O) / sum(w * E)
    # sum(w * O) = (h1,j2) 1*1 + (h2,j1) 1*1 + (h2,j3) 1*1 + (h3,j1) 2*1 = 5
    # sum(w * E) = 1.2*1 + 0.8*2 + 2.0*1 + 0.8*1 + 1.0*2 + 0.6*1 = 1.2+1.6+2+0.8+2+0.6 = 8.2
    # kappa_w = 1 - 5 / 8.2 = 3.2 / 8.2 = 16/41 = 0.390244
    judge, human = from_confusion(HAND, [1, 2, 3])
    assert kappa(judge, human, weights="linear").value == pytest.approx(16 / 41)


def test_quadratic_weighted_kappa_hand_worked() -> None:
    # weights (i - j)^2
    # sum(w * O) = 1 + 1 + 1 + 4*1 = 7
    # sum(w * E) = 1.2*1 + 0.8*4 + 2.0*1 + 0.8*1 + 1.0*4 + 0.6*1 = 1.2+3.2+2+0.8+4+0.6 = 11.8
    # kappa_w = 1 - 7 / 11.8 = 4.8 / 11.8 = 24/59 = 0.406780
    judge, human = from_confusion(HAND, [1, 2, 3])
    assert kappa(judge, human, weights="quadratic").value == pytest.approx(24 / 59)


def test_weighted_kappa_uses_the_full_scale_given_in_labels() -> None:
    # Observed scores 1, 2 and 5 only. Without labels, 5 sits next to 2 (positions 0, 1, 2);
    # with labels=range(1, 6) a 2-vs-5 miss is 3 steps away, and weighted kappa must see that.
    judge, human = from_confusion(HAND, [1, 2, 5])
    on_scale = kappa(judge, human, weights="quadratic", labels=range(1, 6)).value
    observed_only = kappa(judge, human, weights="quadratic").value
    assert observed_only == pytest.approx(24 / 59)
    assert on_scale == pytest.approx(
        cohen_kappa_score(judge, human, weights="quadratic", labels=[1, 2, 3, 4, 5])
    )
    assert on_scale != pytest.approx(observed_only)


def test_weighted_kappa_follows_the_order_of_string_labels() -> None:
    judge, human = from_confusion(HAND, ["low", "mid", "high"])
    ordered = kappa(judge, human, weights="linear", labels=["low", "mid", "high"]).value
    assert ordered == pytest.approx(16 / 41)  # same table as the 1..3 example
    # sorted alphabetically ("high" < "low" < "mid") the distances differ
    assert kappa(judge, human, weights="linear").value != pytest.approx(16 / 41)


# --- scikit-learn differential tests --------------------------------------------------------------


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_equals_sklearn_on_random_data(weights: str | None) -> None:
    rng = np.random.default_rng(7)
    for trial in range(40):
        k = int(rng.integers(2, 7))
        n = int(rng.integers(30, 150))
        human = rng.integers(1, k + 1, size=n)
        # a judge that is right about half the time, otherwise off by a random amount
        judge = np.where(rng.random(n) < 0.5, human, rng.integers(1, k + 1, size=n))
        ours = kappa(judge, human, weights=weights, n_resamples=5, seed=trial).value  # type: ignore[arg-type]
        theirs = cohen_kappa_score(judge, human, weights=weights)
        assert ours == pytest.approx(theirs, abs=1e-12)
        scale = list(range(1, k + 3))  # two unused points at the top of the scale
        ours = kappa(judge, human, weights=weights, labels=scale, n_resamples=5).value  # type: ignore[arg-type]
        theirs = cohen_kappa_score(judge, human, weights=weights, labels=scale)
        assert ours == pytest.approx(theirs, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=40),
    weights=st.sampled_from([None, "linear", "quadratic"]),
)
def test_kappa_equals_sklearn_including_degenerate_cases(
    pairs: list[tuple[int, int]], weights: str | None
) -> None:
    judge = [a for a, _ in pairs]
    human = [b for _, b in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SmallSampleWarning; sklearn's UndefinedMetricWarning
        ours = kappa(judge, human, weights=weights, n_resamples=2).value  # type: ignore[arg-type]
        theirs = cohen_kappa_score(judge, human, weights=weights)
    if math.isnan(theirs):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)
        assert -1.0 - 1e-12 <= ours <= 1.0 + 1e-12


# --- edge cases -----------------------------------------------------------------------------------


def test_one_label_on_both_sides_gives_nan_as_sklearn() -> None:
    # p_o = p_e = 1: chance-corrected agreement is 0/0.
    result = kappa(["A"] * 40, ["A"] * 40)
    assert math.isnan(result.value) and math.isnan(result.low) and math.isnan(result.high)
    assert agreement(["A"] * 40, ["A"] * 40).value == 1.0


def test_constant_judge_gives_zero_kappa() -> None:
    # judge says A always; humans vary: p_o = 0.75 = p_e, kappa = 0
    assert kappa(["A"] * 40, ["A"] * 30 + ["B"] * 10).value == pytest.approx(0.0)


def test_perfect_agreement_has_kappa_one_and_a_collapsed_interval() -> None:
    labels = ["A", "B"] * 20
    result = kappa(labels, labels)
    assert (result.value, result.low, result.high, result.n) == (1.0, 1.0, 1.0, 40)


def test_interval_skips_a_minority_of_undefined_resamples() -> None:
    # 39 A/A items and 1 A/B item: kappa = 0 (the judge is constant). About 36% of resamples
    # (0.975^40) miss the B item, where kappa is undefined; the interval comes from the rest,
    # in all of which kappa is exactly 0.
    result = kappa(["A"] * 40, ["A"] * 39 + ["B"])
    assert result.value == pytest.approx(0.0)
    assert result.low == pytest.approx(0.0) and result.high == pytest.approx(0.0)


def test_interval_is_nan_when_most_resamples_are_undefined() -> None:
    from judgecards.metrics.stats import bootstrap_ci

    # The statistic is defined only when the resample holds item 0 at least twice, which
    # happens in 1 - 0.9^10 - 10 * 0.1 * 0.9^9 = 1 - 0.349 - 0.387, about 26% of resamples.
    def defined_rarely(values: np.ndarray) -> float:
        return float(np.mean(values)) if np.count_nonzero(values == 0) >= 2 else math.nan

    result = bootstrap_ci(np.arange(10), statistic=defined_rarely, n_resamples=400)
    assert math.isnan(result.low) and math.isnan(result.high)


def test_estimates_carry_n_level_and_an_ordered_interval() -> None:
    judge, human = from_confusion(HAND, [1, 2, 3])
    result = kappa(judge, human, level=0.9, n_resamples=500)
    assert result.n == 30 and result.level == 0.9
    assert result.low <= result.value <= result.high
    again = kappa(judge, human, level=0.9, n_resamples=500)
    assert again == result  # seeded: the same interval every time


def test_numpy_inputs_work_like_lists() -> None:
    judge, human = from_confusion(HAND, [1, 2, 3])
    assert kappa(np.array(judge), np.array(human)) == kappa(judge, human)


@pytest.mark.parametrize("measure", [agreement, kappa])
def test_small_samples_warn(measure: object) -> None:
    with pytest.warns(SmallSampleWarning, match="29 items"):
        measure(["A", "B"] * 14 + ["A"], ["A", "B"] * 14 + ["B"])  # type: ignore[operator]


def test_thirty_items_do_not_warn() -> None:
    kappa(["A", "B"] * 15, ["A", "B"] * 15)  # warnings are errors in this suite


@pytest.mark.parametrize(
    ("judge", "human", "kwargs", "message"),
    [
        (["A"], ["A", "B"], {}, "differ in length"),
        (["A", None], ["A", "B"], {}, "judge label at position 1 is missing"),
        (["A", "B"], ["A", float("nan")], {}, "human label at position 1 is missing"),
        ([1, 6], [1, 2], {"labels": range(1, 6)}, "not in `labels`"),
        ([1, 2], [1, 2], {"labels": [1, 2, 2]}, "duplicates"),
        ([1, "2"], [1, 2], {}, "mixed types"),
        ([1, 2], [1, 2], {"weights": "cubic"}, "weights must be"),
    ],
)
def test_bad_input_is_refused(
    judge: list[object], human: list[object], kwargs: dict[str, object], message: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)
        with pytest.raises(ValueError, match=message):
            kappa(judge, human, **kwargs)  # type: ignore[arg-type]


def test_a_string_is_not_a_label_sequence() -> None:
    with pytest.raises(TypeError, match="not a string"):
        agreement("ABAB", "ABAB")


# --- bootstrap coverage ---------------------------------------------------------------------------


def test_bootstrap_intervals_cover_population_values_at_about_the_nominal_rate() -> None:
    # Population joint distribution of (human, judge), rows = human, columns = judge:
    P = np.array([[0.25, 0.05, 0.03], [0.06, 0.20, 0.05], [0.02, 0.06, 0.28]])
    human_share, judge_share = P.sum(axis=1), P.sum(axis=0)  # both (0.33, 0.31, 0.36)
    # True (population) kappa: p_o = 0.25 + 0.20 + 0.28 = 0.73,
    # p_e = 0.33^2 + 0.31^2 + 0.36^2 = 0.1089 + 0.0961 + 0.1296 = 0.3346,
    # kappa = (0.73 - 0.3346) / (1 - 0.3346) = 0.3954 / 0.6654 = 0.594229
    p_o = float(np.trace(P))
    p_e = float(human_share @ judge_share)
    true_kappa = (p_o - p_e) / (1 - p_e)
    assert true_kappa == pytest.approx(0.3954 / 0.6654)
    distance = np.subtract.outer(np.arange(3), np.arange(3)) ** 2
    expected = np.outer(human_share, judge_share)
    true_quadratic = 1 - (distance * P).sum() / (distance * expected).sum()

    rng = np.random.default_rng(2024)
    simulations, n = 200, 80
    covered = {"agreement": 0, "kappa": 0, "quadratic": 0}
    for i in range(simulations):
        cells = rng.choice(9, size=n, p=P.ravel())
        human, judge = cells // 3, cells % 3
        for name, estimate, truth in (
            ("agreement", agreement(judge, human, n_resamples=300, seed=i), p_o),
            ("kappa", kappa(judge, human, n_resamples=300, seed=i), true_kappa),
            (
                "quadratic",
                kappa(judge, human, weights="quadratic", n_resamples=300, seed=i),
                true_quadratic,
            ),
        ):
            covered[name] += estimate.low <= truth <= estimate.high
    # Nominal 0.95; with 200 simulations the standard error of the observed rate is ~0.015.
    for name, hits in covered.items():
        assert 0.88 <= hits / simulations <= 0.99, (name, hits / simulations)


# --- real data: LLMBar ----------------------------------------------------------------------------


def test_llmbar_order_consistency_kappa_matches_published_statistics(shared_data: Path) -> None:
    # evaluator_statistics.jsonl holds LLMBar's own statistics.json values. kappa_agreement is
    # Cohen's kappa between a judge's verdicts in the two answer orders, after LLMBar maps
    # verdict "1" -> 1 and anything else (including unparsed) -> 0 (data README section 2).
    llmbar = shared_data / "llmbar"
    with open(llmbar / "evaluator_verdicts.jsonl", encoding="utf-8") as f:
        verdicts = [json.loads(line) for line in f]
    with open(llmbar / "evaluator_statistics.jsonl", encoding="utf-8") as f:
        published = [json.loads(line) for line in f]
    runs: dict[tuple[str, str, str], list[dict[str, object]]] = defaultdict(list)
    for row in verdicts:
        runs[row["subset"], row["evaluator"], row["strategy"]].append(row)
    assert len(published) == 499
    for stats in published:
        rows = sorted(
            runs[stats["subset"], stats["evaluator"], stats["strategy"]], key=lambda r: r["index"]
        )  # type: ignore[arg-type,return-value]
        assert len(rows) == stats["n"]
        first = [1 if r["winner_swap_false"] == "1" else 0 for r in rows]
        swapped = [1 if r["winner_swap_true"] == "1" else 0 for r in rows]
        ours = kappa(first, swapped, n_resamples=1).value
        assert ours == pytest.approx(stats["kappa_agreement"], abs=1e-12), stats
    # e.g. GPT-4 / Vanilla on LLMBar/Natural: 95% of verdicts agree across orders, kappa 0.898
    gpt4 = runs["LLMBar/Natural", "GPT-4", "Vanilla"]
    first = [1 if r["winner_swap_false"] == "1" else 0 for r in gpt4]
    swapped = [1 if r["winner_swap_true"] == "1" else 0 for r in gpt4]
    assert kappa(first, swapped).value == pytest.approx(0.897708674304419)
    assert agreement(first, swapped).value == pytest.approx(0.95)
