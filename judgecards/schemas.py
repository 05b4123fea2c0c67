"""Pydantic models of what judges must reply, referenced by the cards' ``output.schema``.

The same model validates the reply and, through ``model_json_schema()``, is shown to the judge
in the prompt, so the instructions and the validator cannot drift apart. Models ignore extra keys
(judges add them) but are strict about ranges, enums and required fields: a violation is fed back
to the judge in a re-ask.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["ReferenceJudgment", "ReferenceScores"]

MAX_SENTENCE_WORDS = 30


class ReferenceScores(BaseModel):
    """The three 1–5 axes of the ``reference`` card."""

    model_config = ConfigDict(extra="ignore")

    correctness: int = Field(ge=1, le=5, description="Factual agreement with the gold answer; wording does not matter.")
    completeness: int = Field(ge=1, le=5, description="Share of the gold answer's substantive points covered.")
    style_fidelity: int = Field(ge=1, le=5, description="Follows the format the question implies; 5 when none is implied.")


class ReferenceJudgment(BaseModel):
    """A judgment of one model output against a gold answer."""

    model_config = ConfigDict(extra="ignore")

    scores: ReferenceScores
    style_relevant: bool = Field(description="Whether the question implies a format or style.")
    verdict: Literal["match", "partial_match", "mismatch"]
    delta: str = Field(description="One sentence: how the output differs from the gold answer.")
    decision_basis: str = Field(description="One sentence: what decided the scores.")

    @field_validator("delta", "decision_basis")
    @classmethod
    def _one_short_sentence(cls, value: str) -> str:
        words = len(value.split())
        if words == 0:
            raise ValueError("must be one sentence, not empty")
        if words > MAX_SENTENCE_WORDS:
            raise ValueError(f"must be at most {MAX_SENTENCE_WORDS} words, got {words}")
        return value

    @model_validator(mode="after")
    def _style_only_when_relevant(self) -> ReferenceJudgment:
        if not self.style_relevant and self.scores.style_fidelity != 5:
            raise ValueError("scores.style_fidelity must be 5 when style_relevant is false")
        return self
