"""Render a card with inputs. Inputs are data: Jinja never compiles them, and they cannot close
the tags that delimit them.

Only the card body is a template (sandboxed, ``StrictUndefined``). Input values are passed as
variables, so ``{{ 7*7 }}`` inside a model output is printed literally. Before rendering, every
tag name the body uses as a delimiter (``<model_output>``, ``</gold_answer>``…) is neutralised
inside input values (``</model_output>`` → ``</model_output_>``), so an output cannot end its own
block and pose as instructions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, UndefinedError
from jinja2.sandbox import SandboxedEnvironment

from judgecards.cards import Card
from judgecards.errors import MissingInput, RenderError

__all__ = ["RenderedPrompt", "environment", "render"]

_TAG = re.compile(r"</?\s*([A-Za-z_][\w-]*)\s*>")


@dataclass(frozen=True)
class RenderedPrompt:
    system: str | None
    user: str


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    """The one Jinja environment for card bodies."""
    return SandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


_templates: dict[str, tuple[Template, re.Pattern[str] | None]] = {}


def _compiled(card: Card) -> tuple[Template, re.Pattern[str] | None]:
    cached = _templates.get(card.sha256)
    if cached is None:
        template = environment().from_string(card.body)
        tags = sorted({m.group(1) for m in _TAG.finditer(card.body)}, key=len, reverse=True)
        neutraliser = (
            re.compile(
                r"<(/?)\s*(" + "|".join(re.escape(t) for t in tags) + r")\s*>", re.IGNORECASE
            )
            if tags
            else None
        )
        cached = _templates[card.sha256] = (template, neutraliser)
    return cached


def _neutralise(value: Any, pattern: re.Pattern[str] | None) -> Any:
    if pattern is None:
        return value
    if isinstance(value, str):
        return pattern.sub(r"<\1\2_>", value)
    if isinstance(value, Mapping):
        return {k: _neutralise(v, pattern) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_neutralise(v, pattern) for v in value]
    return value


def check_inputs(card: Card, inputs: Mapping[str, Any]) -> None:
    """Raise `MissingInput` naming the card and the variable when a required input is absent."""
    for name, spec in card.spec.inputs.items():
        if spec.required and inputs.get(name) is None:
            raise MissingInput(
                f"card {card.ref} needs input {name!r}, which was not given "
                f"(inputs: {', '.join(card.spec.inputs)})",
                card=card.ref,
                variable=name,
            )


def render(
    card: Card, inputs: Mapping[str, Any], *, output_schema: str | None = None
) -> RenderedPrompt:
    """Render the card's body with ``inputs`` (keys the card does not declare are ignored).

    ``output_schema`` replaces the card's static schema text where the schema depends on the
    item (a rubric's criteria; see `judgecards.schemas.item_schema`).
    """
    check_inputs(card, inputs)
    template, neutraliser = _compiled(card)
    variables = {name: _neutralise(inputs.get(name), neutraliser) for name in card.spec.inputs}
    variables["output_schema"] = card.output_schema if output_schema is None else output_schema
    try:
        user = template.render(variables)
    except UndefinedError as error:
        raise RenderError(f"card {card.ref}: {error.message}", card=card.ref) from None
    return RenderedPrompt(system=card.spec.system, user=user.strip() + "\n")
