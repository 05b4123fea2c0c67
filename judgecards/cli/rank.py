"""``judgecards rank``: Bradley–Terry or Elo ratings over the comparisons stored by ``compare``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from judgecards.cli._common import db_option, fail


@click.command()
@click.option(
    "--card",
    default="pairwise",
    show_default=True,
    help="Card as NAME (any version) or NAME@VERSION.",
)
@click.option(
    "--judge-model",
    default=None,
    help="Only comparisons judged by this model (needed when several judged).",
)
@click.option(
    "--method",
    type=click.Choice(["bt", "elo"]),
    default="bt",
    show_default=True,
    help="Bradley–Terry (order-free MLE) or online Elo.",
)
@click.option(
    "--ties",
    type=click.Choice(["half", "davidson"]),
    default="half",
    show_default=True,
    help="Bradley–Terry tie model: half a win each, or Davidson's tie parameter.",
)
@click.option(
    "--bootstrap",
    default=1000,
    show_default=True,
    type=click.IntRange(0, 100_000),
    help="Resamples for the intervals (0: none).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the ratings as JSON.")
@db_option
def rank(
    card: str,
    judge_model: str | None,
    method: str,
    ties: str,
    bootstrap: int,
    seed: int,
    as_json: bool,
    db: Path,
) -> None:
    """Rank models from stored pairwise comparisons (label A and B with --model-a/--model-b when comparing).

    Each comparison counts once, with the two-order outcome (a pair the orders disagreed on is a
    tie). Comparisons without both model labels cannot be ranked and are counted as skipped.
    """
    from judgecards.errors import JudgecardsError
    from judgecards.pairwise.stored import load_comparisons, rank_stored
    from judgecards.store import Store

    if not db.exists():
        click.echo(f"Error: no database at {db}", err=True)
        sys.exit(2)
    try:
        store = Store(db)
        rows = load_comparisons(store, card=card, judge_model=judge_model)
        options: dict[str, object] = {"bootstrap": bootstrap, "seed": seed}
        if method == "bt":
            options["ties"] = ties
        ratings = rank_stored(store, card=card, judge_model=judge_model, method=method, **options)  # type: ignore[arg-type]
    except JudgecardsError as error:
        fail(error)
    except ValueError as error:
        click.echo(f"Error: {error}", err=True)
        sys.exit(2)
    skipped = sum(
        1 for r in rows if not (r["model_a"] and r["model_b"]) or r["model_a"] == r["model_b"]
    )
    if as_json:
        data = ratings.to_dict()
        data["skipped_unlabelled"] = skipped
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(ratings.as_text())
    if skipped:
        click.echo(f"\n{skipped} stored comparison(s) without both model labels were skipped.")
