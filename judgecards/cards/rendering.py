"""Render a card with inputs. Inputs are data: Jinja never compiles them, they cannot close the
tags that delimit them, and they have a size limit.

Only the card body is a template, run in the bounded sandbox (`judgecards.cards.sandbox`) with
``StrictUndefined``. Input values are passed as variables, so ``{{ 7*7 }}`` inside a model output
is printed literally. Before rendering, every tag name the body uses as a delimiter
(``<model_output>``, ``</gold_answer>``…) is neutralised inside input values, whatever its case,
spacing, attributes or Unicode look-alikes (`judgecards.cards.delimiters`), so an output cannot end
its own block and pose as instructions.

An input longer than ``max_input_chars`` characters (default `DEFAULT_MAX_INPUT_CHARS`) is
refused by `check_inputs`, which `Judge` runs on every item before any call: a 50 MB line would
otherwise become a prompt of millions of tokens, paid for or failed at the provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import UndefinedError
from jinja2.exceptions import SecurityError

from judgecards.cards.card import Card
from judgecards.cards.delimiters import neutralise
from judgecards.cards.prompt_cache import static_text
from judgecards.cards.sandbox import RenderLimitExceeded, render_bounded, template_line, weight
from judgecards.cards.unicode_text import lone_surrogate
from judgecards.errors import InputTooLarge, InvalidInput, MissingInput, RenderError

__all__ = ["DEFAULT_MAX_INPUT_CHARS", "RenderedPrompt", "check_inputs", "input_size", "render"]

DEFAULT_MAX_INPUT_CHARS = 200_000
"""Per input, in characters: about 50,000 tokens of English, room for a long document."""


@dataclass(frozen=True)
class RenderedPrompt:
    """A rendered card. ``static_chars`` leading characters of ``user`` are the same for every
    item (the card's text before its first use of an input, `judgecards.cards.prompt_cache`): the
    prefix a provider may cache. 0 when the card has none."""

    system: str | None
    user: str
    static_chars: int = 0


def input_size(value: Any) -> int:
    """An input's size in characters: a string's length; for lists and mappings, about the
    length of their text (every string inside plus a little per item)."""
    return len(value) if isinstance(value, str) else weight(value, 10**12)


def check_inputs(
    card: Card, inputs: Mapping[str, Any], *, max_input_chars: int | None = DEFAULT_MAX_INPUT_CHARS
) -> None:
    """Check an item's inputs against the card before anything is paid for.

    Args:
        max_input_chars: the longest input accepted, in characters; ``None`` for no limit.

    Raises:
        MissingInput: a required input is absent or ``None`` (names the card and the input).
        InputTooLarge: an input is longer than ``max_input_chars`` (names the card, the input,
            its size and the limit).
        InvalidInput: an input holds a lone surrogate (``"\ud800"``, `judgecards.cards.unicode_text`),
            which no request can carry.
    """
    for name, spec in card.spec.inputs.items():
        value = inputs.get(name)
        if value is None:
            if spec.required:
                raise MissingInput(
                    f"card {card.ref} needs input {name!r}, which was not given "
                    f"(inputs: {', '.join(card.spec.inputs)})",
                    card=card.ref,
                    variable=name,
                )
            continue
        if (found := lone_surrogate(value, name)) is not None:
            where, escaped = found
            raise InvalidInput(
                f"card {card.ref}: input {where!r} holds a lone surrogate {escaped}, which is "
                "not text (remove it or write the character it was meant to be)",
                card=card.ref,
                variable=name,
            )
        if max_input_chars is not None:
            size = input_size(value)
            if size > max_input_chars:
                raise InputTooLarge(
                    f"card {card.ref}: input {name!r} has {size:,} characters, over the limit "
                    f"of {max_input_chars:,} (raise it with max_input_chars= or "
                    "--max-input-chars)",
                    card=card.ref,
                    variable=name,
                    size=size,
                    limit=max_input_chars,
                )


def render(
    card: Card,
    inputs: Mapping[str, Any],
    *,
    output_schema: str | None = None,
    max_input_chars: int | None = DEFAULT_MAX_INPUT_CHARS,
) -> RenderedPrompt:
    """Render the card's body with ``inputs`` (keys the card does not declare are ignored).

    ``output_schema`` replaces the card's static schema text where the schema depends on the
    item (a rubric's criteria; see `judgecards.schemas.item_schema`).

    Raises:
        MissingInput, InputTooLarge: from `check_inputs`.
        RenderError: the body failed with these inputs (an undefined attribute, a sandbox
            refusal, a render budget exceeded); the message names the card and the body line.
    """
    check_inputs(card, inputs, max_input_chars=max_input_chars)
    variables = {name: neutralise(inputs.get(name), card.tags) for name in card.spec.inputs}
    variables["output_schema"] = card.output_schema if output_schema is None else output_schema
    # A schema built for the item (a rubric's criteria) varies per item: it ends the static part.
    per_item = output_schema not in (None, "", card.output_schema)
    size = sum(input_size(value) for value in variables.values() if value is not None)
    try:
        user = render_bounded(card.template, variables, input_chars=size)
    except Exception as error:  # the body is card code: whatever it raises, name the card
        raise _render_error(card, error) from None
    static = static_text(
        card.body, card.spec.inputs, None if per_item else variables["output_schema"]
    )
    return RenderedPrompt(
        system=card.spec.system, user=user.strip() + "\n", static_chars=_static_chars(user, static)
    )


def _static_chars(rendered: str, static: str | None) -> int:
    """How many leading characters of the stripped prompt are the static text (0: none, or the
    prompt is nothing but static text, with no item to set apart)."""
    if not static or not rendered.startswith(static):
        return 0
    lead = len(rendered) - len(rendered.lstrip())
    end = len(static) - lead
    return end if 0 < end < len(rendered.strip()) else 0


def _render_error(card: Card, error: Exception) -> RenderError:
    line = template_line(error)
    where = f"card {card.ref}" + (
        f" ({card.path}:{card.body_line + line - 1})" if line is not None else ""
    )
    if isinstance(error, UndefinedError):
        reason = error.message or str(error)
    elif isinstance(error, SecurityError):
        reason = f"the sandbox refused: {error}"
    elif isinstance(error, RenderLimitExceeded):
        reason = f"rendering stopped: {error}"
    elif isinstance(error, RecursionError):
        reason = "rendering stopped: calls nested too deeply"
    else:
        reason = f"{type(error).__name__}: {error}"
    return RenderError(f"{where}: {reason}", card=card.ref)
