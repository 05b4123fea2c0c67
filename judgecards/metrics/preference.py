"""Win-rate of one system against another from pairwise outcomes.

Each comparison is ``"win"``, ``"loss"`` or ``"tie"`` from the point of view of the system being
rated. Win-rate is ``wins / (wins + losses)``: ties are dropped, so 0.5 means "as good as the
other system" however many ties there were. (`judgecards.pairwise` reports the same
number next to the ties-as-half variant for a full A/B report.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = ["Outcome", "WinRate", "win_rate"]

Outcome = Literal["win", "loss", "tie"]


@dataclass(frozen=True)
class WinRate:
    """Win-rate with the counts behind it.

    Attributes:
        wins: comparisons won.
        losses: comparisons lost.
        ties: comparisons tied (not part of the rate).
        rate: ``wins / (wins + losses)`` with a bootstrap interval over the decisive
            comparisons; ``nan`` when there is none.
    """

    wins: int
    losses: int
    ties: int
    rate: Estimate

    def __float__(self) -> float:
        return self.rate.value

    def __str__(self) -> str:
        return f"win-rate {self.rate} ({self.wins} W / {self.losses} L / {self.ties} T)"


def win_rate(
    outcomes: Iterable[Outcome],
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> WinRate:
    """Win-rate = wins / (wins + losses), ties excluded, with a bootstrap interval.

    The per-example metric is 1 for a win and 0 for a loss; ties carry no information about
    the rate and are dropped before resampling. Example: 6 wins, 2 losses, 4 ties gives 6/8 =
    0.75.

    Args:
        outcomes: ``"win"``, ``"loss"`` or ``"tie"`` per comparison.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        A `WinRate`; ``float(result)`` is the rate.

    Raises:
        ValueError: for any other outcome value.
    """
    counts = {"win": 0, "loss": 0, "tie": 0}
    for outcome in outcomes:
        if outcome not in counts:
            raise ValueError(f"outcomes must be 'win', 'loss' or 'tie', got {outcome!r}")
        counts[outcome] += 1
    wins, losses = counts["win"], counts["loss"]
    decisive = [1.0] * wins + [0.0] * losses
    if decisive:
        rate = bootstrap_ci(decisive, level=level, n_resamples=n_resamples, seed=seed)
    else:
        rate = Estimate(math.nan, math.nan, math.nan, level, 0)
    return WinRate(wins, losses, counts["tie"], rate)
