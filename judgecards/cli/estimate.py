"""``judgecards estimate``: a judge's numbers corrected with the items people labelled (PPI++).

Reads the database only (nothing is created, migrated or written) and calls no provider. Exit
statuses: 0 estimates printed; 2 nothing to estimate (no results, no labels, too few labels), a
bad option, or a database that does not exist, printed as ``Error: ...`` by `judgecards.cli`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from judgecards.cli._common import db_option


@click.command()
@click.option("--card", required=True, help="NAME@VERSION, or NAME for its newest version.")
@click.option("--model", required=True, help="The judge model (provider:model).")
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Error level: intervals are at level 1 - alpha.",
)
@click.option(
    "--audit",
    "audit_id",
    type=int,
    default=None,
    help="Only the labels given in this audit (one sampling design); default: every label.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed that assigns the labelled items to the cross-fitting folds tuning PPI++'s λ.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@db_option
def estimate(  # noqa: PLR0917  click passes one parameter per option
    card: str, model: str, alpha: float, audit_id: int | None, seed: int, as_json: bool, db: Path
) -> None:
    """Judge-only, human-only and corrected estimates, side by side.

    For a card version and judge model with human labels: the mean of each score axis, the share
    of each verdict and, for pairwise cards, each model pair's win rate (ties count half). The
    corrected column (prediction-powered inference, PPI++) is the one to report; the judge-only
    column is the judge's own number, biased and uncorrected.
    """
    from calibration.estimates import estimate as corrected

    report = corrected(db, card=card, model=model, alpha=alpha, seed=seed, audit=audit_id)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(report.as_text())


def corrected_lines(db: Path, card: str, model: str) -> list[str]:
    """The corrected estimates that lead a run's summary, or nothing without human labels.

    ``score`` prints them before its own verdict shares and means, which are the judge's and
    so uncorrected; the last line says so.
    """
    from calibration.labels import CalibrationRepository
    from judgecards.storage import Store

    with Store(db, read_only=True) as store:
        if not CalibrationRepository(store).labels(card=card, model=model):
            return []  # nothing to correct with; and every run's end skips numpy's import
    from calibration.estimates import estimate as corrected
    from calibration.estimates import estimate_lines
    from judgecards.errors import EstimateError

    try:
        report = corrected(db, card=card, model=model)
    except EstimateError:
        return []
    return [
        "",
        *estimate_lines(report),
        "The verdict shares and means below are the judge's own: uncorrected.",
    ]
