"""``--threshold``, ``--weight``, ``--primary`` and ``--criteria``: a rubric card's decision
policy (`judgecards.schemas.RubricPolicy`) from the command line.

Without them a rubric row carries its criterion scores and no verdict (the policy decides only
what the user asks for, never a silent sum); with ``--threshold`` the verdict is ``pass`` when
every listed score reaches its minimum, and ``--weight`` adds ``scores["aggregate"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError

__all__ = ["rubric_options", "rubric_policy"]

F = TypeVar("F", bound=Callable[..., Any])


def _pairs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, float]:
    """``NAME=NUMBER`` options as a mapping (checked while parsing: exit 2 before any work)."""
    parsed: dict[str, float] = {}
    for value in values:
        name, sep, number = value.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            parsed[name.strip()] = float(number)
        except ValueError:
            raise click.BadParameter(f"{value!r} is not NAME=NUMBER", ctx, param) from None
    return parsed


def rubric_options(function: F) -> F:
    """The rubric policy's options: keyword arguments ``thresholds``, ``weights``, ``primary``
    and ``criteria_path``."""
    options = [
        click.option(
            "--threshold",
            "thresholds",
            multiple=True,
            metavar="NAME=MIN",
            callback=_pairs,
            help="Rubric cards: a pass constraint; with any, each row gets verdict pass (every "
            "listed criterion scored at least its MIN) or fail. Repeatable.",
        ),
        click.option(
            "--weight",
            "weights",
            multiple=True,
            metavar="NAME=W",
            callback=_pairs,
            help="Rubric cards: a weight in an explicit weighted mean of the listed criteria, "
            "written to scores.aggregate. Repeatable.",
        ),
        click.option(
            "--primary",
            default=None,
            metavar="NAME",
            help="Rubric cards: the criterion reported as the headline score.",
        ),
        click.option(
            "--criteria",
            "criteria_path",
            default=None,
            type=click.Path(dir_okay=False, exists=True, path_type=Path),
            help="Rubric cards: a JSON or YAML list of {name, description, scale} used for items "
            "that give no criteria of their own (default: faithfulness, relevance, coherence, "
            "conciseness on 1-5).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def rubric_policy(
    card: Any,
    thresholds: dict[str, float],
    weights: dict[str, float],
    primary: str | None,
    criteria_path: Path | None,
) -> Any:
    """The `RubricPolicy` the options ask for (None: none given, the card's default applies).

    Raises:
        click.UsageError: the options on a card without a ``criteria`` input, a criteria file
            that is not a list of criteria, or a name no criterion has (exit 2, before any call).
    """
    if not (thresholds or weights or primary or criteria_path):
        return None
    if "criteria" not in card.spec.inputs:
        raise click.UsageError(
            f"--threshold/--weight/--primary/--criteria apply to rubric cards (a 'criteria' "
            f"input); {card.ref} has none"
        )
    from judgecards.errors import InputError
    from judgecards.safe_yaml import load_yaml
    from judgecards.schemas import DEFAULT_CRITERIA, RubricPolicy

    criteria: Any = DEFAULT_CRITERIA
    if criteria_path is not None:
        text = criteria_path.read_text(encoding="utf-8")
        criteria = load_yaml(text, file=criteria_path, error=InputError, what="criteria").data
    try:
        return RubricPolicy(
            criteria=criteria, thresholds=thresholds, weights=weights or None, primary=primary
        )
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = "--criteria" if first["loc"] and first["loc"][0] == "criteria" else "rubric"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise click.UsageError(f"{where}: {message}") from None
