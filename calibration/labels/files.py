"""Labels files and labelling sheets on disk: CSV or JSONL, read with lines, written atomically.

**Formula cells.** Labels, notes, item ids and a sheet's inputs are untrusted text, and a
spreadsheet runs a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
as a formula. Every CSV cell written here goes through `spreadsheet_cell`
(`judgecards.storage.csv_safety`, shared with the core's exports), which prefixes such a cell with
``'`` (a plain number such as ``-1`` is left alone); reading strips that one ``'`` again
(`from_spreadsheet_cell`), so an export or a sheet reads back to exactly what was written.
JSONL is written verbatim.

**Broken quoting.** CSV is read strictly: a quote that is never closed (which would otherwise
swallow every following row into one cell) is a problem naming the line the row starts on and
the line where reading gave up.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from judgecards.errors import AuditError, LabelImportError, OutputError
from judgecards.judging import read_jsonl
from judgecards.storage import from_spreadsheet_cell, spreadsheet_cell

__all__ = [
    "Format",
    "LabelRow",
    "format_of",
    "from_spreadsheet_cell",
    "read_rows",
    "sheet_audit_id",
    "spreadsheet_cell",
    "write_rows",
    "write_stream",
]

Format = Literal["csv", "jsonl"]


@dataclass
class LabelRow:
    """One row of a labels file or sheet.

    Attributes:
        line: the line it starts on (CSV: physical line, header = line 1).
        values: ``{column: value}``.
        text: it came from CSV, where every value is a string.
    """

    line: int
    values: dict[str, Any]
    text: bool


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


def read_rows(path: Path, format: Format) -> tuple[list[LabelRow], list[LabelImportError]]:
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


def _read_csv(path: Path) -> tuple[list[LabelRow], list[LabelImportError]]:
    rows: list[LabelRow] = []
    problems: list[LabelImportError] = []
    # utf-8-sig: spreadsheets save a byte-order mark that would otherwise glue onto the first name.
    with path.open(encoding="utf-8-sig", newline="") as handle:
        # strict: an unclosed quote is an error instead of a cell that runs to the end of file.
        reader = csv.reader(handle, strict=True)
        try:
            header = [name.strip() for name in next(reader)]
        except StopIteration:
            raise LabelImportError(
                "empty file: expected a header line", file=path, line=1
            ) from None
        except csv.Error as error:
            raise LabelImportError(
                f"unreadable CSV header: {error}", file=path, line=reader.line_num or 1
            ) from None
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
                problems.append(_quoting_problem(path, line, reader.line_num, error))
                start = reader.line_num + 1
                continue
            start = reader.line_num + 1
            if not any(cell.strip() for cell in record):
                continue
            if len(record) > len(header):
                problems.append(
                    LabelImportError(
                        f"{len(record)} cells but the header has {len(header)} columns",
                        file=path,
                        line=line,
                    )
                )
                continue
            values = {name: from_spreadsheet_cell(cell) for name, cell in zip(header, record)}
            rows.append(LabelRow(line, values, text=True))
    return rows, problems


def _quoting_problem(path: Path, line: int, last: int, error: csv.Error) -> LabelImportError:
    if last > line:
        return LabelImportError(
            f"unreadable CSV ({error}): a quoted cell opened on line {line} is not closed where it "
            f"should be, so lines {line}-{last} were read as one row and skipped; check the quotes",
            file=path,
            line=line,
        )
    return LabelImportError(f"unreadable CSV: {error}", file=path, line=line)


def _read_jsonl(path: Path) -> tuple[list[LabelRow], list[LabelImportError]]:
    rows: list[LabelRow] = []
    problems: list[LabelImportError] = []
    for number, value in read_jsonl(path, error=LabelImportError):
        if isinstance(value, LabelImportError):
            problems.append(value)
        else:
            rows.append(LabelRow(number, value, text=False))
    return rows, problems


def write_rows(
    path: Path, rows: Iterable[Mapping[str, Any]], columns: Sequence[str], format: Format
) -> None:
    """Write rows to ``path`` atomically (a temporary file, then a rename).

    Raises:
        OutputError: the file cannot be written (missing directory, no permission, disk
            full); no temporary file is left behind and an existing ``path`` is untouched.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="") as handle:
            write_stream(handle, rows, columns, format)
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write: {error.strerror or error}", file=path) from error


def write_stream(
    handle: TextIO, rows: Iterable[Mapping[str, Any]], columns: Sequence[str], format: Format
) -> None:
    """Write rows to an open text stream: CSV (formula cells escaped) or JSONL."""
    if format == "csv":
        writer = csv.DictWriter(
            handle, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n"
        )
        # The csv module quotes a cell holding "\n" (the line terminator) but not a lone "\r",
        # which every reader then takes for the end of a row: such rows are quoted whole.
        quoted = csv.DictWriter(
            handle,
            fieldnames=list(columns),
            extrasaction="ignore",
            lineterminator="\n",
            quoting=csv.QUOTE_ALL,
        )
        writer.writeheader()
        for row in rows:
            cells = {k: spreadsheet_cell("" if v is None else v) for k, v in row.items()}
            lone_cr = any(isinstance(v, str) and "\r" in v for v in cells.values())
            (quoted if lone_cr else writer).writerow(cells)
    else:
        for row in rows:
            ordered = {k: row[k] for k in columns if k in row}
            handle.write(json.dumps(ordered, ensure_ascii=False) + "\n")


def sheet_audit_id(path: Path, format: Format) -> int:
    """The audit a filled sheet belongs to, from its ``audit_id`` column."""
    rows, _ = read_rows(path, format)
    ids = {
        str(row.values.get("audit_id")).strip()
        for row in rows
        if str(row.values.get("audit_id") or "").strip()
    }
    if not ids:
        raise AuditError(f"{path}: the sheet has no audit_id column values; pass --audit ID")
    if len(ids) > 1:
        raise AuditError(
            f"{path}: the sheet mixes audits {', '.join(sorted(ids))}; ingest one audit's sheet at a time"
        )
    value = ids.pop()
    if not value.isdigit():
        raise LabelImportError(
            f"audit_id must be a number, got {value!r}", file=path, field="audit_id"
        )
    return int(value)
