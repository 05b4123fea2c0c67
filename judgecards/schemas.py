"""Pydantic models of what judges must reply, referenced by the cards' ``output.schema``.

The same model validates the reply and, through ``model_json_schema()``, is shown to the judge
in the prompt, so the instructions and the validator cannot drift apart. Models ignore extra keys
(judges add them) but are strict about ranges, enums and required fields: a violation is fed back
to the judge in a re-ask.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

__all__ = [
    "DEFAULT_CRITERIA",
    "Criterion",
    "CriterionScore",
    "PairwiseJudgment",
    "PassFailJudgment",
    "ReferenceGrade",
    "ReferenceJudgment",
    "ReferenceScores",
    "RubricJudgment",
    "RubricPolicy",
    "criteria_from",
    "item_schema",
    "rubric_schema",
    "schema_text",
]

MAX_SENTENCE_WORDS = 30


class ReferenceScores(BaseModel):
    """The three 1–5 axes of the ``reference`` card."""

    model_config = ConfigDict(extra="ignore")

    correctness: int = Field(
        ge=1, le=5, description="Factual agreement with the gold answer; wording does not matter."
    )
    completeness: int = Field(
        ge=1, le=5, description="Share of the gold answer's substantive points covered."
    )
    style_fidelity: int = Field(
        ge=1, le=5, description="Follows the format the question implies; 5 when none is implied."
    )


def _within_words(value: str, limit: int, empty: str | None) -> str:
    """Refuse a long explanation (a judge that rambles is re-asked, not stored) and, when
    ``empty`` is a message, an empty one."""
    words = len(value.split())
    if words == 0 and empty is not None:
        raise ValueError(empty)
    if words > limit:
        raise ValueError(f"must be at most {limit} words, got {words}")
    return value


def _short_sentence(value: str) -> str:
    return _within_words(value, MAX_SENTENCE_WORDS, "must be one sentence, not empty")


def _short_or_empty(value: str) -> str:
    return _within_words(value, MAX_SENTENCE_WORDS, None)


# The two explanations every reference card asks for, checked the same way in each version.
# An answer equal to the gold one has no difference to state, so an empty delta is a valid
# reply (llama.cpp's SmolLM2 gave one for 18 of 20 items, 12 of them exact matches). The basis
# of a decision always exists: its schema says ``minLength: 1`` so the model can see the rule,
# and the validator keeps it because strict modes drop ``minLength`` (`strict_schema`).
Delta = Annotated[
    str,
    Field(
        description="One sentence: how the output differs from the gold answer; "
        "empty when it does not differ."
    ),
    AfterValidator(_short_or_empty),
]
DecisionBasis = Annotated[
    str,
    Field(min_length=1, description="One sentence: what decided the scores."),
    AfterValidator(_short_sentence),
]


class ReferenceJudgment(BaseModel):
    """A judgment of one model output against a gold answer."""

    model_config = ConfigDict(extra="ignore")

    scores: ReferenceScores
    style_relevant: bool = Field(description="Whether the question implies a format or style.")
    verdict: Literal["match", "partial_match", "mismatch"]
    delta: Delta
    decision_basis: DecisionBasis

    @model_validator(mode="after")
    def _style_only_when_relevant(self) -> ReferenceJudgment:
        if not self.style_relevant and self.scores.style_fidelity != 5:
            raise ValueError("scores.style_fidelity must be 5 when style_relevant is false")
        return self


class ReferenceGrade(BaseModel):
    """What ``reference@3`` asks of the judge: the three scores and two short sentences.

    Its card decides the verdict from the scores by rules in code, so asking the model for a
    verdict too (as ``ReferenceJudgment`` does) only costs tokens; the 5-when-no-style-is-implied
    rule sits in the ``style_fidelity`` description instead of a separate ``style_relevant`` flag.
    """

    # The schema shown to the judge gets this description, not the developer docstring above.
    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra={"description": "A grade of one answer against a gold answer."},
    )

    scores: ReferenceScores
    delta: Delta
    decision_basis: DecisionBasis


# --------------------------------------------------------------------------- pairwise@1


class PairwiseJudgment(BaseModel):
    """A preference between two answers, by position as shown: ``A`` is the answer shown first.

    The card never learns which system wrote which answer; `judgecards.pairwise.compare` shows every pair
    in both orders and maps the second verdict back, so ``winner`` here is always positional.
    """

    # The schema shown to the judge gets this description, not the developer docstring above.
    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra={"description": "Your comparison of the two answers and your verdict."},
    )

    reasoning: str = Field(
        min_length=1,
        description="A short comparison of the two answers, written before the verdict.",
    )
    winner: Literal["A", "B", "tie"] = Field(
        description='"A" if the answer shown first is better, "B" if the second is, "tie" if neither is.'
    )


# --------------------------------------------------------------------------- pass-fail@1

MAX_CRITIQUE_WORDS = 60


def _short_critique(value: str) -> str:
    return _within_words(value, MAX_CRITIQUE_WORDS, "must be a short critique, not empty")


class PassFailJudgment(BaseModel):
    """One binary judgment against one criterion: a short critique first, then the verdict.

    The critique comes first in the schema so the judge writes its reasons before it commits
    (as in the "validate evaluator" workflows teams use for one judge per failure mode).
    """

    # The schema shown to the judge gets this description, not the developer docstring above.
    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra={"description": "A critique of the answer, then pass or fail."},
    )

    critique: Annotated[
        str,
        Field(
            description=(
                f"A short critique (at most {MAX_CRITIQUE_WORDS} words): where the answer meets "
                "or breaks the criterion, written before the verdict."
            )
        ),
        AfterValidator(_short_critique),
    ]
    verdict: Literal["pass", "fail"] = Field(
        description='"pass" if the answer meets the criterion, "fail" if it does not.'
    )


# --------------------------------------------------------------------------- rubric@1

CRITERION_NAME = r"^[a-z][a-z0-9_]*$"
MAX_REASON_WORDS = 60
AGGREGATE_AXIS = "aggregate"


class Criterion(BaseModel):
    """One rubric criterion, given as data: a name, what it means, and its integer scale.

    ``scale: [1, 10]`` is accepted as shorthand for ``scale_min: 1, scale_max: 10``. Names are
    lowercase identifiers because they become score axes (``result.scores["faithfulness"]``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=CRITERION_NAME, max_length=40)
    description: str = Field(min_length=1)
    scale_min: int = 1
    scale_max: int = 5

    @model_validator(mode="before")
    @classmethod
    def _scale_shorthand(cls, value: Any) -> Any:
        if isinstance(value, Mapping) and "scale" in value:
            data = dict(value)
            scale = data.pop("scale")
            if not (isinstance(scale, (list, tuple)) and len(scale) == 2):
                raise ValueError("scale must be [min, max]")
            data.setdefault("scale_min", scale[0])
            data.setdefault("scale_max", scale[1])
            return data
        return value

    @model_validator(mode="after")
    def _scale_order(self) -> Criterion:
        if self.scale_min >= self.scale_max:
            raise ValueError(
                f"scale_min ({self.scale_min}) must be below scale_max ({self.scale_max})"
            )
        return self


DEFAULT_CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        name="faithfulness",
        description="Every claim is supported by the context (or, when no context is given, by the "
        "question and well-established facts); nothing is invented or contradicted.",
    ),
    Criterion(
        name="relevance", description="Addresses what was asked, without off-topic material."
    ),
    Criterion(
        name="coherence", description="Well organised and logically consistent; easy to follow."
    ),
    Criterion(
        name="conciseness",
        description="Says what the question needs without repetition, padding or digressions.",
    ),
)
"""The rubric card's criteria when none are given: four axes on 1–5, never collapsed into one."""


def criteria_from(value: Any) -> tuple[Criterion, ...]:
    """Validate criteria given as data (dicts or `Criterion`); names must be unique.

    Raises:
        ValueError: not a non-empty list, a malformed criterion, or a repeated name.
    """
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) or not value:
        raise ValueError(
            "criteria must be a non-empty list of {name, description, scale_min, scale_max}"
        )
    criteria: list[Criterion] = []
    for index, item in enumerate(value):
        try:
            criteria.append(item if isinstance(item, Criterion) else Criterion.model_validate(item))
        except ValidationError as error:
            first = error.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(
                f"criteria[{index}]{'.' + where if where else ''}: {first['msg']}"
            ) from None
    names = [c.name for c in criteria]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"criteria names must be unique; repeated: {', '.join(repeated)}")
    return tuple(criteria)


class CriterionScore(BaseModel):
    """The judge's score for one criterion, with its reason."""

    model_config = ConfigDict(
        extra="ignore", json_schema_extra={"description": "Your score for one criterion."}
    )

    name: str = Field(description="The criterion's name, exactly as listed.")
    reason: str = Field(
        description=f"One or two sentences, at most {MAX_REASON_WORDS} words, justifying the score."
    )
    score: int = Field(description="An integer within the criterion's scale.")

    @field_validator("reason")
    @classmethod
    def _short_reason(cls, value: str) -> str:
        return _within_words(value, MAX_REASON_WORDS, "must give a reason, not an empty string")


class RubricJudgment(BaseModel):
    """Per-criterion scores for one answer; each criterion scored separately, never summed here.

    Which criteria must be present, and their scales, come from the item's ``criteria`` input, so
    the model alone cannot check them: `problems_given` does, and the judge re-asks with its
    findings (`judgecards.replies.parse`). The prompt and the request carry a JSON Schema built for the
    item's criteria (`rubric_schema`). Subclass this model for a custom criteria card.
    """

    model_config = ConfigDict(
        extra="ignore", json_schema_extra={"description": "Your scores, one entry per criterion."}
    )

    scores: list[CriterionScore] = Field(
        min_length=1, description="One entry per criterion, in the order listed."
    )

    @field_validator("scores", mode="before")
    @classmethod
    def _keyed_scores(cls, value: Any) -> Any:
        """Scores keyed by criterion name (the native form, `rubric_schema` ``keyed``) as the
        list of entries, in the order written."""
        if isinstance(value, Mapping):
            return [
                {"name": name, **entry} if isinstance(entry, Mapping) else {"name": name}
                for name, entry in value.items()
            ]
        return value

    def axis_scores(self) -> dict[str, int]:
        """Score by criterion name, in the judge's order."""
        return {entry.name: entry.score for entry in self.scores}

    def problems_given(self, criteria: Sequence[Criterion]) -> list[str]:
        """``loc: message`` problems against the requested criteria (empty when the reply is usable).

        Every requested criterion must be scored exactly once, within its scale; no other names.
        """
        wanted = {c.name: c for c in criteria}
        problems: list[str] = []
        seen: set[str] = set()
        for index, entry in enumerate(self.scores):
            criterion = wanted.get(entry.name)
            if criterion is None:
                problems.append(
                    f"scores.{index}.name: {entry.name!r} is not a requested criterion "
                    f"(requested: {', '.join(wanted)})"
                )
                continue
            if entry.name in seen:
                problems.append(f"scores.{index}.name: {entry.name!r} is scored more than once")
            seen.add(entry.name)
            if not criterion.scale_min <= entry.score <= criterion.scale_max:
                problems.append(
                    f"scores.{index}.score: {entry.name} must be an integer from {criterion.scale_min} "
                    f"to {criterion.scale_max}, got {entry.score}"
                )
        missing = [name for name in wanted if name not in seen]
        if missing:
            problems.append(f"scores: no score for {', '.join(repr(m) for m in missing)}")
        return problems


class RubricPolicy(BaseModel):
    """How rubric scores become a decision: only what the user asks for, never a silent sum.

    Attributes:
        criteria: used for items that give no ``criteria`` input (default: `DEFAULT_CRITERIA`).
        primary: the criterion reported as the headline score (``output["rubric"]["primary"]``).
        thresholds: pass constraints, ``{criterion: minimum}``; with any, the result's verdict is
            ``"pass"`` when every listed score reaches its minimum and ``"fail"`` otherwise. Scores
            are compared as the judge wrote them (never G-Eval-weighted; see `judgecards.replies.geval`).
        weights: an explicit weighted aggregate, ``{criterion: weight}``; the weighted mean of the
            listed (written) scores goes to ``scores["aggregate"]``. Absent by default.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    criteria: tuple[Criterion, ...] = DEFAULT_CRITERIA
    primary: str | None = None
    thresholds: dict[str, float] = Field(default_factory=dict)
    weights: dict[str, float] | None = None

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria(cls, value: Any) -> tuple[Criterion, ...]:
        return criteria_from(value)

    @field_validator("weights")
    @classmethod
    def _positive_weights(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is not None:
            if not value:
                raise ValueError("weights must name at least one criterion")
            if any(w < 0 for w in value.values()) or sum(value.values()) <= 0:
                raise ValueError("weights must be non-negative with a positive sum")
        return value

    @model_validator(mode="after")
    def _names_known(self) -> RubricPolicy:
        unknown = self.unknown_names(self.criteria)
        if unknown:
            raise ValueError(
                f"unknown criteria {', '.join(unknown)} (criteria: {', '.join(c.name for c in self.criteria)})"
            )
        return self

    def named(self) -> list[str]:
        """Every criterion name the policy refers to."""
        names = [*self.thresholds, *(self.weights or {})]
        if self.primary is not None:
            names.insert(0, self.primary)
        return list(dict.fromkeys(names))

    def unknown_names(self, criteria: Sequence[Criterion]) -> list[str]:
        """Names the policy uses that ``criteria`` does not define."""
        known = {c.name for c in criteria}
        return [name for name in self.named() if name not in known]

    def criteria_for(self, given: Any) -> list[dict[str, Any]]:
        """An item's criteria as plain dicts (the item's own, else the policy's), checked.

        Raises:
            ValueError: malformed criteria, a criterion named ``aggregate`` while an aggregate is
                asked for, or criteria that lack a name the policy uses.
        """
        criteria = self.criteria if given is None else criteria_from(given)
        if self.weights is not None and any(c.name == AGGREGATE_AXIS for c in criteria):
            raise ValueError(
                f"a criterion may not be named {AGGREGATE_AXIS!r} when weights are given"
            )
        unknown = self.unknown_names(criteria)
        if unknown:
            raise ValueError(
                f"the rubric policy uses {', '.join(unknown)}, which these criteria lack"
            )
        return [c.model_dump() for c in criteria]

    def decision_params(self) -> dict[str, Any]:
        """The parts that change a result (not the reply): stored with results and in their key."""
        return {
            "primary": self.primary,
            "thresholds": dict(self.thresholds),
            "weights": self.weights,
        }


# --------------------------------------------------------------------------- per-request schemas

MAX_ENUM_SCALE = 101
"""Scales with at most this many integers (0–100) are written as an ``enum``; wider ones as
``minimum``/``maximum``, which grammar-constrained decoders do not enforce (validation does)."""


def _integer_scale(low: int, high: int) -> dict[str, Any]:
    if high - low + 1 <= MAX_ENUM_SCALE:
        return {"type": "integer", "enum": list(range(low, high + 1))}
    return {"type": "integer", "minimum": low, "maximum": high}


def rubric_schema(
    criteria: Sequence[Criterion],
    model: type[RubricJudgment] = RubricJudgment,
    *,
    keyed: bool = False,
) -> dict[str, Any]:
    """The JSON Schema of a rubric reply for exactly these criteria.

    ``model``'s schema with ``scores`` narrowed to one entry per criterion: ``minItems`` and
    ``maxItems`` equal to their number, and each entry one of the criteria (``anyOf``), whose
    ``name`` is an ``enum`` of that criterion's name and whose ``score`` is an ``enum`` of the
    integers on its scale. Grammar-constrained decoders and OpenAI's strict subset enforce
    ``enum`` but not ``minimum``/``maximum``, and a generic ``name: string`` let schema-following
    clients invent names. What a schema cannot say (each criterion once) is checked by
    `RubricJudgment.problems_given`.

    With ``keyed`` (the form sent as native structured output), ``scores`` is an object with
    one required property per criterion, each ``{reason, score}``: strict modes drop
    ``minItems``/``maxItems``, so a list let a schema-following server return 2 of 4 criteria,
    while every strict mode enforces ``required``. `RubricJudgment` reads both forms.
    """
    schema = model.model_json_schema()
    definitions: dict[str, Any] = schema.setdefault("$defs", {})
    entry = CriterionScore.model_json_schema()["properties"]
    definitions["CriterionReason"] = entry["reason"]
    scores = dict(schema["properties"]["scores"])
    scores.pop("$ref", None)
    scores.pop("items", None)
    if keyed:
        for key in ("minItems", "maxItems", "minLength", "maxLength"):
            scores.pop(key, None)
        scores.update(
            {
                "type": "object",
                "properties": {
                    criterion.name: {
                        "type": "object",
                        "properties": {
                            "reason": {"$ref": "#/$defs/CriterionReason"},
                            "score": _integer_scale(criterion.scale_min, criterion.scale_max),
                        },
                        "required": ["reason", "score"],
                        "additionalProperties": False,
                    }
                    for criterion in criteria
                },
                "required": [criterion.name for criterion in criteria],
                "additionalProperties": False,
            }
        )
    else:
        scores.update(
            {
                "type": "array",
                "minItems": len(criteria),
                "maxItems": len(criteria),
                "items": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "enum": [criterion.name]},
                                "reason": {"$ref": "#/$defs/CriterionReason"},
                                "score": _integer_scale(criterion.scale_min, criterion.scale_max),
                            },
                            "required": ["name", "reason", "score"],
                            "additionalProperties": False,
                        }
                        for criterion in criteria
                    ]
                },
            }
        )
    schema["properties"] = {**schema["properties"], "scores": scores}
    if "#/$defs/CriterionScore" not in json.dumps(schema):
        definitions.pop("CriterionScore", None)
    return schema


def item_schema(
    model: type[BaseModel], inputs: Mapping[str, Any], *, keyed: bool = False
) -> dict[str, Any] | None:
    """The JSON Schema of one item's reply where it differs from ``model``'s own: `rubric_schema`
    for a `RubricJudgment` given ``criteria`` (its ``keyed`` form for native output); None for
    every other model (its schema is fixed).

    The judge shows it in place of the card's static schema, and the request carries it
    (``CompletionRequest.response_schema``) for the mock and for native structured output.
    """
    if issubclass(model, RubricJudgment) and inputs.get("criteria"):
        return rubric_schema(criteria_from(inputs["criteria"]), model, keyed=keyed)
    return None


def schema_text(schema: Any, depth: int = 0) -> str:
    """JSON indented by two spaces, with lists of plain values on one line (``"enum": [1, 2, 3]``):
    the form shown to the judge, which keeps a per-criterion schema short."""
    inner, outer = "  " * (depth + 1), "  " * depth
    if isinstance(schema, Mapping) and schema:
        members = (
            f"{inner}{json.dumps(k)}: {schema_text(v, depth + 1)}" for k, v in schema.items()
        )
        return "{\n" + ",\n".join(members) + f"\n{outer}}}"
    if isinstance(schema, list) and any(isinstance(v, (Mapping, list)) for v in schema):
        members = (f"{inner}{schema_text(v, depth + 1)}" for v in schema)
        return "[\n" + ",\n".join(members) + f"\n{outer}]"
    return json.dumps(schema)
