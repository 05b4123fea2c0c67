"""``judgecards rank``: Bradley–Terry or Elo ratings over the comparisons stored by ``compare``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from judgecards.cli._common import db_option, renamed_option


@click.command()
@click.option(
    "--card",
    default="pairwise",
    show_default=True,
    help="Card as NAME (any version) or NAME@VERSION.",
)
@click.option(
    "--model",
    default=None,
    help="Only comparisons judged by this judge model (needed when several judged).",
)
@renamed_option("--judge-model", "--model")
@click.option(
    "--models",
    "models",
    multiple=True,
    metavar="NAME[,NAME...]",
    help="Only comparisons between these model labels: ranks one group of models, or an older "
    "labelling of relabelled pairs (repeat the option or separate names with commas).",
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
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed of the bootstrap resamples behind the rating intervals.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the ratings as JSON.")
@db_option
def rank(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    card: str,
    model: str | None,
    models: tuple[str, ...],
    method: str,
    ties: str,
    bootstrap: int,
    seed: int,
    as_json: bool,
    db: Path,
) -> None:
    """Rank models from stored pairwise comparisons (label A and B with --model-a/--model-b when comparing).

    Each judged pair counts once, with the two-order outcome (a pair the orders disagreed on is a
    tie). A pair compared again under other --model-a/--model-b labels counts once, with its latest
    labels; --models picks a group of models or an older labelling. Comparisons without both model
    labels cannot be ranked and are counted as skipped.
    """
    from judgecards.pairwise.stored import rankable_comparisons
    from judgecards.storage import Store

    # Read-only: ranking never creates, migrates or writes a database (StoreError if missing).
    with Store(db, read_only=True) as store:
        wanted = [name.strip() for value in models for name in value.split(",") if name.strip()]
        selection = rankable_comparisons(store, card=card, judge_model=model, models=wanted or None)
    options: dict[str, object] = {"bootstrap": bootstrap, "seed": seed}
    if method == "bt":
        options["ties"] = ties
    ratings = selection.rate("bt" if method == "bt" else "elo", **options)
    if as_json:
        data = ratings.to_dict()
        data.update(
            {
                "card": selection.card,
                "judge_model": selection.judge_model,
                "skipped_unlabelled": selection.unlabelled,
                "superseded_labellings": selection.superseded,
                "outside_models": selection.outside_models,
            }
        )
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(ratings.as_text())
    notes = []
    if selection.superseded:
        notes.append(
            f"{selection.superseded} stored comparison(s) were older labels of pairs counted with "
            "their latest labels (rank an older labelling with --models)."
        )
    if selection.outside_models:
        notes.append(f"{selection.outside_models} comparison(s) outside --models were left out.")
    if selection.unlabelled:
        notes.append(
            f"{selection.unlabelled} stored comparison(s) without both model labels were skipped."
        )
    if notes:
        click.echo("\n" + "\n".join(notes))
