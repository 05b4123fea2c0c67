"""The two-order rule: a pair judged in both orders has one outcome.

LLM judges favour whichever answer they read first, so every pair is judged twice, once with A
shown first and once with B shown first. `resolve_pair` (FastChat's ``show_result.py`` rule, the
one implementation of it in judgecards) decides: A only if A won both orders, B only if B won
both, otherwise a tie. `PairOutcome` keeps both verdicts beside the outcome. A pairwise card is
one whose inputs hold both answers (`ANSWERS`, `is_pairwise`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from judgecards.cards import Card

__all__ = ["ANSWERS", "VERDICTS", "PairOutcome", "Verdict", "is_pairwise", "resolve_pair"]

ANSWERS = ("answer_a", "answer_b")
"""The inputs of a pairwise card that hold the two answers; the rest is the prompt."""

Verdict = Literal["A", "B", "tie"]
"""A pairwise verdict in A/B naming: ``"A"`` won, ``"B"`` won, or ``"tie"``."""

VERDICTS: tuple[Verdict, ...] = ("A", "B", "tie")


def resolve_pair(first_order: Verdict, second_order: Verdict) -> Verdict:
    """Combine the verdicts of the two presentation orders into one outcome.

    Args:
        first_order: the verdict with A shown first.
        second_order: the verdict with B shown first, mapped back to A/B naming.

    Returns:
        ``"A"`` only if both verdicts are ``"A"``, ``"B"`` only if both are ``"B"``, otherwise
        ``"tie"`` (an explicit tie in either order, or the two orders disagreeing).

    Raises:
        ValueError: a verdict outside ``{"A", "B", "tie"}``.
    """
    for name, value in (("first_order", first_order), ("second_order", second_order)):
        if value not in VERDICTS:
            raise ValueError(f"{name} must be one of {VERDICTS}, got {value!r}")
    return first_order if first_order == second_order else "tie"


@dataclass(frozen=True)
class PairOutcome:
    """One comparison judged in both orders.

    Attributes:
        winner: the resolved outcome; must equal ``resolve_pair(first_order, second_order)``.
        first_order: the judge's verdict with A shown first.
        second_order: the judge's verdict with B shown first, mapped back to A/B naming.

    Build one with `PairOutcome.from_orders` to have ``winner`` computed.

    Raises:
        ValueError: a verdict outside ``{"A", "B", "tie"}`` or a ``winner`` inconsistent with
            the two orders.
    """

    winner: Verdict
    first_order: Verdict
    second_order: Verdict

    def __post_init__(self) -> None:
        expected = resolve_pair(self.first_order, self.second_order)
        if self.winner != expected:
            raise ValueError(
                f"winner {self.winner!r} is inconsistent with the two orders "
                f"({self.first_order!r}, {self.second_order!r}), which resolve to {expected!r}"
            )

    @classmethod
    def from_orders(cls, first_order: Verdict, second_order: Verdict) -> PairOutcome:
        """The outcome of two verdicts, with ``winner`` from `resolve_pair`."""
        return cls(resolve_pair(first_order, second_order), first_order, second_order)

    @property
    def position_consistent(self) -> bool:
        """Whether the judge gave the same verdict in both orders (a tie in both counts)."""
        return self.first_order == self.second_order


def is_pairwise(card: Card) -> bool:
    """Whether ``card``'s inputs hold a pair: both answers (`ANSWERS`)."""
    return set(ANSWERS) <= set(card.spec.inputs)
