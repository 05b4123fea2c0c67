"""``--output-mode`` and ``--max-tokens``: how a judge's reply is asked for, shared by the
commands that judge (score, compare, eval).

One way to set each: the card's front matter gives the default (``output_mode``,
``defaults.max_tokens``), a `Judge` argument overrides it for that judge and model, and these
options set that argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from judgecards.replies import OUTPUT_MODES

__all__ = ["judge_output", "judge_output_options"]

F = TypeVar("F", bound=Callable[..., Any])


def judge_output_options(function: F) -> F:
    function = click.option(
        "--max-tokens",
        type=click.IntRange(min=1),
        default=None,
        help="Reply token budget for this model, over the card's max_tokens (reasoning models "
        "spend budget on thinking). A reply cut at the limit is asked once more with twice the "
        "budget (at most 16,384), then recorded as error kind 'truncated'.",
    )(function)
    return click.option(
        "--output-mode",
        type=click.Choice(OUTPUT_MODES),
        default=None,
        help="How a JSON card's schema reaches the judge: 'native' sends it as the provider's "
        "structured output (strict JSON Schema), 'prompt' writes it in the prompt, 'auto' "
        "(the cards' default) tries native and falls back to the prompt once if the server "
        "refuses it.",
    )(function)


def judge_output(output_mode: str | None, max_tokens: int | None) -> dict[str, Any]:
    """The `Judge` arguments the options set (none when neither was given)."""
    chosen = {"output_mode": output_mode, "max_tokens": max_tokens}
    return {name: value for name, value in chosen.items() if value is not None}
