"""What a human can label about a result of a given card, and how a cell's value is checked.

The label fields of a card come from its verdict rules and output schema (`label_fields`):
``verdict`` (the card's verdicts), one field per score axis (an integer in the axis' range),
``winner`` (A, B or tie) for pairwise cards. `LabelField.parse` turns a CSV cell or JSONL value
into the stored label or says what is wrong with it.

A score field also carries what the card says about it, for people labelling it: the output
schema's description of the axis and the scale's anchors, the words the card's text gives to
points of the scale (``5 = no factual error; 3 = minor errors…`` in the axis' bullet, else the
ends of ``from 1 (worst) to 5 (best)``), so a labeler reads the same scale as the judge.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from judgecards.cards import Card
from judgecards.storage import JudgeResult

__all__ = [
    "WINNERS",
    "LabelField",
    "LabelKind",
    "judge_labels",
    "label_fields",
    "scale_anchors",
]

LabelKind = Literal["verdict", "score", "winner"]

WINNERS = ("A", "B", "tie")
_INTEGER = re.compile(r"^[+-]?\d+(\.0*)?$")
_ANCHOR = re.compile(r"(?<![\w.])(\d{1,2})\s*=\s*([^;=]+?)\s*(?=;|\.(?:\s|$)|$|\s\d{1,2}\s*=)")
_ENDS = re.compile(r"(\d{1,2})\s*\(([^()]{1,40})\)\s*to\s*(\d{1,2})\s*\(([^()]{1,40})\)")


@dataclass(frozen=True)
class LabelField:
    """One thing a human can label about a result of a given card.

    Attributes:
        name: the column name (``verdict``, an axis name, or ``winner``).
        kind: ``verdict``, ``score`` or ``winner``.
        choices: allowed values of a verdict or winner, in the card's order (empty: any text).
        minimum: lowest allowed score (``None``: unbounded).
        maximum: highest allowed score (``None``: unbounded).
        integer: scores must be whole numbers.
        description: what the card's output schema says the field is (``None``: nothing).
        anchors: ``(point, words)`` the card's text gives to points of a score scale.
    """

    name: str
    kind: LabelKind
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = True
    description: str | None = field(default=None, compare=False)
    anchors: tuple[tuple[int, str], ...] = field(default=(), compare=False)

    @property
    def scale(self) -> tuple[Any, ...] | None:
        """The ordered label scale for kappa (``None``: use the observed labels)."""
        if self.kind != "score":
            return self.choices or None
        if self.integer and self.minimum is not None and self.maximum is not None:
            return tuple(range(int(self.minimum), int(self.maximum) + 1))
        return None

    @property
    def ordinal(self) -> bool:
        """Scores are ordered, so their kappa is weighted; verdicts and winners are categories."""
        return self.kind == "score"

    def describe(self) -> str:
        """What a valid value looks like, for error messages and sheet instructions."""
        if self.kind != "score":
            return f"one of {', '.join(self.choices)}" if self.choices else "a non-empty text"
        number = "an integer" if self.integer else "a number"
        if self.minimum is not None and self.maximum is not None:
            return f"{number} from {_num(self.minimum)} to {_num(self.maximum)}"
        if self.minimum is not None:
            return f"{number} >= {_num(self.minimum)}"
        if self.maximum is not None:
            return f"{number} <= {_num(self.maximum)}"
        return number

    def parse(self, raw: Any, *, text: bool) -> Any:
        """The stored value of a cell, ``None`` if empty; `ValueError` says what is wrong.

        ``text`` says the cell came from CSV, where every value is a string: ``"4"`` is then a
        score, while in JSONL a score must be a JSON number.
        """
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return None
        if self.kind == "score":
            return self._parse_score(raw, text=text)
        if not isinstance(raw, str):
            raise ValueError(f"must be a string, {self.describe()}; got {json.dumps(raw)}")
        value = raw.strip()
        if not self.choices:
            return value
        for choice in self.choices:
            if value.casefold() == choice.casefold():
                return choice
        raise ValueError(f"must be {self.describe()}; got {value!r}")

    def _parse_score(self, raw: Any, *, text: bool) -> int | float:
        number: int | float
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise ValueError(f"must be {self.describe()}; got {json.dumps(raw)}")
        if isinstance(raw, str):
            value = raw.strip()
            if not text:
                raise ValueError(
                    f"must be a JSON number, {self.describe()}; got the string {value!r}"
                )
            if _INTEGER.match(value):
                number = int(float(value))
            else:
                try:
                    number = float(value)
                except ValueError:
                    raise ValueError(f"must be {self.describe()}; got {value!r}") from None
        else:
            number = raw
        if isinstance(number, float):
            if not math.isfinite(number):
                raise ValueError(f"must be {self.describe()}; got {number}")
            if number.is_integer():
                number = int(number)
            elif self.integer:
                raise ValueError(f"must be {self.describe()}; got {number}")
        if (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        ):
            raise ValueError(f"out of range: must be {self.describe()}; got {number}")
        return number


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def label_fields(card: Card) -> dict[str, LabelField]:
    """The label fields of a card, in column order: verdict, score axes, winner.

    Verdict choices are the card's rule verdicts and ``otherwise`` (plus any ``enum`` of the
    verdict field in the output schema); score ranges come from the output schema's
    ``minimum``/``maximum`` for each axis. A card whose verdict field is ``winner``, or whose
    output has a top-level ``winner`` enum, gets a ``winner`` field (A/B/tie) instead.
    """
    schema = card.output_model.model_json_schema()
    fields: dict[str, LabelField] = {}
    spec = card.spec.verdict
    verdict_is_winner = spec is not None and spec.field == "winner"
    if spec is not None and not verdict_is_winner:
        choices: list[str] = [rule.then for rule in spec.rules]
        if spec.otherwise is not None:
            choices.append(spec.otherwise)
        node = _schema_node(schema, spec.field.split(".")) if spec.field else None
        choices += [str(v) for v in (node or {}).get("enum", ())]
        fields["verdict"] = LabelField("verdict", "verdict", tuple(dict.fromkeys(choices)))
    for axis, path in card.score_axes.items():
        node = _schema_node(schema, path.split(".")) or {}
        fields[axis] = LabelField(
            axis,
            "score",
            minimum=node.get("minimum"),
            maximum=node.get("maximum"),
            integer=node.get("type") != "number",
            description=node.get("description"),
            anchors=scale_anchors(card.body, axis, node.get("minimum"), node.get("maximum")),
        )
    winner = _schema_node(schema, ["winner"])
    if verdict_is_winner or (
        winner is not None and set(winner.get("enum", ())) <= set(WINNERS) and winner.get("enum")
    ):
        fields["winner"] = LabelField("winner", "winner", WINNERS)
    return fields


def judge_labels(fields: Mapping[str, LabelField], result: JudgeResult) -> dict[str, Any]:
    """What the judge said on each label field (fields it gave no value for are left out)."""
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if spec.kind == "verdict":
            value: Any = result.verdict
        elif spec.kind == "score":
            value = result.scores.get(name)
        elif result.verdict in WINNERS:
            value = result.verdict
        else:
            value = (result.output or {}).get("winner")
        if value is not None:
            values[name] = value
    return values


def _schema_node(schema: Mapping[str, Any], path: Sequence[str]) -> dict[str, Any] | None:
    """The JSON Schema of a dotted path, following ``$ref`` into ``$defs``."""
    definitions = schema.get("$defs", {})

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in node:
            node = definitions.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        for key in ("allOf", "anyOf"):  # Optional[...] and annotated refs
            for option in node.get(key, ()):
                option = resolve(option)
                if option.get("type") != "null":
                    return {**node, **option}
        return node

    node = resolve(schema)
    for part in path:
        properties = node.get("properties", {})
        if part not in properties:
            return None
        node = resolve(properties[part])
    return dict(node)


def scale_anchors(
    body: str, axis: str, minimum: float | None = None, maximum: float | None = None
) -> tuple[tuple[int, str], ...]:
    """The words a card's text gives to points of ``axis``'s scale, low to high.

    The axis' own bullet (``- axis: … 5 = all; 4 = all but a minor one; 1 = none.``) wins;
    without anchors there, the ends of a scale stated once for every axis (``an integer from
    1 (worst) to 5 (best)``) are used when they match the axis' range. Nothing found: ``()``.
    """
    lines = body.splitlines()
    bullet: list[str] = []
    for index, line in enumerate(lines):
        if re.match(rf"^\s*[-*]\s+\**{re.escape(axis)}\**\s*:", line):
            bullet.append(line.split(":", 1)[1])
            for more in lines[index + 1 :]:
                if not more.strip() or re.match(r"^\s*[-*]\s", more):
                    break
                bullet.append(more)
            break
    text = " ".join(part.strip() for part in bullet)
    found = {int(point): words.strip() for point, words in _ANCHOR.findall(text)}
    if not found:
        ends = _ENDS.search(" ".join(lines))
        if ends is not None:
            low, high = int(ends.group(1)), int(ends.group(3))
            if (minimum is None or low == minimum) and (maximum is None or high == maximum):
                found = {low: ends.group(2).strip(), high: ends.group(4).strip()}
    in_range = {
        point: words
        for point, words in found.items()
        if (minimum is None or point >= minimum) and (maximum is None or point <= maximum)
    }
    return tuple(sorted(in_range.items()))
