"""The front-matter of a judge card, as strict pydantic models.

Unknown keys are errors (``extra="forbid"``) so that a typo such as ``temprature`` is reported
with its line instead of being ignored; `judgecards.cards` turns validation errors into
`CardValidationError` naming the file, the line and the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Bound",
    "Defaults",
    "FrontMatter",
    "InputSpec",
    "OutputSpec",
    "VerdictRule",
    "VerdictSpec",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Strict):
    """One input variable of a card."""

    description: str = ""
    required: bool = True


class OutputSpec(_Strict):
    """What the judge must reply and how its numbers are read.

    ``format: json`` validates a JSON object against ``schema`` (``module:Model`` or an inline
    JSON Schema). ``format: final_token`` reads the last line matching ``line`` (e.g.
    ``"Rating: [[{value}]]"``) as an integer in ``[min, max]``, as MT-Bench does. ``scores``
    lists dotted paths to the numeric axes; each axis is named by the last path component.
    """

    format: Literal["json", "final_token"] = "json"
    schema_: str | dict[str, Any] | None = Field(default=None, alias="schema")
    line: str | None = None
    field: str = "rating"
    min: int | None = None
    max: int | None = None
    scores: list[str] = []


class Bound(_Strict):
    min: float | None = None
    max: float | None = None


class VerdictRule(_Strict):
    when: dict[str, Bound]
    then: str


class VerdictSpec(_Strict):
    """How the verdict is decided in code. First matching rule wins; no rules → the model's own."""

    field: str | None = None
    rules: list[VerdictRule] = []
    otherwise: str | None = None


class Defaults(_Strict):
    temperature: float | None = 0.0
    max_tokens: int = Field(default=1024, gt=0)
    top_logprobs: int | None = Field(default=None, ge=0, le=20)


class FrontMatter(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    version: int = Field(ge=1, strict=True)  # YAML gives an int; "2", 2.0 or true is a mistake
    description: str
    inputs: dict[str, InputSpec]
    output: OutputSpec
    verdict: VerdictSpec | None = None
    defaults: Defaults = Defaults()
    system: str | None = None
    # How a JSON card's schema reaches the judge (`judgecards.replies.structured_output`): sent as the
    # provider's native structured output, falling back to the prompt (auto), or only one way.
    output_mode: Literal["auto", "native", "prompt"] = "auto"
