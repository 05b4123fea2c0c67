"""Every SQL statement on the cascade decision tables: who decided each item or pair, and how.

``cascade_decisions`` (``m005_cascade_decisions``) holds one row per comparison a pairwise
cascade made; ``cascade_results`` (``m006_cascade_results``) one row per result a single-item
cascade made. Both say whether that judgment decided its item, who did (a model or people), the
judge's threshold, the judgment's confidence, the escalated audit and the run's target and δ.
Statements go through `judgecards.Store.transaction` and `Store.query` only, like those of
`calibration.labels.repository`. A database the calibration API never opened has neither table: reads
then answer as if it were empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judgecards.storage import Store, card_filter, insert_sql

__all__ = [
    "DECISION_COLUMNS",
    "RESULT_DECISION_COLUMNS",
    "cascade_decisions",
    "cascade_result_decisions",
    "save_cascade_decisions",
    "save_cascade_result_decisions",
]

_SHARED = (
    "card",
    "card_hash",
    "model",
    "stage",
    "threshold",
    "confidence",
    "trusted",
    "decided_by",
    "audit_id",
    "target",
    "delta",
    "created_at",
)
DECISION_COLUMNS = ("comparison_id", "pair_id", *_SHARED)
RESULT_DECISION_COLUMNS = ("result_id", "item_id", *_SHARED)


def save_cascade_decisions(store: Store, rows: Sequence[Mapping[str, Any]]) -> None:
    """Upsert pairwise decision rows (`DECISION_COLUMNS`) in one transaction: a comparison's
    newest cascade run is the one that counts."""
    _upsert(store, "cascade_decisions", DECISION_COLUMNS, rows)


def save_cascade_result_decisions(store: Store, rows: Sequence[Mapping[str, Any]]) -> None:
    """Upsert single-item decision rows (`RESULT_DECISION_COLUMNS`) in one transaction: a
    result's newest cascade run is the one that counts."""
    _upsert(store, "cascade_results", RESULT_DECISION_COLUMNS, rows)


def cascade_decisions(
    store: Store, *, card: str | None = None, model: str | None = None
) -> list[dict[str, Any]]:
    """Stored pairwise decision rows, oldest first, as ``{column: value}``; ``card`` is ``name``
    or ``name@version``, ``model`` the judge that made the comparison."""
    return _read(store, "cascade_decisions", DECISION_COLUMNS, card, model)


def cascade_result_decisions(
    store: Store, *, card: str | None = None, model: str | None = None
) -> list[dict[str, Any]]:
    """Stored single-item decision rows, oldest first, as ``{column: value}``; ``card`` is
    ``name`` or ``name@version``, ``model`` the judge that made the result."""
    return _read(store, "cascade_results", RESULT_DECISION_COLUMNS, card, model)


def _upsert(
    store: Store, table: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> None:
    if not rows:
        return
    key = columns[0]
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
    sql = insert_sql(table, columns) + f" ON CONFLICT({key}) DO UPDATE SET {updates}"
    with store.transaction(f"record {len(rows)} cascade decision(s)") as tx:
        tx.executemany(sql, [{c: row.get(c) for c in columns} for row in rows])


def _read(
    store: Store, table: str, columns: Sequence[str], card: str | None, model: str | None
) -> list[dict[str, Any]]:
    if table not in store.tables():
        return []
    clauses, params = card_filter(card)
    if model:
        clauses.append("model = ?")
        params.append(model)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.query(
        f"SELECT {', '.join(columns)} FROM {table} {where} ORDER BY created_at, {columns[0]}",
        params,
        doing="read cascade decisions",
    )
    return [dict(zip(columns, row)) for row in rows]
