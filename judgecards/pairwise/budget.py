"""What comparing pairs costs before any call (`ComparePlan`, ``compare --plan``), and a spending
cap on comparisons (``compare --max-cost``, `compare_many` with ``Judge(max_cost=)``).

The unit is a pair: half a pair decides nothing, so a pair's two orders start together or not at
all. Each order is projected as `judgecards.limits.budget` projects one item (its first request's
estimated input tokens, a reply at its ``max_tokens`` cap); an order already stored or whose
first reply is in the response cache costs nothing, and one whose inputs are refused is never
sent. Under a cap the first order of a pair to start reserves the projection of both
(`judgecards.limits.budget.CostCap.together`); a pair that does not fit is not started and its
comparison is ``not_judged``: not an error, not stored, so a re-run with a higher cap judges
exactly the pairs left (and any order finished before is not paid for again).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from judgecards.judging import LOOKUP_CHUNK, PreparedItem
from judgecards.limits import (
    CHARACTERS,
    ModelPrice,
    RunPlan,
    TokenCounter,
    counter_for,
    estimate_tokens,
    format_cost,
)

if TYPE_CHECKING:
    from judgecards.judging import Judge

__all__ = ["ComparePlan", "OrderCost", "hold_pairs", "order_costs"]

OrderState = Literal["stored", "cached", "refused", "to_judge"]


@dataclass(frozen=True)
class OrderCost:
    """One order of a pair before the run.

    Attributes:
        key: the order's item key (None: its inputs are refused, it is never judged).
        state: ``stored`` (judged before), ``cached`` (its first reply is in the response
            cache), ``refused`` (never sent) or ``to_judge``.
        input_tokens: its first request's input tokens as the plan counts them (a tokenizer
            where there is one, `judgecards.limits.token_count`), when ``to_judge`` (else 0: nothing is
            sent, or it is free).
        estimated_tokens: the same as a cap counts them (`judgecards.limits.plan.estimate_tokens`).
        max_tokens: its reply cap, when ``to_judge``.
    """

    key: str | None
    state: OrderState
    input_tokens: int = 0
    estimated_tokens: int = 0
    max_tokens: int = 0

    def projected(self, price: ModelPrice) -> float:
        """The most its first call can cost, as a cap projects it
        (`judgecards.limits.budget.CostCap.projected`)."""
        if self.state != "to_judge":
            return 0.0
        return price.cost(self.estimated_tokens, self.max_tokens)


def order_costs(
    judge: Judge,
    orders: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    counter: TokenCounter = CHARACTERS,
) -> Iterator[tuple[OrderCost, OrderCost]]:
    """Every pair's two orders (``orders``: A shown first, then B) as the run would find them:
    stored, cached, refused or to judge, each prompt rendered exactly as it would be sent and
    kept only as its token counts (stored results looked up a chunk of pairs at a time)."""
    for start in range(0, len(orders), LOOKUP_CHUNK):
        chunk = orders[start : start + LOOKUP_CHUNK]
        prepared = judge.prepare(order for pair in chunk for order in pair)
        for index in range(len(chunk)):
            first, second = prepared[2 * index : 2 * index + 2]
            yield _order_cost(judge, first, counter), _order_cost(judge, second, counter)


def _order_cost(judge: Judge, item: PreparedItem, counter: TokenCounter) -> OrderCost:
    if item.state == "refused":  # its inputs are refused: no key, never judged
        return OrderCost(None, "refused")
    if item.state == "stored":
        return OrderCost(item.key, "stored")
    item = judge.classify(item)
    if item.state == "refused":
        return OrderCost(item.key, "refused")  # ends as an input error record, never sent
    if item.state == "cached":
        return OrderCost(item.key, "cached")
    assert item.request is not None
    request = item.request
    tokens = estimate_tokens(request)
    counted = tokens if counter is CHARACTERS else counter.count(request)
    return OrderCost(item.key, "to_judge", counted, tokens, request.max_tokens)


@dataclass(frozen=True)
class ComparePlan:
    """What comparing ``pairs`` would send, both orders of each, and its projected cost in US
    dollars (`judgecards.limits.plan.RunPlan` over the judgments), with no call made.

    Attributes:
        pairs: pairs given; decided: pairs with both orders already stored (free);
        most_per_pair: the largest projection of one pair as a cap projects it (both orders,
            characters / 4, every reply at its cap), the least a ``--max-cost`` must allow to
            judge any pair (None: no price).
        judgments: the plan of the single judgments, two per pair.
    """

    pairs: int
    decided: int
    most_per_pair: float | None
    judgments: RunPlan

    @classmethod
    def of(
        cls, judge: Judge, orders: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
    ) -> ComparePlan:
        """The plan of comparing the pairs whose two orders are ``orders``."""
        price = judge.prices.lookup(judge.model)
        states = {"stored": 0, "cached": 0, "refused": 0, "to_judge": 0}
        decided = input_tokens = max_output = 0
        most = 0.0
        counter = counter_for(judge.model)
        for pair in order_costs(judge, orders, counter):
            for order in pair:
                states[order.state] += 1
                input_tokens += order.input_tokens
                max_output += order.max_tokens
            decided += pair[0].state == pair[1].state == "stored"
            if price is not None:
                most = max(most, sum(order.projected(price) for order in pair))
        return cls(
            pairs=len(orders),
            decided=decided,
            most_per_pair=None if price is None else most,
            judgments=RunPlan(
                model=judge.model,
                price=price,
                items=2 * len(orders),
                stored=states["stored"],
                refused=states["refused"],
                to_judge=states["to_judge"],
                input_tokens=input_tokens,
                max_output_tokens=max_output,
                cached=states["cached"],
                unit="judgments",
                token_method=counter.method,
            ),
        )

    def live_cost(self) -> tuple[float, float] | None:
        """``(least, most)`` at live rates (`RunPlan.live_cost`)."""
        return self.judgments.live_cost()

    def batch_cost(self) -> tuple[float, float] | None:
        """The same range through the provider's batch API (`RunPlan.batch_cost`)."""
        return self.judgments.batch_cost()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the pairs, then the judgments' plan (`RunPlan.to_dict`)."""
        return {
            "pairs": self.pairs,
            "pairs_decided": self.decided,
            "most_per_pair_usd": self.most_per_pair,
            "judgments": self.judgments.to_dict(),
        }

    def as_text(self) -> str:
        """The plan as ``compare --plan`` prints it."""
        most = (
            f"; the costliest pair: {format_cost(self.most_per_pair)} at most"
            if self.most_per_pair is not None
            else ""
        )
        return "\n".join(
            [
                f"pairs:     {self.pairs} pairs, each judged in both orders: {2 * self.pairs} "
                f"judgments; {self.decided} pairs already decided (free){most}",
                self.judgments.as_text(),
            ]
        )


@contextmanager
def hold_pairs(
    judge: Judge, orders: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
) -> Iterator[None]:
    """Within this block a capped ``judge`` starts both orders of a pair or neither (nothing
    to do for a judge without ``max_cost``). Orders already stored are not held: they never
    start; cached ones are held at nothing."""
    cap = judge.budget
    if cap is None:
        yield
        return
    groups = []
    for pair in order_costs(judge, orders):
        group = {
            order.key: order.projected(cap.price)
            for order in pair
            if order.key is not None and order.state != "stored"
        }
        if group:
            groups.append(group)
    with cap.together(groups):
        yield
