"""The batch tables and their SQL: provider batches and the state of every item in them.

They live in the results database (their own migration set, ``Migrations("judgecards.batch")``,
applied when a batch command opens it) so that a batch id is durable the moment it exists: a
row is written as ``submitting`` before the provider's create call and gets the provider's id
right after, and every item's state is kept until its result is stored. A process killed at
any point leaves rows that say what is known (`judgecards.batch.collect` reconciles the rest).

Tables::

    batch_jobs   one provider batch: its submission (one `submit_batch` call, split into
                 parts), provider and id, the judge it was built for (card, card hash, model,
                 call parameters, settings), its files, state and the provider's status/counts;
                 ``owner`` / ``claimed_at``: the process making its create call right now
    batch_items  one item of one batch: custom_id (= the result id), the item's id and
                 inputs, its state (submitted, errored, expired, canceled, collected,
                 resubmitted, judged_live) and the provider's error text; ``owner`` and
                 ``claimed_at`` name the collector working on it right now, if any
                 (`judgecards.batch.claims`: a claim is taken before anything is paid for the
                 item, renewed while its holder lives, and cleared with the item's next state)
    batch_pairs  the pairs of a ``compare --batch`` submission (both orders are its items),
                 ``waiting`` until their comparison row is written, then ``written``
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import sqlite_utils
from sqlite_utils import Migrations

from judgecards.storage import Database

__all__ = ["BatchRepository", "ItemRow", "JobRow", "migrations"]

migrations = Migrations("judgecards.batch")

_JOB_COLUMNS = (
    "id",
    "submission",
    "part",
    "provider",
    "model",
    "card",
    "card_hash",
    "params",
    "settings",
    "provider_batch_id",
    "input_file_id",
    "output_file_id",
    "error_file_id",
    "state",
    "provider_status",
    "counts",
    "requests",
    "note",
    "created_at",
    "updated_at",
    "owner",
    "claimed_at",
)
_ITEM_COLUMNS = (
    "job_id",
    "custom_id",
    "item_id",
    "inputs",
    "state",
    "error",
    "owner",
    "claimed_at",
)
_DONE_JOB = ("collected", "canceled", "failed")
_CHUNK = 500


@migrations()
def m001_batch_jobs_and_items(db: sqlite_utils.Database) -> None:
    db.table("batch_jobs").create(
        {
            "id": str,
            "submission": str,
            "part": int,
            "provider": str,
            "model": str,
            "card": str,
            "card_hash": str,
            "params": str,
            "settings": str,
            "provider_batch_id": str,
            "input_file_id": str,
            "output_file_id": str,
            "error_file_id": str,
            "state": str,
            "provider_status": str,
            "counts": str,
            "requests": int,
            "note": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"submission", "provider", "model", "card", "card_hash", "state", "created_at"},
    )
    db.table("batch_jobs").create_index(["submission"], index_name="batch_jobs_submission")
    db.table("batch_jobs").create_index(["state"], index_name="batch_jobs_state")
    db.table("batch_items").create(
        {
            "job_id": str,
            "custom_id": str,
            "item_id": str,
            "inputs": str,
            "state": str,
            "error": str,
        },
        pk=("job_id", "custom_id"),
        not_null={"state"},
        foreign_keys=[("job_id", "batch_jobs", "id")],
    )
    db.table("batch_items").create_index(["custom_id"], index_name="batch_items_custom_id")
    db.table("batch_items").create_index(["state"], index_name="batch_items_state")


@migrations()
def m002_batch_pairs(db: sqlite_utils.Database) -> None:
    """Pairs of a ``compare --batch`` submission, whose comparisons rows are written once both
    orders have a stored result."""
    db.table("batch_pairs").create(
        {"submission": str, "position": int, "pair": str, "state": str},
        pk=("submission", "position"),
        not_null={"pair", "state"},
    )
    db.table("batch_pairs").create_index(["state"], index_name="batch_pairs_state")


@migrations()
def m003_batch_claims(db: sqlite_utils.Database) -> None:
    """Which collector is working on an item (so that two never both pay for it), which
    process is creating a batch (so that no other takes its row for a lost create call), and
    when each last said it was alive."""
    for table in ("batch_items", "batch_jobs"):
        db.table(table).add_column("owner", str)
        db.table(table).add_column("claimed_at", str)
        db.table(table).create_index(["owner"], index_name=f"{table}_owner")


def _now() -> str:
    # Fixed width, so that claim times compare as text.
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class JobRow:
    """One stored provider batch (see the module docstring for the columns)."""

    id: str
    submission: str
    part: int
    provider: str
    model: str
    card: str
    card_hash: str
    params: dict[str, Any]
    settings: dict[str, Any]
    provider_batch_id: str | None
    input_file_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    state: str
    provider_status: str | None
    counts: dict[str, int]
    requests: int
    note: str | None
    created_at: str
    updated_at: str | None
    owner: str | None
    claimed_at: str | None

    @classmethod
    def of(cls, values: Sequence[Any]) -> JobRow:
        row = dict(zip(_JOB_COLUMNS, values))
        for name in ("params", "settings", "counts"):
            row[name] = json.loads(row[name] or "{}")
        return cls(**row)


@dataclass(frozen=True)
class ItemRow:
    """One item of a stored batch."""

    job_id: str
    custom_id: str
    item_id: str | None
    inputs: dict[str, Any]
    state: str
    error: str | None
    owner: str | None
    claimed_at: str | None

    @classmethod
    def of(cls, values: Sequence[Any]) -> ItemRow:
        row = dict(zip(_ITEM_COLUMNS, values))
        row["inputs"] = json.loads(row["inputs"] or "{}")
        return cls(**row)


class BatchRepository:
    """Named reads and writes of the batch tables, through the database's one lock."""

    def __init__(self, database: Database) -> None:
        database.migrate(migrations)
        self._db = database

    def add_job(self, job: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> None:
        """A new batch (state ``submitting``) and its items (``submitted``), in one transaction,
        before anything is sent: a crash during the create call leaves a row that says so."""
        row = {column: job.get(column) for column in _JOB_COLUMNS}
        for name in ("params", "settings", "counts"):
            row[name] = json.dumps(job.get(name) or {}, sort_keys=True)
        row["created_at"] = row["updated_at"] = _now()
        row["claimed_at"] = row["created_at"] if row["owner"] else None
        item_rows = [
            {
                "job_id": job["id"],
                "custom_id": item["custom_id"],
                "item_id": item.get("item_id"),
                "inputs": json.dumps(item["inputs"], default=str),
                "state": "submitted",
                "error": None,
            }
            for item in items
        ]
        with self._db.transaction(f"record batch {job['id']}") as tx:
            tx.insert("batch_jobs", row)
            tx.insert_many("batch_items", item_rows)

    def update_job(self, job_id: str, *, unless_done: bool = False, **fields: Any) -> None:
        """Set some columns of one batch (``counts``, ``params``, ``settings`` as mappings);
        ``unless_done``: not once it is collected, canceled or failed (another collector may
        have finished it since it was read)."""
        values = {
            name: json.dumps(value, sort_keys=True)
            if name in ("params", "settings", "counts")
            else value
            for name, value in fields.items()
        }
        unknown = set(values) - set(_JOB_COLUMNS)
        if unknown:
            raise ValueError(f"unknown batch_jobs column(s): {sorted(unknown)}")
        values["updated_at"] = _now()
        assignments = ", ".join(f"{name} = :{name}" for name in values)
        where = "id = :job_id"
        if unless_done:
            where += f" AND state NOT IN ({', '.join(repr(state) for state in _DONE_JOB)})"
        with self._db.transaction(f"update batch {job_id}") as tx:
            tx.execute(
                f"UPDATE batch_jobs SET {assignments} WHERE {where}",
                {
                    **values,
                    "job_id": job_id,
                },
            )

    def set_item_states(self, job_id: str, states: Mapping[str, tuple[str, str | None]]) -> None:
        """``{custom_id: (state, error)}`` for items of one batch, in one transaction; the
        items' claims end with it (the work the claim was for is done)."""
        if not states:
            return
        with self._db.transaction(f"update the items of batch {job_id}") as tx:
            tx.executemany(
                "UPDATE batch_items SET state = ?, error = ?, owner = NULL, claimed_at = NULL "
                "WHERE job_id = ? AND custom_id = ?",
                [(state, error, job_id, key) for key, (state, error) in states.items()],
            )

    def claim_items(
        self,
        job_id: str,
        states: Sequence[str],
        owner: str,
        *,
        claimed_at: str,
        stale_before: str,
        gone: Callable[[str], bool],
    ) -> tuple[list[ItemRow], dict[str, tuple[int, str]]]:
        """Make ``owner`` the holder (since ``claimed_at``) of the items of one batch in
        ``states`` that no other collector holds: unclaimed ones, its own, and those of holders
        that are ``gone`` or have not renewed their claim since ``stale_before``. One immediate transaction: of two
        collectors asking at once, one gets each item.

        Returns the items ``owner`` now holds, and ``{other holder: (items, claimed since)}``
        for the items left to running collectors.
        """
        wanted = list(states)
        marks = ", ".join("?" for _ in wanted)
        with self._db.transaction(f"claim the items of batch {job_id}") as tx:
            held = tx.execute(
                "SELECT owner, count(*), min(claimed_at), max(claimed_at) FROM batch_items "
                f"WHERE job_id = ? AND state IN ({marks}) AND owner IS NOT NULL AND owner != ? "
                "GROUP BY owner",
                [job_id, *wanted, owner],
            ).fetchall()
            free = [row[0] for row in held if row[3] < stale_before or gone(row[0])]
            taken = " OR owner IN (" + ", ".join("?" for _ in free) + ")" if free else ""
            tx.execute(
                "UPDATE batch_items SET owner = ?, claimed_at = ? WHERE job_id = ? AND "
                f"state IN ({marks}) AND (owner IS NULL OR owner = ?{taken})",
                [owner, claimed_at, job_id, *wanted, owner, *free],
            )
            mine = tx.execute(
                f"SELECT {', '.join(_ITEM_COLUMNS)} FROM batch_items WHERE job_id = ? AND "
                f"owner = ? AND state IN ({marks}) ORDER BY rowid",
                [job_id, owner, *wanted],
            ).fetchall()
        others = {row[0]: (int(row[1]), str(row[2])) for row in held if row[0] not in free}
        return [ItemRow.of(row) for row in mine], others

    def renew_claims(self, owner: str, *, claimed_at: str) -> None:
        """``owner`` is alive at ``claimed_at``: its claims (items, batches being created) are
        fresh again."""
        with self._db.transaction("renew batch claims") as tx:
            for table in ("batch_items", "batch_jobs"):
                tx.execute(
                    f"UPDATE {table} SET claimed_at = ? WHERE owner = ?", [claimed_at, owner]
                )

    def release_claims(self, owner: str) -> None:
        """``owner`` stops: what it still holds is free for the next collector."""
        with self._db.transaction("release batch claims") as tx:
            for table in ("batch_items", "batch_jobs"):
                tx.execute(
                    f"UPDATE {table} SET owner = NULL, claimed_at = NULL WHERE owner = ?", [owner]
                )

    def jobs(self, selector: str | None = None) -> list[JobRow]:
        """Stored batches, oldest first: all, or those of a submission or a batch id (ours or
        the provider's)."""
        where, params = "", []
        if selector:
            where = "WHERE submission = ? OR id = ? OR provider_batch_id = ?"
            params = [selector, selector, selector]
        rows = self._db.query(
            f"SELECT {', '.join(_JOB_COLUMNS)} FROM batch_jobs {where} "
            "ORDER BY created_at, submission, part",
            params,
            doing="read stored batches",
        )
        return [JobRow.of(row) for row in rows]

    def items(self, job_id: str, states: Iterable[str] | None = None) -> list[ItemRow]:
        """The items of one batch, optionally only those in ``states``."""
        wanted = list(states or ())
        where = f" AND state IN ({', '.join('?' for _ in wanted)})" if wanted else ""
        rows = self._db.query(
            f"SELECT {', '.join(_ITEM_COLUMNS)} FROM batch_items WHERE job_id = ?{where} "
            "ORDER BY rowid",
            [job_id, *wanted],
            doing=f"read the items of batch {job_id}",
        )
        return [ItemRow.of(row) for row in rows]

    def item_states(self, job_id: str) -> dict[str, int]:
        """How many items of one batch are in each state."""
        rows = self._db.query(
            "SELECT state, count(*) FROM batch_items WHERE job_id = ? GROUP BY state",
            [job_id],
            doing=f"count the items of batch {job_id}",
        )
        return {state: count for state, count in rows}

    def in_open_batches(self, custom_ids: Iterable[str]) -> dict[str, str]:
        """Which of ``custom_ids`` wait in a batch not yet collected: ``{custom_id: job id}``."""
        wanted = list(custom_ids)
        found: dict[str, str] = {}
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            rows = self._db.query(
                "SELECT i.custom_id, i.job_id FROM batch_items i JOIN batch_jobs j "
                "ON j.id = i.job_id WHERE i.state = 'submitted' "
                "AND j.state IN ('submitting', 'submitted', 'ended') "
                f"AND i.custom_id IN ({', '.join('?' for _ in chunk)})",
                chunk,
                doing="look up items waiting in batches",
            )
            found.update({row[0]: row[1] for row in rows})
        return found

    def add_pairs(self, submission: str, pairs: Sequence[Mapping[str, Any]]) -> None:
        """Record a submission's pairs (``waiting`` for their comparisons)."""
        rows = [
            {
                "submission": submission,
                "position": position,
                "pair": json.dumps(pair, default=str),
                "state": "waiting",
            }
            for position, pair in enumerate(pairs)
        ]
        with self._db.transaction(f"record the pairs of {submission}") as tx:
            tx.insert_many("batch_pairs", rows)

    def waiting_pairs(
        self, submissions: Iterable[str] | None = None
    ) -> list[tuple[str, int, dict[str, Any]]]:
        """``(submission, position, pair)`` of pairs whose comparison is not written yet (of
        some submissions, or all)."""
        wanted = None if submissions is None else sorted(set(submissions))
        where = "" if wanted is None else f"AND submission IN ({', '.join('?' for _ in wanted)})"
        rows = self._db.query(
            f"SELECT submission, position, pair FROM batch_pairs WHERE state = 'waiting' {where} "
            "ORDER BY submission, position",
            wanted or [],
            doing="read the pairs waiting for comparisons",
        )
        return [(row[0], row[1], json.loads(row[2])) for row in rows]

    def pairs_written(self, keys: Iterable[tuple[str, int]]) -> None:
        """Mark pairs ``(submission, position)`` as having their comparison row."""
        with self._db.transaction("mark pairs compared") as tx:
            tx.executemany(
                "UPDATE batch_pairs SET state = 'written' WHERE submission = ? AND position = ?",
                list(keys),
            )
