"""``judgecards cost``: what the stored results cost, totalled by card, model or UTC day.

Each result's cost was computed when it was judged, from the tokens billed and the price table
then in force (`judgecards.limits.pricing`); this command adds them up and never re-prices. Results of
unknown cost (a model with no price, or rows stored before costs were recorded) are counted
apart, so a total is never presented as complete when it is not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from judgecards.cli._common import db_option
from judgecards.errors import StoreError
from judgecards.limits import format_cost
from judgecards.storage import Store, time_bound

__all__ = ["cost"]

_GROUPS = ("card", "model", "day")


def _since(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    # Checked while parsing: a typo in a date fails before the database is opened.
    try:
        return time_bound(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a date (YYYY-MM-DD) or ISO 8601 date-time", ctx, param
        ) from None


@click.command()
@db_option
@click.option("--card", help="Only this card: NAME (any version) or NAME@VERSION.")
@click.option("--model", help="Only this judge model (provider:model).")
@click.option(
    "--since", callback=_since, help="Only results judged from this UTC date or date-time on."
)
@click.option(
    "--by",
    "group",
    type=click.Choice(_GROUPS),
    default="model",
    show_default=True,
    help="Total per card, judge model or UTC day.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def cost(  # noqa: PLR0917  click passes one parameter per option
    db: Path, card: str | None, model: str | None, since: str | None, group: str, as_json: bool
) -> None:
    """Total the cost of stored results by card, model or day ("unknown" where a price is)."""
    if not db.is_file():
        raise StoreError(f"cannot open database {db}: no such file", path=db, operation="cost")
    # Not read-only: opening applies pending migrations, so a database from before costs were
    # recorded gains the column (its older rows read as unknown) instead of failing.
    with Store(db) as store:
        rows = store.cost_totals(group, card=card, model=model, since=since)
    groups = [_group(row) for row in rows]
    sums = [sum(row[i] or 0 for row in rows) for i in (1, 2, 3, 4, 6)]
    known = sum(row[5] for row in rows) if rows else 0.0
    total = _group(("total", *sums[:4], float(known), sums[4]))
    if as_json:
        click.echo(json.dumps({"by": group, "groups": groups, "total": total}, indent=2))
        return
    if not groups:
        click.echo("no stored results match")
        return
    click.echo(_table(group, [*groups, total]))


def _group(row: tuple[Any, ...]) -> dict[str, Any]:
    name, results, cached, input_tokens, output_tokens, known, unknown = row
    return {
        "group": name,
        "results": results,
        "cached": cached or 0,
        "input_tokens": input_tokens or 0,
        "output_tokens": output_tokens or 0,
        # Never a partial sum presented as the total: null when any result's cost is unknown.
        "cost_usd": None if unknown else known,
        "known_cost_usd": known,
        "unknown_cost_results": unknown or 0,
    }


def _cost_cell(group: dict[str, Any]) -> str:
    if not group["unknown_cost_results"]:
        return format_cost(group["cost_usd"])
    known = f"{format_cost(group['known_cost_usd'])} + " if group["known_cost_usd"] else ""
    return f"{known}unknown ({group['unknown_cost_results']} results)"


def _table(by: str, groups: list[dict[str, Any]]) -> str:
    header = (by, "results", "cached", "input tokens", "output tokens", "cost (USD)")
    cells = [
        (
            str(g["group"]),
            str(g["results"]),
            str(g["cached"]),
            f"{g['input_tokens']:,}",
            f"{g['output_tokens']:,}",
            _cost_cell(g),
        )
        for g in groups
    ]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        first = row[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(row[1:-1], widths[1:-1]))
        return "  ".join([first, *rest, row[-1]])

    return "\n".join([line(header), *(line(row) for row in cells[:-1]), "", line(cells[-1])])
