"""The pass/fail view: TPR/TNR with intervals, the readiness line, Rogan–Gladen and its coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calibration import judge_rates, rogan_gladen
from tests.builders import LLMBAR_SUBSETS, llmbar_set


def _wilson(k: int, n: int, z: float = stats.norm.ppf(0.975)) -> tuple[float, float]:
    # Wilson (1927), written out: centre and half-width of the score interval.
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return centre - half, centre + half


def _labels(tp: int, fn: int, tn: int, fp: int) -> tuple[list[str], list[str]]:
    human = ["fail"] * (tp + fn) + ["pass"] * (tn + fp)
    judge = ["fail"] * tp + ["pass"] * fn + ["pass"] * tn + ["fail"] * fp
    return human, judge


def test_tpr_and_tnr_with_wilson_and_exact_intervals() -> None:
    human, judge = _labels(tp=43, fn=7, tn=91, fp=9)
    rates = judge_rates(human, judge, positive="fail")
    assert (rates.tpr.value, rates.tpr.n) == (43 / 50, 50)
    assert (rates.tnr.value, rates.tnr.n) == (91 / 100, 100)
    assert (rates.tpr.low, rates.tpr.high) == pytest.approx(_wilson(43, 50))
    assert (rates.tnr.low, rates.tnr.high) == pytest.approx(_wilson(91, 100))
    assert rates.negative == "pass" and rates.informative
    exact = judge_rates(human, judge, positive="fail", method="exact", alpha=0.1)
    assert exact.tpr.low == pytest.approx(stats.beta.ppf(0.05, 43, 8))
    assert exact.tpr.high == pytest.approx(stats.beta.ppf(0.95, 44, 7))
    assert exact.tpr.level == pytest.approx(0.9)


def test_readiness_line_in_plain_words_with_the_users_thresholds() -> None:
    human, judge = _labels(tp=43, fn=7, tn=91, fp=9)
    rates = judge_rates(human, judge, positive="fail")
    line = rates.readiness()
    assert line.startswith("of the answers people failed, the judge failed 86% [74, 93]")
    assert "of the answers people passed, it passed 91% [84, 95]" in line
    # The lower bounds decide: 74% ≥ 70% and 84% ≥ 80% pass; 74% < 80% does not.
    assert "— ready: TPR ≥ 70% and TNR ≥ 80%" in rates.readiness(min_tpr=0.7, min_tnr=0.8)
    assert "— not ready: TPR ≥ 80%" in rates.readiness(min_tpr=0.8)


def test_pairwise_verdicts_read_as_said() -> None:
    rates = judge_rates(["A", "B", "A", "B"], ["A", "B", "B", "B"], positive="A")
    assert rates.readiness().startswith("of the answers people said A, the judge said A 50%")


def test_more_than_two_values_or_missing_verdicts_are_refused() -> None:
    with pytest.raises(ValueError, match="two-valued verdict"):
        judge_rates(["match", "partial_match", "mismatch"], ["match"] * 3, positive="match")
    with pytest.raises(ValueError, match=r"judge\[1\] is missing"):
        judge_rates(["pass", "fail"], ["pass", None], positive="fail")
    with pytest.raises(ValueError, match="equally long"):
        judge_rates(["pass"], [], positive="fail")


def test_rogan_gladen_point_estimate_is_the_formula() -> None:
    human, judge = _labels(tp=40, fn=10, tn=45, fp=5)
    unlabeled = ["fail"] * 300 + ["pass"] * 600
    e = rogan_gladen(human, judge, unlabeled, positive="fail")
    p = (45 + 300) / 1000
    se, sp = 40 / 50, 45 / 50
    assert e.value == pytest.approx((p + sp - 1) / (se + sp - 1))
    assert e.n == 1000 and e.low < e.value < e.high and e.level == 0.95
    # Deterministic: the Monte Carlo has a fixed seed.
    assert rogan_gladen(human, judge, unlabeled, positive="fail") == e


def test_rogan_gladen_refuses_an_uninformative_judge() -> None:
    human, judge = _labels(tp=20, fn=30, tn=25, fp=25)  # TPR 0.4 + TNR 0.5 ≤ 1
    with pytest.raises(ValueError, match=r"TPR \+ TNR = 0.900 ≤ 1"):
        rogan_gladen(human, judge, ["pass"] * 10, positive="fail")
    with pytest.raises(ValueError, match="both kinds"):
        rogan_gladen(["pass"] * 5, ["pass"] * 5, ["fail"], positive="fail")


def test_rogan_gladen_covers_the_true_share_on_llmbar() -> None:
    # GPT-4's recorded verdict (outputs as given) as the judge and LLMBar's gold as people, on
    # all 419 Natural + Adversarial pairs: 200 seeded draws of 50 labels, the rest unlabelled.
    data = llmbar_set(LLMBAR_SUBSETS, "Vanilla")
    said = data.judge("GPT-4")[:, 0]
    keep = said > 0
    gold, said = data.gold[keep], said[keep]
    truth = float((gold == 1).mean())
    rng = np.random.default_rng(3)
    covered, widths, reps = 0, [], 200
    for _ in range(reps):
        labelled = np.zeros(len(gold), dtype=bool)
        labelled[rng.choice(len(gold), 50, replace=False)] = True
        e = rogan_gladen(
            gold[labelled].tolist(), said[labelled].tolist(), said[~labelled].tolist(), positive=1
        )
        covered += e.low <= truth <= e.high
        widths.append(e.high - e.low)
    assert covered / reps >= 0.93
    assert np.mean(widths) < 0.6  # informative, not the whole [0, 1]
