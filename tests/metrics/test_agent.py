"""Conversation pass/fail, pass@k / pass^k reliability, readiness and tool correctness."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecards.metrics import (
    ToolCall,
    ToolWeights,
    conversation_pass,
    conversation_reliability,
    mean_tool_correctness,
    readiness,
    tool_correctness,
)
from judgecards.metrics.agent import DEFAULT_READINESS, ReadinessLevel, Reliability


def test_conversation_passes_only_if_every_turn_does() -> None:
    assert conversation_pass([0.9, 0.7, 1.0])  # 0.7 >= tau = 0.7
    assert not conversation_pass([0.9, 0.69, 1.0])
    assert conversation_pass([0.6, 0.65], threshold=0.6)
    assert not conversation_pass([0.9, math.nan])
    with pytest.raises(ValueError, match="at least one"):
        conversation_pass([])


@pytest.mark.parametrize(
    ("k", "at", "hat"),
    [
        # p = 2/3: pass@k = 1 - (1/3)^k, pass^k = (2/3)^k
        (2, 1 - 1 / 9, 4 / 9),  # 0.889, 0.444
        (3, 1 - 1 / 27, 8 / 27),  # 0.963, 0.296
        (4, 1 - 1 / 81, 16 / 81),  # 0.988, 0.198 (16/81 = 0.19753)
        (5, 1 - 1 / 243, 32 / 243),  # 0.996, 0.132 (32/243 = 0.13169)
    ],
)
def test_conversation_level_pass_k_for_p_two_thirds(k: int, at: float, hat: float) -> None:
    conversations = [[0.9, 0.8], [1.0], [0.95, 0.4]]  # passes: yes, yes, no -> p = 2/3
    reliability = conversation_reliability(conversations)
    assert (reliability.successes, reliability.trials) == (2, 3)
    assert reliability.pass_at(k).value == pytest.approx(at, rel=1e-15)
    assert reliability.pass_hat(k).value == pytest.approx(hat, rel=1e-15)
    expected = {2: (0.889, 0.444), 3: (0.963, 0.296), 4: (0.988, 0.198), 5: (0.996, 0.132)}[k]
    assert (
        round(reliability.pass_at(k).value, 3),
        round(reliability.pass_hat(k).value, 3),
    ) == expected


def test_frequentist_interval_is_wilson() -> None:
    # c = 8, n = 10, z = 1.959964: centre (0.8 + z^2/20) / (1 + z^2/10) = 0.716740,
    # half-width z * sqrt(0.016 + z^2/400) / (1 + z^2/10) = 0.226580 -> [0.4902, 0.9433].
    rate = Reliability(successes=8, trials=10).success_rate
    assert (round(rate.low, 4), round(rate.high, 4)) == (0.4902, 0.9433)
    assert rate.value == 0.8 and rate.n == 10
    # Intervals of the derived quantities are the transformed endpoints.
    hat3 = Reliability(successes=8, trials=10).pass_hat(3)
    assert (hat3.low, hat3.high) == pytest.approx((rate.low**3, rate.high**3))
    # All successes: the upper bound is exactly 1.
    assert Reliability(successes=5, trials=5).success_rate.high == 1.0
    assert Reliability(successes=0, trials=5).pass_at(3).low == 0.0


def test_bayesian_mode() -> None:
    # Posterior Beta(8 + 1, 2 + 1) = Beta(9, 3): E[p] = 9/12 = 0.75,
    # E[p^3] = (9*10*11) / (12*13*14) = 990/2184 = 0.453297,
    # E[(1-p)^2] = (3*4) / (12*13) = 12/156 -> pass@2 = 1 - 0.076923 = 0.923077.
    exact = Reliability(successes=8, trials=10, mode="bayesian")
    assert exact.success_rate.value == pytest.approx(0.75)
    assert exact.pass_hat(3).value == pytest.approx(990 / 2184)
    assert exact.pass_at(2).value == pytest.approx(1 - 12 / 156)
    sampled = Reliability(
        successes=8, trials=10, mode="bayesian", method="sampling", draws=200_000, seed=1
    )
    for k in (1, 3):
        a, b = exact.pass_hat(k), sampled.pass_hat(k)
        assert b.value == pytest.approx(a.value, abs=3e-3)
        assert (b.low, b.high) == pytest.approx((a.low, a.high), abs=5e-3)
    # Equal-tailed: 2.5% of posterior draws fall below the lower bound.
    draws = np.random.default_rng(5).beta(9, 3, size=200_000)
    assert np.mean(draws < exact.success_rate.low) == pytest.approx(0.025, abs=2e-3)
    # A 50% credible interval sits inside the 95% one.
    narrow = Reliability(successes=8, trials=10, mode="bayesian", level=0.5).success_rate
    assert exact.success_rate.low < narrow.low < narrow.high < exact.success_rate.high


def test_reliability_checks() -> None:
    with pytest.raises(ValueError, match="trials"):
        Reliability(successes=0, trials=0)
    with pytest.raises(ValueError, match="successes"):
        Reliability(successes=4, trials=3)
    with pytest.raises(ValueError, match="mode"):
        Reliability(successes=1, trials=3, mode="bootstrap")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be"):
        Reliability(successes=1, trials=3).pass_at(0)


def test_default_readiness_table() -> None:
    assert [row.name for row in DEFAULT_READINESS] == [
        "ready",
        "ready_with_oversight",
        "inconsistent",
        "prototype",
        "not_ready",
    ]
    assert readiness(0.95, 0.85).name == "ready"
    assert readiness(0.92, 0.65).name == "ready_with_oversight"  # the 0.6-0.8 pass^3 band
    assert readiness(0.95, 0.30).name == "inconsistent"  # high pass@1, very low pass^3
    assert readiness(0.70, 0.34).name == "prototype"
    assert readiness(0.20, 0.01).name == "not_ready"
    assert readiness(0.40, 0.90).name == "not_ready"  # impossible pair: decided by pass@1
    # p = 2/3 conversation-level: pass@1 0.667, pass^3 0.296 -> prototype.
    assert Reliability(successes=2, trials=3).readiness().name == "prototype"
    # Random flakiness at p = 0.9 (p^3 = 0.729) is not "ready"; p = 0.93 (p^3 = 0.804) is.
    assert Reliability(successes=90, trials=100).readiness().name == "ready_with_oversight"
    assert Reliability(successes=93, trials=100).readiness().name == "ready"


def test_custom_readiness_table() -> None:
    table = [ReadinessLevel("ship", 0.5, 0.1, "lenient"), ReadinessLevel("hold", 0.0, 0.0)]
    assert readiness(0.6, 0.2, table=table).name == "ship"
    assert readiness(0.6, 0.05, table=table).name == "hold"
    with pytest.raises(ValueError, match="last row"):
        readiness(0.6, 0.2, table=table[:1])
    with pytest.raises(ValueError, match="pass_at_1"):
        readiness(1.2, 0.2)


unit = st.floats(0.0, 1.0)


@given(a1=unit, b1=unit, a2=unit, b2=unit)
def test_readiness_covers_the_square_and_is_monotone(
    a1: float, b1: float, a2: float, b2: float
) -> None:
    rank = [row.name for row in DEFAULT_READINESS]
    level = rank.index(readiness(a1, b1).name)  # never raises: no gaps
    # Improving both numbers never gives a worse level.
    better = rank.index(readiness(max(a1, a2), max(b1, b2)).name)
    assert better <= level


@given(c=st.integers(0, 40), extra=st.integers(0, 40), k=st.integers(1, 8))
def test_reliability_bounds(c: int, extra: int, k: int) -> None:
    for mode in ("frequentist", "bayesian"):
        trials = max(c + extra, 1)
        r = Reliability(successes=c, trials=trials, mode=mode)  # type: ignore[arg-type]
        at, hat = r.pass_at(k), r.pass_hat(k)
        for e in (at, hat):
            assert 0.0 <= e.low <= e.value + 1e-12 and e.value <= e.high + 1e-12 and e.high <= 1.0
        assert hat.value <= r.success_rate.value + 1e-12 <= at.value + 2e-12
        assert r.pass_hat(k + 1).value <= hat.value + 1e-12
        assert r.pass_at(k + 1).value >= at.value - 1e-12


EXPECTED = [
    ToolCall("search", {"q": "paris weather"}),
    ToolCall("book", {"city": "Paris", "date": "2024-05-01"}),
]


def test_tool_correctness_worked_example() -> None:
    called = [
        ToolCall("search", {"q": "paris weather"}, result={"temp": 21, "summary": "sunny"}),
        {
            "name": "book",
            "arguments": '{"city": "Paris", "date": "2024-05-02"}',
            "result": "Booking confirmed: #A17",
        },
        ToolCall("search", {"q": "paris hotels"}),
    ]
    answer = "It will be sunny, 21 degrees. Booking confirmed: #A17."
    result = tool_correctness(EXPECTED, called, final_answer=answer, ordered=True)
    # selection: expected {search, book}, called {search x2, book}: |∩| = 2, |∪| = 3 -> 2/3
    assert result.selection == pytest.approx(2 / 3)
    # parameters: 3 expected keys; q matches, city matches, date differs -> 2/3
    assert result.parameters == pytest.approx(2 / 3)
    # sequence: positions 0 and 1 hold search and book as expected -> 1.0
    assert result.sequence == 1.0
    # utilisation: both calls with results are quoted in the answer -> 2/2
    assert result.utilisation == 1.0
    # score = 0.25 * (2/3 + 2/3 + 1 + 1) = 0.8333 < threshold 1.0
    assert result.score == pytest.approx(0.25 * (2 / 3 + 2 / 3 + 2))
    assert not result.passed


def test_perfect_turn_passes_the_default_threshold() -> None:
    called = [
        ToolCall("search", {"q": "paris weather", "extra": 1}),
        ToolCall("book", {"city": "Paris", "date": "2024-05-01"}),
    ]
    result = tool_correctness(EXPECTED, called, ordered=True)
    assert (result.selection, result.parameters, result.sequence, result.utilisation) == (
        1.0,
        1.0,
        1.0,
        1.0,
    )
    assert result.score == 1.0 and result.passed
    # No tools expected and none called: nothing to get wrong.
    assert tool_correctness([], []).passed


def test_order_only_counts_when_asked() -> None:
    swapped = [
        ToolCall("book", {"city": "Paris", "date": "2024-05-01"}),
        ToolCall("search", {"q": "paris weather"}),
    ]
    assert tool_correctness(EXPECTED, swapped).sequence == 1.0
    assert tool_correctness(EXPECTED, swapped, ordered=True).sequence == 0.0
    # A missing call: selection 1/2, its parameters lost, position 0 still right.
    partial = tool_correctness(EXPECTED, EXPECTED[:1], ordered=True)
    assert (partial.selection, partial.parameters, partial.sequence) == (
        0.5,
        pytest.approx(1 / 3),
        0.5,
    )


def test_utilisation_heuristic_and_override() -> None:
    called = [ToolCall("price", {}, result={"eur": 210, "ok": True})]
    assert tool_correctness([], called, final_answer="It costs 210 euros.").utilisation == 1.0
    assert tool_correctness([], called, final_answer="It costs 2100 euros.").utilisation == 0.0
    assert (
        tool_correctness([], called, final_answer="True, it is cheap.").utilisation == 0.0
    )  # bools skipped
    assert tool_correctness([], called).utilisation == 1.0  # no answer given: nothing to check
    assert tool_correctness([], called, final_answer="x", utilisation=0.5).utilisation == 0.5
    spaced = [ToolCall("lookup", {}, result="New   York City")]
    assert tool_correctness([], spaced, final_answer="in new york city!").utilisation == 1.0


def test_weights_and_threshold() -> None:
    weights = ToolWeights(selection=0.4, parameters=0.3, sequence=0.2, utilisation=0.1)
    result = tool_correctness(EXPECTED, EXPECTED[:1], weights=weights, threshold=0.5)
    # 0.4 * 0.5 + 0.3 * (1/3) + 0.2 * 1 (unordered) + 0.1 * 1 = 0.2 + 0.1 + 0.2 + 0.1 = 0.6
    assert result.score == pytest.approx(0.6) and result.passed
    with pytest.raises(ValueError, match="sum to 1"):
        ToolWeights(selection=0.5)
    with pytest.raises(ValueError, match="non-negative"):
        ToolWeights(selection=-0.25, parameters=0.75)
    with pytest.raises(TypeError, match="name"):
        tool_correctness([{"arguments": {}}], [])


def test_mean_tool_correctness() -> None:
    results = [tool_correctness(EXPECTED, EXPECTED), tool_correctness(EXPECTED, EXPECTED[:1])]
    summary = mean_tool_correctness(results, n_resamples=100)
    assert summary.pass_rate.value == 0.5
    assert summary.selection.value == pytest.approx((1.0 + 0.5) / 2)
    assert summary.score.n == 2


names = st.lists(st.sampled_from(["a", "b", "c"]), max_size=5)


@given(expected=names, called=names, ordered=st.booleans())
def test_tool_scores_are_bounded(expected: list[str], called: list[str], ordered: bool) -> None:
    result = tool_correctness(
        [ToolCall(n, {"x": 1}) for n in expected],
        [ToolCall(n, {"x": 1}) for n in called],
        ordered=ordered,
    )
    for value in (
        result.selection,
        result.parameters,
        result.sequence,
        result.utilisation,
        result.score,
    ):
        assert 0.0 <= value <= 1.0 + 1e-12
    # Perfect selection means the same multiset, hence all parameters found.
    if result.selection == 1.0:
        assert result.parameters == 1.0
    assert result.passed == (
        expected == called or (not ordered and sorted(expected) == sorted(called))
    )
