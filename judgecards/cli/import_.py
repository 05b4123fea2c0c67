"""``judgecards import``: other tools' grader configs as judge cards and tiered-eval configs.

Exit status: 0 when everything was translated (approximations are listed), 1 when the output
was written but some part of the source could not be translated (each is listed here and in
``IMPORT_NOTES.md``), 2 when the source cannot be read (file, line, field) or the output
directory exists and is not empty; then nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from judgecards.cli._common import EXIT_ERRORS

if TYPE_CHECKING:
    from judgecards.importers import ImportResult

_SOURCE = click.Path(dir_okay=False, exists=True, path_type=Path)
_OUTPUT = click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A new (or empty) directory for the cards, configs and IMPORT_NOTES.md.",
)


@click.group("import")
def import_group() -> None:
    """Turn OpenAI Evals graders or a promptfoo config into judge cards and eval configs.

    What cannot be translated is listed, here and in IMPORT_NOTES.md beside the output, and
    the command exits 1; approximations are listed too. Nothing in the source is executed.
    """


@import_group.command("openai-graders")
@click.argument("file", type=_SOURCE)
@_OUTPUT
def openai_graders(file: Path, output: Path) -> None:
    """Import OpenAI Evals graders (label_model, score_model, string_check, text_similarity, multi).

    FILE (JSON or YAML) holds one grader, a list of graders, or an eval with testing_criteria;
    each grader becomes its own tiered-eval config over one items.jsonl.
    """
    from judgecards.importers import import_openai_graders

    _report(import_openai_graders(file, output))


@import_group.command("promptfoo")
@click.argument("file", type=_SOURCE)
@_OUTPUT
def promptfoo(file: Path, output: Path) -> None:
    """Import a promptfoo config's assertions (llm-rubric, factuality, equals, regex, ...).

    Tests with the same assertions share one tiered-eval config and an items file holding their
    vars; add each output to judge as model_output.
    """
    from judgecards.importers import import_promptfoo

    _report(import_promptfoo(file, output))


def _report(result: ImportResult) -> None:
    click.echo(f"Wrote {result.output}:")
    for path in (*result.cards, *result.configs, *result.items, result.notes):
        click.echo(f"  {path.relative_to(result.output)}")
    approximated = [gap for gap in result.gaps if not gap.left_out]
    if approximated:
        click.echo(f"{len(approximated)} part(s) approximated:")
        for gap in approximated:
            click.echo(f"  {gap}")
    if result.left_out:
        click.echo(f"{len(result.left_out)} part(s) not translated:", err=True)
        for gap in result.left_out:
            click.echo(f"  {gap}", err=True)
        click.echo(
            f"Exit status 1: the output lacks the parts above (see {result.notes}).", err=True
        )
        raise click.exceptions.Exit(EXIT_ERRORS)
