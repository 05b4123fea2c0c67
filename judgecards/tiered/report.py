"""What a tiered evaluation did: one outcome per item and counts per tier.

`TieredReport` holds one `ItemOutcome` per input item, in input order, naming the tier that
decided it and why, and one `TierStats` per tier; ``as_text`` and ``to_dict`` are what
``judgecards eval`` prints and writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from judgecards.storage import JudgeResult

__all__ = ["ItemOutcome", "Outcome", "TierStats", "TieredReport"]

Outcome = Literal["pass", "fail", "error", "not_judged"]


@dataclass(frozen=True)
class ItemOutcome:
    """The final outcome of one input item.

    Attributes:
        index: the item's 0-based position in the input.
        id: the item's ``id`` field as a string, if it has one.
        outcome: ``pass``, ``fail``, ``error`` or ``not_judged`` (the judge's ``max_cost`` left
            it unstarted: not an error, and a re-run with a higher cap judges it).
        tier: the name of the tier that decided it (the last tier for an item that passed all).
        tier_number: that tier's 1-based position.
        accepted: passed early by an ``accept`` result, skipping the later tiers.
        reasons: why, from the deciding tier: every failed or erroring check's reason, or the
            accepting metric, or the judge's verdict.
        values: metric values computed on the way, by check name.
        judge: the judge's record, for items that reached the judge.
    """

    index: int
    id: str | None
    outcome: Outcome
    tier: str
    tier_number: int
    accepted: bool = False
    reasons: tuple[str, ...] = ()
    values: Mapping[str, float] = dataclass_field(default_factory=dict)
    judge: JudgeResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready row: every attribute, the judge record reduced to its decision fields."""
        row: dict[str, Any] = {
            "index": self.index,
            "id": self.id,
            "outcome": self.outcome,
            "tier": self.tier,
            "tier_number": self.tier_number,
            "accepted": self.accepted,
            "reasons": list(self.reasons),
            "values": dict(self.values),
            "judge": None,
        }
        if self.judge is not None:
            row["judge"] = self.judge.model_dump(
                mode="json",
                include={
                    "id",
                    "status",
                    "verdict",
                    "scores",
                    "model_verdict",
                    "card",
                    "model",
                    "cached",
                    "error_kind",
                    "error",
                    "usage",
                    "cost_usd",
                },
            )
        return row


@dataclass(frozen=True)
class TierStats:
    """Counts for one tier. ``items_in == passed + accepted + failed + errors + not_judged``.

    Attributes:
        name: the tier's name.
        number: its 1-based position.
        kind: ``checks`` (deterministic) or ``judge``.
        items_in: items that reached the tier.
        passed: items that went on to the next tier (after the last tier: passed).
        accepted: items passed early here, skipping the later tiers.
        failed: items that failed here.
        errors: items the tier could not decide.
        not_judged: items the judge tier's ``max_cost`` left unstarted.
    """

    name: str
    number: int
    kind: Literal["checks", "judge"]
    items_in: int
    passed: int
    accepted: int
    failed: int
    errors: int
    not_judged: int = 0


@dataclass(frozen=True)
class TieredReport:
    """What a `TieredEval` run did, per tier and per item.

    Attributes:
        items: one `ItemOutcome` per input item, in input order.
        tiers: one `TierStats` per tier, in order.
        judge_card / judge_model: the judge tier's card (``name@version``) and model, if any.
        judged: items sent to the judge (None without a judge tier); items its ``max_cost``
            left unstarted are not counted.
        judge_calls_saved: items not sent to the judge, each a judgment not paid for:
            ``len(items) - judged`` (None without a judge tier). Counted per item; re-asks and
            transport retries the skipped items might have needed are not included.
        served_from_cache: judged items answered from the store or response cache, no call.
        estimated_tokens_avoided: ``judge_calls_saved`` times the mean tokens (input + output)
            of the judged items that made a call; None when none did.
    """

    items: tuple[ItemOutcome, ...]
    tiers: tuple[TierStats, ...]
    judge_card: str | None = None
    judge_model: str | None = None
    judged: int | None = None
    judge_calls_saved: int | None = None
    served_from_cache: int = 0
    estimated_tokens_avoided: int | None = None

    def count(self, outcome: Outcome) -> int:
        """Items with this final outcome.

        Args:
            outcome: ``pass``, ``fail``, ``error`` or ``not_judged``.

        Returns:
            How many items ended so.
        """
        return sum(1 for item in self.items if item.outcome == outcome)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data: totals, the judge section, tiers and every item."""
        judge = None
        if self.judge_card is not None:
            judge = {
                "card": self.judge_card,
                "model": self.judge_model,
                "mock": bool(self.judge_model and self.judge_model.startswith("mock:")),
                "judged": self.judged,
                "calls_saved": self.judge_calls_saved,
                "served_from_cache": self.served_from_cache,
                "estimated_tokens_avoided": self.estimated_tokens_avoided,
            }
        tiers = []
        for stats in self.tiers:
            decided = [
                i for i in self.items if i.tier_number == stats.number and i.outcome != "pass"
            ]
            tiers.append(
                {
                    "name": stats.name,
                    "number": stats.number,
                    "kind": stats.kind,
                    "in": stats.items_in,
                    "passed": stats.passed,
                    "accepted": stats.accepted,
                    "failed": stats.failed,
                    "errors": stats.errors,
                    "not_judged": stats.not_judged,
                    "failures": [
                        {
                            "index": i.index,
                            "id": i.id,
                            "outcome": i.outcome,
                            "reasons": list(i.reasons),
                        }
                        for i in decided
                    ],
                }
            )
        return {
            "items": len(self.items),
            "passed": self.count("pass"),
            "failed": self.count("fail"),
            "errors": self.count("error"),
            "not_judged": self.count("not_judged"),
            "judge": judge,
            "tiers": tiers,
            "results": [item.to_dict() for item in self.items],
        }

    def as_text(self, *, max_listed: int = 20) -> str:
        """A table of the tiers, the totals, the judge savings and the failed items' reasons.

        Args:
            max_listed: failed or erroring items listed with their reasons; the rest are counted.

        Returns:
            Plain text for a terminal.
        """
        header: tuple[str, ...] = (
            "#",
            "tier",
            "kind",
            "in",
            "passed",
            "accepted",
            "failed",
            "errors",
        )
        capped = any(s.not_judged for s in self.tiers)  # a column only if --max-cost left items
        header += ("not judged",) if capped else ()
        rows = [header] + [
            (
                str(s.number),
                s.name,
                s.kind,
                str(s.items_in),
                str(s.passed),
                str(s.accepted),
                str(s.failed),
                str(s.errors),
            )
            + ((str(s.not_judged),) if capped else ())
            for s in self.tiers
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = [
            "  ".join(
                cell.ljust(w) if i in (1, 2) else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths))
            )
            for row in rows
        ]
        total = len(self.items)
        lines.append("")
        errors = self.count("error")
        lines.append(
            f"{total} items: {self.count('pass')} passed, {self.count('fail')} failed, "
            f"{errors} {'error' if errors == 1 else 'errors'}"
            + (f", {left} not judged (--max-cost)" if (left := self.count("not_judged")) else "")
        )
        if self.judge_calls_saved is not None:
            share = f" ({self.judge_calls_saved / total:.0%})" if total else ""
            lines.append(
                f"judge {self.judge_card} on {self.judge_model}: {self.judged} of {total} items judged, "
                f"{self.judge_calls_saved} judge calls saved{share}, {self.served_from_cache} served from cache"
            )
            if self.estimated_tokens_avoided is not None:
                lines.append(
                    f"estimated tokens avoided: ~{self.estimated_tokens_avoided:,} (mean usage of the judged items)"
                )
        decided = [i for i in self.items if i.outcome != "pass"]
        if decided:
            lines.append("")
            lines.append("failed and errors:")
            for item in decided[:max_listed]:
                label = item.id if item.id is not None else f"#{item.index}"
                lines.append(f"  {label}  {item.outcome} at {item.tier}: {'; '.join(item.reasons)}")
            if len(decided) > max_listed:
                lines.append(f"  … and {len(decided) - max_listed} more")
        return "\n".join(lines)
