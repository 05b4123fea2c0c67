"""Every SQL statement on ``cascade_decisions``: who decided each comparison of a pairwise cascade.

The table is created by ``m005_cascade_decisions`` (`calibration.migrations`); statements go
through `judgecards.Store.transaction` and `Store.query` only, like those of
`calibration.repository`. A database the calibration API never opened has no such table: reads
then answer as if it were empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judgecards.database import insert_sql
from judgecards.store import Store, card_filter

__all__ = ["DECISION_COLUMNS", "cascade_decisions", "save_cascade_decisions"]

DECISION_COLUMNS = (
    "comparison_id", "pair_id", "card", "card_hash", "model", "stage", "threshold", "confidence",
    "trusted", "decided_by", "audit_id", "target", "delta", "created_at",
)  # fmt: skip


def save_cascade_decisions(store: Store, rows: Sequence[Mapping[str, Any]]) -> None:
    """Upsert decision rows (`DECISION_COLUMNS`) in one transaction: a comparison's newest
    cascade run is the one that counts."""
    if not rows:
        return
    updates = ", ".join(f"{c} = excluded.{c}" for c in DECISION_COLUMNS if c != "comparison_id")
    sql = (
        insert_sql("cascade_decisions", DECISION_COLUMNS)
        + f" ON CONFLICT(comparison_id) DO UPDATE SET {updates}"
    )
    with store.transaction(f"record {len(rows)} cascade decision(s)") as tx:
        tx.executemany(sql, [{c: row.get(c) for c in DECISION_COLUMNS} for row in rows])


def cascade_decisions(
    store: Store, *, card: str | None = None, model: str | None = None
) -> list[dict[str, Any]]:
    """Stored decision rows, oldest first, as ``{column: value}``; ``card`` is ``name`` or
    ``name@version``, ``model`` the judge that made the comparison."""
    if "cascade_decisions" not in store.tables():
        return []
    clauses, params = card_filter(card)
    if model:
        clauses.append("model = ?")
        params.append(model)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.query(
        f"SELECT {', '.join(DECISION_COLUMNS)} FROM cascade_decisions {where} "
        "ORDER BY created_at, comparison_id",
        params,
        doing="read cascade decisions",
    )
    return [dict(zip(DECISION_COLUMNS, row)) for row in rows]
