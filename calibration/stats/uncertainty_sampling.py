"""Sampling where the judge is least sure, with inclusion probabilities known exactly.

A uniform spot-check spends most labels on items the judge is confident about and usually right
on. Oversampling the uncertain ones finds more disagreements per label, but a naive average over
such a sample is biased towards the hard items. The cure is to know each item's probability of
being drawn, ``π_i``, and weight every labelled item by ``1/π_i`` (Horvitz–Thompson): agreement,
kappa (`calibration.stats.agreement_measures`'s ``sample_weight``) and the corrected estimates
(`calibration.corrected_mean`'s ``weights``) then estimate the population's values again.

* `inclusion_probabilities` — ``π_i ∝ floor + (1 − floor)·(1 − confidence_i)``, scaled to sum to
  ``n`` and capped at 1 (an item above 1 is taken for certain and the rest rescaled). The floor
  keeps every item's ``π_i > 0`` — without it the confident items could never be checked and
  the estimate would not be unbiased — and bounds the oversampling at ``1/floor`` (5× for the
  default 0.2).
* `draw_pps` — systematic probability-proportional-to-size sampling over a random order: exactly
  ``n`` items, each drawn with probability exactly ``π_i`` (Madow, 1949).

Confidence in [0, 1] comes from what the results already carry (`calibration.stats.confidence`): the
G-Eval probability of the judge's own scores; the both-order consistency of a pairwise verdict;
the winning share of a jury's vote. When a judge returned no logprobs every item has the same
confidence and the sample is uniform.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["DEFAULT_FLOOR", "draw_pps", "inclusion_probabilities"]

DEFAULT_FLOOR = 0.2


def inclusion_probabilities(
    confidence: Sequence[float] | NDArray[np.float64], n: int, *, floor: float = DEFAULT_FLOOR
) -> NDArray[np.float64]:
    """Each item's probability of being drawn into a sample of ``n``, higher where less sure.

    Args:
        confidence: per item, how sure the judge was, in [0, 1] (clipped into it).
        n: sample size; ``n`` ≥ the number of items gives every item probability 1.
        floor: relative size of a fully confident item against a fully unsure one, in (0, 1].

    Returns:
        ``π`` in (0, 1], summing to ``min(n, len(confidence))``.

    Raises:
        ValueError: no items, ``n`` < 1, a NaN confidence, or ``floor`` outside (0, 1].
    """
    conf = np.asarray(confidence, dtype=np.float64)
    if conf.ndim != 1 or conf.size == 0:
        raise ValueError("confidence must be a non-empty 1-D sequence")
    if np.isnan(conf).any():
        raise ValueError("confidence holds NaN: give every item a confidence in [0, 1]")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 < floor <= 1.0:
        raise ValueError(f"floor must be in (0, 1], got {floor}")
    sizes = floor + (1.0 - floor) * (1.0 - np.clip(conf, 0.0, 1.0))
    target = min(n, conf.size)
    pi = np.zeros(conf.size)
    certain = np.zeros(conf.size, dtype=bool)
    while True:  # cap at 1 and rescale the rest until nothing exceeds 1 (at most N rounds)
        left = target - certain.sum()
        rest = ~certain
        pi[rest] = left * sizes[rest] / sizes[rest].sum() if left > 0 else 0.0
        pi[certain] = 1.0
        over = rest & (pi >= 1.0)
        if not over.any():
            return pi
        certain |= over


def draw_pps(probabilities: Sequence[float] | NDArray[np.float64], *, seed: int) -> list[int]:
    """Systematic PPS: draw ``sum(probabilities)`` items, item i with probability exactly ``π_i``.

    The items are put in an order shuffled by ``random.Random(seed)``; a single uniform start
    ``u`` then picks every item whose cumulative interval contains ``u, u + 1, u + 2, …``.

    Args:
        probabilities: ``π_i`` in [0, 1], summing to a whole number (from
            `inclusion_probabilities`).
        seed: the seed of the order and the start: the same seed gives the same sample.

    Returns:
        The drawn item positions, in the shuffled order.

    Raises:
        ValueError: a probability outside [0, 1], or a sum that is not a whole number.
    """
    pi = np.asarray(probabilities, dtype=np.float64)
    if ((pi < 0) | (pi > 1 + 1e-12)).any():
        raise ValueError("inclusion probabilities must lie in [0, 1]")
    total = float(pi.sum())
    if not math.isclose(total, round(total), abs_tol=1e-6):
        raise ValueError(f"inclusion probabilities must sum to a whole number, got {total}")
    rng = random.Random(seed)
    order = list(range(pi.size))
    rng.shuffle(order)
    start = rng.random()
    chosen: list[int] = []
    cumulative = 0.0
    for index in order:
        before = cumulative
        cumulative += float(pi[index])
        # picked when a point start + k falls in (before, cumulative]
        if math.floor(cumulative - start) > math.floor(before - start):
            chosen.append(index)
    return chosen[: round(total)]
