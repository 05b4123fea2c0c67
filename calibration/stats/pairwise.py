"""Pairwise (A / B / tie) calibration the way the MT-Bench paper reports it.

Zheng et al. 2023 (*Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena*, Table 2; FastChat
``llm_judge/compute_agreement.py``) count agreement **per human vote**: each human vote on a
comparison is checked against the judge's single verdict on that comparison, and the rate is
matching votes / votes counted. Two setups:

* **S1, with ties** — a tie is a third class; every vote counts and a tie matches a tie
  (random guessing scores 1/3).
* **S2, without ties** — a vote is left out when the judge's verdict **or** that vote is a tie. So
  a comparison the judge called a tie contributes no votes at all, and a human "tie" vote on a
  comparison the judge decided is dropped while the other votes on it still count (random
  guessing scores 1/2). Dropping only items where *both* are ties would instead count every
  judge-tie vs human-A vote as a certain disagreement.

The human ceiling is computed the same way over pairs of distinct votes on the same comparison
(`pairwise_human_agreement`), which is the paper's human–human row.

Intervals resample **comparisons**, not votes: the votes on one comparison share the judge's
verdict and the same pair of answers, so they are not independent.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibration.stats._core import Labels, as_list, is_missing, warn_if_small
from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = ["PairwiseAgreement", "pairwise_agreement", "pairwise_human_agreement"]

Counts = NDArray[np.int64]


@dataclass(frozen=True)
class PairwiseAgreement:
    """Agreement on pairwise verdicts with ties (S1) and without ties (S2).

    Attributes:
        with_ties: S1 agreement in [0, 1]; ``n`` is the number of votes (or vote pairs) counted.
        without_ties: S2 agreement in [0, 1]; ``n`` counts the votes left after dropping ties.
            ``nan`` when nothing is left.
        n_items: comparisons that contributed to S1.
        n_items_without_ties: comparisons that contributed to S2.
        unit: what ``n`` counts: ``"votes"`` (judge vs human) or ``"vote pairs"`` (human vs human).
    """

    with_ties: Estimate
    without_ties: Estimate
    n_items: int
    n_items_without_ties: int
    unit: str = "votes"

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-ready apart from ``nan``)."""
        return {
            "with_ties": self.with_ties.to_dict(),
            "without_ties": self.without_ties.to_dict(),
            "n_items": self.n_items,
            "n_items_without_ties": self.n_items_without_ties,
            "unit": self.unit,
        }

    def as_text(self) -> str:
        """Two readable lines, one per setup."""
        rows = [
            ("with ties (S1)", self.with_ties, self.n_items),
            ("without ties (S2)", self.without_ties, self.n_items_without_ties),
        ]
        return "\n".join(
            f"{name:<18} {_pct(e.value)} [{_pct(e.low)}, {_pct(e.high)}]"
            f"  {e.n} {self.unit} on {items} comparisons"
            for name, e, items in rows
        )


def pairwise_agreement(
    judge: Labels,
    human: Labels,
    *,
    tie: Hashable = "tie",
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> PairwiseAgreement:
    """Judge–human agreement on pairwise verdicts, with ties (S1) and without (S2), per vote.

    Args:
        judge: the judge's verdict per comparison, e.g. ``"A"``, ``"B"`` or ``tie``.
        human: per comparison, either one human verdict or a list/tuple of the verdicts of
            several people (one vote each; an empty list means no votes). MT-Bench style vote
            counts expand to e.g. ``["A"] * n_a + ["B"] * n_b + ["tie"] * n_tie``.
        tie: the value that means "tie" (``"tie"``, ``0`` in PandaLM's coding, ...).
        level: confidence level of the bootstrap intervals.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        A `PairwiseAgreement`; see the module docstring for exactly what S1 and S2 count.

    Raises:
        ValueError: unequal lengths or a missing verdict.

    Warns:
        SmallSampleWarning: fewer than 30 comparisons count towards S1 or S2.
    """
    judge_list = as_list(judge, "judge")
    votes = _votes_per_item(human)
    if len(judge_list) != len(votes):
        raise ValueError(f"judge and human differ in length: {len(judge_list)} != {len(votes)}")
    for i, verdict in enumerate(judge_list):
        if is_missing(verdict):
            raise ValueError(f"judge verdict at position {i} is missing")
    judge_tie = np.array([verdict == tie for verdict in judge_list], dtype=bool)
    match = np.array(
        [sum(v == j for v in vs) for j, vs in zip(judge_list, votes, strict=True)], dtype=np.int64
    )
    total = np.array([len(vs) for vs in votes], dtype=np.int64)
    not_tie = np.array([sum(v != tie for v in vs) for vs in votes], dtype=np.int64)
    # S2: when the judge did not call a tie, any matching vote is itself not a tie.
    match_s2 = np.where(judge_tie, 0, match)
    total_s2 = np.where(judge_tie, 0, not_tie)
    return _summarise(
        match, total, match_s2, total_s2, "votes", level=level, n_resamples=n_resamples, seed=seed
    )


def pairwise_human_agreement(
    votes: Labels,
    *,
    tie: Hashable = "tie",
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> PairwiseAgreement:
    """Human–human agreement on pairwise verdicts (the human ceiling), per pair of votes.

    Every pair of distinct votes on the same comparison is one trial, as in MT-Bench's human–human
    row: a comparison with votes ``A, A, tie`` gives 3 pairs, 1 agreeing (S1), and 1 pair, agreeing,
    once pairs containing a tie are dropped (S2). Comparisons with fewer than two votes contribute
    nothing. Voters need not be identified, so this works on aggregated vote counts.

    Args:
        votes: per comparison, the list of human verdicts.
        tie: the value that means "tie".
        level: confidence level of the bootstrap intervals.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        A `PairwiseAgreement` whose ``n`` values count vote pairs.

    Warns:
        SmallSampleWarning: fewer than 30 comparisons have two or more (non-tie) votes.
    """
    per_item = _votes_per_item(votes)
    match, total, match_s2, total_s2 = (np.zeros(len(per_item), dtype=np.int64) for _ in range(4))
    for i, vs in enumerate(per_item):
        counts = Counter(vs)
        non_tie = len(vs) - counts.get(tie, 0)
        match[i] = sum(_pairs(c) for c in counts.values())
        total[i] = _pairs(len(vs))
        match_s2[i] = sum(_pairs(c) for label, c in counts.items() if label != tie)
        total_s2[i] = _pairs(non_tie)
    return _summarise(
        match,
        total,
        match_s2,
        total_s2,
        "vote pairs",
        level=level,
        n_resamples=n_resamples,
        seed=seed,
    )


def _summarise(
    match: Counts,
    total: Counts,
    match_s2: Counts,
    total_s2: Counts,
    unit: str,
    *,
    level: float,
    n_resamples: int,
    seed: int | None,
) -> PairwiseAgreement:
    used, used_s2 = total > 0, total_s2 > 0
    n_items, n_items_s2 = int(used.sum()), int(used_s2.sum())
    what = "pairwise agreement" if unit == "votes" else "human-human pairwise agreement"
    if n_items_s2 < n_items:
        warn_if_small(n_items_s2, f"{what} without ties (S2)", stacklevel=3)
    else:
        warn_if_small(n_items, f"{what} with ties (S1)", stacklevel=3)
    with_ties = _ratio_estimate(match[used], total[used], level, n_resamples, seed)
    without_ties = _ratio_estimate(match_s2[used_s2], total_s2[used_s2], level, n_resamples, seed)
    return PairwiseAgreement(with_ties, without_ties, n_items, n_items_s2, unit)


def _ratio_estimate(
    match: Counts, total: Counts, level: float, n_resamples: int, seed: int | None
) -> Estimate:
    """sum(match) / sum(total), bootstrapped over items; ``n`` reported as sum(total)."""
    if total.size == 0:
        return Estimate(math.nan, math.nan, math.nan, level, 0)
    estimate = bootstrap_ci(
        match, total, statistic=_ratio, level=level, n_resamples=n_resamples, seed=seed
    )
    return replace(estimate, n=int(total.sum()))


def _ratio(match: Counts, total: Counts) -> float:
    return float(match.sum() / total.sum())


def _pairs(k: int) -> int:
    return k * (k - 1) // 2


def _votes_per_item(human: Labels) -> list[list[Hashable]]:
    votes: list[list[Hashable]] = []
    for i, item in enumerate(as_list(human, "human")):
        if isinstance(item, np.ndarray):
            item = item.tolist()
        item_votes = list(item) if isinstance(item, (list, tuple)) else [item]
        if any(is_missing(v) for v in item_votes):
            raise ValueError(f"human verdict at position {i} is missing; drop it or map it")
        votes.append(item_votes)
    return votes


def _pct(value: float) -> str:
    return "  nan" if math.isnan(value) else f"{value * 100:4.1f}%"
