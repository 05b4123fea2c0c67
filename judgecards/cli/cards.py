"""``judgecards cards``: list, show and lock judge cards."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from judgecards.cli._common import cards_dir_option, db_option


@click.group()
def cards() -> None:
    """List, show and lock judge cards."""


@cards.command("list")
@cards_dir_option
@db_option
def list_command(cards_dirs: tuple[Path, ...], db: Path) -> None:
    """Every card version with its status, description and latest calibration per judge model.

    A card file that fails to load is listed as broken with its error (file:line); it fails
    only the commands that use it.
    """
    from calibration.audits import calibrations
    from judgecards.cards import CardLibrary

    library = CardLibrary(list(cards_dirs) or None)
    found = library.cards()
    calibrated = calibrations(db)  # read-only: listing never creates a database
    for card in found:
        status = "released" if card.released else "unreleased"
        click.echo(f"{card.ref:<24} {status:<10} {card.spec.description}")
        mine = [c for c in calibrated if c.card == card.ref]
        # Per judge model: one model's audit says nothing of another's.
        for calibration in sorted(mine, key=lambda c: c.model):
            click.echo(f"{'':<24} {calibration.verdict()}")
        others = "any other judge model" if mine else "any judge model"
        click.echo(f"{'':<24} not calibrated for {others} (judgecards audit sample)")
    for broken in library.broken():
        click.echo(f"{broken.ref:<24} {'broken':<10} {broken.error}")


@cards.command("show")
@click.argument("ref")
@cards_dir_option
def show_command(ref: str, cards_dirs: tuple[Path, ...]) -> None:
    """Show a card: inputs, verdict rule, defaults, template and output schema."""
    from judgecards.cards import load_card

    card = load_card(ref, cards_dir=list(cards_dirs) or None)
    spec = card.spec
    click.echo(f"{card.ref}  {card.hash}  ({'released' if card.released else 'unreleased'})")
    click.echo(f"file: {card.path}")
    click.echo(spec.description)
    click.echo("\ninputs:")
    for name, item in spec.inputs.items():
        optional = "" if item.required else " (optional)"
        click.echo(f"  {name}{optional}: {item.description}")
    click.echo(
        f"\noutput: {spec.output.format}; score axes: {', '.join(card.score_axes) or 'none'}"
    )
    if spec.verdict and spec.verdict.rules:
        click.echo("verdict (decided in code, first match wins):")
        for rule in spec.verdict.rules:
            bounds = ", ".join(
                f"{axis} "
                + " and ".join(
                    part
                    for part in (
                        f">= {b.min:g}" if b.min is not None else "",
                        f"<= {b.max:g}" if b.max is not None else "",
                    )
                    if part
                )
                for axis, b in rule.when.items()
            )
            click.echo(f"  {rule.then:<14} if {bounds}")
        click.echo(f"  {spec.verdict.otherwise:<14} otherwise")
    click.echo(f"defaults: {spec.defaults.model_dump()}")
    if spec.system:
        click.echo("\n--- system ---\n" + spec.system.rstrip())
    click.echo("\n--- template ---\n" + card.body.rstrip())
    click.echo("\n--- output schema ---\n" + card.output_schema)


@cards.command("lock")
@click.option(
    "--check", is_flag=True, help="Exit 1 if a card in a locked directory is missing from its lock."
)
@cards_dir_option
def lock_command(check: bool, cards_dirs: tuple[Path, ...]) -> None:
    """Print the cards.lock lines of every card (add new versions' lines to the lock to release them).

    Broken cards get no line: each is reported on stderr with its error, and the exit status is 1.
    """
    from judgecards.cards import CardLibrary, lock_lines

    library = CardLibrary(list(cards_dirs) or None)
    found = library.cards()
    for line in lock_lines(found):
        click.echo(line)
    broken = library.broken()
    for card in broken:
        click.echo(f"broken: {card.error}", err=True)
    unreleased = [card.ref for card in found if not card.released]
    if check and unreleased:
        click.echo(f"unreleased: {', '.join(unreleased)}", err=True)
    if broken or (check and unreleased):
        sys.exit(1)
