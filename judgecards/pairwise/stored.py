"""Stored comparisons: the ``comparisons`` table and rankings over it.

`save_comparisons` writes the decided pairs of a compare run (each with the two order results
already in ``results``); `load_comparisons` reads them back; `rank_stored` (``judgecards rank``)
fits Bradley–Terry or Elo ratings over the labelled ones.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from judgecards.errors import StoreError

if TYPE_CHECKING:
    from judgecards.pairwise.compare import ComparisonResult
    from judgecards.pairwise.ratings import Ratings
    from judgecards.store import Store

__all__ = ["load_comparisons", "rank_stored", "save_comparisons"]


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


# --------------------------------------------------------------------------- ranking


def rank_stored(
    store: Store,
    *,
    card: str = "pairwise",
    judge_model: str | None = None,
    method: Literal["bt", "elo"] = "bt",
    **options: Any,
) -> Ratings:
    """Bradley–Terry (``"bt"``) or Elo ratings over stored comparisons that carry model labels.

    ``options`` go to `judgecards.pairwise.ratings.bradley_terry` or `judgecards.pairwise.ratings.elo` (``ties``,
    ``bootstrap``, ``seed``, ``k``…). Elo replays comparisons in the order they were first judged.

    Raises:
        ValueError: no labelled comparisons, or comparisons from several judge models or card
            versions (their verdicts are not one judge's; pick one with ``judge_model`` or
            ``card="name@version"``).
    """
    from judgecards.pairwise.ratings import bradley_terry, elo

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
