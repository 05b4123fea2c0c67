"""``--rubric FILE``: a rubric card's decision policy (`judgecards.schemas.RubricPolicy`) from
one YAML or JSON file, so a policy is written once, kept beside the items and reviewed like code::

    criteria:            # for items that give none (default: faithfulness, relevance,
      - {name: tone, description: Polite and direct., scale: [1, 5]}  # coherence, conciseness)
    thresholds: {tone: 3}   # verdict pass when every listed score reaches its minimum
    weights: {tone: 1}      # scores["aggregate"]: an explicit weighted mean
    primary: tone           # the headline score

Without it a rubric row carries its criterion scores and no verdict (the policy decides only
what the user asks for, never a silent sum). The four options it replaces (``--threshold``,
``--weight``, ``--primary``, ``--criteria``) still work for one release, hidden, with a
deprecation line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from judgecards.cli._common import deprecated

__all__ = ["RubricChoice", "rubric_options", "rubric_policy"]

F = TypeVar("F", bound=Callable[..., Any])

_KEYS = ("criteria", "thresholds", "weights", "primary")


@dataclass(frozen=True)
class RubricChoice:
    """What the command line asked of the rubric policy, before the card is known.

    Attributes:
        source: the ``--rubric`` file (``None``: the deprecated options), named in errors.
        data: the policy's fields as written (keys of `RubricPolicy`).
        lines: the file line of each top-level key, for errors.
    """

    source: Path | None
    data: dict[str, Any]
    lines: dict[str, int] = field(default_factory=dict)


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


def _read_rubric(path: Path) -> RubricChoice:
    """The file, parsed with the bounded YAML loader; unknown keys refused with their line."""
    from judgecards.errors import InputError
    from judgecards.safe_yaml import load_yaml

    document = load_yaml(
        path.read_text(encoding="utf-8"), file=path, error=InputError, what="rubric"
    )
    data = document.data
    if not isinstance(data, dict):
        raise InputError(
            f"a rubric is a mapping with keys {', '.join(_KEYS)}", file=path, line=1, field="rubric"
        )
    lines = {str(key): document.line_of([str(key)]) or 1 for key in data}
    for key in data:
        if key not in _KEYS:
            raise InputError(
                f"unknown key (a rubric has {', '.join(_KEYS)})",
                file=path,
                line=lines[str(key)],
                field=str(key),
            )
    return RubricChoice(path, dict(data), lines)


def _old_options(
    thresholds: dict[str, float],
    weights: dict[str, float],
    primary: str | None,
    criteria_path: Path | None,
) -> dict[str, Any]:
    """The deprecated options' policy fields (and one deprecation line per option given)."""
    from judgecards.errors import InputError
    from judgecards.safe_yaml import load_yaml

    data: dict[str, Any] = {}
    for option, key, value in (
        ("--threshold", "thresholds", thresholds),
        ("--weight", "weights", weights),
        ("--primary", "primary", primary),
    ):
        if value:
            deprecated(option, f"--rubric FILE (key {key})")
            data[key] = value
    if criteria_path is not None:
        deprecated("--criteria", "--rubric FILE (key criteria)")
        text = criteria_path.read_text(encoding="utf-8")
        data["criteria"] = load_yaml(
            text, file=criteria_path, error=InputError, what="criteria"
        ).data
    return data


def rubric_options(function: F) -> F:
    """``--rubric FILE`` (and the hidden old options): keyword argument ``rubric``, a
    `RubricChoice` or ``None``."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        path: Path | None = kwargs.pop("rubric_path")
        old = _old_options(
            kwargs.pop("deprecated_thresholds"),
            kwargs.pop("deprecated_weights"),
            kwargs.pop("deprecated_primary"),
            kwargs.pop("deprecated_criteria"),
        )
        if path is not None and old:
            raise click.UsageError(
                "--threshold/--weight/--primary/--criteria are the old spelling of --rubric "
                "FILE: give --rubric only"
            )
        kwargs["rubric"] = (
            _read_rubric(path) if path is not None else RubricChoice(None, old) if old else None
        )
        return function(*args, **kwargs)

    existing = click.Path(dir_okay=False, exists=True, path_type=Path)
    options = [
        click.option(
            "--rubric",
            "rubric_path",
            default=None,
            type=existing,
            help="Rubric cards: a YAML or JSON policy with keys thresholds ({criterion: min}; "
            "with any, each row gets verdict pass or fail), weights ({criterion: w}, written to "
            "scores.aggregate), primary (the headline criterion) and criteria (for items that "
            "give none; default faithfulness, relevance, coherence, conciseness on 1-5).",
        ),
        click.option(
            "--threshold",
            "deprecated_thresholds",
            multiple=True,
            callback=_pairs,
            hidden=True,
            help="Now --rubric.",
        ),
        click.option(
            "--weight",
            "deprecated_weights",
            multiple=True,
            callback=_pairs,
            hidden=True,
            help="Now --rubric.",
        ),
        click.option("--primary", "deprecated_primary", hidden=True, help="Now --rubric."),
        click.option(
            "--criteria", "deprecated_criteria", type=existing, hidden=True, help="Now --rubric."
        ),
    ]
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


def rubric_policy(card: Any, choice: RubricChoice | None) -> Any:
    """The `RubricPolicy` asked for (None: none given, the card's default applies).

    Raises:
        InputError: a ``--rubric`` file that is not a valid policy, naming the file, the line
            and the key (exit 2, before any call).
        click.UsageError: the old options likewise, or any policy on a card without a
            ``criteria`` input.
    """
    if choice is None:
        return None
    from judgecards.errors import InputError
    from judgecards.schemas import RubricPolicy

    given = "--rubric" if choice.source is not None else "--threshold/--weight/--primary/--criteria"
    if "criteria" not in card.spec.inputs:
        raise click.UsageError(
            f"{given} applies to rubric cards (a 'criteria' input); {card.ref} has none"
        )
    try:
        return RubricPolicy(**choice.data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        key = str(first["loc"][0]) if first["loc"] else _key_naming(choice.data, message)
        if choice.source is not None:
            line = choice.lines.get(key, 1)
            raise InputError(message, file=choice.source, line=line, field=key) from None
        where = "--criteria" if key == "criteria" else "rubric"
        raise click.UsageError(f"{where}: {message}") from None


def _key_naming(data: dict[str, Any], message: str) -> str:
    """The key whose names a policy-wide error (an unknown criterion) is about, for its line."""
    for key in ("thresholds", "weights", "primary"):
        value = data.get(key)
        names = list(value) if isinstance(value, dict) else [value] if value else []
        if any(str(name) in message for name in names):
            return key
    return "rubric"
