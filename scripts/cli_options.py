"""Count the visible options of every ``judgecards`` command by walking the click group (hidden
options, kept for old spellings, do not count; ``--help`` does not either).

Run from the repository root: ``python scripts/cli_options.py [COMMAND ...]``, e.g.
``python scripts/cli_options.py score compare eval``. Prints one line per command, then the
total over the commands shown.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click

from judgecards.cli import cli


def commands(
    command: click.Command = cli, path: tuple[str, ...] = (), parent: click.Context | None = None
) -> Iterator[tuple[str, click.Command]]:
    """Every visible command and group, by its full name (``audit sample``)."""
    yield " ".join(path), command
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1] if path else "judgecards", parent=parent)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, (*path, name), ctx)


def visible_options(command: click.Command) -> list[str]:
    return [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden
    ]


def main(wanted: list[str]) -> None:
    total = 0
    for name, command in commands():
        if wanted and name not in wanted:
            continue
        options = visible_options(command)
        total += len(options)
        print(f"{len(options):4d}  judgecards {name}".rstrip() + f"  {' '.join(options)}")
    print(f"{total:4d}  total")


if __name__ == "__main__":
    main(sys.argv[1:])
