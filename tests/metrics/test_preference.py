"""Win-rate = wins / (wins + losses)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecards.metrics import win_rate


def test_win_rate_drops_ties() -> None:
    # 6 wins, 2 losses, 4 ties: 6 / (6 + 2) = 0.75
    result = win_rate(["win"] * 6 + ["loss"] * 2 + ["tie"] * 4)
    assert float(result) == 0.75
    assert (result.wins, result.losses, result.ties) == (6, 2, 4)
    assert result.rate.n == 8
    assert result.rate.low < 0.75 < result.rate.high
    assert str(result).endswith("(6 W / 2 L / 4 T)")


def test_only_ties_is_undefined() -> None:
    assert math.isnan(float(win_rate(["tie", "tie"])))
    with pytest.raises(ValueError, match="'win', 'loss' or 'tie'"):
        win_rate(["A"])  # type: ignore[list-item]


@given(st.lists(st.sampled_from(["win", "loss", "tie"]), min_size=1, max_size=40))
def test_bounds_and_more_wins_help(outcomes: list[str]) -> None:
    result = win_rate(outcomes, n_resamples=50)  # type: ignore[arg-type]
    if result.wins + result.losses:
        assert 0.0 <= float(result) <= 1.0
        more = win_rate([*outcomes, "win"], n_resamples=10)  # type: ignore[list-item]
        assert float(more) >= float(result)
