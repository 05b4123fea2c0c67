"""The records of a pairwise comparison: `ComparisonResult` (a pair judged in both orders) and
its two `OrderJudgment` records.

Apart from `judgecards.pairwise.compare`, which makes them, so that what stores and reports them
(`judgecards.pairwise.stored`, `judgecards.pairwise.report`) does not import the code that judges.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judgecards.pairwise.rules import PairOutcome, Verdict

__all__ = ["ComparisonResult", "OrderJudgment"]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class OrderJudgment(BaseModel):
    """One of the two judgments of a pair.

    Attributes:
        shown_first: the answer the judge read first: ``"A"`` in the first order, ``"B"`` in the
            second.
        verdict: the judgment in A/B naming (the second order's verdict mapped back); ``None``
            when this order failed.
        position_verdict: the verdict as the judge wrote it, naming positions (``"A"`` = the
            answer shown first).
        result_id: the `JudgeResult` row in the ``results`` table.
        status: ``ok``, ``error`` (see ``error_kind`` and ``error``) or ``not_judged`` (left by
            a ``max_cost``: never started, not stored).
        reasoning: the judge's reasoning, when the card asks for one.
        raw_reply: the judge's last raw reply.
        cached: served from the store or the response cache, without a provider call.
        cost_usd: what this order's judgment cost this time (`JudgeResult.cost_usd`; None:
            unknown).
    """

    model_config = ConfigDict(extra="forbid")

    shown_first: Literal["A", "B"]
    verdict: Verdict | None = None
    position_verdict: str | None = None
    result_id: str
    status: Literal["ok", "error", "not_judged"]
    reasoning: str | None = None
    raw_reply: str | None = None
    cached: bool = False
    cost_usd: float | None = None
    error_kind: str | None = None
    error: str | None = None


class ComparisonResult(BaseModel):
    """A pair of answers judged in both orders.

    Attributes:
        id: stable key of the two order results and the model labels; re-running the same
            comparison writes the same ``comparisons`` row.
        pair_id: the caller's id for the pair (the ``id`` joined on), if any.
        status: ``ok`` when both orders produced a verdict, ``not_judged`` when a ``max_cost``
            left the pair (not stored: a re-run with a higher cap judges it), else ``error``
            (``winner`` is None either way).
        winner: ``"A"`` only if A won both orders, ``"B"`` only if B won both, else ``"tie"``.
        position_consistent: both orders gave the same verdict (two ties agree).
        model_a / model_b: labels of the compared models, when known (needed for rankings).
        card / card_hash / model: the judge card and judge model.
        first_order / second_order: both judgments (A shown first, then B shown first).
        len_a / len_b: the answers' lengths in characters (for the verbosity check).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    pair_id: str | None = None
    status: Literal["ok", "error", "not_judged"]
    winner: Verdict | None = None
    position_consistent: bool | None = None
    model_a: str | None = None
    model_b: str | None = None
    card: str
    card_hash: str
    model: str
    first_order: OrderJudgment
    second_order: OrderJudgment
    len_a: int = 0
    len_b: int = 0
    error: str | None = None
    created_at: datetime = Field(default_factory=_now)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def outcome(self) -> PairOutcome | None:
        """The two verdicts as a `PairOutcome` for `pairwise_report` (None for a failed pair)."""
        if self.first_order.verdict is None or self.second_order.verdict is None:
            return None
        return PairOutcome.from_orders(self.first_order.verdict, self.second_order.verdict)

    def to_row(self) -> dict[str, Any]:
        """An output line: ``id`` is the pair's id; the comparison key is ``comparison_id``."""
        data = self.model_dump(mode="json")
        data["comparison_id"] = data.pop("id")
        data["id"] = data.pop("pair_id")
        return {"id": data.pop("id"), **data}
