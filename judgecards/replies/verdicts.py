"""Verdicts are decided in code from the scores, never trusted from the model.

A card's ``verdict.rules`` are min/max thresholds over score axes, first match wins, else
``otherwise``; no expressions, so a card cannot run code. The model's own verdict is kept as
``model_verdict`` and a disagreement is flagged as an override.

Rubric cards score criteria given as data (`judgecards.schemas.RubricJudgment`): their axes come
from the judgment (`judgecards.replies.parse` has already held it to the item's criteria), and a
`RubricPolicy` turns thresholds into a pass/fail verdict and computes a weighted aggregate only
when asked.

Verdicts and thresholds apply to the scores the judge committed to: the integers it wrote. Where
the judge returned token logprobs, the G-Eval-weighted mean of each score is recorded beside it
(`judgecards.replies.geval`, ``output["scoring"]``), never in its place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from judgecards.cards import Bound, Card, VerdictRule, VerdictSpec
from judgecards.providers.base import TokenLogprob
from judgecards.schemas import AGGREGATE_AXIS, RubricJudgment, RubricPolicy

__all__ = ["Decision", "apply_policy", "decide", "extract_scores"]


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
    if isinstance(judgment, RubricJudgment):
        scores.update(judgment.axis_scores())
    return scores


def apply_policy(
    policy: RubricPolicy, scores: Mapping[str, float]
) -> tuple[str | None, dict[str, Any]]:
    """A rubric policy's verdict (``pass``/``fail``, or None without thresholds) and its record.

    Thresholds are the same min-bound rule a card's ``verdict.rules`` use (`apply_rules`): pass
    when every listed criterion reaches its minimum. The weighted aggregate is computed only when
    ``weights`` were given, as ``Σ w·score / Σ w`` over the weighted criteria.
    """
    verdict = None
    if policy.thresholds:
        rule = VerdictRule(
            when={name: Bound(min=minimum) for name, minimum in policy.thresholds.items()},
            then="pass",
        )
        verdict = apply_rules(VerdictSpec(rules=[rule], otherwise="fail"), scores)
    aggregate = None
    if policy.weights:
        total = sum(policy.weights.values())
        aggregate = sum(w * scores[name] for name, w in policy.weights.items()) / total
    record: dict[str, Any] = {
        "primary": {"name": policy.primary, "score": scores.get(policy.primary)}
        if policy.primary
        else None,
        "thresholds": dict(policy.thresholds),
        "passed": None if verdict is None else verdict == "pass",
        "failed": [
            name
            for name, minimum in policy.thresholds.items()
            if scores.get(name, float("-inf")) < minimum
        ],
        "weights": policy.weights,
        AGGREGATE_AXIS: aggregate,
    }
    return verdict, record


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
    """What code decided from one judgment.

    ``scores`` are the values the judge wrote (plus a rubric's ``aggregate`` when asked for).
    ``annotations`` are added to the stored output next to the judge's own fields: ``scoring``
    (per axis: method ``geval``/``sampled``, the sampled value, the weighted mean and its
    distribution, or why there is none) and ``rubric`` (the policy's primary score, thresholds,
    pass/fail and aggregate).
    """

    scores: dict[str, int | float]
    verdict: str | None
    model_verdict: str | None
    verdict_overridden: bool
    annotations: dict[str, Any] = {}


def decide(
    card: Card,
    judgment: BaseModel,
    *,
    text: str | None = None,
    logprobs: Sequence[TokenLogprob] | None = None,
    geval: bool = False,
    inputs: Mapping[str, Any] | None = None,
    rubric: RubricPolicy | None = None,
) -> Decision:
    """Scores, verdict and override flag for one validated judgment.

    Args:
        text: the raw reply, needed to locate scores for G-Eval.
        logprobs: the reply's token logprobs, if the provider returned them.
        geval: G-Eval was asked for (``top_logprobs`` was requested); scores then record their
            method and weighted mean. Rubric judgments always record it. Either way verdicts use
            the sampled scores.
        inputs: the item's inputs (a rubric's criteria and scales).
        rubric: thresholds and weights for rubric judgments.
    """
    scores = extract_scores(card, judgment)
    annotations: dict[str, Any] = {}
    is_rubric = isinstance(judgment, RubricJudgment)
    if text is not None and scores and (geval or is_rubric):
        from judgecards.replies.geval import score_records

        records = score_records(card, text, logprobs, inputs or {}, scores)
        annotations["scoring"] = {axis: record.to_dict() for axis, record in records.items()}
    spec = card.spec.verdict
    model_verdict = (
        _lookup(judgment.model_dump(), spec.field) if spec is not None and spec.field else None
    )
    model_verdict = None if model_verdict is None else str(model_verdict)
    verdict = apply_rules(spec, scores) if spec is not None and spec.rules else model_verdict
    overridden = (
        spec is not None
        and bool(spec.rules)
        and model_verdict is not None
        and model_verdict != verdict
    )
    if is_rubric and rubric is not None and rubric.named():
        policy_verdict, record = apply_policy(rubric, scores)
        if policy_verdict is not None:
            verdict = policy_verdict
        if record[AGGREGATE_AXIS] is not None:
            scores[AGGREGATE_AXIS] = record[AGGREGATE_AXIS]
        annotations["rubric"] = record
    return Decision(
        scores=scores,
        verdict=verdict,
        model_verdict=model_verdict,
        verdict_overridden=overridden,
        annotations=annotations,
    )
