"""What a tiered evaluation would cost before any call (`TieredEval.plan`, ``eval CONFIG --plan``).

Only the judge tier calls a model: the deterministic tiers (regex, length, JSON, metrics) cost
nothing. Which items survive them to reach the judge is known only once they have run, and
running them here would be running the evaluation, so the plan is the upper bound: every item
reaching the judge tier, each projected as ``score --plan`` projects an item
(`judgecards.Judge.plan`: its first prompt rendered, tokens estimated, items already stored
free). The real run judges at most that many, usually fewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judgecards.limits import RunPlan

__all__ = ["EvalPlan"]

UPPER_BOUND = (
    "an upper bound: every item is projected as if it reached the judge tier; the earlier "
    "tiers decide some before it, but which is known only once they run"
)


@dataclass(frozen=True)
class EvalPlan:
    """The projected cost of a `TieredEval` run, in US dollars.

    Attributes:
        items: items given.
        free_tiers: the deterministic tiers, by name: no call, no cost.
        judge_tier: the judge tier's name (None: the pipeline has none and calls nothing).
        judge: the plan of judging every item (`UPPER_BOUND`); None without a judge tier.
    """

    items: int
    free_tiers: tuple[str, ...]
    judge_tier: str | None
    judge: RunPlan | None

    def live_cost(self) -> tuple[float, float] | None:
        """``(least, most)`` at live rates over every item (0 without a judge tier)."""
        return (0.0, 0.0) if self.judge is None else self.judge.live_cost()

    def batch_cost(self) -> tuple[float, float] | None:
        """The same range through the provider's batch API."""
        return (0.0, 0.0) if self.judge is None else self.judge.batch_cost()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the tiers, and the judge tier's plan (`RunPlan.to_dict`) or null."""
        return {
            "items": self.items,
            "free_tiers": list(self.free_tiers),
            "judge_tier": self.judge_tier,
            "judge": None if self.judge is None else self.judge.to_dict(),
            "upper_bound": self.judge is not None,
        }

    def as_text(self) -> str:
        """The plan as ``eval --plan`` prints it."""
        free = ", ".join(repr(name) for name in self.free_tiers)
        lines = [f"tiers:     {free or 'none'} deterministic: no calls, no cost"]
        if self.judge is None:
            lines.append(f"judge:     none: the {self.items} items cost nothing")
            return "\n".join(lines)
        lines.append(f"judge:     tier {self.judge_tier!r}; {UPPER_BOUND}")
        lines.append(self.judge.as_text())
        return "\n".join(lines)
