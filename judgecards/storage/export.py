"""Stored results and comparisons written out as JSONL, CSV or Parquet, streamed.

A `Table` is a typed column list and an iterable of rows; `write_table` writes one to an open
binary file. Rows come from the database a page at a time (`Store.export_rows`) and go out as
they come: JSONL and CSV hold one row in memory, Parquet one row group (``batch_rows`` rows).

Formats:

* **JSONL**: one object per row; the JSON columns (``scores``, ``output``, ``inputs``,
  ``params``) are nested values, not strings.
* **CSV**: a header line, then one line per row; JSON columns are JSON text, an empty cell is
  ``null``, and every cell a spreadsheet would run as a formula is escaped
  (`judgecards.storage.csv_safety`), since item ids, inputs and judge replies are untrusted text.
* **Parquet**: typed columns (strings, 64-bit integers, doubles; JSON columns as JSON text),
  written through pyarrow, an optional extra (``pip install 'judgecards[parquet]'``); without
  it `MissingExtra` is raised before anything is read or written.

Browsing: the database opens in Datasette as it is; `DATASETTE_METADATA` is the path of the
metadata file shipped in the package (canned queries: agreement per audit, error kinds per run,
costliest items).

Dates: ``since`` is inclusive, ``until`` exclusive; a bare date ``until`` covers that whole
day. Times without an offset are UTC, like the stored ``created_at``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Literal

from judgecards.errors import MissingExtra, OutputError
from judgecards.storage.csv_safety import spreadsheet_cell
from judgecards.storage.store import Store
from judgecards.storage.temporary_files import create_beside, sweep_beside

__all__ = [
    "DATASETTE_METADATA",
    "EXPORT_FORMATS",
    "Column",
    "ColumnKind",
    "ExportFormat",
    "Table",
    "comparisons_table",
    "export_format",
    "require_pyarrow",
    "results_table",
    "time_bound",
    "write_table",
    "write_table_file",
]

ExportFormat = Literal["jsonl", "csv", "parquet"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("jsonl", "csv", "parquet")
ColumnKind = Literal["text", "integer", "real", "json"]

_SUFFIXES: dict[str, ExportFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

DATASETTE_METADATA = Path(__file__).resolve().parents[1] / "datasette-metadata.yml"  # judgecards/
"""Datasette metadata for a judgecards database (table notes, canned queries), in the package:
``datasette judgecards.db --metadata <this path>``."""


@dataclass(frozen=True)
class Column:
    """One exported column: its name and how its values are typed.

    ``json`` columns hold JSON text in the database; JSONL nests the value, CSV and Parquet
    keep the text.
    """

    name: str
    kind: ColumnKind = "text"


@dataclass(frozen=True)
class Table:
    """What an export writes: typed columns and the rows (``{column: value}``), read lazily.

    ``sparse``: JSONL leaves out a row's missing and ``None`` values instead of writing
    ``null`` (labels: a row has only the fields that were labelled, of whichever card).
    """

    name: str
    columns: tuple[Column, ...]
    rows: Iterable[Mapping[str, Any]]
    sparse: bool = False


def _columns(text: str, integer: str = "", real: str = "", json_: str = "") -> tuple[Column, ...]:
    kinds: dict[str, ColumnKind] = {}
    groups: tuple[tuple[str, ColumnKind], ...] = (
        (integer, "integer"),
        (real, "real"),
        (json_, "json"),
    )
    for names, kind in groups:
        kinds.update(dict.fromkeys(names.split(), kind))
    return tuple(Column(name, kinds.get(name, "text")) for name in text.split())


RESULT_COLUMNS = _columns(
    "id item_id card card_hash model status verdict model_verdict verdict_overridden scores "
    "output inputs params raw_reply error_kind error attempts transport_retries input_tokens "
    "output_tokens cache_read_tokens cache_write_tokens cost_usd latency_s cached extraction "
    "native_method created_at",
    integer="verdict_overridden attempts transport_retries input_tokens output_tokens "
    "cache_read_tokens cache_write_tokens cached",
    real="cost_usd latency_s",
    json_="scores output inputs params",
)
COMPARISON_COLUMNS = _columns(
    "id pair_id card card_hash model model_a model_b status winner position_consistent "
    "first_verdict second_verdict first_result_id second_result_id len_a len_b error created_at",
    integer="position_consistent len_a len_b",
)


def time_bound(value: str | date | None, *, end: bool = False) -> str | None:
    """A ``since`` (``end=False``) or ``until`` (``end=True``) bound as stored-time text.

    Accepts ``YYYY-MM-DD`` or an ISO 8601 date-time (UTC unless it has an offset). A bare date
    as ``until`` means the end of that day, so ``--since 2026-11-01 --until 2026-11-30`` is all
    of November.

    Raises:
        ValueError: the text is not an ISO 8601 date or date-time.
    """
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if _DATE.match(value.strip()):
            value = date.fromisoformat(value.strip())
        else:
            value = datetime.fromisoformat(value.strip())
    if isinstance(value, datetime):
        moment = value if value.tzinfo is None else value.astimezone(timezone.utc)
    else:
        moment = datetime.combine(value + timedelta(days=1 if end else 0), datetime.min.time())
    # Naive UTC text sorts correctly against the stored "...+00:00" values, to the microsecond.
    return moment.replace(tzinfo=None).isoformat()


def results_table(
    store: Store,
    *,
    card: str | None = None,
    model: str | None = None,
    since: str | date | None = None,
    until: str | date | None = None,
) -> Table:
    """Stored results (the ``results`` table as it is), oldest first, filtered.

    Args:
        store: the database.
        card: ``name`` (any version) or ``name@version``.
        model: the judge model.
        since: results created at or after this date or time.
        until: results created before this time, or on or before this date.
    """
    rows = store.export_rows(
        "results",
        card=card,
        model=model,
        since=time_bound(since),
        until=time_bound(until, end=True),
    )
    return Table("results", RESULT_COLUMNS, rows)


def comparisons_table(
    store: Store,
    *,
    card: str | None = None,
    model: str | None = None,
    since: str | date | None = None,
    until: str | date | None = None,
) -> Table:
    """Stored pairwise comparisons, oldest first, filtered like `results_table`.

    ``model`` is the judge model; the compared models are the ``model_a`` and ``model_b`` columns.
    """
    rows = store.export_rows(
        "comparisons",
        card=card,
        model=model,
        since=time_bound(since),
        until=time_bound(until, end=True),
    )
    return Table("comparisons", COMPARISON_COLUMNS, rows)


def export_format(path: Path, format: str | None = None) -> ExportFormat:
    """The format to write: ``format`` if given, else from the file name.

    Raises:
        OutputError: no format was given and the extension names none.
    """
    if format is not None:
        if format not in EXPORT_FORMATS:
            raise OutputError(f"unknown format {format!r}; use jsonl, csv or parquet", file=path)
        return format
    chosen = _SUFFIXES.get(path.suffix.lower())
    if chosen is None:
        raise OutputError(
            "cannot tell the format from the file name; use .jsonl, .csv or .parquet, or pass "
            "--format",
            file=path,
        )
    return chosen


def require_pyarrow() -> tuple[ModuleType, ModuleType]:
    """``(pyarrow, pyarrow.parquet)``, or `MissingExtra` naming the extra that installs them."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise MissingExtra(
            "writing Parquet needs pyarrow, which is not installed: "
            "pip install 'judgecards[parquet]'",
            extra="parquet",
        ) from None
    return pyarrow, pyarrow.parquet


def write_table(
    table: Table, handle: IO[bytes] | IO[str], format: ExportFormat, *, batch_rows: int = 10_000
) -> int:
    """Write every row of ``table`` to an open file; returns the number of rows.

    Binary files take every format; a text stream (``io.StringIO``, ``sys.stdout``) takes
    JSONL and CSV.

    Raises:
        MissingExtra: ``format`` is ``parquet`` and pyarrow is not installed (checked first).
        ValueError: Parquet asked of a text stream.
    """
    if isinstance(handle, io.TextIOBase):
        if format == "parquet":
            raise ValueError("Parquet is binary: pass a file opened in binary mode")
        text_handle: IO[str] = handle
        return (
            _write_csv(table, text_handle) if format == "csv" else _write_jsonl(table, text_handle)
        )
    binary: IO[bytes] = handle  # type: ignore[assignment]
    if format == "parquet":
        return _write_parquet(table, binary, batch_rows)
    text = io.TextIOWrapper(binary, encoding="utf-8", newline="", write_through=True)
    try:
        if format == "csv":
            return _write_csv(table, text)
        return _write_jsonl(table, text)
    finally:
        text.flush()
        text.detach()


def write_table_file(table: Table, path: Path, format: ExportFormat) -> int:
    """Write ``table`` to ``path`` atomically (a temporary file beside it, then a rename).

    Raises:
        MissingExtra: Parquet without pyarrow, before the file is touched.
        OutputError: the file cannot be written; no temporary file is left behind and an
            existing ``path`` is untouched.
    """
    if format == "parquet":
        require_pyarrow()
    tmp: str | None = None
    try:
        descriptor, tmp = create_beside(path)
        with os.fdopen(descriptor, "wb") as handle:
            count = write_table(table, handle, format)
        os.replace(tmp, path)
        tmp = None
        sweep_beside(path)  # a killed run's temporary file
        return count
    except OSError as error:
        raise OutputError(f"cannot write: {error.strerror or error}", file=path) from error
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _decoded(value: Any, kind: ColumnKind) -> Any:
    if kind == "json" and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _write_jsonl(table: Table, handle: IO[str]) -> int:
    count = 0
    for row in table.rows:
        record = {
            c.name: _decoded(row.get(c.name), c.kind)
            for c in table.columns
            if not table.sparse or row.get(c.name) is not None
        }
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def _csv_cell(value: Any, kind: ColumnKind) -> Any:
    if value is None:
        return ""
    if kind == "json" and not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return spreadsheet_cell(value)


def _write_csv(table: Table, handle: IO[str]) -> int:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow([spreadsheet_cell(c.name) for c in table.columns])
    count = 0
    for row in table.rows:
        writer.writerow([_csv_cell(row.get(c.name), c.kind) for c in table.columns])
        count += 1
    return count


def _batches(rows: Iterable[Mapping[str, Any]], size: int) -> Iterator[list[Mapping[str, Any]]]:
    batch: list[Mapping[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _parquet_value(value: Any, kind: ColumnKind) -> Any:
    if value is None:
        return None
    if kind == "json":
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if kind == "text" and not isinstance(value, str):
        return str(value)
    return value


def _write_parquet(table: Table, handle: IO[bytes], batch_rows: int) -> int:
    pa, pq = require_pyarrow()
    types = {"text": pa.string(), "integer": pa.int64(), "real": pa.float64(), "json": pa.string()}
    schema = pa.schema([(c.name, types[c.kind]) for c in table.columns])
    count = 0
    with pq.ParquetWriter(handle, schema) as writer:
        for batch in _batches(table.rows, batch_rows):
            arrays = {
                c.name: [_parquet_value(row.get(c.name), c.kind) for row in batch]
                for c in table.columns
            }
            writer.write_batch(pa.RecordBatch.from_pydict(arrays, schema=schema))
            count += len(batch)
    return count
