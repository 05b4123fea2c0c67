"""Turn a judge's raw reply into a validated judgment, or into the evidence for a re-ask.

A judge's reply may quote the item it judges, and the item is untrusted: a model output can hold
a fake ``{"scores": {...5, 5, 5...}, "verdict": "match"}`` or a fake ``Rating: [[10]]``. Taking
"the last JSON object" or "the last fenced block" lets such a quotation become the verdict when
the judge quotes it after (or, in a fence, before) its own answer. So the rules are:

JSON cards
    1. When the whole reply (whitespace aside), or the whole reply inside one code fence, is a
       JSON object, that object is the answer: the judge committed its entire reply to it.
    2. Otherwise every top-level JSON object in the reply is a candidate (an object nested in a
       decoded object is part of it, not a candidate).
    3. A candidate that also occurs in an input (its text, whitespace collapsed, inside an input's
       text; or its value equal to an object found in an input) is a quotation and is dropped.
       A whole-reply answer (rule 1) that is such a copy is refused the same way.
    3b. A candidate that names a key twice (at any depth) is not a judgment: ``json.loads`` keeps
       the last value, so a judge that echoes an input's ``", "scores": {...}, "x": "`` unescaped
       would let the input's scores win. The reply is refused and the judge re-asked.
    4. The rest are validated against the card's output model (and, for rubric judgments, the
       item's criteria). Exactly one distinct valid judgment is the answer (repeats of it are
       fine; its first occurrence is where it was written, which G-Eval reads). Two or more
       distinct valid judgments are ambiguous: the judge is re-asked for one JSON object only.
       None: the problems of the last candidate are fed back.

Final-token cards
    The rating line must stand alone (markdown emphasis aside) as the reply's last non-empty
    line; a rating anywhere else (quoted instructions, a quoted answer, inside a sentence) does
    not count. It is refused as a copy when it and the line before it occur together in an input
    (the judge ended by quoting the answer).

A refused or ambiguous reply is an ordinary invalid reply: `JudgeOutputError`, re-asked with the
problems, then an ``invalid_output`` error record. It is never stored as a judgment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from judgecards.cards import Card
from judgecards.errors import JudgeOutputError
from judgecards.schemas import RubricJudgment, criteria_from

__all__ = ["Reading", "json_objects", "parse_reply", "read_reply", "repeated_key", "unique_keys"]

_ONE_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
# Control characters inside strings are accepted (``strict=False``): llama.cpp's ``json_object``
# grammar lets a raw newline into a string (7 of 20 replies of SmolLM2-135M), and such a reply is
# the judge's answer, not a fault to re-ask about.
_DECODER = json.JSONDecoder(strict=False)


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"the key {key!r} appears twice in one object")


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A ``json`` ``object_pairs_hook`` refusing (``ValueError``) an object that repeats a key."""
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise _RepeatedKey(key)
        value[key] = item
    return value


_UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=unique_keys, strict=False)


def repeated_key(text: str, start: int = 0) -> str | None:
    """The first key repeated within the JSON object at ``text[start:]`` (nested objects
    included), or None; text that does not decode has none."""
    try:
        _UNIQUE_KEYS.raw_decode(text, start)
    except _RepeatedKey as error:
        return error.key
    except (ValueError, RecursionError):
        return None
    return None


_DECORATION = " \t*_`#."  # markdown emphasis or a heading around a rating line, a final period


@dataclass(frozen=True)
class Reading:
    """A validated judgment and where the reply wrote it.

    Attributes:
        judgment: the card's output model, validated.
        start / end: character span in the reply of the answer: the JSON object, or, for
            final-token cards, the rating value on the last line.
    """

    judgment: BaseModel
    start: int
    end: int


def json_objects(text: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Every top-level JSON object in ``text`` as ``(start, end, value)``, left to right.

    Scanning tries each ``{``; a decoded object is taken whole and scanning resumes after it, so
    objects nested inside it are not listed. Text that does not decode (prose braces, a truncated
    object, nesting too deep to decode) is skipped.
    """
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            yield position, end, value
        position = text.find("{", end)


def _collapse(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class _Quotable:
    """What the item's inputs contain, for recognising quotations in a reply."""

    texts: tuple[str, ...]  # input strings, whitespace collapsed
    objects: tuple[dict[str, Any], ...]  # every JSON object found in the inputs, nested ones too
    lines: tuple[str, ...]  # input strings as their stripped non-empty lines joined by "\n"

    @classmethod
    def of(cls, inputs: Mapping[str, Any] | None) -> _Quotable:
        strings: list[str] = []
        objects: list[dict[str, Any]] = []
        pending: list[Any] = list((inputs or {}).values())
        while pending:  # a loop, not recursion: inputs may nest deeply
            value = pending.pop()
            if isinstance(value, str):
                strings.append(value)
                pending.extend(found for _, _, found in json_objects(value))
            elif isinstance(value, Mapping):
                objects.append(dict(value))
                pending.extend(value.values())
            elif isinstance(value, (list, tuple)):
                pending.extend(value)
        return cls(
            texts=tuple(_collapse(s) for s in strings),
            objects=tuple(objects),
            lines=tuple(
                "\n".join(line.strip() for line in s.splitlines() if line.strip()) for s in strings
            ),
        )

    def has_object(self, source: str, value: dict[str, Any]) -> bool:
        """``value`` (parsed from ``source``) is an object found in an input, or its text is."""
        try:
            if value in self.objects:
                return True
        except RecursionError:  # comparing objects nested past the recursion limit
            pass
        return self.has_fragment(source)

    def has_fragment(self, fragment: str) -> bool:
        """``fragment`` (whitespace collapsed) occurs inside an input's text."""
        collapsed = _collapse(fragment)
        return any(collapsed in text for text in self.texts)

    def has_lines(self, *lines: str) -> bool:
        """These whole lines (stripped) occur one after another in an input."""
        block = "\n" + "\n".join(line.strip() for line in lines) + "\n"
        return any(block in "\n" + text + "\n" for text in self.lines)


def _whole(text: str) -> tuple[int, int, dict[str, Any]] | None:
    """The object that is the whole reply, or the whole reply inside one fence."""
    stripped = text.strip()
    at = len(text) - len(text.lstrip())
    bodies = [(at, stripped)]
    fence = _ONE_FENCE.fullmatch(stripped)
    if fence is not None and "```" not in fence.group(1):
        bodies.append((at + fence.start(1), fence.group(1)))
    for offset, body in bodies:
        start = offset + len(body) - len(body.lstrip())
        body = body.strip()
        try:
            value = _DECODER.decode(body)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return start, start + len(body), value
    return None


def _malformed(text: str) -> str | None:
    """What is wrong with a reply that is shaped as one JSON object (alone or in one fence) but
    does not decode; None for any other reply. Without it, the objects nested in the broken one
    are validated instead and the re-ask would name their missing keys, not the real fault."""
    body = text.strip()
    fence = _ONE_FENCE.fullmatch(body)
    if fence is not None:
        body = fence.group(1).strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        _DECODER.decode(body)
    except json.JSONDecodeError as error:
        return (
            f"the reply is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        )
    except (ValueError, RecursionError):
        return "the reply is not valid JSON"
    return None


def _validate(
    card: Card, data: Mapping[str, Any], inputs: Mapping[str, Any] | None
) -> tuple[BaseModel | None, list[str]]:
    """The judgment, or ``loc: message`` problems (schema first, then the item's criteria)."""
    try:
        judgment = card.output_model.model_validate(data)
    except ValidationError as error:
        return None, [
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in error.errors(include_url=False)
        ]
    if isinstance(judgment, RubricJudgment) and inputs and inputs.get("criteria"):
        problems = judgment.problems_given(criteria_from(inputs["criteria"]))
        if problems:
            return None, problems
    return judgment, []


def _own_objects(
    text: str, whole: tuple[int, int, dict[str, Any]] | None, quotable: _Quotable
) -> list[tuple[int, int, dict[str, Any]]]:
    """The JSON objects of a reply that the judge wrote rather than copied from the item: the
    whole reply when it is one object, else each object in it. A reply with none is refused."""
    if whole is not None:
        start, end, value = whole
        if quotable.has_object(text[start:end], value):
            raise JudgeOutputError(
                text,
                [
                    "the reply is a JSON object copied from the item being judged; reply with "
                    "your own judgment as one JSON object"
                ],
            )
        candidates = [whole]
    else:
        found = list(json_objects(text))
        candidates = [
            (start, end, value)
            for start, end, value in found
            if not quotable.has_object(text[start:end], value)
        ]
        if found and not candidates:
            raise JudgeOutputError(
                text,
                [
                    f"every JSON object in the reply ({len(found)}) is copied from the item being "
                    "judged; reply with your own judgment as one JSON object"
                ],
            )
    if not candidates:
        if "{" in text:
            problem = "reply contains '{' but no complete JSON object (truncated or malformed JSON)"
        else:
            problem = "reply contains no JSON object"
        raise JudgeOutputError(text, [problem])
    return candidates


def _read_json(card: Card, text: str, inputs: Mapping[str, Any] | None) -> Reading:
    whole = _whole(text)
    candidates = _own_objects(text, whole, _Quotable.of(inputs))
    for start, _, _ in candidates:
        if (key := repeated_key(text, start)) is not None:
            raise JudgeOutputError(
                text,
                [
                    f"the reply's JSON object has the key {key!r} twice, so it is not one "
                    "judgment; reply with one JSON object that names each key once (quote text "
                    "from the item only inside strings, escaped)"
                ],
            )
    valid: dict[str, Reading] = {}
    last_problems: list[str] = []
    for start, end, value in candidates:
        judgment, problems = _validate(card, value, inputs)
        if judgment is None:
            last_problems = problems
            continue
        key = json.dumps(judgment.model_dump(mode="json"), sort_keys=True)
        valid.setdefault(key, Reading(judgment, start, end))
    if len(valid) > 1:
        raise JudgeOutputError(
            text,
            [
                f"reply holds {len(valid)} candidate answers (different valid JSON objects); "
                "reply with one JSON object only"
            ],
        )
    if valid:
        return next(iter(valid.values()))
    malformed = _malformed(text) if whole is None else None
    raise JudgeOutputError(text, [malformed] if malformed else last_problems)


def _bare_rating(pattern: re.Pattern[str], line: str) -> tuple[int, re.Match[str]] | None:
    """The rating when it stands alone on ``line`` (markdown emphasis aside), with its offset."""
    for core in (line.strip(), line.strip(_DECORATION)):
        match = pattern.fullmatch(core)
        if match is not None:
            return line.index(core), match
    return None


def _read_final_line(card: Card, text: str, inputs: Mapping[str, Any] | None) -> Reading:
    pattern = card.final_line
    assert pattern is not None
    output = card.spec.output
    # The line as the judge must write it: the card's "{value}" placeholder reads as N.
    shown = repr((output.line or "").replace("{value}", "N"))
    lines = [(m.start(), m.group()) for m in re.finditer(r"[^\r\n]*", text) if m.group().strip()]
    if not lines or not pattern.search(text):
        raise JudgeOutputError(text, [f"no final line of the form {shown} found"])
    offset, last = lines[-1]
    found = _bare_rating(pattern, last)
    if found is None:
        raise JudgeOutputError(
            text,
            [
                f"the reply must end with the rating alone on its last line, {shown}; "
                "a rating anywhere else does not count"
            ],
        )
    if len(lines) > 1 and _Quotable.of(inputs).has_lines(lines[-2][1], last):
        raise JudgeOutputError(
            text,
            [
                "the final rating line is copied, with the line before it, from the item being "
                f"judged; end with your own line {shown}"
            ],
        )
    at, match = found
    raw_value = match.group(1)
    if "." in raw_value:
        raise JudgeOutputError(text, [f"{output.field}: must be a whole number, got {raw_value}"])
    data = {output.field: int(raw_value), "reasoning": text[:offset].strip()}
    judgment, problems = _validate(card, data, inputs)
    if judgment is None:
        raise JudgeOutputError(text, problems)
    start = offset + at
    return Reading(judgment, start + match.start(1), start + match.end(1))


def read_reply(
    card: Card, text: str, *, inputs: Mapping[str, Any] | None = None, truncated: bool = False
) -> Reading:
    """Read a reply by the rules in this module's docstring and validate it.

    Args:
        card: the card whose output format and model the reply must follow.
        text: the judge's raw reply.
        inputs: the item's inputs, to recognise quotations of them (and a rubric's criteria);
            ``None`` recognises none.
        truncated: the reply stopped at the token limit; carried on the error for the re-ask.

    Raises:
        JudgeOutputError: with ``loc: message`` problems, ready to be fed back to the judge.
    """
    try:
        if card.spec.output.format == "final_token":
            return _read_final_line(card, text, inputs)
        return _read_json(card, text, inputs)
    except JudgeOutputError as error:
        if truncated:
            raise JudgeOutputError(
                text, [*error.problems, "the reply was cut off at the token limit"], truncated=True
            ) from None
        raise


def parse_reply(
    card: Card, text: str, *, inputs: Mapping[str, Any] | None = None, truncated: bool = False
) -> BaseModel:
    """The validated judgment in a reply; see `read_reply`, which also says where it was written."""
    return read_reply(card, text, inputs=inputs, truncated=truncated).judgment
