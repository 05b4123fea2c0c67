"""Pairwise A/B comparison: every pair judged in both orders; A or B wins only if it wins both.

LLM judges favour whichever answer they read first (Zheng et al. 2023 found GPT-4 consistent
across a swap in about two cases out of three). So every pair is judged twice with an ordinary
pairwise card, once with A shown first and once with B shown first; the second verdict is mapped
back to A/B naming, and `judgecards.pairwise.resolve_pair` (FastChat's rule, the one
implementation of it) decides: A only if A won both orders, B only if B won both, otherwise a tie.
Both judgments are kept, with a ``position_consistent`` flag.

Each order is an ordinary `Judge` item, so both are stored results with the response cache behind
them: repeating a comparison makes no provider call and an interrupted run resumes. Both orders of
every pair go through one bounded pool (`Judge.ascore_many` on the combined list), so N pairs at
latency L and concurrency C take about 2·N·L/C, not twice that.

Decided comparisons go to the ``comparisons`` table with the compared models' labels, which
`rank_stored` (``judgecards rank``) turns into Bradley–Terry or Elo ratings.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from judgecards.errors import StoreError
from judgecards.pairwise import (
    VERDICTS,
    PairOutcome,
    PairwiseReport,
    Verdict,
    pairwise_report,
    resolve_pair,
)
from judgecards.results import JudgeResult

if TYPE_CHECKING:
    from judgecards.judge import Judge, Progress
    from judgecards.ranking import Ratings
    from judgecards.store import Store

__all__ = [
    "ComparisonResult",
    "OrderJudgment",
    "acompare_many",
    "compare",
    "compare_many",
    "comparison_report",
    "load_comparisons",
    "rank_stored",
    "save_comparisons",
]

_SWAP: dict[str, Verdict] = {"A": "B", "B": "A", "tie": "tie"}
# Keys of a pair that are not passed to the card as they are (the answers are placed per order).
_PAIR_KEYS = frozenset({"id", "answer_a", "answer_b", "model_a", "model_b"})


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
        status: ``ok`` or ``error`` (see ``error_kind`` and ``error``).
        reasoning: the judge's reasoning, when the card asks for one.
        raw_reply: the judge's last raw reply.
        cached: served from the store or the response cache, without a provider call.
    """

    model_config = ConfigDict(extra="forbid")

    shown_first: Literal["A", "B"]
    verdict: Verdict | None = None
    position_verdict: str | None = None
    result_id: str
    status: Literal["ok", "error"]
    reasoning: str | None = None
    raw_reply: str | None = None
    cached: bool = False
    error_kind: str | None = None
    error: str | None = None


class ComparisonResult(BaseModel):
    """A pair of answers judged in both orders.

    Attributes:
        id: stable key of the two order results and the model labels; re-running the same
            comparison writes the same ``comparisons`` row.
        pair_id: the caller's id for the pair (the ``id`` joined on), if any.
        status: ``ok`` when both orders produced a verdict, else ``error`` (``winner`` is None).
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
    status: Literal["ok", "error"]
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


# --------------------------------------------------------------------------- judging


def compare(
    question: str,
    answer_a: str,
    answer_b: str,
    *,
    reference: str | None = None,
    model: str = "mock:judge",
    card: str = "pairwise",
    judge: Judge | None = None,
    pair_id: str | None = None,
    model_a: str | None = None,
    model_b: str | None = None,
    **judge_options: Any,
) -> ComparisonResult:
    """Judge one pair of answers in both orders.

    Args:
        question / answer_a / answer_b / reference: the card's inputs (``reference`` optional).
        model / card / **judge_options: used to build a `Judge` when ``judge`` is not given.
        judge: a ready pairwise judge (its store, cache and provider are used).
        pair_id: the pair's id, stored with both order results.
        model_a / model_b: labels of the models that wrote A and B (for rankings and the
            self-preference check).
    """
    if judge is None:
        from judgecards.judge import Judge

        judge = Judge(card, model, **judge_options)
    elif judge_options:
        raise TypeError(
            f"pass {', '.join(sorted(judge_options))} to Judge(...), not together with judge="
        )
    return judge.compare(
        question,
        answer_a,
        answer_b,
        reference=reference,
        pair_id=pair_id,
        model_a=model_a,
        model_b=model_b,
    )


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
        ValueError: the judge's card is not a pairwise card (no ``answer_a``/``answer_b`` inputs).
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
        "compare_many() cannot run inside an event loop; use `await judge.acompare_many(...)`"
    )


async def acompare_many(
    judge: Judge,
    pairs: Iterable[Mapping[str, Any]],
    *,
    concurrency: int = 8,
    progress: Progress | None = None,
    model_a: str | None = None,
    model_b: str | None = None,
) -> list[ComparisonResult]:
    """Async twin of `compare_many`."""
    inputs = judge.card.spec.inputs
    if "answer_a" not in inputs or "answer_b" not in inputs:
        raise ValueError(
            f"compare needs a pairwise card with answer_a and answer_b inputs; {judge.card.ref} has "
            f"{', '.join(inputs)}"
        )
    pairs = list(pairs)
    items: list[dict[str, Any]] = []
    for pair in pairs:
        items.extend(_orders(pair))
    # Both orders of every pair share one pool, so a swap doubles the calls but not the wall time per call.
    results = await judge.ascore_many(items, concurrency=concurrency, progress=progress)
    comparisons = [
        _combine(judge, pair, results[2 * index], results[2 * index + 1], model_a, model_b)
        for index, pair in enumerate(pairs)
    ]
    save_comparisons(judge.store, comparisons)
    return comparisons


def _orders(pair: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two items of a pair: A shown first, then B shown first."""
    shared = {key: value for key, value in pair.items() if key not in _PAIR_KEYS}
    first = {**shared, "answer_a": pair.get("answer_a"), "answer_b": pair.get("answer_b")}
    second = {**shared, "answer_a": pair.get("answer_b"), "answer_b": pair.get("answer_a")}
    pair_id = pair.get("id")
    if pair_id is not None:
        first["id"], second["id"] = f"{pair_id}:AB", f"{pair_id}:BA"
    return first, second


def _order(result: JudgeResult, shown_first: Literal["A", "B"]) -> OrderJudgment:
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
        error_kind=None if usable else error_kind,
        error=None if usable else error,
    )


def _combine(
    judge: Judge,
    pair: Mapping[str, Any],
    first_result: JudgeResult,
    second_result: JudgeResult,
    model_a: str | None,
    model_b: str | None,
) -> ComparisonResult:
    first = _order(first_result, "A")
    second = _order(second_result, "B")
    label_a = _label(pair.get("model_a")) or model_a
    label_b = _label(pair.get("model_b")) or model_b
    key = hashlib.sha256(
        json.dumps([first_result.id, second_result.id, label_a, label_b]).encode()
    ).hexdigest()[:32]
    pair_id = pair.get("id")
    common: dict[str, Any] = {
        "id": key,
        "pair_id": None if pair_id is None else str(pair_id),
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


# --------------------------------------------------------------------------- storing


_COLUMNS = (
    "id", "pair_id", "card", "card_hash", "model", "model_a", "model_b", "status", "winner",
    "position_consistent", "first_verdict", "second_verdict", "first_result_id", "second_result_id",
    "len_a", "len_b", "error", "created_at",
)  # fmt: skip
# Re-judging a comparison updates it but keeps its first created_at, so Elo's order stays the
# order in which pairs were first judged.
_UPSERT = (
    f"INSERT INTO comparisons ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)}) "
    "ON CONFLICT(id) DO UPDATE SET "
    + ", ".join(
        f"{column} = excluded.{column}" for column in _COLUMNS if column not in ("id", "created_at")
    )
)


def save_comparisons(store: Store, comparisons: Sequence[ComparisonResult]) -> None:
    """Write comparisons in one transaction (the two order results are already stored)."""
    rows = [_row(c) for c in comparisons]
    if not rows:
        return
    try:
        with store.transaction() as connection:
            connection.executemany(_UPSERT, rows)
    except sqlite3.Error as error:
        raise StoreError(f"cannot write comparisons to {store.path}: {error}") from error


def _row(c: ComparisonResult) -> tuple[Any, ...]:
    return (
        c.id, c.pair_id, c.card, c.card_hash, c.model, c.model_a, c.model_b, c.status, c.winner,
        None if c.position_consistent is None else int(c.position_consistent),
        c.first_order.verdict, c.second_order.verdict, c.first_order.result_id,
        c.second_order.result_id, c.len_a, c.len_b, c.error, c.created_at.isoformat(),
    )  # fmt: skip


def load_comparisons(
    store: Store,
    *,
    card: str | None = "pairwise",
    judge_model: str | None = None,
    status: str | None = "ok",
) -> list[dict[str, Any]]:
    """Stored comparison rows, oldest first, as dicts of the ``comparisons`` columns.

    ``card`` is ``name`` (any version) or ``name@version``; ``None`` means any card.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if card:
        clauses.append("card = ?" if "@" in card else "card LIKE ?")
        params.append(card if "@" in card else f"{card}@%")
    if judge_model:
        clauses.append("model = ?")
        params.append(judge_model)
    if status:
        clauses.append("status = ?")
        params.append(status)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.query(
        f"SELECT {', '.join(_COLUMNS)} FROM comparisons {where} ORDER BY created_at, id", params
    )
    return [dict(zip(_COLUMNS, row)) for row in rows]


# --------------------------------------------------------------------------- reporting


def comparison_report(
    comparisons: Sequence[ComparisonResult],
    *,
    judge_model: str | None = None,
    level: float = 0.95,
    seed: int | None = 0,
    n_resamples: int = 2000,
) -> PairwiseReport:
    """The A/B report (`judgecards.pairwise.pairwise_report`) over decided comparisons.

    Failed comparisons are left out (count them from ``status``). The verbosity check uses the
    answers' lengths in characters. The self-preference warning checks the judge model against
    every label of A and B (per-pair labels included).
    """
    decided = [c for c in comparisons if c.outcome is not None]
    labels_a = list(dict.fromkeys(c.model_a for c in decided if c.model_a))
    labels_b = list(dict.fromkeys(c.model_b for c in decided if c.model_b))
    report = pairwise_report(
        [c.outcome for c in decided if c.outcome is not None],
        level=level,
        seed=seed,
        n_resamples=n_resamples,
        model_a=labels_a[0] if len(labels_a) == 1 else "A",
        model_b=labels_b[0] if len(labels_b) == 1 else "B",
        len_a=[c.len_a for c in decided],
        len_b=[c.len_b for c in decided],
    )
    if judge_model and (labels_a or labels_b):
        from judgecards.bias import self_preference_warning

        report = replace(
            report, self_preference=self_preference_warning(judge_model, [*labels_a, *labels_b])
        )
    return report


def rank_stored(
    store: Store,
    *,
    card: str = "pairwise",
    judge_model: str | None = None,
    method: Literal["bt", "elo"] = "bt",
    **options: Any,
) -> Ratings:
    """Bradley–Terry (``"bt"``) or Elo ratings over stored comparisons that carry model labels.

    ``options`` go to `judgecards.ranking.bradley_terry` or `judgecards.ranking.elo` (``ties``,
    ``bootstrap``, ``seed``, ``k``…). Elo replays comparisons in the order they were first judged.

    Raises:
        ValueError: no labelled comparisons, or comparisons from several judge models or card
            versions (their verdicts are not one judge's; pick one with ``judge_model`` or
            ``card="name@version"``).
    """
    from judgecards.ranking import bradley_terry, elo

    rows = load_comparisons(store, card=card, judge_model=judge_model)
    usable = [r for r in rows if r["model_a"] and r["model_b"] and r["model_a"] != r["model_b"]]
    if not usable:
        raise ValueError(
            f"no stored {card} comparisons with model labels"
            + (f" by {judge_model}" if judge_model else "")
            + f" in {store.path} (label A and B with model_a/model_b or --model-a/--model-b)"
        )
    judges = sorted({f"{r['card']} by {r['model']}" for r in usable})
    if len(judges) > 1:
        raise ValueError(
            f"stored comparisons come from {len(judges)} judges ({'; '.join(judges)}); "
            "rank one at a time: choose the judge model and/or card@version"
        )
    comparisons = [(r["model_a"], r["model_b"], r["winner"]) for r in usable]
    if method == "bt":
        return bradley_terry(comparisons, **options)
    if method == "elo":
        return elo(comparisons, **options)
    raise ValueError(f"method must be 'bt' or 'elo', got {method!r}")
