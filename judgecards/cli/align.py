"""``judgecards align``: align a judge card to the human labels stored for it.

Exit codes: 0 the run finished (whether or not a new card version was written), 2 an error
(no labels, too few to split, no card directory to write to, an unreadable guidelines file, a
database that does not exist), which `judgecards.cli` prints as ``Error: ...``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from judgecards.cli._common import cards_dir_option, connection_options, db_option, mock_banner

MAX_GUIDELINES_CHARS = 20_000
"""Guidelines go into every request's system prompt: a few pages at most."""


def _read_guidelines(path: Path) -> str:
    from judgecards.errors import InputError

    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"not UTF-8 text ({error.reason} at byte {error.start})", file=path
        ) from None
    except OSError as error:
        raise InputError(
            f"cannot read the guidelines: {error.strerror or error}", file=path
        ) from None
    if not text.strip():
        raise InputError("the guidelines file is empty", file=path)
    if len(text) > MAX_GUIDELINES_CHARS:
        raise InputError(
            f"the guidelines have {len(text):,} characters, over the limit of "
            f"{MAX_GUIDELINES_CHARS:,} (they are sent with every item)",
            file=path,
        )
    return text


@click.command("align")
@click.option("--card", required=True, help="NAME (newest version) or NAME@VERSION to align.")
@click.option("--model", required=True, help="The judge model whose labelled results to use.")
@click.option(
    "--k",
    "k",
    default=4,
    show_default=True,
    type=click.IntRange(1, 50),
    help="Examples per example candidate.",
)
@click.option(
    "--guidelines",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="A text file of written guidelines to try as candidates.",
)
@click.option(
    "--seed",
    default=7,
    show_default=True,
    type=int,
    help="Seed of the stratified split of the labels into example pool, dev and test.",
)
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(1, 1024))
@connection_options
@click.option(
    "--resamples",
    default=2000,
    show_default=True,
    type=click.IntRange(100, 100_000),
    help="Bootstrap resamples per kappa interval.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the stored run as JSON.")
@db_option
@cards_dir_option
def align(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    card: str,
    model: str,
    k: int,
    guidelines: Path | None,
    seed: int,
    concurrency: int,
    base_url: str | None,
    timeout: float,
    resamples: int,
    as_json: bool,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Pick the version of a card that agrees best with the people, and write it.

    The human labels of CARD judged by MODEL are split (stratified, seeded) into an example
    pool, dev and test. Candidates — the card as is, with K examples from the pool, with past
    disagreements, with --guidelines — are scored on dev (Cohen's kappa with its interval); the
    best is scored once on test and, unless the card as is won, written as a new card version
    in the first --cards-dir. Every run is stored in the database.

    A pairwise card is aligned on labelled pairs: pairs sharing an answer to the same question
    stay in one part, examples show both answers and the people's winner, and every dev and
    test pair is judged in both orders.
    """
    from calibration.alignment import align as run_alignment
    from judgecards.errors import StoreError

    if not db.is_file():  # the labels are in an existing database: never start a new one
        raise StoreError(
            f"cannot open database {db}: no such file (pass --db with the labelled results)",
            path=db,
            operation="open the database",
        )
    text = _read_guidelines(guidelines) if guidelines is not None else None
    options: dict[str, Any] = {"timeout": timeout}
    if base_url:
        options["base_url"] = base_url
    mock_banner(model)
    result = run_alignment(
        card,
        model,
        db=db,
        k=k,
        guidelines=text,
        seed=seed,
        cards_dir=list(cards_dirs) or None,
        concurrency=concurrency,
        n_resamples=resamples,
        announce=lambda message: click.echo(message, err=True),
        **options,
    )
    if as_json:
        data = {**vars(result.run), "notes": list(result.notes)}
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        click.echo(result.as_text())
    mock_banner(model)
