"""``judgecards export``: stored results or comparisons as JSONL, CSV or Parquet.

Human labels are exported by ``judgecards labels export``, beside ``labels import`` (one command
per job); ``export labels`` still works for one release, with a warning, and runs the same
`run_export`, so both write the same file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

import click

from judgecards.cli._common import db_option, deprecated
from judgecards.cli._output import OutputFile
from judgecards.storage import (
    EXPORT_FORMATS,
    ExportFormat,
    Store,
    Table,
    comparisons_table,
    export_format,
    require_pyarrow,
    results_table,
    time_bound,
    write_table,
)

__all__ = ["export", "export_time", "run_export"]

TABLES = ("results", "comparisons", "labels")  # labels: deprecated, `labels export` now


def export_time(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The ``--since``/``--until`` callback of every export command, so they read dates alike."""
    # Checked while parsing: a typo in a date fails before the database is opened.
    try:
        time_bound(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a date (YYYY-MM-DD) or ISO 8601 date-time", ctx, param
        ) from None
    return value


def _table(
    store: Store,
    name: str,
    filters: dict[str, str | None],
    labeler: str | None,
    audit_id: int | None,
) -> Table:
    if name == "results":
        return results_table(store, **filters)
    if name == "comparisons":
        return comparisons_table(store, **filters)
    from calibration.labels import label_table

    return label_table(store, labeler=labeler, audit_id=audit_id, **filters)


def run_export(  # noqa: PLR0913  keyword-only options of the command
    name: str,
    output: Path,
    *,
    db: Path,
    format: str | None,
    option: str,
    card: str | None = None,
    model: str | None = None,
    since: str | None = None,
    until: str | None = None,
    labeler: str | None = None,
    audit_id: int | None = None,
) -> int:
    """Export one table to ``output`` (``-``: standard output); returns the number of rows.

    Everything that can be checked is checked before the database is read: the format, pyarrow
    for Parquet, and the output path. A file is written atomically, so an interrupted export
    leaves any earlier file as it was.
    """
    to_stdout = str(output) == "-"
    if to_stdout and format is None:
        raise click.UsageError("pass --format jsonl|csv|parquet when writing to stdout")
    chosen: ExportFormat = export_format(output, format)
    if chosen == "parquet":
        require_pyarrow()
    target = OutputFile(output, option=option)
    if not to_stdout:
        target.check()
    filters = {"card": card, "model": model, "since": since, "until": until}
    with Store(db, read_only=True) as store:
        table = _table(store, name, filters, labeler, audit_id)

        def write(handle: IO[bytes]) -> int:
            return write_table(table, handle, chosen)

        if to_stdout:
            sys.stdout.flush()
            count = write(sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return count
        return target.write_with(write)


@click.command("export")
@click.argument("table", metavar="TABLE", type=click.Choice(TABLES))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="File to write ('-' for stdout).",
)
@click.option(
    "--format",
    "format_",
    type=click.Choice(EXPORT_FORMATS),
    help="jsonl, csv or parquet (default: from the extension; required for '-').",
)
@click.option("--card", help="Only this card: NAME or NAME@VERSION.")
@click.option("--model", help="Only this judge model.")
@click.option(
    "--since",
    callback=export_time,
    help="Only rows created on or after this date (YYYY-MM-DD) or time.",
)
@click.option(
    "--until",
    callback=export_time,
    help="Only rows created on or before this date, or before this time.",
)
@click.option("--labeler", hidden=True, help="Deprecated `export labels` only.")
@click.option("--audit", "audit_id", type=int, hidden=True, help="Deprecated `export labels` only.")
@db_option
def export(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    table: str,
    output: Path,
    format_: str | None,
    card: str | None,
    model: str | None,
    since: str | None,
    until: str | None,
    labeler: str | None,
    audit_id: int | None,
    db: Path,
) -> None:
    """Write stored TABLE (results or comparisons) to a JSONL, CSV or Parquet file.

    Rows are oldest first and streamed from the database. JSON columns (scores, inputs, ...)
    are nested in JSONL and JSON text in CSV and Parquet; CSV cells that a spreadsheet would run
    as a formula start with '. Times are UTC. Parquet needs pip install 'judgecards[parquet]'.
    Human labels: `judgecards labels export FILE`.
    """
    if table == "labels":
        deprecated("`judgecards export labels --output FILE`", "`judgecards labels export FILE`")
    elif labeler is not None or audit_id is not None:
        raise click.UsageError("--labeler and --audit filter labels: `judgecards labels export`")
    count = run_export(
        table,
        output,
        db=db,
        format=format_,
        option="--output",
        card=card,
        model=model,
        since=since,
        until=until,
        labeler=labeler,
        audit_id=audit_id,
    )
    if str(output) != "-":
        click.echo(f"Exported {count} {table} row(s) to {output}")
