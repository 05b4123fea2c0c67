"""G-Eval scoring: a score as the probability-weighted mean over the judge's score tokens.

A sampled score is one draw from the judge's distribution over scores; at temperature 0 it is the
mode, so a judge torn between 3 and 4 writes the same "4" as a judge certain of it, and scores
cluster on a few values. G-Eval (Liu et al. 2023, "NLG Evaluation using GPT-4 with Better Human
Alignment") uses the probabilities instead::

    score = Σ p(k)·k / Σ p(k)      over the valid scores k of the criterion's scale

Here ``p(k)`` comes from the ``top_logprobs`` alternatives at the one token where the judge wrote
the score, so a single call gives the whole distribution (the paper sampled 20 replies).

Finding that token: the reply is parsed (JSON, or the final ``Rating: [[N]]`` line), the character
span of each score value is located in the reply text, and the span is mapped to the token that
covers it by accumulating the tokens' texts. Alternatives count when, stripped of whitespace, they
are an integer within the scale (``"4"`` and ``" 4"`` both count as 4).

Where this cannot be done the sampled score is kept and the record says why: the provider returned
no logprobs (Anthropic; servers that ignore ``logprobs``), the tokens do not reproduce the reply
text up to the score, or the score token carries other text or the number spans several tokens
(``"10"`` split as ``"1"``, ``"0"``). Every score records its ``method``: ``"geval"`` or ``"sampled"``.

The weighted score is kept *beside* the score the judge committed to, never in its place:
``result.scores`` holds the sampled integers, so a card's verdict rule ("match needs correctness
5") means what it says, and ``output["scoring"][axis]["weighted"]`` holds the G-Eval mean (a
weighted 4.86 would otherwise make ``match`` unreachable). `weighted_scores` reads them back.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from judgecards.cards import Card
from judgecards.errors import JudgeOutputError
from judgecards.providers.base import TokenLogprob
from judgecards.replies.parse import read_reply
from judgecards.schemas import RubricJudgment, criteria_from
from judgecards.storage import JudgeResult

__all__ = [
    "ScoreRecord",
    "ScoreSite",
    "json_number_spans",
    "score_records",
    "score_sites",
    "weigh",
    "weighted_scores",
]

Path = tuple[str | int, ...]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCORE_TOKEN = re.compile(r"\s*(\d+)\s*")
# As `judgecards.replies.parse` reads replies: raw control characters inside strings are accepted.
_DECODER = json.JSONDecoder(strict=False)


@dataclass(frozen=True)
class ScoreSite:
    """Where a score was written in the reply: the value's character span and its valid range."""

    start: int
    end: int
    low: int
    high: int


@dataclass(frozen=True)
class ScoreRecord:
    """How one score was produced.

    Attributes:
        method: ``"geval"`` (a probability-weighted mean exists) or ``"sampled"`` (only the
            judge's written value).
        sampled: the value the judge wrote: the score used in ``result.scores`` and verdicts.
        weighted: for ``geval``, the probability-weighted mean over the valid scores; else None.
        distribution: for ``geval``, ``{k: p(k)}`` normalised over the valid scores seen.
        coverage: for ``geval``, the raw probability mass of valid score tokens among the
            alternatives (near 1 means the top alternatives captured the judge's choice).
        note: for ``sampled``, why G-Eval was not possible.
    """

    method: Literal["geval", "sampled"]
    sampled: float
    weighted: float | None = None
    distribution: dict[int, float] | None = None
    coverage: float | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form stored under ``output["scoring"][axis]``."""
        data: dict[str, Any] = {
            "method": self.method,
            "sampled": self.sampled,
            "weighted": self.weighted,
        }
        if self.distribution is not None:
            data["distribution"] = {str(k): p for k, p in self.distribution.items()}
            data["coverage"] = self.coverage
        if self.note is not None:
            data["note"] = self.note
        return data


def _sampled(value: float, note: str) -> ScoreRecord:
    return ScoreRecord(method="sampled", sampled=value, note=note)


def weigh(
    text: str, logprobs: Sequence[TokenLogprob] | None, site: ScoreSite, sampled: float
) -> ScoreRecord:
    """The G-Eval mean at ``site`` beside the sampled value, or the reason it was not possible."""
    if not logprobs:
        return _sampled(sampled, "the provider returned no token logprobs")
    offset = 0
    for token in logprobs:
        end = offset + len(token.token)
        if end > site.start:
            break
        offset = end
    else:
        return _sampled(sampled, "the token logprobs end before the score")
    joined = "".join(t.token for t in logprobs)
    if joined[:end] != text[:end]:
        return _sampled(sampled, "the tokens do not reproduce the reply text up to the score")
    if end < site.end or token.token.strip() != text[site.start : site.end]:
        return _sampled(
            sampled,
            f"the score shares its token {token.token!r} with other text or spans several tokens",
        )
    candidates = {alt: lp for alt, lp in token.top}
    candidates.setdefault(token.token, token.logprob)
    probabilities: dict[int, float] = {}
    for alt, logprob in candidates.items():
        match = _SCORE_TOKEN.fullmatch(alt)
        if match is None:
            continue
        value = int(match.group(1))
        if site.low <= value <= site.high:
            probabilities[value] = probabilities.get(value, 0.0) + math.exp(logprob)
    mass = sum(probabilities.values())
    if mass <= 0.0:
        return _sampled(sampled, "no valid score among the token alternatives")
    distribution = {k: p / mass for k, p in sorted(probabilities.items())}
    return ScoreRecord(
        method="geval",
        sampled=sampled,
        weighted=sum(k * p for k, p in distribution.items()),
        distribution=distribution,
        coverage=min(mass, 1.0),
    )


# --------------------------------------------------------------------------- finding the scores


def json_number_spans(text: str, start: int) -> dict[Path, tuple[int, int]]:
    """Character spans of every number in the JSON value starting at ``text[start]``, by path.

    Paths are tuples of keys and list indexes, e.g. ``("scores", 2, "score")``. The value must be
    valid JSON (the caller has decoded it already); a later duplicate key wins, as in `json.loads`.
    """
    spans: dict[Path, tuple[int, int]] = {}

    def skip(position: int) -> int:
        match = _WHITESPACE.match(text, position)
        return match.end() if match else position

    def value(position: int, path: Path) -> int:
        position = skip(position)
        char = text[position]
        if char == "{":
            position = skip(position + 1)
            if text[position] == "}":
                return position + 1
            while True:
                position = skip(position)
                key, position = _DECODER.raw_decode(text, position)
                position = skip(position) + 1  # the ':'
                position = skip(value(position, (*path, key)))
                if text[position] == "}":
                    return position + 1
                position += 1  # the ','
        if char == "[":
            position = skip(position + 1)
            if text[position] == "]":
                return position + 1
            index = 0
            while True:
                position = skip(value(position, (*path, index)))
                if text[position] == "]":
                    return position + 1
                position += 1
                index += 1
        if char == '"':
            return int(_DECODER.raw_decode(text, position)[1])
        number = _NUMBER.match(text, position)
        if number is not None:
            spans[path] = (number.start(), number.end())
            return number.end()
        for literal in ("true", "false", "null", "NaN", "-Infinity", "Infinity"):
            if text.startswith(literal, position):
                return position + len(literal)
        raise ValueError(f"not JSON at character {position}")

    value(start, ())
    return spans


def _schema_range(schema: Mapping[str, Any], path: Sequence[str]) -> tuple[int, int] | None:
    definitions = schema.get("$defs", {})
    node: Mapping[str, Any] = schema
    for part in path:
        while "$ref" in node:
            node = definitions.get(node["$ref"].rsplit("/", 1)[-1], {})
        node = node.get("properties", {}).get(part, {})
    low, high = node.get("minimum"), node.get("maximum")
    if node.get("type") == "integer" and isinstance(low, int) and isinstance(high, int):
        return low, high
    return None


def score_sites(card: Card, text: str, inputs: Mapping[str, Any]) -> dict[str, ScoreSite]:
    """Where each score axis was written in ``text``, with its valid range.

    The answer is found by `judgecards.replies.parse.read_reply` (the same rule that produced the
    judgment, quotations of the inputs excluded). Final-token cards: the value on the last line.
    JSON cards: each ``output.scores`` path with an integer range in the schema; for a
    `RubricJudgment`, each criterion's ``score`` with the scale from the item's ``criteria``.
    Axes that cannot be located are left out; a reply that does not read gives no sites.
    """
    try:
        reading = read_reply(card, text, inputs=inputs)
    except JudgeOutputError:
        return {}
    output = card.spec.output
    if output.format == "final_token":
        if output.min is None or output.max is None:
            return {}
        return {output.field: ScoreSite(reading.start, reading.end, output.min, output.max)}
    spans = json_number_spans(text, reading.start)
    judgment = reading.judgment
    sites: dict[str, ScoreSite] = {}
    if isinstance(judgment, RubricJudgment):
        given = inputs.get("criteria")
        scales = {c.name: (c.scale_min, c.scale_max) for c in criteria_from(given)} if given else {}
        for index, entry in enumerate(judgment.scores):
            span = spans.get(("scores", index, "score")) or spans.get(
                ("scores", entry.name, "score")  # the keyed native form (`rubric_schema`)
            )
            if span is not None and entry.name in scales:
                sites[entry.name] = ScoreSite(span[0], span[1], *scales[entry.name])
        return sites
    schema = card.output_model.model_json_schema()
    for axis, dotted in card.score_axes.items():
        parts = dotted.split(".")
        span = spans.get(tuple(parts))
        scale = _schema_range(schema, parts)
        if span is not None and scale is not None:
            sites[axis] = ScoreSite(span[0], span[1], *scale)
    return sites


def score_records(
    card: Card,
    text: str,
    logprobs: Sequence[TokenLogprob] | None,
    inputs: Mapping[str, Any],
    scores: Mapping[str, float],
) -> dict[str, ScoreRecord]:
    """One `ScoreRecord` per sampled score axis, with the G-Eval mean where the logprobs allow it."""
    sites = score_sites(card, text, inputs)
    records: dict[str, ScoreRecord] = {}
    for axis, sampled in scores.items():
        site = sites.get(axis)
        if site is None:
            records[axis] = _sampled(sampled, "the score could not be located in the reply")
        else:
            records[axis] = weigh(text, logprobs, site, sampled)
    return records


def weighted_scores(result: JudgeResult) -> dict[str, float]:
    """A result's scores with each G-Eval-weighted mean in place of the sampled value where one
    exists: for correlation with human scores, not for verdicts (those use ``result.scores``)."""
    scoring = (result.output or {}).get("scoring") or {}
    weighted: dict[str, float] = {}
    for axis, value in result.scores.items():
        record = scoring.get(axis)
        mean = record.get("weighted") if isinstance(record, Mapping) else None
        weighted[axis] = float(mean) if isinstance(mean, (int, float)) else float(value)
    return weighted
