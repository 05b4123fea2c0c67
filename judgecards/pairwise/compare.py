"""Pairwise A/B comparison: every pair judged in both orders; A or B wins only if it wins both.

LLM judges favour whichever answer they read first (Zheng et al. 2023 found GPT-4 consistent
across a swap in about two cases out of three). So every pair is judged twice with an ordinary
pairwise card, once with A shown first and once with B shown first; the second verdict is mapped
back to A/B naming, and `judgecards.pairwise.rules.resolve_pair` (FastChat's rule, the one
implementation of it) decides: A only if A won both orders, B only if B won both, otherwise a tie.
Both judgments are kept, with a ``position_consistent`` flag.

Each order is an ordinary `Judge` item, so both are stored results with the response cache behind
them: repeating a comparison makes no provider call and an interrupted run resumes. Both orders of
every pair go through one bounded pool (`Judge.ascore_many` on the combined list), so N pairs at
latency L and concurrency C take about 2·N·L/C, not twice that.

A judge with ``max_cost`` starts both orders of a pair or neither (`judgecards.pairwise.budget`):
a pair left by the cap is a ``not_judged`` comparison, not an error and not stored.
`plan_comparisons` projects a comparison's cost with no call.

`Judge` knows nothing of pairs: these functions take a ready pairwise judge. Decided comparisons
go to the ``comparisons`` table (`judgecards.pairwise.stored`), which ``judgecards rank`` turns
into Bradley–Terry or Elo ratings.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from judgecards.errors import WrongCardKind
from judgecards.judging import item_id_of
from judgecards.pairwise.budget import ComparePlan, hold_pairs
from judgecards.pairwise.comparisons import ComparisonResult, OrderJudgment
from judgecards.pairwise.rules import VERDICTS, Verdict, is_pairwise, resolve_pair
from judgecards.pairwise.stored import save_comparisons
from judgecards.storage import JudgeResult

if TYPE_CHECKING:
    from judgecards.judging import Judge, Progress

__all__ = [
    "ComparisonResult",
    "OrderJudgment",
    "acompare_many",
    "combine_orders",
    "compare",
    "compare_many",
    "pair_orders",
    "plan_comparisons",
]

_SWAP: dict[str, Verdict] = {"A": "B", "B": "A", "tie": "tie"}
# Keys of a pair that are not passed to the card as they are (the answers are placed per order).
_PAIR_KEYS = frozenset({"id", "answer_a", "answer_b", "model_a", "model_b"})


# --------------------------------------------------------------------------- judging


def compare(
    judge: Judge,
    question: str,
    answer_a: str,
    answer_b: str,
    *,
    reference: str | None = None,
    pair_id: str | None = None,
    model_a: str | None = None,
    model_b: str | None = None,
) -> ComparisonResult:
    """Judge one pair of answers in both orders.

    Args:
        judge: a pairwise judge (its card, model, store, cache and provider are used).
        question / answer_a / answer_b / reference: the card's inputs (``reference`` optional).
        pair_id: the pair's id, stored with both order results.
        model_a / model_b: labels of the models that wrote A and B (for rankings and the
            self-preference check).

    Returns:
        The `ComparisonResult`, also stored in the ``comparisons`` table.

    Raises:
        WrongCardKind: the judge's card is not a pairwise card (a `ValueError`).
    """
    pair = {
        "id": pair_id,
        "question": question,
        "answer_a": answer_a,
        "answer_b": answer_b,
        "reference": reference,
    }
    return compare_many(judge, [pair], concurrency=2, model_a=model_a, model_b=model_b)[0]


def compare_many(
    judge: Judge,
    pairs: Iterable[Mapping[str, Any]],
    *,
    concurrency: int = 8,
    progress: Progress | None = None,
    model_a: str | None = None,
    model_b: str | None = None,
) -> list[ComparisonResult]:
    """Judge many pairs, each in both orders, with at most ``concurrency`` calls in flight.

    Each pair is a mapping with ``answer_a``, ``answer_b`` and the card's other inputs
    (``question``, optional ``reference``), optionally an ``id`` and per-pair ``model_a`` /
    ``model_b`` labels (which override the arguments). Results come back in input order; a pair
    whose judgment failed in either order is an ``error`` comparison, never dropped.
    ``progress`` is called after each of the 2·N single judgments.

    Raises:
        WrongCardKind: the judge's card is not a pairwise card (no ``answer_a``/``answer_b``
            inputs; a `ValueError`).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(
            acompare_many(
                judge,
                pairs,
                concurrency=concurrency,
                progress=progress,
                model_a=model_a,
                model_b=model_b,
            )
        )
    raise RuntimeError(
        "compare_many() cannot run inside an event loop; use `await acompare_many(judge, ...)`"
    )


async def acompare_many(
    judge: Judge,
    pairs: Iterable[Mapping[str, Any]],
    *,
    concurrency: int = 8,
    progress: Progress | None = None,
    model_a: str | None = None,
    model_b: str | None = None,
    pool: asyncio.Semaphore | None = None,
) -> list[ComparisonResult]:
    """Async twin of `compare_many`; ``pool`` bounds the calls in flight together with other
    batches that share it (see `Judge.ascore_many`)."""
    _check_pairwise(judge)
    pairs = list(pairs)
    orders = [pair_orders(pair) for pair in pairs]
    items = [order for both in orders for order in both]
    # Both orders of every pair share one pool, so a swap doubles the calls but not the wall time per call.
    with hold_pairs(judge, orders):  # under a max_cost: both orders of a pair, or neither
        results = await judge.ascore_many(
            items, concurrency=concurrency, progress=progress, pool=pool
        )
    comparisons = [
        combine_orders(judge, pair, results[2 * index], results[2 * index + 1], model_a, model_b)
        for index, pair in enumerate(pairs)
    ]
    save_comparisons(judge.store, [c for c in comparisons if c.status != "not_judged"])
    return comparisons


def plan_comparisons(judge: Judge, pairs: Iterable[Mapping[str, Any]]) -> ComparePlan:
    """What `compare_many` of ``pairs`` would send, both orders of each, and its projected cost,
    live and batch, with no call: every first prompt rendered, its tokens estimated; orders
    already stored or answered by the response cache cost nothing (`judgecards.pairwise.budget`).

    Raises:
        WrongCardKind: the judge's card is not a pairwise card (a `ValueError`).
    """
    _check_pairwise(judge)
    return ComparePlan.of(judge, [pair_orders(pair) for pair in pairs])


def _check_pairwise(judge: Judge) -> None:
    if not is_pairwise(judge.card):
        raise WrongCardKind(
            f"compare needs a pairwise card with answer_a and answer_b inputs; {judge.card.ref} has "
            f"{', '.join(judge.card.spec.inputs)}",
            file=judge.card.path,
            field="inputs",
        )


def pair_orders(pair: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two items of a pair: A shown first, then B shown first (ids ``ID:AB``, ``ID:BA``);
    what is judged of a pair, live or through a provider batch."""
    shared = {key: value for key, value in pair.items() if key not in _PAIR_KEYS}
    first = {**shared, "answer_a": pair.get("answer_a"), "answer_b": pair.get("answer_b")}
    second = {**shared, "answer_a": pair.get("answer_b"), "answer_b": pair.get("answer_a")}
    pair_id = item_id_of(pair)
    if pair_id is not None:
        first["id"], second["id"] = f"{pair_id}:AB", f"{pair_id}:BA"
    return first, second


def _order(result: JudgeResult, shown_first: Literal["A", "B"]) -> OrderJudgment:
    if result.status == "not_judged":
        return OrderJudgment(
            shown_first=shown_first,
            result_id=result.id,
            status="not_judged",
            cost_usd=0.0,
            error=result.error,
        )
    position = result.verdict if result.ok else None
    error_kind, error = result.error_kind, result.error
    if result.ok and position not in VERDICTS:
        error_kind = "invalid_output"
        error = f"{result.card} gave verdict {position!r}; compare needs 'A', 'B' or 'tie'"
    usable = result.ok and position in VERDICTS
    verdict: Verdict | None = None
    if usable and position is not None:
        # With B shown first, the judge's "A" (first position) is answer B: swap back.
        verdict = _SWAP[position] if shown_first == "B" else cast(Verdict, position)
    reasoning = (result.output or {}).get("reasoning")
    return OrderJudgment(
        shown_first=shown_first,
        verdict=verdict,
        position_verdict=position,
        result_id=result.id,
        status="ok" if usable else "error",
        reasoning=reasoning if isinstance(reasoning, str) else None,
        raw_reply=result.raw_reply,
        cached=result.cached,
        cost_usd=result.cost_usd,
        error_kind=None if usable else error_kind,
        error=None if usable else error,
    )


def combine_orders(  # noqa: PLR0917  a pair, its two results and its two names
    judge: Judge,
    pair: Mapping[str, Any],
    first_result: JudgeResult,
    second_result: JudgeResult,
    model_a: str | None,
    model_b: str | None,
) -> ComparisonResult:
    """The comparison of ``pair`` from its two orders' results (`pair_orders`), by the two-order
    rule: written once, for live comparisons and batch ones alike."""
    first = _order(first_result, "A")
    second = _order(second_result, "B")
    label_a = _label(pair.get("model_a")) or model_a
    label_b = _label(pair.get("model_b")) or model_b
    key = hashlib.sha256(
        json.dumps([first_result.id, second_result.id, label_a, label_b]).encode()
    ).hexdigest()[:32]
    common: dict[str, Any] = {
        "id": key,
        "pair_id": item_id_of(pair),
        "model_a": label_a,
        "model_b": label_b,
        "card": judge.card.ref,
        "card_hash": judge.card.hash,
        "model": judge.model,
        "first_order": first,
        "second_order": second,
        "len_a": len(str(pair.get("answer_a") or "")),
        "len_b": len(str(pair.get("answer_b") or "")),
    }
    left = [order for order in (first, second) if order.status == "not_judged"]
    if left:  # the cap left the pair whole; an order stored before waits for its partner
        return ComparisonResult(status="not_judged", error=left[0].error, **common)
    if first.verdict is None or second.verdict is None:
        problems = [
            f"{name} order: {order.error or 'failed'}"
            for name, order in (("first", first), ("second", second))
            if order.verdict is None
        ]
        return ComparisonResult(status="error", error="; ".join(problems), **common)
    return ComparisonResult(
        status="ok",
        winner=resolve_pair(first.verdict, second.verdict),
        position_consistent=first.verdict == second.verdict,
        **common,
    )


def _label(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)
