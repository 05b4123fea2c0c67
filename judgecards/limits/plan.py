"""A run's projected cost before any call (`Judge.plan`, ``judgecards score --plan``).

Every prompt the run would send first is rendered, exactly as it would be sent; its input tokens
(system prompt, messages and a schema sent natively, which providers bill as input) are counted
as `judgecards.limits.token_count` says: OpenAI's tokenizer for OpenAI models when the ``tokens`` extra
is installed, else characters / 4, rounded up; an estimate either way. A reply is not
known in advance, so the projection is a range: input only (the least the calls can cost) to
input plus every reply at its ``max_tokens`` cap (the most they can cost without re-asks).
Re-asks after an invalid reply add calls and are not projected. Items already stored cost
nothing; items refused for their inputs are never sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judgecards.limits.pricing import ModelPrice, format_cost
from judgecards.limits.token_count import CHARACTERS, TOKEN_ESTIMATE, TokenCounter
from judgecards.providers.base import CompletionRequest

__all__ = ["TOKEN_ESTIMATE", "RunPlan", "estimate_tokens"]


def estimate_tokens(request: CompletionRequest) -> int:
    """Estimated input tokens of one request, characters / 4: its system prompt, messages and
    the schema when it is sent natively (billed as input too). For caps and rate limits, which
    count every request on the way out; `RunPlan` uses a tokenizer where there is one."""
    return CHARACTERS.count(request)


@dataclass(frozen=True)
class RunPlan:
    """What a run would send, and its projected cost in US dollars.

    Attributes:
        model: ``provider:model``; price: its price (None: unknown, so is every cost).
        items: items given; stored: already judged (free); refused: bad inputs (never sent);
            cached: first reply already in the response cache (free); to_judge: the rest, one
            first request each.
        unit: what an item is, in the text (``compare`` plans "judgments", two per pair).
        input_tokens: counted over the requests to send (``token_method`` says how).
        max_output_tokens: ``to_judge`` × the reply cap (``max_tokens``).
    """

    model: str
    price: ModelPrice | None
    items: int
    stored: int
    refused: int
    to_judge: int
    input_tokens: int
    max_output_tokens: int
    cached: int = 0
    unit: str = "items"
    token_method: str = TOKEN_ESTIMATE

    @classmethod
    def of(  # noqa: PLR0913  keyword-only counts of the plan
        cls,
        model: str,
        price: ModelPrice | None,
        requests: Sequence[CompletionRequest],
        *,
        items: int,
        stored: int,
        refused: int,
        cached: int = 0,
        unit: str = "items",
        counter: TokenCounter = CHARACTERS,
    ) -> RunPlan:
        """The plan of sending ``requests`` (each capped at its own ``max_tokens``), their input
        tokens counted by ``counter`` (`judgecards.limits.token_count.counter_for` the model)."""
        return cls(
            model=model,
            price=price,
            items=items,
            stored=stored,
            refused=refused,
            to_judge=len(requests),
            input_tokens=sum(counter.count(r) for r in requests),
            max_output_tokens=sum(r.max_tokens for r in requests),
            cached=cached,
            unit=unit,
            token_method=counter.method,
        )

    def live_cost(self) -> tuple[float, float] | None:
        """``(least, most)`` at live rates: input only, and input plus every reply at its cap."""
        if self.price is None:
            return None
        return (
            self.price.cost(self.input_tokens, 0),
            self.price.cost(self.input_tokens, self.max_output_tokens),
        )

    def batch_cost(self) -> tuple[float, float] | None:
        """The same range through the provider's batch API (its ``batch_discount`` off)."""
        live = self.live_cost()
        if live is None or self.price is None:
            return None
        keep = 1.0 - self.price.batch_discount
        return (live[0] * keep, live[1] * keep)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts, the estimate's method and both cost ranges (null: unknown)."""
        live, batch = self.live_cost(), self.batch_cost()
        return {
            "model": self.model,
            "items": self.items,
            "stored": self.stored,
            "refused": self.refused,
            "cached": self.cached,
            "to_judge": self.to_judge,
            "input_tokens_estimated": self.input_tokens,
            "max_output_tokens": self.max_output_tokens,
            "token_estimate": self.token_method,
            "live_cost_usd": list(live) if live else None,
            "batch_cost_usd": list(batch) if batch else None,
        }

    def as_text(self) -> str:
        """The plan as ``score --plan`` prints it."""
        live, batch = self.live_cost(), self.batch_cost()

        def span(costs: tuple[float, float] | None) -> str:
            if costs is None:
                return f"unknown ({self.model} has no price: add it with --prices)"
            return f"{format_cost(costs[0])} to {format_cost(costs[1])}"

        return "\n".join(
            [
                f"plan:      {self.items} {self.unit} on {self.model}: {self.to_judge} to judge, "
                f"{self.stored} already stored (free), "
                + (
                    f"{self.cached} answered from the response cache (free), "
                    if self.cached
                    else ""
                )
                + f"{self.refused} refused for their inputs",
                f"tokens:    ~{self.input_tokens:,} in (estimated: {self.token_method}), "
                f"replies capped at {self.max_output_tokens:,} out",
                f"cost live: {span(live)} (input only to every reply at its cap; re-asks extra)",
                f"batch:     {span(batch)} through the provider's batch API (judgecards calls live)",
            ]
        )
