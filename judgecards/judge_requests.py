"""The requests a judge sends: the first, built from the card and the item, and each re-ask.

Kept apart from `judgecards.judge`, which runs them: what a request says (the rendered card, the
item's schema, the feedback on an invalid reply) changes with cards and output modes, while
the loop that sends them, caches and stores does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError

from judgecards.cards import Card
from judgecards.errors import JudgeOutputError
from judgecards.providers.base import CompletionRequest, Message
from judgecards.providers.mock import FinalLine
from judgecards.render import render
from judgecards.schemas import item_schema, schema_text

__all__ = ["first_request", "mock_options", "reask"]


def first_request(
    card: Card,
    inputs: Mapping[str, Any],
    *,
    model: str,
    temperature: float | None,
    max_tokens: int,
    top_logprobs: int | None,
    max_input_chars: int | None,
) -> CompletionRequest:
    """The item's first request: the card rendered with its inputs, and the reply's schema.

    A rubric's schema is built for the item's criteria (and shown in the prompt in place of
    the card's fixed one); other cards' schema is their output model's.
    """
    schema: dict[str, Any] | None = None
    shown: str | None = None
    if card.spec.output.format == "json":
        schema = item_schema(card.output_model, inputs)
        shown = None if schema is None else schema_text(schema)
        schema = schema or json.loads(card.output_schema)
    prompt = render(card, inputs, output_schema=shown, max_input_chars=max_input_chars)
    return CompletionRequest(
        model=model,
        messages=(Message("user", prompt.user),),
        system=prompt.system,
        temperature=temperature,
        max_tokens=max_tokens,
        top_logprobs=top_logprobs,
        response_schema=schema,
    )


def reask(
    card: Card, request: CompletionRequest, reply: str, error: JudgeOutputError
) -> CompletionRequest:
    """A new request: the conversation so far, the judge's reply, and what was wrong with it."""
    problems = "\n".join(f"- {problem}" for problem in error.problems)
    output = card.spec.output
    if output.format == "final_token" and output.line is not None:
        # Show the line as the judge must write it, not the card's template ("{value}").
        expected = (
            f"End your reply with a final line of the form {output.line.replace('{value}', 'N')}, "
            f"where N is a whole number from {output.min} to {output.max}."
        )
    else:
        expected = (
            "Reply again with only a single JSON object that matches the JSON Schema given above."
        )
    brevity = " Your reply was cut off at the token limit, so be brief." if error.truncated else ""
    feedback = f"Your previous reply could not be used:\n{problems}\n{expected}{brevity}"
    return replace(
        request,
        messages=(
            *request.messages,
            Message("assistant", reply or "(empty reply)"),
            Message("user", feedback),
        ),
    )


def mock_options(card: Card) -> dict[str, Any]:
    """What the offline mock needs to write a valid reply for ``card``: the final line for
    final-token cards, and a check for rules a JSON Schema cannot express."""
    output = card.spec.output
    options: dict[str, Any] = {"accept": _validator(card.output_model)}
    if output.format == "final_token" and output.line is not None:
        assert output.min is not None and output.max is not None  # checked when the card loaded
        options["final_line"] = FinalLine(output.line, output.min, output.max)
    else:
        options["final_line"] = None
    return options


def _validator(model: type[BaseModel]) -> Callable[[Any], bool]:
    def validates(data: Any) -> bool:
        try:
            model.model_validate(data)
        except ValidationError:
            return False
        return True

    return validates
