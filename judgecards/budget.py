"""A spending cap for a judge (``Judge(max_cost=)``, ``--max-cost USD``).

The rule: an item is never *started* when what has been spent, plus what the items already in
flight are projected to cost, plus this item's projection would pass the cap. An item's
projection is `judgecards.plan`'s estimate of its first request at its ``max_tokens`` cap (input
tokens as characters / 4, every reply token at the output rate); an item whose first reply is
already in the response cache is projected at nothing, and items already stored are never run.
Items not started are returned as ``not_judged`` results: not errors, never stored, so running
again with a higher cap judges exactly them.

In-flight items always finish, so what is spent can pass the cap only by what the projection
missed: re-asks after an invalid reply (extra calls) and a tokenizer that counts more than
characters / 4. The summary shows spent against the cap either way.

Items that must run together or not at all (a comparison's two orders: half a pair decides
nothing) are held together (`CostCap.together`): the first of them to start reserves all of their
projections at once, or none of them starts.

A model without a price cannot be capped (its spend is unknown, never 0): `CostCap.of` refuses
it before anything runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from judgecards.errors import BudgetError, RenderError
from judgecards.plan import estimate_tokens
from judgecards.pricing import ModelPrice, format_cost
from judgecards.providers.base import CompletionRequest
from judgecards.results import JudgeResult

__all__ = ["BudgetStats", "CostCap"]


@dataclass(frozen=True)
class BudgetStats:
    """Spend against the cap, in US dollars.

    Attributes:
        cap: the cap; spent: billed by the items this judge finished under it;
        in_flight: projected cost of the items still running; not_judged: items not started.
    """

    cap: float
    spent: float
    in_flight: float
    not_judged: int

    def as_text(self) -> str:
        """One line for a run summary."""
        over = (
            " (over: re-asks and token counts beyond the projection)"
            if self.spent > self.cap
            else ""
        )
        left = (
            f"; {self.not_judged} item(s) not judged: run again with a higher --max-cost to "
            "judge them (finished items cost nothing again)"
            if self.not_judged
            else ""
        )
        return f"{format_cost(self.spent)} spent of {format_cost(self.cap)} cap{over}{left}"


class CostCap:
    """What one judge may still spend; thread-safe (items of a batch reserve concurrently)."""

    def __init__(self, cap: float, price: ModelPrice) -> None:
        if not cap >= 0:
            raise BudgetError(f"--max-cost must be a number of US dollars >= 0, not {cap!r}")
        self.cap = cap
        self.price = price
        self._lock = threading.Lock()
        self._spent = 0.0
        self._reserved: dict[str, float] = {}
        self._not_judged = 0
        self._groups: dict[str, _Group] = {}

    @classmethod
    def of(cls, cap: float | None, price: ModelPrice | None, model: str) -> CostCap | None:
        """The cap for ``model`` at ``price`` (None: no cap).

        Raises:
            BudgetError: a cap on a model with no price, whose spend could not be counted.
        """
        if cap is None:
            return None
        if price is None:
            raise BudgetError(
                f"--max-cost needs a price for {model}, and it has none: add one with --prices "
                "(or JUDGECARDS_PRICES); an unknown price is never counted as 0"
            )
        return cls(cap, price)

    def projected(self, request: CompletionRequest) -> float:
        """The most one first call can cost: estimated input tokens, a reply at its cap."""
        return self.price.cost(estimate_tokens(request), request.max_tokens)

    def admit(
        self,
        key: str,
        first_request: Callable[[], CompletionRequest],
        cached: Callable[[CompletionRequest], bool],
    ) -> bool:
        """Whether item ``key`` may start, its projection reserved if so: its ``first_request``
        projected, at nothing when that reply is ``cached`` or the item cannot be rendered (it
        ends as an input error record, never sent). An item held in a group (`together`) starts
        exactly when its group does."""
        group = self._groups.get(key)
        if group is not None:
            return self._admit_group(group)
        try:
            request = first_request()
            projected = 0.0 if cached(request) else self.projected(request)
        except RenderError:
            projected = 0.0
        return self.reserve(key, projected)

    def reserve(self, key: str, projected: float) -> bool:
        """Reserve ``projected`` for item ``key`` if it fits under the cap; False: do not start it."""
        with self._lock:
            if self._spent + sum(self._reserved.values()) + projected > self.cap:
                self._not_judged += 1
                return False
            self._reserved[key] = self._reserved.get(key, 0.0) + projected
            return True

    @contextmanager
    def together(self, groups: Iterable[Mapping[str, float]]) -> Iterator[None]:
        """Within this block, each group (item key → projected cost; items already stored are
        left out) starts as a whole or not at all: the first of its items to start reserves every
        projection of the group, a later one starts without a new check, and if the first is
        refused so is the rest. On leaving, what a group reserved for items that never started
        is released."""
        held: dict[str, _Group] = {}
        for projections in groups:
            group = _Group(dict(projections))
            for key in group.projections:
                held.setdefault(key, group)  # a repeated item belongs to its first group
        with self._lock:
            self._groups.update(held)
        try:
            yield
        finally:
            with self._lock:
                for key in held:
                    self._groups.pop(key, None)
                    if held[key].admitted:
                        self._reserved.pop(key, None)

    def _admit_group(self, group: _Group) -> bool:
        with self._lock:
            if group.admitted is None:
                total = sum(group.projections.values())
                group.admitted = self._spent + sum(self._reserved.values()) + total <= self.cap
                if group.admitted:
                    for key, projected in group.projections.items():
                        self._reserved[key] = self._reserved.get(key, 0.0) + projected
            if not group.admitted:
                self._not_judged += 1
            return group.admitted

    def settle(self, key: str, cost: float | None) -> None:
        """Item ``key`` finished having cost ``cost`` (None cannot happen on a priced model)."""
        with self._lock:
            self._reserved.pop(key, None)
            self._spent += cost or 0.0

    def not_judged(self, **fields: object) -> JudgeResult:
        """The record of an item not started (the item's id, card and model in ``fields``)."""
        return JudgeResult.model_validate({
            **fields, "status": "not_judged", "cost_usd": 0.0,
            "error": f"not judged: its projected cost would pass --max-cost {format_cost(self.cap)}",
        })  # fmt: skip

    def stats(self) -> BudgetStats:
        """Spend against the cap now."""
        with self._lock:
            return BudgetStats(
                self.cap, self._spent, sum(self._reserved.values()), self._not_judged
            )


@dataclass
class _Group:
    """Items that start together: their projections and whether they were let start (None:
    none of them has asked yet)."""

    projections: dict[str, float]
    admitted: bool | None = None
