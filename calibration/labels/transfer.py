"""Human labels of judged results: what can be labelled, and import/export as CSV or JSONL.

**What a label names.** A label is about one *stored result*: one item judged with one card
version by one judge model. A row names it either by ``result_id`` (the results table's stable
key; audit sheets carry it) or by ``item_id`` + ``card`` (``name@version``) + ``model``, the
caller's own id, which must then match exactly one stored result. "Unknown item" means no stored
result matches.

**What a label holds.** One row holds one labeler's labels of one result, one column per label
field of the result's card (`label_fields`):

* ``verdict``: one of the card's verdicts (``reference``: match, partial_match, mismatch);
* one column per score axis (``correctness``, ...): an integer in the axis' range, read from the
  card's output schema (``minimum``/``maximum``);
* ``winner``: ``A``, ``B`` or ``tie``, for pairwise cards.

An empty cell (or a missing / ``null`` JSON key) means "not labelled". Verdicts and winners match
case-insensitively (``Match`` is stored as ``match``). Other columns: ``labeler`` (overrides the
``--labeler`` default for that row), ``note``, ``created_at`` (ISO 8601; default: import time),
and, ignored on import, ``audit_id`` and the card's input columns (``question``, ...), so an
export or a filled audit sheet can be read back.

**Validation** (`calibration.labels.importer`). Every row is checked before anything is written:
unknown item, ambiguous item, unknown column, wrong type, value out of the card's range, and
duplicates (the same labeler labelling the same result's field twice in the file, or once more
than already stored within the same audit, unless ``replace``). Each problem is a
`LabelImportError` naming the file, the line (CSV: physical line, header = line 1) and the
field. A file with any bad row writes nothing unless ``skip_invalid``, which writes the good rows
(a bad row is left out whole) and returns the problems. The write is one transaction.

**Files** (`calibration.labels.files`): CSV cells a spreadsheet would run as a formula are written
with a leading ``'``, which reading strips again; an unclosed quote is reported with its line.

This module holds the stored labels (`read_labels`) and the export; the label fields, the files
and the import live in the modules named above, and their public names are importable from here.
"""

from __future__ import annotations

import os
from datetime import date, timezone
from pathlib import Path
from typing import Any, TextIO

from calibration.labels.fields import WINNERS, LabelField, LabelKind, judge_labels, label_fields
from calibration.labels.files import (
    Format,
    LabelRow,
    format_of,
    read_rows,
    spreadsheet_cell,
    write_rows,
)
from calibration.labels.importer import (
    ID_COLUMNS,
    META_COLUMNS,
    AuditScope,
    LabelImportReport,
    import_labels,
)
from calibration.labels.records import Label
from calibration.labels.repository import CalibrationRepository
from judgecards.errors import LabelImportError
from judgecards.storage import (
    Column,
    ColumnKind,
    Store,
    Table,
    time_bound,
    write_table,
    write_table_file,
)

__all__ = [
    "ID_COLUMNS",
    "META_COLUMNS",
    "WINNERS",
    "AuditScope",
    "Format",
    "Label",
    "LabelField",
    "LabelImportError",
    "LabelImportReport",
    "LabelKind",
    "LabelRow",
    "export_labels",
    "format_of",
    "import_labels",
    "judge_labels",
    "label_fields",
    "label_table",
    "read_labels",
    "read_rows",
    "spreadsheet_cell",
    "write_rows",
]


def read_labels(
    store: Store,
    *,
    card: str | None = None,
    model: str | None = None,
    labeler: str | None = None,
    audit_id: int | None = None,
) -> list[Label]:
    """Stored human labels, oldest first, one `Label` per result, labeler and field.

    Args:
        store: the database (a database without calibration tables has no labels).
        card: only this card, ``name`` (any version) or ``name@version``.
        model: only results of this judge model.
        labeler: only this labeler's labels.
        audit_id: only labels given in this audit.

    Returns:
        The matching labels, oldest first.
    """
    return CalibrationRepository(store).labels(
        card=card, model=model, labeler=labeler, audit_id=audit_id
    )


def export_labels(
    path: str | os.PathLike[str] | TextIO,
    *,
    db: Store | str | os.PathLike[str] | None = None,
    card: str | None = None,
    model: str | None = None,
    labeler: str | None = None,
    audit_id: int | None = None,
    format: Format | None = None,
) -> int:
    """Write stored labels as CSV or JSONL, one row per (result, labeler, audit).

    The columns are those `import_labels` reads (``result_id``, ``item_id``, ``card``,
    ``model``, ``labeler``, ``audit_id``, one per label field, ``note``, ``created_at``), so an
    export imports back into a database holding the same results. JSONL rows leave out unlabelled
    fields; CSV leaves their cells empty and escapes formula cells (`spreadsheet_cell`). It is
    `label_table` written by `judgecards.storage.export.write_table`, byte for byte what
    ``judgecards labels export`` writes.

    Args:
        path: a file path (written atomically) or an open text stream.
        db: a `Store`, or the path of an existing database (opened read-only: exporting never
            creates or migrates one).
        card: only this card, ``name`` (any version) or ``name@version``.
        model: only results of this judge model.
        labeler: only this labeler's labels.
        audit_id: only labels given in this audit.
        format: ``"csv"`` or ``"jsonl"``; required for a stream, else taken from the extension.

    Returns:
        The number of rows written.

    Raises:
        StoreError: the database does not exist or cannot be read.
        OutputError: the file cannot be written.
    """
    if isinstance(path, (str, os.PathLike)):
        chosen = format or format_of(Path(path))
    elif format is None:
        raise ValueError("pass format= when exporting to a stream")
    else:
        chosen = format
    filters: dict[str, Any] = {
        "card": card,
        "model": model,
        "labeler": labeler,
        "audit_id": audit_id,
    }
    if isinstance(db, Store):
        table = label_table(db, **filters)
    else:
        with Store(db, read_only=True) as store:
            table = label_table(store, **filters)
    if isinstance(path, (str, os.PathLike)):
        return write_table_file(table, Path(path), chosen)
    return write_table(table, path, chosen)


def label_table(
    store: Store,
    *,
    card: str | None = None,
    model: str | None = None,
    labeler: str | None = None,
    audit_id: int | None = None,
    since: str | date | None = None,
    until: str | date | None = None,
) -> Table:
    """Stored labels as an export table, one row per (result, labeler, audit).

    What `export_labels` and ``judgecards labels export`` write: the columns `import_labels`
    reads, typed for Parquet (score axes are integers). Unlabelled fields are ``None``.
    Labels are grouped into rows in memory: they are human work, thousands, not millions.

    Args:
        store: the database.
        card: only this card, ``name`` (any version) or ``name@version``.
        model: only results of this judge model.
        labeler: only this labeler's labels.
        audit_id: only labels given in this audit.
        since: labels given at or after this date or time (`judgecards.storage.export.time_bound`).
        until: labels given before this time, or on or before this date.
    """
    labels = read_labels(store, card=card, model=model, labeler=labeler, audit_id=audit_id)
    low, high = time_bound(since), time_bound(until, end=True)
    rows: dict[tuple[str, str, int | None], dict[str, Any]] = {}
    kinds: dict[str, ColumnKind] = {}
    for label in labels:
        stamp = label.created_at.astimezone(timezone.utc).replace(tzinfo=None).isoformat()
        if (low and stamp < low) or (high and stamp >= high):
            continue
        key = (label.result_id, label.labeler, label.audit_id)
        row = rows.setdefault(
            key,
            {
                "result_id": label.result_id,
                "item_id": label.item_id,
                "card": label.card,
                "model": label.model,
                "labeler": label.labeler,
            },
        )
        if label.audit_id is not None:
            row["audit_id"] = label.audit_id
        row[label.field] = label.value
        if label.note is not None:
            row["note"] = label.note
        row["created_at"] = label.created_at.isoformat()
        kind: ColumnKind = "integer" if label.kind == "score" else "text"
        if kinds.setdefault(label.field, kind) != kind:
            kinds[label.field] = "json"
    columns = (
        *(Column(name) for name in ("result_id", "item_id", "card", "model", "labeler")),
        Column("audit_id", "integer"),
        *(Column(name, kind) for name, kind in kinds.items()),
        Column("note"),
        Column("created_at"),
    )
    return Table("labels", columns, list(rows.values()), sparse=True)
