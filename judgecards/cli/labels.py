"""``judgecards labels``: import and export human labels as CSV or JSONL."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click

from judgecards.cli._common import cards_dir_option, db_option
from judgecards.cli.export import export_time
from judgecards.storage import EXPORT_FORMATS

_FORMAT = click.Choice(["csv", "jsonl"])


@click.group()
def labels() -> None:
    """Import and export human labels (CSV or JSONL).

    A label row names a stored result by result_id, or by item_id + card (name@version) +
    model, and has one column per label field of the card: verdict, each score axis
    (correctness, ...), winner for pairwise cards; plus labeler, note and created_at.
    """


@labels.command("import")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--labeler", help="Who labelled (a row's labeler column overrides it).")
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Import the valid rows and report the invalid ones (default: import nothing if any row is invalid).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Replace a label the same labeler already gave for the same item and field "
    "(to re-import corrected labels; default: such a duplicate is an error).",
)
@click.option(
    "--format", "format_", type=_FORMAT, help="File format (default: from the extension)."
)
@db_option
@cards_dir_option
def import_command(  # noqa: PLR0917  click passes one parameter per option
    file: Path,
    labeler: str | None,
    skip_invalid: bool,
    replace: bool,
    format_: Literal["csv", "jsonl"] | None,  # click.Choice allows only these
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Validate every row of FILE, then store its labels in one transaction.

    Exits 2, storing nothing, when any row is invalid (unknown item, out-of-range value, wrong
    type, duplicate, broken CSV quoting), listing each problem by file, line and field. The file
    is read and checked before the database is opened.
    """
    from calibration.labels import import_labels

    report = import_labels(
        file,
        labeler=labeler,
        db=db,
        skip_invalid=skip_invalid,
        replace=replace,
        format=format_,
        cards_dir=list(cards_dirs) or None,
    )
    replaced = f" ({report.labels_replaced} replaced)" if report.labels_replaced else ""
    click.echo(
        f"Imported {report.labels_written} label(s){replaced} from {report.rows_written} of "
        f"{report.rows} row(s) of {file} into {db}"
    )
    if report.errors:
        click.echo(f"Skipped {len(report.errors)} problem(s) (--skip-invalid):", err=True)
        for problem in report.errors:
            click.echo(f"  {problem}", err=True)


@labels.command("export")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--card", help="Only this card: NAME or NAME@VERSION.")
@click.option("--model", help="Only results of this judge model.")
@click.option("--labeler", help="Only this labeler's labels.")
@click.option("--audit", "audit_id", type=int, help="Only labels given in this audit.")
@click.option(
    "--since",
    callback=export_time,
    help="Only labels given on or after this date (YYYY-MM-DD) or time.",
)
@click.option(
    "--until",
    callback=export_time,
    help="Only labels given on or before this date, or before this time.",
)
@click.option(
    "--format",
    "format_",
    type=click.Choice(EXPORT_FORMATS),
    help="csv, jsonl or parquet (default: from the extension; required for '-').",
)
@db_option
def export_command(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    file: Path,
    card: str | None,
    model: str | None,
    labeler: str | None,
    audit_id: int | None,
    since: str | None,
    until: str | None,
    format_: str | None,
    db: Path,
) -> None:
    """Write stored labels to FILE ('-' for stdout) in the format `labels import` reads.

    Rows are oldest first; CSV cells that a spreadsheet would run as a formula start with '.
    Parquet needs pip install 'judgecards[parquet]'.
    """
    from judgecards.cli.export import run_export

    count = run_export(
        "labels",
        file,
        db=db,
        format=format_,
        option="FILE",
        card=card,
        model=model,
        since=since,
        until=until,
        labeler=labeler,
        audit_id=audit_id,
    )
    if str(file) != "-":
        click.echo(f"Exported {count} row(s) to {file}")
