"""Verdicts are decided in code from the scores, never trusted from the model.

A card's ``verdict.rules`` are min/max thresholds over score axes, first match wins, else
``otherwise``; no expressions, so a card cannot run code. The model's own verdict is kept as
``model_verdict`` and a disagreement is flagged as an override.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from judgecards.cards import Card, VerdictSpec

__all__ = ["Decision", "decide", "extract_scores"]


def _lookup(data: Mapping[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def extract_scores(card: Card, judgment: BaseModel) -> dict[str, int | float]:
    """The numeric axes of a judgment, by axis name."""
    data = judgment.model_dump()
    scores: dict[str, int | float] = {}
    for axis, path in card.score_axes.items():
        value = _lookup(data, path)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            scores[axis] = value
    return scores


def apply_rules(spec: VerdictSpec, scores: Mapping[str, float]) -> str | None:
    """The first rule whose bounds all hold, else ``otherwise`` (None when there are no rules)."""
    for rule in spec.rules:
        if all(
            axis in scores
            and (bound.min is None or scores[axis] >= bound.min)
            and (bound.max is None or scores[axis] <= bound.max)
            for axis, bound in rule.when.items()
        ):
            return rule.then
    return spec.otherwise


class Decision(BaseModel):
    scores: dict[str, int | float]
    verdict: str | None
    model_verdict: str | None
    verdict_overridden: bool


def decide(card: Card, judgment: BaseModel) -> Decision:
    """Scores, verdict and override flag for one validated judgment."""
    scores = extract_scores(card, judgment)
    spec = card.spec.verdict
    if spec is None:
        return Decision(scores=scores, verdict=None, model_verdict=None, verdict_overridden=False)
    model_verdict = _lookup(judgment.model_dump(), spec.field) if spec.field else None
    model_verdict = None if model_verdict is None else str(model_verdict)
    if not spec.rules:
        return Decision(scores=scores, verdict=model_verdict, model_verdict=model_verdict, verdict_overridden=False)
    verdict = apply_rules(spec, scores)
    overridden = model_verdict is not None and model_verdict != verdict
    return Decision(scores=scores, verdict=verdict, model_verdict=model_verdict, verdict_overridden=overridden)
