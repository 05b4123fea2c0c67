"""The latest calibration of a card version for a judge model, read cheaply.

`Judge` asks on every construction whether its card@version was ever checked against human
labels for its model, and ``judgecards cards list`` shows the answer per card version. Both must
stay fast and must work on a database that has never seen the calibration package, so this module
imports only the standard library, runs one indexed query over the headline the audit code caches
on each ``audits`` row (kappa, n, date), and treats missing tables as "never calibrated".

"Calibrated" means: some audit of that card@version and model (a spot-check sample or an
anchor-set re-run) has at least one human label. A calibration with a poor kappa still counts;
`judgecards audit report` is where quality is judged.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgecards.store import Store

__all__ = ["CalibrationStatus", "calibrations", "latest_calibration"]

_COLUMNS = "id, card, model, field, kappa, kappa_low, kappa_high, agreement, n_labeled, created_at"


@dataclass(frozen=True)
class CalibrationStatus:
    """The newest labelled audit of one card version with one judge model.

    Attributes:
        card: ``name@version``.
        model: the judge model, ``provider:model``.
        audit_id: the audit the numbers come from.
        field: the label field the kappa is over (``verdict`` for cards with verdicts).
        kappa: judge–human Cohen's kappa on ``field``; ``None`` when undefined (every label
            identical on both sides).
        kappa_low: lower bound of its 95% bootstrap interval (``None`` when undefined).
        kappa_high: upper bound (``None`` when undefined).
        agreement: share of items where judge and humans agree on ``field``.
        n: items with a human reference label on ``field``.
        date: when the audit's sample was drawn (or the re-run made), UTC.
    """

    card: str
    model: str
    audit_id: int
    field: str
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    agreement: float | None
    n: int
    date: datetime

    def describe(self) -> str:
        """``kappa 0.812 [0.701, 0.903] n=50, 2025-06-01, openai:gpt-4o (audit #3)``."""
        if self.kappa is None:
            kappa = "kappa undefined"
        elif self.kappa_low is None or self.kappa_high is None:
            kappa = f"kappa {self.kappa:.3f}"
        else:
            kappa = f"kappa {self.kappa:.3f} [{self.kappa_low:.3f}, {self.kappa_high:.3f}]"
        return f"{kappa} n={self.n}, {self.date.date().isoformat()}, {self.model} (audit #{self.audit_id})"


def latest_calibration(store: Store, *, card: str, model: str) -> CalibrationStatus | None:
    """The newest labelled audit of a card version with a judge model, or ``None``.

    One indexed query and no computation, cheap enough for every `Judge` construction.

    Args:
        store: the results database; it need not have the calibration tables.
        card: ``name@version``.
        model: the judge model, ``provider:model``.

    Returns:
        A `CalibrationStatus`, or ``None`` when that card version was never calibrated for
        that model (or the calibration tables do not exist yet).
    """
    rows = _query(
        store.db.conn,
        f"SELECT {_COLUMNS} FROM audits WHERE card = ? AND model = ? AND n_labeled > 0 "
        "ORDER BY created_at DESC, id DESC LIMIT 1",
        (card, model),
    )
    return _status(rows[0]) if rows else None


def calibrations(
    source: Store | str | os.PathLike[str], *, card: str | None = None
) -> list[CalibrationStatus]:
    """The latest calibration of every (card version, model) pair, newest first.

    Returns:
        One `CalibrationStatus` per pair; ``[]`` when nothing was calibrated.

    Args:
        source: an open `Store`, or a database path, which is then opened read-only, so
            listing never creates or migrates a database (a missing file gives ``[]``).
        card: only this ``name@version``.
    """
    where = "n_labeled > 0" + (" AND card = ?" if card else "")
    sql = f"SELECT {_COLUMNS} FROM audits WHERE {where} ORDER BY created_at DESC, id DESC"
    params = (card,) if card else ()
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            return []
        try:
            connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error:
            return []
        try:
            rows = _query(connection, sql, params)
        finally:
            connection.close()
    else:
        rows = _query(source.db.conn, sql, params)
    latest: dict[tuple[str, str], CalibrationStatus] = {}
    for row in rows:
        status = _status(row)
        latest.setdefault((status.card, status.model), status)
    return list(latest.values())


def _query(
    connection: sqlite3.Connection, sql: str, params: tuple[Any, ...]
) -> list[tuple[Any, ...]]:
    try:
        return connection.execute(sql, params).fetchall()
    except sqlite3.OperationalError:
        # No calibration tables (or an older schema): nothing was ever calibrated here.
        return []


def _status(row: tuple[Any, ...]) -> CalibrationStatus:
    audit_id, card, model, field, kappa, low, high, agreement, n, created_at = row
    return CalibrationStatus(
        card=card,
        model=model,
        audit_id=int(audit_id),
        field=field or "",
        kappa=kappa,
        kappa_low=low,
        kappa_high=high,
        agreement=agreement,
        n=int(n or 0),
        date=datetime.fromisoformat(created_at),
    )
