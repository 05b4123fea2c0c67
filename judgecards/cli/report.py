"""``judgecards report --output report.html``: the whole judge report as one self-contained file.

Exit codes: 0 the file was written; 2 an error (no such database, no stored results matching
--card/--model, an output path that cannot be written, matplotlib missing), printed as
``Error: ...`` by `judgecards.cli`; nothing is written then. The gate's verdict is in the
report, not the exit code: ``judgecards audit report`` is the command that gates.
"""

from __future__ import annotations

from pathlib import Path

import click

from judgecards.cli._common import cards_dir_option, db_option
from judgecards.cli._output import OutputFile
from judgecards.cli._progress import Stages
from judgecards.errors import StoreError

__all__ = ["report"]


@click.command()
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(path_type=Path),
    help="The HTML file to write (replaced atomically).",
)
@click.option("--card", help="Only this card: NAME (every version) or NAME@VERSION.")
@click.option("--model", help="Only this judge model (provider:model).")
@click.option(
    "--min-kappa",
    default=0.6,
    show_default=True,
    type=click.FloatRange(-1.0, 1.0),
    help="The gate's threshold, drawn on the kappa plots (as audit report --min-kappa).",
)
@click.option(
    "--resamples",
    default=2000,
    show_default=True,
    type=click.IntRange(100, 100_000),
    help="Bootstrap resamples per interval (as audit report --resamples).",
)
@db_option
@cards_dir_option
def report(  # noqa: PLR0917  click passes one parameter per option
    output: Path,
    card: str | None,
    model: str | None,
    min_kappa: float,
    resamples: int,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Write one HTML file with plots: agreement over time, confusion, per-field kappa beside the
    human ceiling, disagreements, corrected estimates, win rates and ratings, score
    distributions, tokens and cost, for every card version and judge model (or those chosen).

    The file opens offline: plots are inline SVG, the stylesheet is inline, and it makes no
    network request. Numbers are those of audit report, estimate, rank and cost.
    """
    from judgecards.report.html import render_html
    from judgecards.report.model import build_report
    from judgecards.report.plots import require_matplotlib
    from judgecards.storage import Store

    require_matplotlib()
    target = OutputFile(output)
    target.check()  # before any work: a bad path fails fast and writes nothing
    if not db.is_file():
        raise StoreError(
            f"cannot open database {db}: no such file (pass --db with the judged results)",
            path=db,
            operation="open the database",
        )
    stages = Stages("report")
    what = f"measuring audits, estimates and rankings ({resamples} bootstrap resamples)"
    with Store(db) as store, stages.stage(what):
        built = build_report(
            store,
            card=card,
            model=model,
            min_kappa=min_kappa,
            n_resamples=resamples,
            cards_dir=list(cards_dirs) or None,
        )
    with stages.stage("drawing the plots"):
        html = render_html(built)
    target.write_with(lambda handle: handle.write(html.encode("utf-8")))
    sections = len(built.judges)
    click.echo(
        f"Wrote {output}: {sections} card version{'s' * (sections != 1)} × judge model "
        f"({', '.join(f'{j.card} · {j.model}' for j in built.judges)})",
        err=True,
    )
