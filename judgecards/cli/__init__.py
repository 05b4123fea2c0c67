"""The ``judgecards`` command. Subcommands live in their own modules and are imported only when
run, so ``judgecards --help`` starts fast (no SDK, pydantic or numpy import)."""

from __future__ import annotations

import importlib
from typing import Any

import click

__all__ = ["main"]

# name -> (module, attribute, one-line help shown by --help without importing the module)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "audit": (
        "judgecards.cli.audit",
        "audit",
        "Spot-check judge drift against human labels: sample, ingest, report, rerun.",
    ),
    "cards": ("judgecards.cli.cards", "cards", "List, show and lock judge cards."),
    "compare": (
        "judgecards.cli.compare",
        "compare",
        "A/B-compare two output files with a pairwise judge, both orders.",
    ),
    "eval": (
        "judgecards.cli.eval",
        "eval_command",
        "Tiered evaluation: format checks, then metrics, then a judge on survivors only.",
    ),
    "rank": (
        "judgecards.cli.rank",
        "rank",
        "Bradley–Terry or Elo ratings over stored pairwise comparisons.",
    ),
    "labels": ("judgecards.cli.labels", "labels", "Import and export human labels (CSV or JSONL)."),
    "score": (
        "judgecards.cli.score",
        "score",
        "Judge every item of a JSONL file with one card and model.",
    ),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[name]
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup)
@click.version_option(package_name="judgecards")
def cli() -> None:
    """judgecards: LLM-as-a-judge with versioned judge cards and calibration.

    Results, the response cache and human labels live in one SQLite file: --db, else
    $JUDGECARDS_DB, else ./judgecards.db.
    """


def main(argv: list[str] | None = None) -> Any:
    return cli.main(args=argv, prog_name="judgecards")
