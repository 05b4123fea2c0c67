"""Every SQL statement on the calibration tables (labels and their post-reveal revisions,
audits, audit items, anchor sets, alignment runs).

The tables live in the results database, created by `calibration.labels.migrations`. Statements go
through `judgecards.Store.transaction` and `Store.query` only, so they take the store's lock
like every other use of the shared connection, and every database error is a `StoreError`
naming the file and what was being done. Rows are written by column name.

A database the calibration API never opened has none of these tables; the read methods then
answer as if they were empty (nothing labelled, nothing audited), so listing never creates them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from calibration.labels.records import (
    AlignmentRun,
    AnchorItem,
    AnchorSet,
    AuditItem,
    AuditRecord,
    Label,
    NewLabel,
)
from judgecards.errors import LabelImportError
from judgecards.storage import Store, card_filter

__all__ = ["CalibrationRepository", "HEADLINE_COLUMNS", "RevisionRow"]

_AUDIT_COLUMNS = (
    "id",
    "kind",
    "card",
    "card_hash",
    "model",
    "seed",
    "n_requested",
    "n",
    "since",
    "stratify",
    "sheet",
    "anchor_set",
    "created_at",
    "n_labeled",
    "kappa",
)
_LABEL_COLUMNS = (
    "id",
    "result_id",
    "item_id",
    "card",
    "model",
    "labeler",
    "field",
    "kind",
    "value",
    "note",
    "audit_id",
    "created_at",
)
_ALIGNMENT_COLUMNS = (
    "id",
    "card",
    "card_hash",
    "label_set_hash",
    "model",
    "field",
    "seed",
    "k",
    "n_pool",
    "n_dev",
    "n_test",
    "candidates",
    "chosen",
    "dev_kappa",
    "dev_low",
    "dev_high",
    "test_kappa",
    "test_low",
    "test_high",
    "test_n",
    "new_card",
    "new_card_hash",
    "new_card_path",
    "created_at",
)
# The headline each audit caches (see calibration.audits.status), in the order status reads it.
HEADLINE_COLUMNS = (
    "id",
    "card",
    "model",
    "field",
    "kappa",
    "kappa_low",
    "kappa_high",
    "agreement",
    "n_labeled",
    "created_at",
)


@dataclass(frozen=True)
class RevisionRow:
    """A label's newest post-reveal correction: its value, when the judge was shown, when made."""

    value: Any
    revealed_at: str
    created_at: str


def _revision_key(label: Label) -> tuple[int, str, str, str]:
    return (label.audit_id or 0, label.result_id, label.labeler, label.field)


def _revised(label: Label, revision: RevisionRow) -> Label:
    mark = (
        f"revised {revision.created_at} after the judge's answer was shown {revision.revealed_at}"
    )
    return replace(
        label, value=revision.value, note=f"{label.note}; {mark}" if label.note else mark
    )


def _where(clauses: Sequence[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


class CalibrationRepository:
    """The calibration tables of one `Store`.

    Args:
        store: the results database; reads work without the calibration tables, writes need
            them (`calibration.labels.migrations.open_store` creates them).
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def _has(self, table: str) -> bool:
        return table in self.store.tables()

    # ------------------------------------------------------------------ labels

    def labels(
        self,
        *,
        card: str | None = None,
        model: str | None = None,
        labeler: str | None = None,
        audit_id: int | None = None,
        revisions: bool = False,
    ) -> list[Label]:
        """Stored labels, oldest first; ``card`` is ``name`` or ``name@version``.

        The labels are the blind ones. With ``revisions`` (asked for explicitly, e.g. ``audit
        report --with-revisions``) a label a labeler corrected after the judge's answer was
        shown carries its newest revision's value instead (``note`` says so).
        """
        if not self._has("labels"):
            return []
        clauses, params = card_filter(card)
        for column, value in (("model", model), ("labeler", labeler), ("audit_id", audit_id)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        rows = self.store.query(
            f"SELECT {', '.join(_LABEL_COLUMNS)} FROM labels {_where(clauses)} "
            "ORDER BY created_at, id",
            params,
            doing="read labels",
        )
        labels = [
            Label(
                id=row[0],
                result_id=row[1],
                item_id=row[2],
                card=row[3],
                model=row[4],
                labeler=row[5],
                field=row[6],
                kind=row[7],
                value=json.loads(row[8]),
                note=row[9],
                audit_id=row[10],
                created_at=datetime.fromisoformat(row[11]),
            )
            for row in rows
        ]
        if not revisions or not self._has("label_revisions"):
            return labels
        revised = self.revisions({label.audit_id for label in labels if label.audit_id})
        return [
            _revised(label, revised[key]) if (key := _revision_key(label)) in revised else label
            for label in labels
        ]

    def add_revisions(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Store a labeler's post-reveal corrections (``label_revisions``), all or nothing."""
        with self.store.transaction(f"store {len(rows)} label revision(s)") as tx:
            tx.insert_many(
                "label_revisions", [{**row, "value": json.dumps(row["value"])} for row in rows]
            )

    def revisions(self, audit_ids: Iterable[int]) -> dict[tuple[int, str, str, str], RevisionRow]:
        """The newest revision per (audit, result, labeler, field) of some audits."""
        ids = sorted(set(audit_ids))
        if not ids or not self._has("label_revisions"):
            return {}
        rows = self.store.query(
            "SELECT audit_id, result_id, labeler, field, value, revealed_at, created_at "
            f"FROM label_revisions WHERE audit_id IN ({', '.join('?' * len(ids))}) "
            "ORDER BY created_at, id",
            ids,
            doing="read label revisions",
        )
        return {
            (row[0], row[1], row[2], row[3]): RevisionRow(json.loads(row[4]), row[5], row[6])
            for row in rows
        }

    def label_keys(self, audit_id: int | None) -> set[tuple[str, str, str]]:
        """Every (result, labeler, field) labelled in an audit (``None``: outside any audit)."""
        if not self._has("labels"):
            return set()
        rows = self.store.query(
            "SELECT result_id, labeler, field FROM labels WHERE ifnull(audit_id, 0) = ?",
            (audit_id or 0,),
            doing="read labels",
        )
        return {(row[0], row[1], row[2]) for row in rows}

    def add_labels(
        self,
        labels: Sequence[NewLabel],
        *,
        audit_id: int | None = None,
        replace: bool = False,
        source: str | None = None,
    ) -> int:
        """Store labels in one transaction: all or nothing. Returns how many replaced a label.

        With ``replace``, a label of the same result, labeler and field (in the same audit, or
        outside any audit) is replaced; without it such a duplicate stores nothing and raises
        `LabelImportError` (e.g. when another import stored it since the caller checked).
        """
        if not labels:
            return 0
        rows = [
            {
                "result_id": label.result_id,
                "item_id": label.item_id,
                "card": label.card,
                "model": label.model,
                "labeler": label.labeler,
                "field": label.field,
                "kind": label.kind,
                "value": json.dumps(label.value),
                "note": label.note,
                "audit_id": audit_id,
                "source": label.source,
                "created_at": label.created_at,
            }
            for label in labels
        ]
        replaced = 0
        with self.store.transaction(f"store {len(rows)} label(s)") as tx:
            if replace:
                for row in rows:
                    replaced += tx.execute(
                        "DELETE FROM labels WHERE result_id = ? AND labeler = ? AND field = ? "
                        "AND ifnull(audit_id, 0) = ?",
                        (row["result_id"], row["labeler"], row["field"], audit_id or 0),
                    ).rowcount
            try:
                tx.insert_many("labels", rows)
            except sqlite3.IntegrityError as error:
                if "UNIQUE" not in str(error):
                    raise
                raise LabelImportError(
                    "duplicate labels stored concurrently; nothing was imported "
                    f"(pass --replace to replace them): {error}",
                    file=source,
                ) from error
        return replaced

    # ------------------------------------------------------------------ audits

    def audits(self, *, card: str | None = None, model: str | None = None) -> list[AuditRecord]:
        """Stored audits, oldest first; ``card`` is ``name`` or ``name@version``."""
        rows = self._by_card_and_model("audits", _AUDIT_COLUMNS, card, model)
        return [_audit(row) for row in rows]

    def audit(self, audit_id: int) -> AuditRecord | None:
        """One audit, or ``None``."""
        if not self._has("audits"):
            return None
        rows = self.store.query(
            f"SELECT {', '.join(_AUDIT_COLUMNS)} FROM audits WHERE id = ?",
            (audit_id,),
            doing=f"read audit #{audit_id}",
        )
        return _audit(rows[0]) if rows else None

    def add_audit(
        self,
        values: Mapping[str, Any],
        items: Sequence[AuditItem],
        labels: Sequence[NewLabel] = (),
    ) -> int:
        """An audit row, its items and (re-runs) the anchor's labels, in one transaction."""
        with self.store.transaction("store the audit") as tx:
            audit_id = tx.insert("audits", values)
            tx.insert_many(
                "audit_items",
                [
                    {
                        "audit_id": audit_id,
                        "position": item.position,
                        "result_id": item.result_id,
                        "item_id": item.item_id,
                        "stratum": item.stratum,
                        "anchor_position": item.anchor_position,
                        "judge": json.dumps(item.judge),
                        "confidence": item.confidence,
                        "inclusion_probability": item.inclusion_probability,
                    }
                    for item in items
                ],
            )
            self.add_labels(labels, audit_id=audit_id)  # nested: a savepoint in this one
        return audit_id

    def audit_items(self, audit_id: int) -> list[AuditItem]:
        """An audit's items in its order."""
        rows = self.store.query(
            "SELECT position, result_id, item_id, judge, stratum, anchor_position, confidence, "
            "inclusion_probability "
            "FROM audit_items WHERE audit_id = ? ORDER BY position",
            (audit_id,),
            doing=f"read the items of audit #{audit_id}",
        )
        return [
            AuditItem(
                row[0], row[1], row[2], json.loads(row[3] or "{}"), row[4], row[5], row[6], row[7]
            )
            for row in rows
        ]

    def set_sheet(self, audit_id: int, sheet: str) -> None:
        """Record where an audit's labelling sheet was written."""
        with self.store.transaction(f"record the sheet of audit #{audit_id}") as tx:
            tx.execute("UPDATE audits SET sheet = ? WHERE id = ?", (sheet, audit_id))

    def set_headline(self, audit_id: int, headline: Mapping[str, Any]) -> None:
        """Cache an audit's headline (``field``, ``n_labeled``, ``kappa``, ... columns)."""
        columns = ", ".join(f"{column} = :{column}" for column in headline)
        with self.store.transaction(f"update the headline of audit #{audit_id}") as tx:
            tx.execute(f"UPDATE audits SET {columns} WHERE id = :id", {**headline, "id": audit_id})

    def previous_rerun(self, anchor_set: str, before: int) -> int | None:
        """The newest re-run of an anchor set older than audit ``before``, if any."""
        rows = self.store.query(
            "SELECT id FROM audits WHERE anchor_set = ? AND kind = 'rerun' AND id < ? "
            "ORDER BY id DESC LIMIT 1",
            (anchor_set, before),
            doing=f"read the re-runs of anchor set {anchor_set!r}",
        )
        return int(rows[0][0]) if rows else None

    def headlines(
        self, *, card: str | None = None, model: str | None = None
    ) -> list[tuple[Any, ...]]:
        """Labelled audits' cached headlines (`HEADLINE_COLUMNS`), newest first.

        ``card`` is exactly ``name@version``. One indexed query and no computation.
        """
        if not self._has("audits"):
            return []
        # A cascade's escalated items were chosen for being hard: their kappa is not the judge's.
        clauses = ["n_labeled > 0", "kind != 'escalated'"]
        params: list[Any] = []
        for column, value in (("card", card), ("model", model)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        return self.store.query(
            f"SELECT {', '.join(HEADLINE_COLUMNS)} FROM audits {_where(clauses)} "
            "ORDER BY created_at DESC, id DESC",
            params,
            doing="read the calibration status",
        )

    # ------------------------------------------------------------------ anchor sets

    def anchor_sets(self) -> list[AnchorSet]:
        """Every anchor set, oldest first."""
        if not self._has("anchor_sets"):
            return []
        rows = self.store.query(
            "SELECT s.name, s.card, s.source_audit, s.description, s.created_at, "
            "count(i.position) FROM anchor_sets s LEFT JOIN anchor_items i ON i.anchor_set = s.name "
            "GROUP BY s.name ORDER BY s.created_at, s.name",
            doing="read anchor sets",
        )
        return [
            AnchorSet(
                row[0], row[1], int(row[2]), row[3], datetime.fromisoformat(row[4]), int(row[5])
            )
            for row in rows
        ]

    def add_anchor_set(self, values: Mapping[str, Any], items: Sequence[AnchorItem]) -> None:
        """An anchor set and its items, in one transaction."""
        with self.store.transaction(f"store anchor set {values['name']!r}") as tx:
            tx.insert("anchor_sets", values)
            tx.insert_many(
                "anchor_items",
                [
                    {
                        "anchor_set": values["name"],
                        "position": item.position,
                        "item_id": item.item_id,
                        "source_result_id": item.source_result_id,
                        "inputs": json.dumps(item.inputs),
                        "judge": json.dumps(item.judge),
                        "labels": json.dumps(item.labels, sort_keys=True),
                    }
                    for item in items
                ],
            )

    def anchor_items(self, name: str) -> list[AnchorItem]:
        """An anchor set's items in order."""
        rows = self.store.query(
            "SELECT position, item_id, source_result_id, inputs, judge, labels FROM anchor_items "
            "WHERE anchor_set = ? ORDER BY position",
            (name,),
            doing=f"read anchor set {name!r}",
        )
        return [
            AnchorItem(
                row[0],
                row[1],
                row[2],
                json.loads(row[3]),
                json.loads(row[4] or "{}"),
                json.loads(row[5] or "{}"),
            )
            for row in rows
        ]

    # ------------------------------------------------------------------ alignment runs

    def add_alignment_run(self, values: Mapping[str, Any]) -> int:
        """Store one alignment run (`_ALIGNMENT_COLUMNS` but ``id``); returns its id."""
        row = {**values, "candidates": json.dumps(values["candidates"])}
        with self.store.transaction("store the alignment run") as tx:
            return tx.insert("alignment_runs", row)

    def alignment_runs(
        self, *, card: str | None = None, model: str | None = None
    ) -> list[AlignmentRun]:
        """Stored alignment runs, oldest first; ``card`` is ``name`` or ``name@version``."""
        rows = self._by_card_and_model("alignment_runs", _ALIGNMENT_COLUMNS, card, model)
        return [_alignment_run(row) for row in rows]

    def _by_card_and_model(
        self, table: str, columns: Sequence[str], card: str | None, model: str | None
    ) -> list[tuple[Any, ...]]:
        """A table's rows for a card (``name`` or ``name@version``) and model, oldest first;
        none when an older database has no such table yet."""
        if not self._has(table):
            return []
        clauses, params = card_filter(card)
        if model:
            clauses.append("model = ?")
            params.append(model)
        return self.store.query(
            f"SELECT {', '.join(columns)} FROM {table} {_where(clauses)} ORDER BY created_at, id",
            params,
            doing=f"read {table.replace('_', ' ')}",
        )


def _alignment_run(row: Sequence[Any]) -> AlignmentRun:
    values = dict(zip(_ALIGNMENT_COLUMNS, row))
    values["candidates"] = json.loads(values["candidates"] or "[]")
    values["created_at"] = datetime.fromisoformat(values["created_at"])
    return AlignmentRun(**values)


def _audit(row: Sequence[Any]) -> AuditRecord:
    return AuditRecord(
        id=int(row[0]),
        kind=row[1],
        card=row[2],
        card_hash=row[3],
        model=row[4],
        seed=row[5],
        n_requested=row[6],
        n=int(row[7]),
        since=row[8],
        stratify=row[9],
        sheet=row[10],
        anchor_set=row[11],
        created_at=datetime.fromisoformat(row[12]),
        n_labeled=int(row[13] or 0),
        kappa=row[14],
    )
