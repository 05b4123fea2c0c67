"""One CLI vocabulary (issue 19 item 5): the judge model is ``--model`` everywhere, every
``--seed`` says what it seeds, and old spellings keep working for one release with one line on
stderr."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from judgecards.cli import cli
from judgecards.storage import Store


def run(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def commands(
    command: click.Command = cli, path: tuple[str, ...] = (), parent: click.Context | None = None
) -> Iterator[tuple[str, click.Command]]:
    """Every visible command and group, by its full name (`audit sample`)."""
    yield " ".join(path), command
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1] if path else "judgecards", parent=parent)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, (*path, name), ctx)


def visible_options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


@pytest.fixture
def empty_db(tmp_path: Path) -> Path:
    path = tmp_path / "empty.db"
    Store(path).close()
    return path


def test_the_judge_model_is_spelled_model_everywhere() -> None:
    judge_spellings = {
        f"{name}: {opt}"
        for name, command in commands()
        for option in visible_options(command)
        for opt in option.opts
        if "judge" in opt
    }
    assert judge_spellings == set()


def test_every_seed_says_what_it_seeds() -> None:
    seeds = {
        name: option.help or ""
        for name, command in commands()
        for option in visible_options(command)
        if "--seed" in option.opts
    }
    assert seeds  # align, audit sample, compare, estimate, rank
    vague = {
        name: text for name, text in seeds.items() if not text.startswith("Seed ") or len(text) < 40
    }
    assert vague == {}


def test_rank_judge_model_still_works_with_one_warning_line(empty_db: Path) -> None:
    new = run("rank", "--model", "openai:nobody", "--db", empty_db)
    old = run("rank", "--judge-model", "openai:nobody", "--db", empty_db)
    assert new.exit_code == old.exit_code == 2
    warning = (
        "Warning: --judge-model is deprecated and will be removed in the next release: "
        "use --model\n"
    )
    assert "openai:nobody" in new.stderr and "Warning" not in new.stderr
    assert old.stderr == warning + new.stderr


def test_rank_refuses_both_spellings_with_different_values(empty_db: Path) -> None:
    both = run("rank", "--model", "a:b", "--judge-model", "c:d", "--db", empty_db)
    assert both.exit_code == 2
    assert "--judge-model is the old spelling of --model: give --model only" in both.stderr


def test_export_no_longer_offers_label_only_options() -> None:
    export = dict(commands())["export"]
    names = {opt for option in visible_options(export) for opt in option.opts}
    assert not names & {"--labeler", "--audit"}
    labels_export = dict(commands())["labels export"]
    names = {opt for option in visible_options(labels_export) for opt in option.opts}
    assert {"--labeler", "--audit", "--since", "--until", "--card", "--model"} <= names
