"""Every SQL statement of the labelling queues (`calibration.audits.queue`).

The queue's own tables (``label_queues``, ``queue_reservations``, ``queue_skips``,
``queue_sides``, ``label_reveals``; migration ``m004`` of `calibration.labels.migrations`;
``queue_disclosures``, ``m007``) and the
queue's reads of ``audit_items`` and ``labels``. Blind labels themselves are written by
`calibration.labels.repository.CalibrationRepository.add_labels`, the same statement ``labels import``
uses. Each method that decides something (which item to serve, whether a label may be stored)
runs its reads and writes inside one `Transaction`, i.e. under ``BEGIN IMMEDIATE``: two
labelers asking at once are serialised by SQLite itself, across threads and processes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from judgecards.storage import Store, Transaction

__all__ = ["QueueRepository", "QueueRow"]

QueueRow = tuple[int, int, int, str | None, int, str, str]
_QUEUE_COLUMNS = "audit_id, labels_wanted, reserve_seconds, labelers, reveal, secret, created_at"

# Items a labeler may be served (?1 audit, ?2 labeler, ?3 labels wanted, ?4 now): not
# labelled nor skipped by them, and still short of the labels they ask for once the labels
# given and other labelers' live reservations are counted.
_OPEN_ITEMS = """
SELECT i.position, i.result_id FROM audit_items i
WHERE i.audit_id = ?1
  AND NOT EXISTS (SELECT 1 FROM labels l
                  WHERE l.audit_id = ?1 AND l.result_id = i.result_id AND l.labeler = ?2)
  AND NOT EXISTS (SELECT 1 FROM queue_skips s
                  WHERE s.audit_id = ?1 AND s.position = i.position AND s.labeler = ?2)
  AND (SELECT count(DISTINCT l.labeler) FROM labels l
       WHERE l.audit_id = ?1 AND l.result_id = i.result_id)
    + (SELECT count(*) FROM queue_reservations r
       WHERE r.audit_id = ?1 AND r.position = i.position AND r.labeler != ?2
         AND r.until > ?4)
    < coalesce(i.labels_wanted, ?3)
ORDER BY i.position
"""


class QueueRepository:
    """The queue tables of one `Store` (created by `calibration.labels.migrations.open_store`)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def transaction(self, doing: str) -> Any:
        """`Store.transaction`: every queue decision is one immediate transaction."""
        return self.store.transaction(doing)

    # ------------------------------------------------------------------ settings

    def queue(self, audit_id: int) -> QueueRow | None:
        rows = self.store.query(
            f"SELECT {_QUEUE_COLUMNS} FROM label_queues WHERE audit_id = ?",
            (audit_id,),
            doing=f"read the queue of audit #{audit_id}",
        )
        return rows[0] if rows else None

    def queues(self) -> list[QueueRow]:
        return self.store.query(
            f"SELECT {_QUEUE_COLUMNS} FROM label_queues ORDER BY audit_id",
            doing="read the labelling queues",
        )

    def save_queue(self, tx: Transaction, row: dict[str, Any]) -> None:
        """Insert or update a queue's settings (the secret, once set, is kept)."""
        tx.execute(
            "INSERT INTO label_queues (audit_id, labels_wanted, reserve_seconds, labelers, reveal, "
            "secret, created_at) VALUES (:audit_id, :labels_wanted, :reserve_seconds, :labelers, "
            ":reveal, :secret, :created_at) ON CONFLICT (audit_id) DO UPDATE SET "
            "labels_wanted = excluded.labels_wanted, reserve_seconds = excluded.reserve_seconds, "
            "labelers = excluded.labelers, reveal = excluded.reveal",
            row,
        )

    def want(self, tx: Transaction, audit_id: int, positions: Sequence[int], n: int | None) -> int:
        """Set (``None``: clear) the labels wanted of some items; returns how many exist."""
        cursor = tx.executemany(
            "UPDATE audit_items SET labels_wanted = ? WHERE audit_id = ? AND position = ?",
            [(n, audit_id, position) for position in positions],
        )
        return int(cursor.rowcount)

    # ------------------------------------------------------------------ serving

    def item(self, audit_id: int, position: int) -> tuple[str, str | None, str] | None:
        """An item's result id, item id and judge snapshot (JSON), or ``None``."""
        rows = self.store.query(
            "SELECT result_id, item_id, judge FROM audit_items WHERE audit_id = ? AND position = ?",
            (audit_id, position),
            doing=f"read item {position} of audit #{audit_id}",
        )
        return (rows[0][0], rows[0][1], rows[0][2] or "{}") if rows else None

    def held(self, tx: Transaction, audit_id: int, labeler: str, now: float) -> int | None:
        """The item the labeler holds a live reservation on and has not labelled yet."""
        row = tx.execute(
            "SELECT r.position FROM queue_reservations r JOIN audit_items i "
            "ON i.audit_id = r.audit_id AND i.position = r.position "
            "WHERE r.audit_id = ? AND r.labeler = ? AND r.until > ? AND NOT EXISTS ("
            "SELECT 1 FROM labels l WHERE l.audit_id = r.audit_id AND l.result_id = i.result_id "
            "AND l.labeler = r.labeler) ORDER BY r.until DESC LIMIT 1",
            (audit_id, labeler, now),
        ).fetchone()
        return None if row is None else int(row[0])

    def first_open(
        self, tx: Transaction, audit_id: int, labeler: str, wanted: int, now: float
    ) -> int | None:
        row = tx.execute(_OPEN_ITEMS + " LIMIT 1", (audit_id, labeler, wanted, now)).fetchone()
        return None if row is None else int(row[0])

    def open_count(self, audit_id: int, labeler: str, wanted: int, now: float) -> int:
        rows = self.store.query(
            f"SELECT count(*) FROM ({_OPEN_ITEMS})",
            (audit_id, labeler, wanted, now),
            doing=f"count the open items of audit #{audit_id}",
        )
        return int(rows[0][0])

    def reserve(
        self, tx: Transaction, audit_id: int, position: int, labeler: str, *, until: float
    ) -> None:
        """Hold one item for a labeler (dropping their other holds).

        Others' lapsed holds stay (they no longer count against the item): a labeler whose
        hold lapsed may still label it while nobody else took it (`serving`).
        """
        tx.execute(
            "DELETE FROM queue_reservations WHERE audit_id = ? AND labeler = ?",
            (audit_id, labeler),
        )
        tx.execute(
            "INSERT OR REPLACE INTO queue_reservations (audit_id, position, labeler, until) "
            "VALUES (?, ?, ?, ?)",
            (audit_id, position, labeler, until),
        )

    def serving(
        self,
        tx: Transaction,
        audit_id: int,
        position: int,
        labeler: str,
        *,
        wanted: int,
        now: float,
    ) -> tuple[bool, int, int]:
        """``(served to the labeler, labels or live holds of others, labels the item wants)``.

        Served: the labeler holds the item (live or lapsed; holds go when they label it or are
        served another item).
        """
        row = tx.execute(
            "SELECT EXISTS (SELECT 1 FROM queue_reservations r WHERE r.audit_id = ?1 "
            "AND r.position = i.position AND r.labeler = ?2), "
            "(SELECT count(DISTINCT l.labeler) FROM labels l WHERE l.audit_id = ?1 "
            "AND l.result_id = i.result_id AND l.labeler != ?2) "
            "+ (SELECT count(*) FROM queue_reservations r WHERE r.audit_id = ?1 "
            "AND r.position = i.position AND r.labeler != ?2 AND r.until > ?4), "
            "coalesce(i.labels_wanted, ?5) "
            "FROM audit_items i WHERE i.audit_id = ?1 AND i.position = ?3",
            (audit_id, labeler, position, now, wanted),
        ).fetchone()
        return bool(row[0]), int(row[1]), int(row[2])

    def release(self, tx: Transaction, audit_id: int, position: int, labeler: str) -> None:
        tx.execute(
            "DELETE FROM queue_reservations WHERE audit_id = ? AND position = ? AND labeler = ?",
            (audit_id, position, labeler),
        )

    def skip(self, tx: Transaction, audit_id: int, position: int, labeler: str, at: str) -> None:
        tx.execute(
            "INSERT OR IGNORE INTO queue_skips (audit_id, position, labeler, created_at) "
            "VALUES (?, ?, ?, ?)",
            (audit_id, position, labeler, at),
        )

    def secret(self, audit_id: int) -> str:
        rows = self.store.query(
            "SELECT secret FROM label_queues WHERE audit_id = ?",
            (audit_id,),
            doing=f"read the queue of audit #{audit_id}",
        )
        return str(rows[0][0])

    def side(self, audit_id: int, position: int, labeler: str) -> bool | None:
        """Whether the labeler was shown this item's answers swapped (``None``: never served)."""
        rows = self.store.query(
            "SELECT swapped FROM queue_sides WHERE audit_id = ? AND position = ? AND labeler = ?",
            (audit_id, position, labeler),
            doing=f"read the pairwise sides of audit #{audit_id}",
        )
        return None if not rows else bool(rows[0][0])

    def save_side(
        self, tx: Transaction, audit_id: int, position: int, labeler: str, swapped: bool
    ) -> None:
        tx.execute(
            "INSERT OR IGNORE INTO queue_sides (audit_id, position, labeler, swapped) "
            "VALUES (?, ?, ?, ?)",
            (audit_id, position, labeler, int(swapped)),
        )

    def sides(self, audit_id: int) -> dict[tuple[int, str], bool]:
        """Every stored side mapping of an audit: ``(position, labeler) -> swapped``."""
        rows = self.store.query(
            "SELECT position, labeler, swapped FROM queue_sides WHERE audit_id = ?",
            (audit_id,),
            doing=f"read the pairwise sides of audit #{audit_id}",
        )
        return {(int(row[0]), row[1]): bool(row[2]) for row in rows}

    # ------------------------------------------------------------------ labels of a labeler

    def labelled(self, tx: Transaction, audit_id: int, result_id: str, labeler: str) -> bool:
        row = tx.execute(
            "SELECT 1 FROM labels WHERE audit_id = ? AND result_id = ? AND labeler = ? LIMIT 1",
            (audit_id, result_id, labeler),
        ).fetchone()
        return row is not None

    def done_count(self, audit_id: int, labeler: str) -> int:
        rows = self.store.query(
            "SELECT count(DISTINCT result_id) FROM labels WHERE audit_id = ? AND labeler = ?",
            (audit_id, labeler),
            doing=f"count the labels of audit #{audit_id}",
        )
        return int(rows[0][0])

    def skipped_count(self, audit_id: int, labeler: str) -> int:
        rows = self.store.query(
            "SELECT count(*) FROM queue_skips WHERE audit_id = ? AND labeler = ?",
            (audit_id, labeler),
            doing=f"count the skips of audit #{audit_id}",
        )
        return int(rows[0][0])

    def last_served_label(self, tx: Transaction, audit_id: int, labeler: str) -> str | None:
        """The result the labeler labelled last through the queue (not an imported sheet)."""
        row = tx.execute(
            "SELECT result_id FROM labels WHERE audit_id = ? AND labeler = ? AND source = 'serve' "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            (audit_id, labeler),
        ).fetchone()
        return None if row is None else str(row[0])

    def position_of(self, tx: Transaction, audit_id: int, result_id: str) -> int:
        row = tx.execute(
            "SELECT position FROM audit_items WHERE audit_id = ? AND result_id = ?",
            (audit_id, result_id),
        ).fetchone()
        return int(row[0])

    def delete_labels(self, tx: Transaction, audit_id: int, result_id: str, labeler: str) -> int:
        """Remove a labeler's served labels of one result (and what they said on reveal)."""
        deleted = tx.execute(
            "DELETE FROM labels WHERE audit_id = ? AND result_id = ? AND labeler = ? "
            "AND source = 'serve'",
            (audit_id, result_id, labeler),
        ).rowcount
        tx.execute(
            "DELETE FROM label_reveals WHERE audit_id = ? AND result_id = ? AND labeler = ?",
            (audit_id, result_id, labeler),
        )
        return int(deleted)

    # ------------------------------------------------------------------ reveals

    def disclose(
        self,
        tx: Transaction,
        audit_id: int,
        position: int,
        labeler: str,
        *,
        result_id: str,
        at: str,
    ) -> None:
        """Record that the judge's answer on an item was shown to a labeler (the first time)."""
        tx.execute(
            "INSERT OR IGNORE INTO queue_disclosures (audit_id, position, labeler, result_id, "
            "revealed_at) VALUES (?, ?, ?, ?, ?)",
            (audit_id, position, labeler, result_id, at),
        )

    def disclosed_at(
        self, tx: Transaction, audit_id: int, position: int, labeler: str
    ) -> str | None:
        """When the judge's answer on the item was first shown to the labeler (``None``: never)."""
        row = tx.execute(
            "SELECT revealed_at FROM queue_disclosures "
            "WHERE audit_id = ? AND position = ? AND labeler = ?",
            (audit_id, position, labeler),
        ).fetchone()
        return None if row is None else str(row[0])

    def save_reveal(self, tx: Transaction, row: dict[str, Any]) -> None:
        tx.execute(
            "INSERT INTO label_reveals (audit_id, position, labeler, result_id, judge, reason, "
            "note, created_at) VALUES (:audit_id, :position, :labeler, :result_id, :judge, "
            ":reason, :note, :created_at) ON CONFLICT (audit_id, position, labeler) DO UPDATE "
            "SET reason = excluded.reason, note = excluded.note, created_at = excluded.created_at",
            {**row, "judge": json.dumps(row["judge"])},
        )

    def reveals(self, audit_id: int) -> list[tuple[int, str, str, Any, str | None, str | None]]:
        """``(position, labeler, result_id, judge shown, reason, note)`` of an audit."""
        rows = self.store.query(
            "SELECT position, labeler, result_id, judge, reason, note FROM label_reveals "
            "WHERE audit_id = ? ORDER BY position, labeler",
            (audit_id,),
            doing=f"read the reveals of audit #{audit_id}",
        )
        return [(int(r[0]), r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]
