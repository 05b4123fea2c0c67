"""Options and helpers shared by subcommands."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from judgecards.errors import JudgecardsError
from judgecards.jsonl import read_jsonl

__all__ = ["cards_dir_option", "db_option", "fail", "mock_banner", "read_jsonl"]

F = TypeVar("F", bound=Callable[..., Any])


def db_option(function: F) -> F:
    return click.option(
        "--db",
        type=click.Path(dir_okay=False, path_type=Path),
        envvar="JUDGECARDS_DB",
        default="judgecards.db",
        show_default=True,
        help="SQLite database for results, cache and labels (env JUDGECARDS_DB).",
    )(function)


def cards_dir_option(function: F) -> F:
    return click.option(
        "--cards-dir",
        "cards_dirs",
        multiple=True,
        type=click.Path(file_okay=False, exists=True, path_type=Path),
        help="Extra directory of judge cards (repeatable; env JUDGECARDS_CARDS_DIR).",
    )(function)


def fail(error: JudgecardsError) -> None:
    """Print a judgecards error for a person and exit 2 (1 is reserved for failed gates)."""
    click.echo(f"Error: {error}", err=True)
    sys.exit(2)


def mock_banner(model: str) -> None:
    if model.startswith("mock:"):
        from judgecards.providers.mock import MOCK_BANNER

        line = "=" * len(MOCK_BANNER)
        click.secho(f"{line}\n{MOCK_BANNER}\n{line}", fg="yellow", bold=True, err=True)
