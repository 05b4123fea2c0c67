"""Turn a judge's raw reply into a validated judgment, or into the evidence for a re-ask.

Judges wrap JSON in code fences, put prose around it, get cut off at the token limit, or write
the rating line twice. The rules: a fenced block (the last, if several) wins over bare text;
otherwise the last JSON object in the reply; for final-token cards the last matching line
decides (an earlier "Rating: [[3]]" quoted from the instructions must not count).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from judgecards.cards import Card
from judgecards.errors import JudgeOutputError

__all__ = ["extract_json", "parse_reply"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in a reply: fenced, bare, or surrounded by prose.

    Raises:
        JudgeOutputError: no complete JSON object was found.
    """
    stripped = text.strip()
    # The last fenced block first: a judge that echoes an example before its answer means the answer.
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)][::-1]
    candidates.append(stripped)
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    found = _last_object(text)
    if found is not None:
        return found
    if "{" in text:
        raise JudgeOutputError(
            text, ["reply contains '{' but no complete JSON object (truncated or malformed JSON)"]
        )
    raise JudgeOutputError(text, ["reply contains no JSON object"])


def _last_object(text: str) -> dict[str, Any] | None:
    """Scan for decodable top-level objects and keep the last one."""
    last: dict[str, Any] | None = None
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            last = value
        position = text.find("{", end)
    return last


def _final_token(card: Card, text: str) -> dict[str, Any]:
    pattern = card.final_line
    assert pattern is not None
    matches = list(pattern.finditer(text))
    line = card.spec.output.line
    if not matches:
        raise JudgeOutputError(text, [f"no final line of the form {line!r} found"])
    last = matches[-1]
    raw_value = last.group(1)
    field = card.spec.output.field
    if "." in raw_value:
        raise JudgeOutputError(text, [f"{field}: must be a whole number, got {raw_value}"])
    return {field: int(raw_value), "reasoning": text[: last.start()].strip()}


def parse_reply(card: Card, text: str, *, truncated: bool = False) -> BaseModel:
    """Parse and validate a reply against the card's output model.

    Raises:
        JudgeOutputError: with one ``loc: message`` problem per validation error, ready to be fed
            back to the judge.
    """
    try:
        data = (
            _final_token(card, text)
            if card.spec.output.format == "final_token"
            else extract_json(text)
        )
    except JudgeOutputError as error:
        if truncated:
            raise JudgeOutputError(
                text, [*error.problems, "the reply was cut off at the token limit"], truncated=True
            ) from None
        raise
    try:
        return card.output_model.model_validate(data)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in error.errors(include_url=False)
        ]
        raise JudgeOutputError(text, problems, truncated=truncated) from None
