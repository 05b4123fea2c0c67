"""What a judge decides: an item (one judgment) or a pair (two orders and the two-order rule).

The code that sends work to judges and reads back what they decided (the cascade, alignment)
is written once, against `Units`: how to judge many units with one judge, which stored result
stands for a unit, its id, whether it is usable, how many calls it paid for, and the verdicts it
holds (one per order it was judged in: a vote each, in a jury). `ITEMS` is the
single-item kind (`Judge.score_many`, a `JudgeResult`); `PairUnits` the pairwise one
(`judgecards.compare_many`, both orders of each pair, a `ComparisonResult` decided by
`judgecards.pairwise.rules.resolve_pair`); `is_pairwise` (from the rules) says whether a card's
inputs hold a pair.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from judgecards.pairwise.compare import acompare_many, compare_many
from judgecards.pairwise.comparisons import ComparisonResult
from judgecards.pairwise.rules import ANSWERS, is_pairwise
from judgecards.storage import JudgeResult

if TYPE_CHECKING:
    from judgecards.judging import Judge, Progress

__all__ = ["ANSWERS", "ITEMS", "ItemUnits", "PairUnits", "Units", "is_pairwise"]

U = TypeVar("U")


class Units(Protocol[U]):
    """One kind of unit a judge decides; ``U`` is what judging one unit gives back."""

    @property
    def noun(self) -> str:
        """What the units are called in messages: ``items`` or ``pairs``."""
        ...

    @property
    def orders(self) -> tuple[str, ...]:
        """A suffix per order a unit is judged in (one vote each): ``("",)`` for an item."""
        ...

    def judge_many(
        self,
        judge: Judge,
        units: Sequence[Mapping[str, Any]],
        *,
        concurrency: int,
        progress: Progress | None = None,
    ) -> list[U]:
        """Judge ``units`` (mappings of the card's inputs, optionally ``id``), in input order."""
        ...

    async def ajudge_many(
        self, judge: Judge, units: Sequence[Mapping[str, Any]], *, pool: asyncio.Semaphore
    ) -> list[U]:
        """Async `judge_many` whose calls share ``pool`` with other judges' (a jury's)."""
        ...

    def verdicts(self, judged: U) -> list[str | None]:
        """Its verdict in each of `orders` (a pair's B-first one in A/B naming); None: none."""
        ...

    def unit_id(self, judged: U) -> str | None:
        """The unit's own ``id``, if it had one."""
        ...

    def result_id(self, judged: U) -> str:
        """The stored result that stands for the unit (a pair's A-first order)."""
        ...

    def usable(self, judged: U) -> bool:
        """Whether it decided something (an error or a ``not_judged`` unit did not)."""
        ...

    def calls(self, judged: Sequence[U]) -> int:
        """The provider calls these units paid for (stored or cached judgments are free)."""
        ...


@dataclass(frozen=True)
class ItemUnits:
    """Single items: one judgment each (`Judge.score_many`)."""

    noun: str = "items"
    orders: tuple[str, ...] = ("",)

    def judge_many(
        self,
        judge: Judge,
        units: Sequence[Mapping[str, Any]],
        *,
        concurrency: int,
        progress: Progress | None = None,
    ) -> list[JudgeResult]:
        return judge.score_many(units, concurrency=concurrency, progress=progress)

    async def ajudge_many(
        self, judge: Judge, units: Sequence[Mapping[str, Any]], *, pool: asyncio.Semaphore
    ) -> list[JudgeResult]:
        return await judge.ascore_many(units, pool=pool)

    def verdicts(self, judged: JudgeResult) -> list[str | None]:
        return [judged.verdict if judged.ok else None]

    def unit_id(self, judged: JudgeResult) -> str | None:
        return judged.item_id

    def result_id(self, judged: JudgeResult) -> str:
        return judged.id

    def usable(self, judged: JudgeResult) -> bool:
        return judged.status == "ok"

    def calls(self, judged: Sequence[JudgeResult]) -> int:
        return sum(not result.cached for result in judged)


ITEMS = ItemUnits()


@dataclass(frozen=True)
class PairUnits:
    """Pairs, each judged in both orders (`judgecards.compare_many`).

    Attributes:
        model_a / model_b: labels of the compared models, as for `compare_many`.
    """

    model_a: str | None = None
    model_b: str | None = None
    noun: str = "pairs"
    orders: tuple[str, ...] = (" [A first]", " [B first]")

    def judge_many(
        self,
        judge: Judge,
        units: Sequence[Mapping[str, Any]],
        *,
        concurrency: int,
        progress: Progress | None = None,
    ) -> list[ComparisonResult]:
        return compare_many(
            judge,
            units,
            concurrency=concurrency,
            progress=progress,
            model_a=self.model_a,
            model_b=self.model_b,
        )

    async def ajudge_many(
        self, judge: Judge, units: Sequence[Mapping[str, Any]], *, pool: asyncio.Semaphore
    ) -> list[ComparisonResult]:
        return await acompare_many(
            judge, units, pool=pool, model_a=self.model_a, model_b=self.model_b
        )

    def verdicts(self, judged: ComparisonResult) -> list[str | None]:
        return [judged.first_order.verdict, judged.second_order.verdict]

    def unit_id(self, judged: ComparisonResult) -> str | None:
        return judged.pair_id

    def result_id(self, judged: ComparisonResult) -> str:
        return judged.first_order.result_id

    def usable(self, judged: ComparisonResult) -> bool:
        return judged.ok

    def calls(self, judged: Sequence[ComparisonResult]) -> int:
        return sum(
            not order.cached and order.status != "not_judged"
            for comparison in judged
            for order in (comparison.first_order, comparison.second_order)
        )
