"""How sure a judge was of each judgment, from what it already returned (no extra calls).

`calibration.selective_threshold` needs one number per judgment, larger meaning surer; any
fixed rule gives a valid guarantee (the test checks agreement on the calibration labels, it
does not assume the number is a probability), but a rule that ranks right answers above wrong
ones trusts more items. What each card kind offers:

* **Scores and verdicts** (``score``: reference, single, rubric cards) — the G-Eval
  distribution the judge put on its score token, stored in ``result.output["scoring"]`` when the
  provider returned logprobs (`judgecards.replies.geval`). The confidence of a score axis is the
  probability of the score the judge wrote; of a verdict, the product of those probabilities
  over every score axis (the chance the judge would write the same scores again, so the verdict
  rule would give the same verdict — a lower bound when several score sets give one verdict).
  Without logprobs (Anthropic, servers that ignore them, a score split over tokens) the
  confidence is 0.0 for every item: the judge is then trusted on all items or none, by its
  overall agreement.
* **Pairwise** (``compare``) — both-order consistency: 1.0 when the two presentation orders
  name the same winner, 0.5 when they do not (`order_consistency`).
* **k samples** (k calls at temperature > 0) — the share of samples that agree with the most
  common answer (`sample_agreement`).
* **Juries** — the winning share of the vote, `calibration.MajorityVote.confidence`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from judgecards.storage import JudgeResult

__all__ = ["judgment_confidence", "order_consistency", "sample_agreement"]


def judgment_confidence(result: JudgeResult, field: str = "verdict") -> float:
    """The probability the judge gave its own answer on ``field``, from its G-Eval scoring.

    Args:
        result: a stored or fresh result of a card with score axes.
        field: ``"verdict"`` (the product over every score axis) or a score axis name.

    Returns:
        A number in [0, 1]; 0.0 for an error record, a result without a score on ``field``'s
        axes, or a score recorded as sampled (the provider returned no usable logprobs).
    """
    if result.status != "ok":
        return 0.0
    axes = list(result.scores) if field == "verdict" else [field]
    if not axes:
        return 0.0
    scoring = (result.output or {}).get("scoring")
    if not isinstance(scoring, Mapping):
        return 0.0
    confidence = 1.0
    for axis in axes:
        confidence *= _chosen_probability(scoring.get(axis), result.scores.get(axis))
    return confidence


def _chosen_probability(record: Any, score: float | None) -> float:
    """p(the written score) from a ``scoring`` record; 0.0 when there is no distribution."""
    if score is None or not isinstance(record, Mapping) or record.get("method") != "geval":
        return 0.0
    distribution = record.get("distribution")
    if not isinstance(distribution, Mapping):
        return 0.0
    for key, probability in distribution.items():
        try:
            matches = float(key) == float(score)
        except (TypeError, ValueError):
            continue
        if matches and isinstance(probability, (int, float)) and math.isfinite(probability):
            return min(max(float(probability), 0.0), 1.0)
    return 0.0


def order_consistency(first_order: str, second_order: str) -> float:
    """1.0 when both presentation orders name the same winner (A, B or tie), else 0.5.

    Args:
        first_order: the verdict with A shown first.
        second_order: the verdict with B shown first, mapped back to A/B naming (as in
            `judgecards.pairwise.rules.resolve_pair`).

    Returns:
        1.0 or 0.5: a verdict that flips with the order is a guess between the two.
    """
    return 1.0 if first_order == second_order else 0.5


def sample_agreement(answers: Sequence[Hashable | None]) -> float:
    """The share of k sampled answers that equal the most common one (1.0: unanimous).

    Args:
        answers: the judge's answer in each sample; ``None`` (a failed sample) counts as a
            sample that agrees with nothing.

    Returns:
        A share in (0, 1]; 0.0 when every sample failed.

    Raises:
        ValueError: no answers.
    """
    if not answers:
        raise ValueError("sample_agreement needs at least one sampled answer")
    counts = Counter(answer for answer in answers if answer is not None)
    if not counts:
        return 0.0
    return counts.most_common(1)[0][1] / len(answers)
