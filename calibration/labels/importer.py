"""Importing human labels: every row of a file validated, then all of it stored at once.

See `calibration.labels` for what a label row names and holds. Each problem is a
`LabelImportError` naming the file, the line (CSV: physical line, header = line 1) and the
field. A file with any bad row writes nothing unless ``skip_invalid``, which writes the good rows
(a bad row is left out whole) and returns the problems. A label the same labeler already gave
for the same result and field (in the same audit, or outside any audit) is a duplicate unless
``replace``, which replaces it: that is how a corrected label is re-imported. The write is one
transaction.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from calibration.labels.fields import LabelField, label_fields
from calibration.labels.files import Format, LabelRow, format_of, read_rows
from calibration.labels.migrations import open_store, opened
from calibration.labels.records import NewLabel
from calibration.labels.repository import CalibrationRepository
from judgecards.cards import Card, load_card
from judgecards.errors import JudgecardsError, LabelImportError, StoreError
from judgecards.storage import Store, default_db_path

__all__ = ["ID_COLUMNS", "META_COLUMNS", "AuditScope", "LabelImportReport", "import_labels"]

# Columns that are not label fields. Card inputs (question, ...) are accepted too.
ID_COLUMNS = ("audit_id", "result_id", "item_id", "card", "model")
META_COLUMNS = ("labeler", "note", "created_at")
_MAX_SHOWN = 20
CardsDir = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


@dataclass(frozen=True)
class LabelImportReport:
    """What an import (or an audit sheet ingest) did.

    Attributes:
        file: the file read.
        rows: data rows read (blank lines not counted).
        rows_written: rows whose labels were stored.
        labels_written: labels stored (a row holds one per filled field).
        unlabeled: rows with no label filled in, skipped (allowed in audit sheets only).
        errors: the rows left out because they were invalid (only with ``skip_invalid``).
        audit_id: the audit the labels were stored under, if any.
        labels_replaced: stored labels that were replaced (``replace=True``), counted in
            ``labels_written``.
    """

    file: str
    rows: int
    rows_written: int
    labels_written: int
    unlabeled: int
    errors: tuple[LabelImportError, ...]
    audit_id: int | None = None
    labels_replaced: int = 0


@dataclass(frozen=True)
class AuditScope:
    """Restricts an import to one audit's results (used by `calibration.audits.audit.Audit.ingest`)."""

    audit_id: int
    results: Mapping[str, str | None]  # result_id -> item_id of the audit's items
    allow_unlabeled: bool = True


@dataclass
class _Resolver:
    """Looks up results and cards once per file, not once per row."""

    store: Store
    cards_dir: CardsDir
    cards: dict[str, Card | JudgecardsError] = field(default_factory=dict)
    results: dict[str, tuple[str | None, str, str] | None] = field(default_factory=dict)
    # Building a card's label fields renders its output schema (~3 ms): once per card, not per row.
    fields_of: dict[str, dict[str, LabelField]] = field(default_factory=dict)

    def result(self, result_id: str) -> tuple[str | None, str, str] | None:
        if result_id not in self.results:
            self.results[result_id] = self.store.result_ref(result_id)
        return self.results[result_id]

    def by_item(self, item_id: str, card: str, model: str) -> list[str]:
        return self.store.result_ids(item_id=item_id, card=card, model=model)

    def card(self, ref: str) -> Card | JudgecardsError:
        if ref not in self.cards:
            try:
                self.cards[ref] = load_card(ref, cards_dir=self.cards_dir)
            except JudgecardsError as error:
                self.cards[ref] = error
        return self.cards[ref]

    def fields(self, card: Card) -> dict[str, LabelField]:
        if card.ref not in self.fields_of:
            self.fields_of[card.ref] = label_fields(card)
        return self.fields_of[card.ref]


def import_labels(
    path: str | os.PathLike[str],
    *,
    labeler: str | None,
    db: Store | str | os.PathLike[str] | None = None,
    skip_invalid: bool = False,
    replace: bool = False,
    format: Format | None = None,
    cards_dir: CardsDir = None,
    scope: AuditScope | None = None,
) -> LabelImportReport:
    """Validate every row of a CSV or JSONL labels file, then store its labels in one transaction.

    Rows are validated on a read-only connection, so a bad file neither creates nor migrates
    the database; a database path that does not exist is an error, not a new empty database.
    Only a file with something to store opens it for writing (and adds the calibration tables).

    Args:
        path: the file; its format comes from ``format`` or the extension (``.csv``, ``.jsonl``).
        labeler: who labelled, for rows without a ``labeler`` column value.
        db: a `Store` or database path (else ``JUDGECARDS_DB``).
        skip_invalid: store the valid rows and report the invalid ones, instead of storing
            nothing when any row is invalid.
        replace: replace a label the same labeler already gave for the same result and field
            (within ``scope``'s audit, or outside any audit) instead of rejecting it.
        format: ``"csv"`` or ``"jsonl"``.
        cards_dir: where user cards live (to read label fields and ranges).
        scope: restrict to one audit's results and store the labels under it (audit ingest).

    Returns:
        A `LabelImportReport`.

    Raises:
        LabelImportError: the file is unreadable, or a row is invalid and ``skip_invalid`` is
            false; ``errors`` then lists every problem and nothing was stored.
        StoreError: the database cannot be opened, read or written.
    """
    source = Path(path)
    rows, problems = read_rows(source, format or format_of(source))
    if isinstance(db, Store):
        accepted, unlabeled = _validate(
            db,
            source,
            rows,
            problems,
            labeler=labeler,
            replace=replace,
            cards_dir=cards_dir,
            scope=scope,
        )
        if problems and not skip_invalid:
            raise _rejected(source, problems)
        return _write(
            open_store(db),
            source,
            rows,
            problems,
            accepted=accepted,
            unlabeled=unlabeled,
            replace=replace,
            scope=scope,
        )
    target = Path(db) if db is not None else default_db_path()
    if not target.is_file():  # labels name stored results: a new database has none
        if problems and not skip_invalid:
            raise _rejected(source, problems)
        raise StoreError(
            f"cannot import labels into {target}: no such database (pass --db with the "
            "database holding the judged results)",
            path=target,
            operation="import labels",
        )
    # Validate on a read-only connection: a bad file neither creates nor migrates anything.
    with Store(target, read_only=True) as reader:
        accepted, unlabeled = _validate(
            reader,
            source,
            rows,
            problems,
            labeler=labeler,
            replace=replace,
            cards_dir=cards_dir,
            scope=scope,
        )
    if problems and not skip_invalid:
        raise _rejected(source, problems)
    with opened(target) as store:
        return _write(
            store,
            source,
            rows,
            problems,
            accepted=accepted,
            unlabeled=unlabeled,
            replace=replace,
            scope=scope,
        )


def _rejected(source: Path, problems: list[LabelImportError]) -> LabelImportError:
    problems.sort(key=lambda p: p.line or 0)
    lines = len({p.line for p in problems if p.line is not None})
    shown = "\n".join(f"  {p}" for p in problems[:_MAX_SHOWN])
    more = f"\n  … and {len(problems) - _MAX_SHOWN} more" if len(problems) > _MAX_SHOWN else ""
    return LabelImportError(
        f"{len(problems)} problem(s) on {lines} line(s); nothing was imported "
        f"(fix them, or pass --skip-invalid to import the valid rows):\n{shown}{more}",
        file=source,
        errors=problems,
    )


def _validate(
    store: Store,
    source: Path,
    rows: list[LabelRow],
    problems: list[LabelImportError],
    *,
    labeler: str | None,
    replace: bool,
    cards_dir: CardsDir,
    scope: AuditScope | None,
) -> tuple[list[list[NewLabel]], int]:
    """The labels of each valid row and the count of unlabelled rows; problems go to ``problems``."""
    validation = _Validation(
        source=source,
        resolver=_Resolver(store, cards_dir),
        default_labeler=(labeler or "").strip() or None,
        scope=scope,
        replace=replace,
        existing=CalibrationRepository(store).label_keys(scope.audit_id if scope else None),
        now=datetime.now(timezone.utc).isoformat(),
    )
    accepted: list[list[NewLabel]] = []
    unlabeled = 0
    for row in rows:
        labels, row_problems = validation.row(row)
        if row_problems:
            problems.extend(row_problems)
        elif labels:
            accepted.append(labels)
        else:
            unlabeled += 1
    problems.sort(key=lambda p: p.line or 0)
    return accepted, unlabeled


def _write(
    store: Store,
    source: Path,
    rows: list[LabelRow],
    problems: list[LabelImportError],
    *,
    accepted: list[list[NewLabel]],
    unlabeled: int,
    replace: bool,
    scope: AuditScope | None,
) -> LabelImportReport:
    written = [label for labels in accepted for label in labels]
    replaced = CalibrationRepository(store).add_labels(
        written, audit_id=scope.audit_id if scope else None, replace=replace, source=str(source)
    )
    return LabelImportReport(
        file=str(source),
        rows=len(rows),
        rows_written=len(accepted),
        labels_written=len(written),
        unlabeled=unlabeled,
        errors=tuple(problems),
        audit_id=scope.audit_id if scope else None,
        labels_replaced=replaced,
    )


@dataclass
class _Validation:
    """One file's validation: what every row is checked against, and the labels seen so far
    (a label given twice in one file is a duplicate too)."""

    source: Path
    resolver: _Resolver
    default_labeler: str | None
    scope: AuditScope | None
    replace: bool
    existing: set[tuple[str, str, str]]
    now: str
    seen: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def row(self, row: LabelRow) -> tuple[list[NewLabel], list[LabelImportError]]:
        """The labels of one row, or every problem with it."""
        values = row.values
        problems: list[LabelImportError] = []

        def problem(message: str, field_name: str | None) -> None:
            problems.append(
                LabelImportError(message, file=self.source, line=row.line, field=field_name)
            )

        def text(name: str) -> str | None:
            value = values.get(name)
            if value is None:
                return None
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                problem(f"must be a string, got {json.dumps(value)}", name)
                return None
            return str(value).strip() or None

        labeler = text("labeler") or self.default_labeler
        if labeler is None:
            problem("no labeler: pass --labeler NAME or fill the labeler column", "labeler")
        found = _resolve(row, text, problem, self.resolver, self.scope)
        if found is None:
            return [], problems
        result_id, item_id, card_ref, model = found
        card = self.resolver.card(card_ref)
        if isinstance(card, JudgecardsError):
            problem(
                f"cannot load card {card_ref} to check the labels ({card}); pass --cards-dir",
                "card",
            )
            return [], problems
        fields = self.resolver.fields(card)
        note = text("note")
        created_at = _created_at(text("created_at"), self.now, problem)
        labels: list[NewLabel] = []
        for name, raw in values.items():
            if name in ID_COLUMNS or name in META_COLUMNS or name in card.spec.inputs:
                continue
            spec = fields.get(name)
            if spec is None:
                if raw is not None and not (isinstance(raw, str) and not raw.strip()):
                    known = ", ".join(fields) or "none"
                    problem(
                        f"unknown column for {card_ref} (label fields: {known})",
                        name or "(no header)",
                    )
                continue
            try:
                value = spec.parse(raw, text=row.text)
            except ValueError as error:
                problem(str(error), name)
                continue
            if value is None or labeler is None:
                continue
            duplicate = self.duplicate((result_id, labeler, name), row.line)
            if duplicate is not None:
                problem(duplicate, name)
                continue
            labels.append(
                NewLabel(
                    result_id=result_id,
                    item_id=item_id,
                    card=card_ref,
                    model=model,
                    labeler=labeler,
                    field=name,
                    kind=spec.kind,
                    value=value,
                    note=note,
                    created_at=created_at,
                    source=self.source.name,
                )
            )
        if not labels and not problems and not (self.scope and self.scope.allow_unlabeled):
            problem(
                f"no label: fill at least one of {', '.join(fields) or '(this card has no label fields)'}",
                None,
            )
        return (labels, []) if not problems else ([], problems)

    def duplicate(self, key: tuple[str, str, str], line: int) -> str | None:
        """Why the label ``key`` (result, labeler, field) on ``line`` is a duplicate, if it is;
        the first one seen in the file is remembered."""
        _, labeler, name = key
        if key in self.seen:
            return f"duplicate: {labeler} already labelled {name} of this item on line {self.seen[key]}"
        self.seen[key] = line
        if key in self.existing and not self.replace:
            where = f"in audit #{self.scope.audit_id}" if self.scope else "(import)"
            return (
                f"duplicate: {labeler} has already labelled {name} of this item {where}; "
                "pass --replace to replace the stored label"
            )
        return None


def _created_at(raw: str | None, now: str, problem: Any) -> str:
    """When a row was labelled, in UTC: its ``created_at`` (no zone: UTC), else ``now``."""
    if raw is None:
        return now
    try:
        stamp = datetime.fromisoformat(raw)
    except ValueError:
        problem(f"not an ISO 8601 date-time: {raw!r}", "created_at")
        return now
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)
    return stamp.astimezone(timezone.utc).isoformat()


def _resolve(
    row: LabelRow,
    text: Any,
    problem: Any,
    resolver: _Resolver,
    scope: AuditScope | None,
) -> tuple[str, str | None, str, str] | None:
    """(result_id, item_id, card, model) of the stored result a row is about, or None."""
    result_id = text("result_id")
    item_id = text("item_id")
    raw_item = row.values.get("item_id")
    if item_id is not None and isinstance(raw_item, str):
        item_id = raw_item  # an id is kept exactly: it may start with a tab or a space
    card = text("card")
    model = text("model")
    if scope is not None:
        audit = text("audit_id")
        if audit is not None and audit != str(scope.audit_id):
            problem(f"this sheet row belongs to audit #{audit}, not #{scope.audit_id}", "audit_id")
            return None
    if result_id is None:
        missing = [
            name
            for name, value in (("item_id", item_id), ("card", card), ("model", model))
            if value is None
        ]
        if missing:
            problem(
                f"name the item: give result_id, or item_id with card and model (missing {', '.join(missing)})",
                missing[0] if len(missing) < 3 else "result_id",
            )
            return None
        assert item_id is not None and card is not None and model is not None
        if "@" not in card:
            problem(f"card must be name@version as stored with the results, got {card!r}", "card")
            return None
        ids = resolver.by_item(item_id, card, model) or resolver.by_item(
            item_id.strip(), card, model
        )
        if not ids:
            problem(
                f"unknown item: no stored result for item {item_id!r} with {card} and {model}",
                "item_id",
            )
            return None
        if len(ids) > 1:
            problem(
                f"ambiguous item: {len(ids)} stored results for item {item_id!r} with {card} and {model} "
                "(judged with different parameters or inputs); give result_id instead",
                "item_id",
            )
            return None
        result_id = ids[0]
    stored = resolver.result(result_id)
    if stored is None:
        problem(f"unknown item: no stored result with id {result_id!r}", "result_id")
        return None
    if scope is not None and result_id not in scope.results:
        problem(f"result {result_id} is not part of audit #{scope.audit_id}", "result_id")
        return None
    stored_item, stored_card, stored_model = stored
    for name, given, actual in (
        ("item_id", item_id, stored_item),
        ("card", card, stored_card),
        ("model", model, stored_model),
    ):
        # Exactly, or but for whitespace around it (a hand-typed id).
        if given is not None and given.strip() != (actual or "").strip():
            problem(
                f"does not match the stored result {result_id} ({name} {actual!r}, row says {given!r})",
                name,
            )
            return None
    return result_id, stored_item, stored_card, stored_model
