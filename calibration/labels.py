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

**Validation.** Every row is checked before anything is written: unknown item, ambiguous item,
unknown column, wrong type, value out of the card's range, and duplicates (the same labeler
labelling the same result's field twice in the file, or once more than already stored within the
same audit). Each problem is a `LabelImportError` naming the file, the line (CSV: physical line,
header = line 1) and the field. A file with any bad row writes nothing unless ``skip_invalid``,
which writes the good rows (a bad row is left out whole) and returns the problems. The write is
one transaction.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TextIO

from calibration.migrations import opened
from judgecards.cards import Card, load_card
from judgecards.errors import InputError, JudgecardsError, StoreError
from judgecards.jsonl import read_jsonl
from judgecards.results import JudgeResult
from judgecards.store import Store

__all__ = [
    "AuditScope",
    "Format",
    "Label",
    "LabelField",
    "LabelImportError",
    "LabelImportReport",
    "export_labels",
    "format_of",
    "import_labels",
    "judge_labels",
    "label_fields",
    "read_labels",
    "read_rows",
    "write_rows",
]

Format = Literal["csv", "jsonl"]
LabelKind = Literal["verdict", "score", "winner"]

WINNERS = ("A", "B", "tie")
# Columns that are not label fields. Card inputs (question, ...) are accepted too.
ID_COLUMNS = ("audit_id", "result_id", "item_id", "card", "model")
META_COLUMNS = ("labeler", "note", "created_at")
_INTEGER = re.compile(r"^[+-]?\d+(\.0*)?$")
_MAX_SHOWN = 20


class LabelImportError(InputError):
    """A label row (or a whole labels file) that cannot be imported.

    A per-row error names ``file``, ``line`` and ``field``. The error raised for a rejected file
    names the file and carries every row problem in ``errors``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        errors: Sequence[LabelImportError] = (),
    ) -> None:
        super().__init__(message, file=file, line=line, field=field)
        self.errors = list(errors)


# --------------------------------------------------------------------------- label fields


@dataclass(frozen=True)
class LabelField:
    """One thing a human can label about a result of a given card.

    Attributes:
        name: the column name (``verdict``, an axis name, or ``winner``).
        kind: ``verdict``, ``score`` or ``winner``.
        choices: allowed values of a verdict or winner, in the card's order (empty: any text).
        minimum: lowest allowed score (``None``: unbounded).
        maximum: highest allowed score (``None``: unbounded).
        integer: scores must be whole numbers.
    """

    name: str
    kind: LabelKind
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = True

    @property
    def scale(self) -> tuple[Any, ...] | None:
        """The ordered label scale for kappa (``None``: use the observed labels)."""
        if self.kind != "score":
            return self.choices or None
        if self.integer and self.minimum is not None and self.maximum is not None:
            return tuple(range(int(self.minimum), int(self.maximum) + 1))
        return None

    @property
    def ordinal(self) -> bool:
        """Scores are ordered, so their kappa is weighted; verdicts and winners are categories."""
        return self.kind == "score"

    def describe(self) -> str:
        """What a valid value looks like, for error messages and sheet instructions."""
        if self.kind != "score":
            return f"one of {', '.join(self.choices)}" if self.choices else "a non-empty text"
        number = "an integer" if self.integer else "a number"
        if self.minimum is not None and self.maximum is not None:
            return f"{number} from {_num(self.minimum)} to {_num(self.maximum)}"
        if self.minimum is not None:
            return f"{number} >= {_num(self.minimum)}"
        if self.maximum is not None:
            return f"{number} <= {_num(self.maximum)}"
        return number

    def parse(self, raw: Any, *, text: bool) -> Any:
        """The stored value of a cell, ``None`` if empty; `ValueError` says what is wrong.

        ``text`` says the cell came from CSV, where every value is a string: ``"4"`` is then a
        score, while in JSONL a score must be a JSON number.
        """
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return None
        if self.kind == "score":
            return self._parse_score(raw, text=text)
        if not isinstance(raw, str):
            raise ValueError(f"must be a string, {self.describe()}; got {json.dumps(raw)}")
        value = raw.strip()
        if not self.choices:
            return value
        for choice in self.choices:
            if value.casefold() == choice.casefold():
                return choice
        raise ValueError(f"must be {self.describe()}; got {value!r}")

    def _parse_score(self, raw: Any, *, text: bool) -> int | float:
        number: int | float
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise ValueError(f"must be {self.describe()}; got {json.dumps(raw)}")
        if isinstance(raw, str):
            value = raw.strip()
            if not text:
                raise ValueError(
                    f"must be a JSON number, {self.describe()}; got the string {value!r}"
                )
            if _INTEGER.match(value):
                number = int(float(value))
            else:
                try:
                    number = float(value)
                except ValueError:
                    raise ValueError(f"must be {self.describe()}; got {value!r}") from None
        else:
            number = raw
        if isinstance(number, float):
            if not math.isfinite(number):
                raise ValueError(f"must be {self.describe()}; got {number}")
            if number.is_integer():
                number = int(number)
            elif self.integer:
                raise ValueError(f"must be {self.describe()}; got {number}")
        if (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        ):
            raise ValueError(f"out of range: must be {self.describe()}; got {number}")
        return number


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def label_fields(card: Card) -> dict[str, LabelField]:
    """The label fields of a card, in column order: verdict, score axes, winner.

    Verdict choices are the card's rule verdicts and ``otherwise`` (plus any ``enum`` of the
    verdict field in the output schema); score ranges come from the output schema's
    ``minimum``/``maximum`` for each axis. A card whose verdict field is ``winner``, or whose
    output has a top-level ``winner`` enum, gets a ``winner`` field (A/B/tie) instead.
    """
    schema = card.output_model.model_json_schema()
    fields: dict[str, LabelField] = {}
    spec = card.spec.verdict
    verdict_is_winner = spec is not None and spec.field == "winner"
    if spec is not None and not verdict_is_winner:
        choices: list[str] = [rule.then for rule in spec.rules]
        if spec.otherwise is not None:
            choices.append(spec.otherwise)
        node = _schema_node(schema, spec.field.split(".")) if spec.field else None
        choices += [str(v) for v in (node or {}).get("enum", ())]
        fields["verdict"] = LabelField("verdict", "verdict", tuple(dict.fromkeys(choices)))
    for axis, path in card.score_axes.items():
        node = _schema_node(schema, path.split(".")) or {}
        fields[axis] = LabelField(
            axis,
            "score",
            minimum=node.get("minimum"),
            maximum=node.get("maximum"),
            integer=node.get("type") != "number",
        )
    winner = _schema_node(schema, ["winner"])
    if verdict_is_winner or (
        winner is not None and set(winner.get("enum", ())) <= set(WINNERS) and winner.get("enum")
    ):
        fields["winner"] = LabelField("winner", "winner", WINNERS)
    return fields


def judge_labels(fields: Mapping[str, LabelField], result: JudgeResult) -> dict[str, Any]:
    """What the judge said on each label field (fields it gave no value for are left out)."""
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if spec.kind == "verdict":
            value: Any = result.verdict
        elif spec.kind == "score":
            value = result.scores.get(name)
        elif result.verdict in WINNERS:
            value = result.verdict
        else:
            value = (result.output or {}).get("winner")
        if value is not None:
            values[name] = value
    return values


def _schema_node(schema: Mapping[str, Any], path: Sequence[str]) -> dict[str, Any] | None:
    """The JSON Schema of a dotted path, following ``$ref`` into ``$defs``."""
    definitions = schema.get("$defs", {})

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in node:
            node = definitions.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        for key in ("allOf", "anyOf"):  # Optional[...] and annotated refs
            for option in node.get(key, ()):
                option = resolve(option)
                if option.get("type") != "null":
                    return {**node, **option}
        return node

    node = resolve(schema)
    for part in path:
        properties = node.get("properties", {})
        if part not in properties:
            return None
        node = resolve(properties[part])
    return dict(node)


# --------------------------------------------------------------------------- stored labels


@dataclass(frozen=True)
class Label:
    """One stored human label.

    Attributes:
        id: row id.
        result_id: the stored result labelled.
        item_id: the caller's item id of that result.
        card: ``name@version`` of the result.
        model: the judge model of the result.
        labeler: who labelled.
        field: the label field (``verdict``, an axis, ``winner``).
        kind: ``verdict``, ``score`` or ``winner``.
        value: the label.
        note: the labeler's note on the row.
        audit_id: the audit the label was given in (``None``: imported on its own).
        created_at: when it was labelled (or imported), UTC.
    """

    id: int
    result_id: str
    item_id: str | None
    card: str
    model: str
    labeler: str
    field: str
    kind: str
    value: Any
    note: str | None
    audit_id: int | None
    created_at: datetime


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
        store: the database (opened with `calibration.migrations.open_store`; a database
            without calibration tables has no labels).
        card: only this card, ``name`` (any version) or ``name@version``.
        model: only results of this judge model.
        labeler: only this labeler's labels.
        audit_id: only labels given in this audit.

    Returns:
        The matching labels, oldest first.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if card:
        clauses.append("card = ?" if "@" in card else "card LIKE ?")
        params.append(card if "@" in card else f"{card}@%")
    for column, value in (("model", model), ("labeler", labeler), ("audit_id", audit_id)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    try:
        rows = store.db.conn.execute(
            "SELECT id, result_id, item_id, card, model, labeler, field, kind, value, note, audit_id, "
            f"created_at FROM labels {where} ORDER BY created_at, id",
            params,
        ).fetchall()
    except sqlite3.OperationalError:
        return []
    return [
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


# --------------------------------------------------------------------------- import


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
    """

    file: str
    rows: int
    rows_written: int
    labels_written: int
    unlabeled: int
    errors: tuple[LabelImportError, ...]
    audit_id: int | None = None


@dataclass(frozen=True)
class AuditScope:
    """Restricts an import to one audit's results (used by `calibration.audit.Audit.ingest`)."""

    audit_id: int
    results: Mapping[str, str | None]  # result_id -> item_id of the audit's items
    allow_unlabeled: bool = True


@dataclass
class _Row:
    line: int
    values: dict[str, Any]
    text: bool


@dataclass
class _NewLabel:
    result_id: str
    item_id: str | None
    card: str
    model: str
    labeler: str
    field: str
    kind: str
    value: Any
    note: str | None
    created_at: str


@dataclass
class _Resolver:
    """Looks up results and cards once per file, not once per row."""

    store: Store
    cards_dir: Any
    cards: dict[str, Card | JudgecardsError] = field(default_factory=dict)
    results: dict[str, tuple[str | None, str, str] | None] = field(default_factory=dict)

    def result(self, result_id: str) -> tuple[str | None, str, str] | None:
        if result_id not in self.results:
            row = self.store.db.conn.execute(
                "SELECT item_id, card, model FROM results WHERE id = ?", (result_id,)
            ).fetchone()
            self.results[result_id] = None if row is None else (row[0], row[1], row[2])
        return self.results[result_id]

    def by_item(self, item_id: str, card: str, model: str) -> list[str]:
        rows = self.store.db.conn.execute(
            "SELECT id FROM results WHERE item_id = ? AND card = ? AND model = ? ORDER BY created_at, id",
            (item_id, card, model),
        ).fetchall()
        return [row[0] for row in rows]

    def card(self, ref: str) -> Card | JudgecardsError:
        if ref not in self.cards:
            try:
                self.cards[ref] = load_card(ref, cards_dir=self.cards_dir)
            except JudgecardsError as error:
                self.cards[ref] = error
        return self.cards[ref]


def import_labels(
    path: str | os.PathLike[str],
    *,
    labeler: str | None,
    db: Store | str | os.PathLike[str] | None = None,
    skip_invalid: bool = False,
    format: Format | None = None,
    cards_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    scope: AuditScope | None = None,
) -> LabelImportReport:
    """Validate every row of a CSV or JSONL labels file, then store its labels in one transaction.

    Args:
        path: the file; its format comes from ``format`` or the extension (``.csv``, ``.jsonl``).
        labeler: who labelled, for rows without a ``labeler`` column value.
        db: a `Store` or database path (else ``JUDGECARDS_DB``).
        skip_invalid: store the valid rows and report the invalid ones, instead of storing
            nothing when any row is invalid.
        format: ``"csv"`` or ``"jsonl"``.
        cards_dir: where user cards live (to read label fields and ranges).
        scope: restrict to one audit's results and store the labels under it (audit ingest).

    Returns:
        A `LabelImportReport`.

    Raises:
        LabelImportError: the file is unreadable, or a row is invalid and ``skip_invalid`` is
            false; ``errors`` then lists every problem and nothing was stored.
    """
    with opened(db) as store:
        return _import(store, Path(path), labeler, skip_invalid, format, cards_dir, scope)


def _import(
    store: Store,
    source: Path,
    labeler: str | None,
    skip_invalid: bool,
    format: Format | None,
    cards_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
    scope: AuditScope | None,
) -> LabelImportReport:
    resolver = _Resolver(store, cards_dir)
    rows, problems = read_rows(source, format or format_of(source))
    default_labeler = (labeler or "").strip() or None
    existing = _existing_keys(store, scope)
    seen: dict[tuple[str, str, str], int] = {}
    accepted: list[list[_NewLabel]] = []
    unlabeled = 0
    now = datetime.now(timezone.utc).isoformat()
    for row in rows:
        labels, row_problems = _validate_row(
            row, source, resolver, default_labeler, scope, existing, seen, now
        )
        if row_problems:
            problems.extend(row_problems)
        elif labels:
            accepted.append(labels)
        else:
            unlabeled += 1
    problems.sort(key=lambda p: p.line or 0)
    if problems and not skip_invalid:
        shown = "\n".join(f"  {p}" for p in problems[:_MAX_SHOWN])
        more = f"\n  … and {len(problems) - _MAX_SHOWN} more" if len(problems) > _MAX_SHOWN else ""
        raise LabelImportError(
            f"{len(problems)} problem(s); nothing was imported "
            f"(fix them, or pass --skip-invalid to import the valid rows):\n{shown}{more}",
            file=source,
            errors=problems,
        )
    written = [label for labels in accepted for label in labels]
    _write(store, written, scope, source)
    return LabelImportReport(
        file=str(source),
        rows=len(rows),
        rows_written=len(accepted),
        labels_written=len(written),
        unlabeled=unlabeled,
        errors=tuple(problems),
        audit_id=scope.audit_id if scope else None,
    )


def _validate_row(
    row: _Row,
    source: Path,
    resolver: _Resolver,
    default_labeler: str | None,
    scope: AuditScope | None,
    existing: set[tuple[str, str, str]] | None,
    seen: dict[tuple[str, str, str], int],
    now: str,
) -> tuple[list[_NewLabel], list[LabelImportError]]:
    """The labels of one row, or every problem with it."""
    values = row.values
    problems: list[LabelImportError] = []

    def problem(message: str, field_name: str | None) -> None:
        problems.append(LabelImportError(message, file=source, line=row.line, field=field_name))

    def text(name: str) -> str | None:
        value = values.get(name)
        if value is None:
            return None
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            problem(f"must be a string, got {json.dumps(value)}", name)
            return None
        return str(value).strip() or None

    labeler = text("labeler") or default_labeler
    if labeler is None:
        problem("no labeler: pass --labeler NAME or fill the labeler column", "labeler")
    found = _resolve(row, text, problem, resolver, scope)
    if found is None:
        return [], problems
    result_id, item_id, card_ref, model = found
    card = resolver.card(card_ref)
    if isinstance(card, JudgecardsError):
        problem(
            f"cannot load card {card_ref} to check the labels ({card}); pass --cards-dir", "card"
        )
        return [], problems
    fields = label_fields(card)
    note = text("note")
    created_at = now
    raw_time = text("created_at")
    if raw_time is not None:
        try:
            stamp = datetime.fromisoformat(raw_time)
        except ValueError:
            problem(f"not an ISO 8601 date-time: {raw_time!r}", "created_at")
        else:
            stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)
            created_at = stamp.astimezone(timezone.utc).isoformat()
    labels: list[_NewLabel] = []
    for name, raw in values.items():
        if name in ID_COLUMNS or name in META_COLUMNS or name in card.spec.inputs:
            continue
        spec = fields.get(name)
        if spec is None:
            if raw is not None and not (isinstance(raw, str) and not raw.strip()):
                known = ", ".join(fields) or "none"
                problem(
                    f"unknown column for {card_ref} (label fields: {known})", name or "(no header)"
                )
            continue
        try:
            value = spec.parse(raw, text=row.text)
        except ValueError as error:
            problem(str(error), name)
            continue
        if value is None or labeler is None:
            continue
        key = (result_id, labeler, name)
        if key in seen:
            problem(
                f"duplicate: {labeler} already labelled {name} of this item on line {seen[key]}",
                name,
            )
            continue
        seen[key] = row.line
        if existing is None:
            exists = _label_exists(resolver.store, key)
        else:
            exists = key in existing
        if exists:
            where = f"in audit #{scope.audit_id}" if scope else "(import)"
            problem(f"duplicate: {labeler} has already labelled {name} of this item {where}", name)
            continue
        labels.append(
            _NewLabel(
                result_id,
                item_id,
                card_ref,
                model,
                labeler,
                name,
                spec.kind,
                value,
                note,
                created_at,
            )
        )
    if not labels and not problems and not (scope and scope.allow_unlabeled):
        problem(
            f"no label: fill at least one of {', '.join(fields) or '(this card has no label fields)'}",
            None,
        )
    return (labels, []) if not problems else ([], problems)


def _resolve(
    row: _Row,
    text: Any,
    problem: Any,
    resolver: _Resolver,
    scope: AuditScope | None,
) -> tuple[str, str | None, str, str] | None:
    """(result_id, item_id, card, model) of the stored result a row is about, or None."""
    result_id = text("result_id")
    item_id = text("item_id")
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
        ids = resolver.by_item(item_id, card, model)
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
        if given is not None and given != (actual or ""):
            problem(
                f"does not match the stored result {result_id} ({name} {actual!r}, row says {given!r})",
                name,
            )
            return None
    return result_id, stored_item, stored_card, stored_model


def _existing_keys(store: Store, scope: AuditScope | None) -> set[tuple[str, str, str]] | None:
    """For an audit, every (result, labeler, field) already stored in it; else None (ask per row)."""
    if scope is None:
        return None
    rows = store.db.conn.execute(
        "SELECT result_id, labeler, field FROM labels WHERE audit_id = ?", (scope.audit_id,)
    ).fetchall()
    return {(r[0], r[1], r[2]) for r in rows}


def _label_exists(store: Store, key: tuple[str, str, str]) -> bool:
    row = store.db.conn.execute(
        "SELECT 1 FROM labels WHERE result_id = ? AND labeler = ? AND field = ? AND audit_id IS NULL",
        key,
    ).fetchone()
    return row is not None


_INSERT = (
    "INSERT INTO labels (result_id, item_id, card, model, labeler, field, kind, value, note, "
    "audit_id, source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _write(
    store: Store, labels: Sequence[_NewLabel], scope: AuditScope | None, source: Path | None
) -> None:
    """Store labels in one transaction: all or nothing."""
    rows = [
        (label.result_id, label.item_id, label.card, label.model, label.labeler, label.field, label.kind, json.dumps(label.value),
         label.note, scope.audit_id if scope else None, None if source is None else source.name, label.created_at)
        for label in labels
    ]  # fmt: skip
    if not rows:
        return
    try:
        with store.transaction():
            store.db.conn.executemany(_INSERT, rows)
    except sqlite3.IntegrityError as error:
        # Another import stored the same labels since we checked: nothing of this one is kept.
        raise LabelImportError(
            f"duplicate labels stored concurrently; nothing was imported ({error})", file=source
        ) from error
    except sqlite3.Error as error:
        raise StoreError(f"cannot store labels in {store.path}: {error}") from error


# --------------------------------------------------------------------------- reading files


def format_of(path: Path) -> Format:
    """``csv`` or ``jsonl`` from a file name; `LabelImportError` for anything else."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    raise LabelImportError(
        "cannot tell the format from the file name; use .csv or .jsonl, or pass --format", file=path
    )


def read_rows(path: Path, format: Format) -> tuple[list[_Row], list[LabelImportError]]:
    """Every non-blank row of a labels file with its line, plus the lines that could not be read."""
    try:
        if format == "csv":
            return _read_csv(path)
        return _read_jsonl(path)
    except OSError as error:
        raise LabelImportError(f"cannot read: {error.strerror or error}", file=path) from error
    except UnicodeDecodeError as error:
        raise LabelImportError(
            f"not UTF-8 text ({error.reason} at byte {error.start})", file=path
        ) from error


def _read_csv(path: Path) -> tuple[list[_Row], list[LabelImportError]]:
    rows: list[_Row] = []
    problems: list[LabelImportError] = []
    # utf-8-sig: spreadsheets save a byte-order mark that would otherwise glue onto the first name.
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = [name.strip() for name in next(reader)]
        except StopIteration:
            raise LabelImportError(
                "empty file: expected a header line", file=path, line=1
            ) from None
        except csv.Error as error:
            raise LabelImportError(f"unreadable CSV: {error}", file=path, line=1) from None
        for name in sorted({n for n in header if header.count(n) > 1 and n}):
            raise LabelImportError(
                "column appears twice in the header", file=path, line=1, field=name
            )
        start = reader.line_num + 1
        while True:
            line = start
            try:
                record = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                problems.append(LabelImportError(f"unreadable CSV: {error}", file=path, line=line))
                start = reader.line_num + 1
                continue
            start = reader.line_num + 1
            if not any(cell.strip() for cell in record):
                continue
            if len(record) > len(header):
                problems.append(LabelImportError(
                    f"{len(record)} cells but the header has {len(header)} columns", file=path, line=line
                ))  # fmt: skip
                continue
            values = {name: cell for name, cell in zip(header, record)}
            rows.append(_Row(line, values, text=True))
    return rows, problems


def _read_jsonl(path: Path) -> tuple[list[_Row], list[LabelImportError]]:
    rows: list[_Row] = []
    problems: list[LabelImportError] = []
    for number, value in read_jsonl(path, error=LabelImportError):
        if isinstance(value, LabelImportError):
            problems.append(value)
        else:
            rows.append(_Row(number, value, text=False))
    return rows, problems


# --------------------------------------------------------------------------- export


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
    fields; CSV leaves their cells empty.

    Args:
        path: a file path (written atomically) or an open text stream.
        db: a `Store` or database path.
        card: only this card, ``name`` (any version) or ``name@version``.
        model: only results of this judge model.
        labeler: only this labeler's labels.
        audit_id: only labels given in this audit.
        format: ``"csv"`` or ``"jsonl"``; required for a stream, else taken from the extension.

    Returns:
        The number of rows written.
    """
    with opened(db) as store:
        labels = read_labels(store, card=card, model=model, labeler=labeler, audit_id=audit_id)
    rows: dict[tuple[str, str, int | None], dict[str, Any]] = {}
    field_names: list[str] = []
    for label in labels:
        key = (label.result_id, label.labeler, label.audit_id)
        row = rows.setdefault(key, {
            "result_id": label.result_id, "item_id": label.item_id, "card": label.card,
            "model": label.model, "labeler": label.labeler,
        })  # fmt: skip
        if label.audit_id is not None:
            row["audit_id"] = label.audit_id
        row[label.field] = label.value
        if label.note is not None:
            row["note"] = label.note
        row["created_at"] = label.created_at.isoformat()
        if label.field not in field_names:
            field_names.append(label.field)
    columns = [
        "result_id",
        "item_id",
        "card",
        "model",
        "labeler",
        "audit_id",
        *field_names,
        "note",
        "created_at",
    ]
    if isinstance(path, (str, os.PathLike)):
        target = Path(path)
        chosen = format or format_of(target)
        write_rows(target, rows.values(), columns, chosen)
    else:
        if format is None:
            raise ValueError("pass format= when exporting to a stream")
        _write_stream(path, rows.values(), columns, format)
    return len(rows)


def write_rows(
    path: Path, rows: Iterable[Mapping[str, Any]], columns: Sequence[str], format: Format
) -> None:
    """Write rows to ``path`` atomically (a temporary file, then a rename)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="") as handle:
        _write_stream(handle, rows, columns, format)
    os.replace(tmp, path)


def _write_stream(
    handle: TextIO, rows: Iterable[Mapping[str, Any]], columns: Sequence[str], format: Format
) -> None:
    if format == "csv":
        writer = csv.DictWriter(
            handle, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n"
        )
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    else:
        for row in rows:
            ordered = {k: row[k] for k in columns if k in row}
            handle.write(json.dumps(ordered, ensure_ascii=False) + "\n")
