"""Paired bootstrap and McNemar's test for comparing two systems on the same items."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecards.metrics import mcnemar, paired_bootstrap


def test_paired_bootstrap_cancels_item_difficulty() -> None:
    rng = np.random.default_rng(0)
    difficulty = rng.uniform(0, 1, size=200)  # items vary a lot ...
    a = difficulty
    b = difficulty - 0.05  # ... but B is exactly 0.05 worse on every item
    result = paired_bootstrap(a, b)
    assert result.difference.value == pytest.approx(0.05)
    # Pairing removes the item variance: every resample gives the same difference.
    assert (result.difference.low, result.difference.high) == pytest.approx((0.05, 0.05))
    assert not result.inside_noise
    assert result.note.startswith("A is higher")
    assert (result.a, result.b) == pytest.approx((a.mean(), b.mean()))


def test_paired_bootstrap_reports_noise() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, size=60).astype(float)
    b = np.where(rng.uniform(size=60) < 0.1, 1 - a, a)  # flip 10% of the items at random
    result = paired_bootstrap(a, b, n_resamples=500)
    assert result.difference.low <= 0.0 <= result.difference.high
    assert result.inside_noise
    assert "inside the noise" in str(result)


def test_paired_bootstrap_custom_statistic_and_checks() -> None:
    result = paired_bootstrap(
        [1.0, 2.0, 3.0, 10.0], [1.0, 2.0, 3.0, 4.0], statistic=np.median, n_resamples=200
    )
    assert result.difference.value == 0.0  # medians 2.5 and 2.5
    with pytest.raises(ValueError, match="equally long"):
        paired_bootstrap([1.0, 2.0], [1.0])
    empty = paired_bootstrap([], [])
    assert math.isnan(empty.difference.value) and empty.inside_noise


def test_mcnemar_exact_hand_value() -> None:
    # A right & B wrong on 1 item, B right & A wrong on 7: discordant 8 < 25 -> exact binomial.
    # p = 2 * P(X <= 1 | n=8, 1/2) = 2 * (C(8,0) + C(8,1)) / 2^8 = 2 * 9 / 256 = 0.0703125
    a = [1] * 1 + [0] * 7 + [1] * 10 + [0] * 5
    b = [0] * 1 + [1] * 7 + [1] * 10 + [0] * 5
    result = mcnemar(a, b)
    assert (result.only_a, result.only_b, result.both_right, result.both_wrong) == (1, 7, 10, 5)
    assert result.method == "exact" and result.statistic == 1.0
    assert result.p_value == pytest.approx(18 / 256, rel=1e-12)
    assert not result.significant and "inside the noise" in result.note
    assert result.n == 23


def test_mcnemar_chi_squared_hand_value() -> None:
    # only_a = 10, only_b = 25: discordant 35 >= 25 -> chi2 with continuity correction,
    # (|10 - 25| - 1)^2 / 35 = 196 / 35 = 5.6; p = P(chi2_1 > 5.6) = erfc(sqrt(5.6 / 2)) = 0.01796
    a = [True] * 10 + [False] * 25 + [True] * 40
    b = [False] * 10 + [True] * 25 + [True] * 40
    result = mcnemar(a, b)
    assert result.method == "chi2"
    assert result.statistic == pytest.approx(5.6)
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(2.8)), rel=1e-12)
    assert result.significant and result.note.startswith("B is better")
    # Forcing the exact test on the same counts: 2 * P(X <= 10 | n=35, 1/2).
    exact = mcnemar(a, b, method="exact")
    assert exact.p_value == pytest.approx(
        2 * sum(math.comb(35, i) for i in range(11)) / 2**35, rel=1e-12
    )


def test_mcnemar_switches_at_25_discordant_items() -> None:
    def counts(only_a: int, only_b: int) -> tuple[list[bool], list[bool]]:
        return [True] * only_a + [False] * only_b, [False] * only_a + [True] * only_b

    assert mcnemar(*counts(10, 14)).method == "exact"
    assert mcnemar(*counts(10, 15)).method == "chi2"
    none = mcnemar([True, False], [True, False])
    assert (none.p_value, none.statistic) == (1.0, 0.0)
    with pytest.raises(ValueError, match="booleans"):
        mcnemar([2, 0], [1, 0])
    with pytest.raises(ValueError, match="method"):
        mcnemar([1], [0], method="z")  # type: ignore[arg-type]


@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=60))
def test_mcnemar_p_value_is_a_probability_and_symmetric(pairs: list[tuple[bool, bool]]) -> None:
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    forward, backward = mcnemar(a, b), mcnemar(b, a)
    assert 0.0 <= forward.p_value <= 1.0
    assert forward.p_value == pytest.approx(backward.p_value)
    assert (forward.only_a, forward.only_b) == (backward.only_b, backward.only_a)
