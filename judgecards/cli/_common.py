"""Options and helpers shared by subcommands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from judgecards.errors import InputError, JudgecardsError

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


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """(line number, object) for each non-blank line, or an InputError naming a bad line.

    Errors are yielded, not raised, so a command can report every bad line at once.
    """
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as error:
                yield number, InputError(f"invalid JSON ({error.msg} at column {error.colno})", file=path, line=number)
                continue
            if not isinstance(value, dict):
                yield number, InputError("each line must be a JSON object", file=path, line=number)
                continue
            yield number, value


def fail(error: JudgecardsError) -> None:
    """Print a judgecards error for a person and exit 2 (1 is reserved for failed gates)."""
    click.echo(f"Error: {error}", err=True)
    sys.exit(2)


def mock_banner(model: str) -> None:
    if model.startswith("mock:"):
        from judgecards.providers.mock import MOCK_BANNER

        line = "=" * len(MOCK_BANNER)
        click.secho(f"{line}\n{MOCK_BANNER}\n{line}", fg="yellow", bold=True, err=True)
