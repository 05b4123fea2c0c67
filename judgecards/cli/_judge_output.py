"""``--set NAME=VALUE``: how a judge's reply is asked for, shared by the commands that judge
(score, cascade, compare, eval, batch submit).

One way to set each: the card's front matter gives the default (``output_mode``,
``defaults.max_tokens``, ``defaults.top_logprobs``), a `Judge` argument overrides it for that
judge and model, and ``--set`` sets that argument. One repeatable option rather than one flag per
setting: they are the card's own keys, spelled as in the card. The old flags (``--output-mode``,
``--max-tokens``, ``--top-logprobs``) still work for one release, hidden, with a deprecation line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from judgecards.cli._common import deprecated
from judgecards.replies import OUTPUT_MODES

__all__ = ["SETTINGS", "judge_output_options"]

F = TypeVar("F", bound=Callable[..., Any])

SETTINGS: dict[str, click.ParamType[Any]] = {
    "output_mode": click.Choice(OUTPUT_MODES),
    "max_tokens": click.IntRange(min=1),
    "top_logprobs": click.IntRange(0, 20),
}
"""The card settings ``--set`` overrides, and the values each takes."""

_HELP = (
    "Override a card setting for this model (repeatable). output_mode=auto|native|prompt: "
    "how a JSON card's schema reaches the judge ('native' as the provider's strict structured "
    "output, 'prompt' in the prompt, 'auto' tries native and falls back once). max_tokens=N: "
    "the reply token budget (a reply cut at it is asked once more with twice the budget, at "
    "most 16,384, then recorded as 'truncated'). top_logprobs=N: alternatives per token, so "
    "scores get G-Eval probabilities (0 turns them off)."
)


def _setting(name: str, value: Any) -> Any:
    # top_logprobs=0 is "off": the Judge argument None, not the card's default.
    return None if name == "top_logprobs" and value == 0 else value


def _settings(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, Any]:
    """``--set`` values as `Judge` keyword arguments (checked while parsing: exit 2 first)."""
    chosen: dict[str, Any] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or name not in SETTINGS:
            raise click.BadParameter(
                f"{value!r}: give NAME=VALUE with NAME one of {', '.join(SETTINGS)}", ctx, param
            )
        if name in chosen:
            raise click.BadParameter(f"{name} set more than once", ctx, param)
        try:
            converted = SETTINGS[name].convert(text, param, ctx)
        except click.BadParameter as error:
            raise click.BadParameter(f"{name}: {error.message}", ctx, param) from None
        chosen[name] = _setting(name, converted)
    return chosen


def judge_output_options(function: F) -> F:
    """``--set NAME=VALUE`` (and the hidden old flags): keyword argument ``settings``, the
    `Judge` keyword arguments asked for (empty when none)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        settings: dict[str, Any] = kwargs.pop("settings")
        for name in SETTINGS:
            value = kwargs.pop(f"deprecated_{name}")
            if value is None:
                continue
            old = "--" + name.replace("_", "-")
            deprecated(old, f"--set {name}=VALUE")
            if name in settings:
                raise click.UsageError(f"{old} is the old spelling of --set {name}: give one")
            settings[name] = _setting(name, value)
        kwargs["settings"] = settings
        return function(*args, **kwargs)

    options = [
        click.option(
            "--set",
            "settings",
            multiple=True,
            metavar="NAME=VALUE",
            callback=_settings,
            help=_HELP,
        ),
        *(
            click.option(
                "--" + name.replace("_", "-"),
                f"deprecated_{name}",
                type=kind,
                default=None,
                hidden=True,
                help=f"Now --set {name}=VALUE.",
            )
            for name, kind in SETTINGS.items()
        ),
    ]
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]
