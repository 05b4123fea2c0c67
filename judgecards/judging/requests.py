"""The requests a judge sends: the first, built from the card and the item, and each re-ask.

Kept apart from `judgecards.judging.judge`, which runs them: what a request says (the rendered card, the
item's schema, the feedback on an invalid reply) changes with cards and output modes, while
the loop that sends them, caches and stores does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

from judgecards.cards import Card, render
from judgecards.errors import JudgeOutputError
from judgecards.providers.base import CompletionRequest, Message
from judgecards.providers.mock import FinalLine
from judgecards.replies import guards_schema, restates_fields, strict_schema
from judgecards.schemas import item_schema, schema_text

__all__ = ["TRUNCATION_CEILING", "first_request", "larger_budget", "mock_options", "reask"]


def first_request(  # noqa: PLR0913  keyword-only request settings
    card: Card,
    inputs: Mapping[str, Any],
    *,
    model: str,
    temperature: float | None,
    max_tokens: int,
    top_logprobs: int | None,
    max_input_chars: int | None,
    native: bool = False,
    can_fall_back: bool = False,
) -> CompletionRequest:
    """The item's first request: the card rendered with its inputs, and the reply's schema.

    A rubric's schema is built for the item's criteria (and shown in the prompt in place of
    the card's fixed one); other cards' schema is their output model's. With ``native`` the
    schema is also sent as the provider's structured output (its strict projection), and a card
    that guards its schema section (``{% if output_schema %}``) is rendered without it; with
    ``can_fall_back`` the request carries the prompt with the schema, sent if the server
    refuses native output.
    """
    schema: dict[str, Any] | None = None
    shown: str | None = None
    native_schema = None
    if card.spec.output.format == "json":
        per_item = item_schema(card.output_model, inputs)
        shown = None if per_item is None else schema_text(per_item)
        schema = per_item or json.loads(card.output_schema)
        if native:  # `_strict` is cached by schema text: the card's own text is one already
            keyed = item_schema(card.output_model, inputs, keyed=True)
            text = json.dumps(keyed) if keyed else card.output_schema
            native_schema = _strict(text, card.body)
    hidden = native_schema is not None and guards_schema(card.body)
    fallback: tuple[Message, ...] | None = None
    if hidden and can_fall_back:
        shown_prompt = render(card, inputs, output_schema=shown, max_input_chars=max_input_chars)
        fallback = (Message("user", shown_prompt.user),)
    prompt = render(
        card, inputs, output_schema="" if hidden else shown, max_input_chars=max_input_chars
    )
    return CompletionRequest(
        model=model,
        messages=(Message("user", prompt.user),),
        system=prompt.system,
        temperature=temperature,
        max_tokens=max_tokens,
        top_logprobs=top_logprobs,
        response_schema=schema,
        native="schema" if native_schema is not None else None,
        native_schema=native_schema,
        fallback_messages=fallback,
        can_fall_back=can_fall_back and native_schema is not None,
        static_prefix_chars=prompt.static_chars,
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
        expected = _JSON_AGAIN.format(schema="the JSON Schema given above")
    feedback = f"Your previous reply could not be used:\n{problems}\n"
    # A card that hides its schema when it is sent natively was never shown it in the prompt.
    hidden = request.native is not None and guards_schema(card.body)
    asked = _JSON_AGAIN.format(schema="the required schema") if hidden else expected
    answer = Message("assistant", reply or "(empty reply)")
    turns = (answer, Message("user", feedback + asked))
    fallback = request.fallback_messages
    if fallback is not None:  # the prompt form, which shows the schema
        fallback = (*fallback, answer, Message("user", feedback + expected))
    return replace(request, messages=(*request.messages, *turns), fallback_messages=fallback)


_JSON_AGAIN = "Reply again with only a single JSON object that matches {schema}."


TRUNCATION_CEILING = 16_384
"""The largest ``max_tokens`` a reply cut at the token limit is retried with (twice the budget
it was cut at, at most this). A card or judge asking for more is never retried larger."""


def larger_budget(request: CompletionRequest) -> CompletionRequest | None:
    """``request`` again with twice its token budget (capped at `TRUNCATION_CEILING`), or None
    when it is already at the ceiling. Same messages: a cut reply is not fed back as a re-ask."""
    budget = min(request.max_tokens * 2, TRUNCATION_CEILING)
    return replace(request, max_tokens=budget) if budget > request.max_tokens else None


@lru_cache(maxsize=64)
def _strict(schema_json: str, body: str) -> dict[str, Any]:
    """The strict projection, once per distinct schema and card body (a card's is the same for
    every item), without descriptions when the body already says what each field holds
    (`restates_fields` reads the whole body: about 0.5 ms, too much to pay per item).
    Callers never change it: providers copy it into their request body."""
    schema = json.loads(schema_json)
    return strict_schema(schema, descriptions=not restates_fields(body, schema))


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
