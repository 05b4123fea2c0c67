"""Selective thresholds by fixed-sequence testing: the arithmetic, the stopping rule, real data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calibration.stats import selective_threshold
from tests.builders import llmbar, mt_bench


def _one_sided_upper(k: int, n: int, delta: float) -> float:
    # The two-sided exact interval at level 1 − 2δ has the one-sided 1 − δ bound as its top.
    return float(stats.binomtest(k, n).proportion_ci(1 - 2 * delta, method="exact").high)


def test_bound_is_the_exact_binomial_bound() -> None:
    # 60 items at confidence 1.0 with 3 wrong, 40 at 0.5 with 14 wrong.
    confidence = [1.0] * 60 + [0.5] * 40
    agrees = [False] * 3 + [True] * 57 + [False] * 14 + [True] * 26
    result = selective_threshold(confidence, agrees, target=0.85, delta=0.1)
    first, second = result.tests
    assert (first.threshold, first.trusted, first.disagreements) == (1.0, 60, 3)
    assert first.agreement_bound == pytest.approx(1 - _one_sided_upper(3, 60, 0.1))
    assert first.passed  # 1 − 0.1066… ≥ 0.85
    assert (second.trusted, second.disagreements) == (100, 17)
    assert second.agreement_bound == pytest.approx(1 - _one_sided_upper(17, 100, 0.1))
    assert not second.passed  # 0.83 observed: cannot be shown ≥ 0.85
    assert result.threshold == 1.0
    assert result.coverage == pytest.approx(0.6)
    assert result.agreement == pytest.approx(57 / 60)
    assert result.agreement_bound == first.agreement_bound >= 0.85
    assert result.trusts([1.0, 0.99, 0.5, 2.0]).tolist() == [True, False, False, True]


def test_scan_stops_at_the_first_failure() -> None:
    # The surest items are the worst: a lower threshold would pass on the pooled items, but
    # fixed-sequence testing never tries it (trying it would spend the error budget twice).
    confidence = [0.9] * 40 + [0.6] * 400
    agrees = [False] * 20 + [True] * 20 + [True] * 400
    result = selective_threshold(confidence, agrees, target=0.9, delta=0.05)
    assert len(result.tests) == 1 and not result.tests[0].passed
    assert result.threshold is None and not result.found
    assert result.coverage == 0.0 and math.isnan(result.agreement)
    assert not result.trusts([0.9, 0.95, 0.1]).any()
    assert "no threshold" in str(result)
    assert result.to_dict()["agreement"] is None


def test_continuous_confidence_skips_thresholds_too_small_to_pass() -> None:
    # With δ = 0.1 and target 0.9, fewer than 22 items cannot pass even with no error
    # (0.9**21 > 0.1 ≥ 0.9**22): the scan starts at the 22nd most confident item instead of
    # failing on the single most confident one.
    confidence = np.linspace(0, 1, 200)
    result = selective_threshold(confidence, [True] * 200, target=0.9, delta=0.1)
    assert result.tests[0].trusted == 22
    assert result.threshold == 0.0 and result.coverage == 1.0
    assert len(result.tests) == 179 and all(t.passed for t in result.tests)


def test_thresholds_fixed_in_advance_are_the_only_ones_tried() -> None:
    rng = np.random.default_rng(1)
    confidence = rng.uniform(size=500)
    agrees = rng.uniform(size=500) < 0.5 + 0.5 * confidence  # surer is more often right
    result = selective_threshold(
        confidence, agrees, target=0.8, delta=0.1, thresholds=[0.9, 0.7, 0.5, 0.3, 0.1]
    )
    assert [t.threshold for t in result.tests][:2] == [0.9, 0.7]
    assert result.threshold in (0.9, 0.7, 0.5, 0.3, 0.1)
    assert agrees[confidence >= result.threshold].mean() >= 0.8


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"confidence": [1, 2], "agrees": [True]}, "equally long"),
        ({"confidence": [], "agrees": []}, "at least one"),
        ({"confidence": [1, float("nan")], "agrees": [1, 0]}, r"confidence\[1\] is nan"),
        ({"confidence": [1, 2], "agrees": [1, 2]}, r"agrees\[1\] is 2"),
        ({"confidence": [1, 2], "agrees": [1, 0], "target": 1.0}, "target"),
        ({"confidence": [1, 2], "agrees": [1, 0], "delta": 0.0}, "delta"),
        ({"confidence": [1, 2], "agrees": [1, 0], "thresholds": [0.5, math.inf]}, "thresholds"),
    ],
)
def test_bad_input_is_refused(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"target": 0.8, "delta": 0.1, **kwargs}
    with pytest.raises(ValueError, match=message):
        selective_threshold(**arguments)  # type: ignore[arg-type]


def _splits(confidence: np.ndarray, agrees: np.ndarray, target: float, delta: float):  # type: ignore[no-untyped-def]
    """200 random halves: calibrate on one, check agreement on the trusted part of the other.

    Returns the share of splits where the guarantee failed on the test half, the share where a
    threshold was found, and the mean test coverage.
    """
    rng = np.random.default_rng(0)
    failed, found, coverage = 0, 0, []
    for _ in range(200):
        order = rng.permutation(len(confidence))
        calibrate, test = order[: len(order) // 2], order[len(order) // 2 :]
        result = selective_threshold(
            confidence[calibrate], agrees[calibrate], target=target, delta=delta
        )
        trusted = result.trusts(confidence[test])
        coverage.append(trusted.mean())
        if result.found:
            found += 1
            failed += bool(trusted.any() and agrees[test][trusted].mean() < target)
    return failed / 200, found / 200, float(np.mean(coverage))


@pytest.mark.parametrize("target", [0.8, 0.85])
def test_llmbar_judges_keep_the_guarantee(target: float) -> None:
    # Confidence from both-order consistency: 1 when the two orders agree, else 0.5; an
    # inconsistent verdict is a tie, which disagrees with LLMBar's gold (no ties).
    data = llmbar()
    delta = 0.1
    for judge in data.judges:
        verdicts = data.judge(judge)
        consistent = verdicts[:, 0] == verdicts[:, 1]
        agrees = consistent & (verdicts[:, 0] == data.gold)
        failed, found, coverage = _splits(np.where(consistent, 1.0, 0.5), agrees, target, delta)
        assert failed <= delta, (judge, failed)
        if judge == "GPT-4" and target == 0.8:
            # 93% of its verdicts are consistent and 87% of those are right.
            assert found >= 0.9 and coverage > 0.85, (found, coverage)
        if judge in ("ChatGPT", "LLaMA2"):
            # Adversarial items fool them consistently: consistent verdicts are below chance.
            assert found == 0.0, judge


def test_mt_bench_gpt4_keeps_the_guarantee() -> None:
    # Human ties dropped (the MT-Bench paper's setup S2); GPT-4's confidence from consistency.
    data = mt_bench()
    keep = data.human != "tie"
    agrees = (data.gpt4 == data.human)[keep]
    confidence = np.where(data.inconsistent[keep], 0.5, 1.0)
    failed, found, coverage = _splits(confidence, agrees, target=0.8, delta=0.1)
    assert failed <= 0.1
    assert found >= 0.9 and coverage > 0.8, (found, coverage)
