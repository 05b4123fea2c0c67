"""Tiered evaluation: cheap deterministic checks first, the judge only on what survives them.

A `TieredEval` runs its tiers in order. Each item goes through tier 1, and on to tier 2 only if
it passed tier 1, and so on; the judge (a `JudgeCheck`, always the last tier) sees only the
survivors, so every item an earlier tier decides is a judge call saved.

Every check gives each item one of four results (`CheckResult`):

==========  ==================================================================================
``pass``    go on to the next tier (after the last tier: the item passes)
``accept``  pass now, skipping the later tiers, the judge included (routing: e.g. an exact match
            needs no judge); only `MetricCheck` accepts, and only when given ``accept_min`` or
            ``accept_max``
``fail``    the item fails here and goes no further
``error``   the check could not be applied (a missing field, a value of the wrong type, a judge
            error record); the item ends here as an error, and is not sent on
==========  ==================================================================================

A tier with several checks applies all of them to each item (so every reason is reported) and
combines them: any ``fail`` → fail, else any ``error`` → error, else any ``accept`` → accept, else
pass. Nothing is dropped: the `TieredReport` holds one `ItemOutcome` per input item, in input
order, naming the tier that decided it and why.

=================  ===============================================================================
check              passes when
=================  ===============================================================================
`RegexCheck`       a field matches ``match`` and does not match ``forbid`` (``re.search``)
`LengthCheck`      a field's length in characters or words is within ``[min, max]``
`JsonCheck`        a field is JSON, optionally valid against a JSON Schema or a pydantic model
`MetricCheck`      a metric of `judgecards.metrics` against a reference field is within bounds
`JudgeCheck`       a `judgecards.Judge` verdict is allowed and its scores are within bounds
=================  ===============================================================================

Any object with a ``name`` and a ``check(item) -> CheckResult`` method can stand in a `Tier` too.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from judgecards.metrics.rouge import rouge
from judgecards.metrics.text import exact_match, substring_recall, token_f1

if TYPE_CHECKING:
    from judgecards.judge import Judge, Progress
    from judgecards.results import JudgeResult

__all__ = [
    "Check",
    "CheckResult",
    "ItemOutcome",
    "JsonCheck",
    "JudgeCheck",
    "LengthCheck",
    "MetricCheck",
    "RegexCheck",
    "Tier",
    "TierStats",
    "TieredEval",
    "TieredReport",
    "metric_check_names",
]

CheckStatus = Literal["pass", "accept", "fail", "error"]
Outcome = Literal["pass", "fail", "error"]
MetricFunction = Callable[[str, "str | Sequence[str]"], float]

_SHOWN = 60  # characters of a value quoted in a reason


class _ArgumentError(ValueError):
    """A check was built with a bad argument; ``path`` names it (``("pass_verdicts", 1)``).

    The config loader of ``judgecards eval`` turns ``path`` into a file line, because config keys
    and constructor arguments have the same names.
    """

    def __init__(self, message: str, *path: str | int) -> None:
        self.path = path
        super().__init__(message)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CheckResult:
    """What one check says about one item.

    Attributes:
        status: ``pass``, ``accept``, ``fail`` or ``error`` (see the module docstring).
        reason: why, for a person; None for a plain pass.
        value: the number the check computed (a metric value), if any.
    """

    status: CheckStatus
    reason: str | None = None
    value: float | None = None


@runtime_checkable
class Check(Protocol):
    """A deterministic per-item check: a ``name`` and ``check(item) -> CheckResult``.

    ``item`` is one input mapping (a parsed JSONL line). A check should return an ``error`` result
    rather than raise; an exception is caught and recorded as an ``error`` for that item.
    """

    @property
    def name(self) -> str:
        """The check's label in reports."""
        ...

    def check(self, item: Mapping[str, Any]) -> CheckResult:
        """The result for one item."""
        ...


def _field(item: Mapping[str, Any], name: str) -> tuple[Any, CheckResult | None]:
    if name not in item or item[name] is None:
        return None, CheckResult("error", f"missing field {name!r}")
    return item[name], None


def _text_field(item: Mapping[str, Any], name: str) -> tuple[str, CheckResult | None]:
    value, problem = _field(item, name)
    if problem is not None:
        return "", problem
    if not isinstance(value, str):
        return "", CheckResult("error", f"field {name!r} is {type(value).__name__}, not a string")
    return value, None


def _quote(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…")


def _number(value: float) -> str:
    return f"{value:.4g}"


# --------------------------------------------------------------------------- tier 1: format


@dataclass(frozen=True)
class RegexCheck:
    """A field must match one pattern and/or must not match another.

    Patterns are Python regular expressions applied with `re.search`, so they match anywhere
    unless anchored (``^…$``, or ``\\A…\\Z`` for the whole text). Use inline flags for options:
    ``(?i)`` ignores case, ``(?s)`` lets ``.`` match newlines, ``(?m)`` anchors at each line.

    Args:
        field: the item field to test; it must be a string (else the item is an ``error``).
        match: the item fails unless this pattern is found.
        forbid: the item fails if this pattern is found (the reason quotes the matched text).
        name: label in reports; default ``regex:<field>``.

    Raises:
        ValueError: neither pattern given, or a pattern does not compile.
    """

    field: str
    match: str | None = None
    forbid: str | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.match is None and self.forbid is None:
            raise _ArgumentError("give a 'match' pattern, a 'forbid' pattern, or both", "match")
        for key in ("match", "forbid"):
            pattern = getattr(self, key)
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as error:
                    raise _ArgumentError(f"invalid regular expression: {error}", key) from None
        if not self.name:
            object.__setattr__(self, "name", f"regex:{self.field}")

    def check(self, item: Mapping[str, Any]) -> CheckResult:
        """Apply the patterns to ``item[field]``.

        Args:
            item: one input mapping.

        Returns:
            ``pass``, ``fail`` (which pattern, and the forbidden text found) or ``error``.
        """
        text, problem = _text_field(item, self.field)
        if problem is not None:
            return problem
        reasons = []
        if self.match is not None and re.search(self.match, text) is None:
            reasons.append(f"{self.field} does not match /{self.match}/")
        if self.forbid is not None and (found := re.search(self.forbid, text)) is not None:
            reasons.append(
                f"{self.field} contains {_quote(found.group(0))}, forbidden by /{self.forbid}/"
            )
        return CheckResult("fail", "; ".join(reasons)) if reasons else CheckResult("pass")


@dataclass(frozen=True)
class LengthCheck:
    """A field's length must lie within ``[min, max]`` (both inclusive, either optional).

    Args:
        field: the item field to measure; it must be a string.
        min: the least length allowed.
        max: the greatest length allowed.
        unit: ``chars`` counts Unicode code points (``len``); ``words`` counts
            whitespace-separated runs (``len(text.split())``).
        name: label in reports; default ``length:<field>``.

    Raises:
        ValueError: no bound given, a negative bound, or ``min > max``.
    """

    field: str
    min: int | None = None
    max: int | None = None
    unit: Literal["chars", "words"] = "chars"
    name: str = ""

    def __post_init__(self) -> None:
        if self.min is None and self.max is None:
            raise _ArgumentError("give 'min', 'max' or both", "min")
        for key in ("min", "max"):
            bound = getattr(self, key)
            if bound is not None and bound < 0:
                raise _ArgumentError("must not be negative", key)
        if self.min is not None and self.max is not None and self.min > self.max:
            raise _ArgumentError(f"min {self.min} is greater than max {self.max}", "min")
        if self.unit not in ("chars", "words"):
            raise _ArgumentError("must be 'chars' or 'words'", "unit")
        if not self.name:
            object.__setattr__(self, "name", f"length:{self.field}")

    def check(self, item: Mapping[str, Any]) -> CheckResult:
        """Measure ``item[field]``.

        Args:
            item: one input mapping.

        Returns:
            ``pass`` or ``fail`` with the length as ``value``, or ``error``.
        """
        text, problem = _text_field(item, self.field)
        if problem is not None:
            return problem
        length = len(text) if self.unit == "chars" else len(text.split())
        if self.min is not None and length < self.min:
            return CheckResult(
                "fail", f"{self.field} is {length} {self.unit}, fewer than min {self.min}", length
            )
        if self.max is not None and length > self.max:
            return CheckResult(
                "fail", f"{self.field} is {length} {self.unit}, more than max {self.max}", length
            )
        return CheckResult("pass", value=length)


class _PydanticModel(Protocol):
    @classmethod
    def model_validate(cls, obj: Any) -> Any: ...


@dataclass(frozen=True)
class JsonCheck:
    """A field must be JSON, and optionally satisfy a schema.

    A string field must parse as one JSON value with nothing around it (no code fences, no
    prose); ``NaN`` and ``Infinity``, which `json.loads` would accept, are not JSON and fail. A
    field that is already structured (a JSONL line holding an object, list or number there) is
    taken as parsed.

    ``schema`` is either a pydantic model class, validated with ``model_validate`` under the
    model's own settings (use ``ConfigDict(strict=True)`` to refuse ``"5"`` for an int), or an
    inline JSON Schema mapping, validated by the ``jsonschema`` library as Draft 2020-12 (a
    malformed schema is refused when the check is built).

    Args:
        field: the item field holding the JSON text (or value).
        schema: a pydantic model class, ``"module:Model"`` naming one (as a card's
            ``output.schema`` does), or an inline JSON Schema mapping; None checks only that the
            field is JSON.
        name: label in reports; default ``json:<field>``.

    Raises:
        ValueError: the inline schema is not a valid JSON Schema, or the named model cannot be
            imported.
    """

    field: str
    schema: Mapping[str, Any] | bool | str | type[_PydanticModel] | None = None
    name: str = ""
    _validator: Any = dataclass_field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.schema, str):
            object.__setattr__(self, "schema", _import_model(self.schema))
        if isinstance(self.schema, (Mapping, bool)):
            try:
                object.__setattr__(self, "_validator", _schema_validator(self.schema))
            except ValueError as error:
                raise _ArgumentError(str(error), "schema") from None
        elif self.schema is not None and not hasattr(self.schema, "model_validate"):
            raise _ArgumentError(
                "must be a pydantic model class or a JSON Schema mapping", "schema"
            )
        if not self.name:
            object.__setattr__(self, "name", f"json:{self.field}")

    def check(self, item: Mapping[str, Any]) -> CheckResult:
        """Parse ``item[field]`` and validate it against the schema, if any.

        Args:
            item: one input mapping.

        Returns:
            ``pass``; ``fail`` naming the parse error or up to five schema problems (as
            ``$.path: problem``); ``error`` if the field is missing.
        """
        raw, problem = _field(item, self.field)
        if problem is not None:
            return problem
        if isinstance(raw, str):
            try:
                value = json.loads(raw, parse_constant=_reject_constant)
            except ValueError as error:
                detail = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
                where = (
                    f" at line {error.lineno} column {error.colno}"
                    if isinstance(error, json.JSONDecodeError)
                    else ""
                )
                return CheckResult("fail", f"{self.field} is not JSON: {detail}{where}")
        else:
            value = raw
        schema = self.schema
        assert not isinstance(schema, str)  # imported in __post_init__
        if schema is None:
            return CheckResult("pass")
        if isinstance(schema, (Mapping, bool)):
            problems = _schema_problems(self._validator, value)
        else:
            problems = _model_problems(schema, value)
        if not problems:
            return CheckResult("pass")
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        return CheckResult(
            "fail", f"{self.field} fails the schema: " + "; ".join(problems[:5]) + more
        )


def _import_model(reference: str) -> type[_PydanticModel]:
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise _ArgumentError(f"{reference!r} is not of the form module:Model", "schema")
    try:
        model = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise _ArgumentError(f"cannot import {reference!r}: {error}", "schema") from None
    if not (isinstance(model, type) and hasattr(model, "model_validate")):
        raise _ArgumentError(f"{reference!r} is not a pydantic model", "schema")
    return model


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _model_problems(model: type[_PydanticModel], value: Any) -> list[str]:
    from pydantic import ValidationError

    try:
        model.model_validate(value)
    except ValidationError as error:
        return [
            "$"
            + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"])
            + f": {e['msg']}"
            for e in error.errors(include_url=False)
        ]
    return []


def _schema_validator(schema: Mapping[str, Any] | bool) -> Any:
    """A Draft 2020-12 validator for an inline schema; a malformed schema fails here, at build time."""
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        where = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
        )
        raise ValueError(f"{where}: invalid JSON Schema: {error.message}") from None
    return jsonschema.Draft202012Validator(schema)


def _schema_problems(validator: Any, value: Any) -> list[str]:
    problems = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
        )
        problems.append(f"{where}: {error.message}")
    return problems


# --------------------------------------------------------------------------- tier 2: metrics


def _rouge_f1(kind: str) -> MetricFunction:
    def metric(prediction: str, references: str | Sequence[str]) -> float:
        return rouge(prediction, references, types=(kind,))[kind].fmeasure

    metric.__name__ = kind
    return metric


_METRICS: dict[str, MetricFunction] = {
    "exact_match": exact_match,
    "token_f1": token_f1,
    "substring_recall": substring_recall,
}
_ROUGE = re.compile(r"rouge(L|[1-9][0-9]*)")


def metric_check_names() -> list[str]:
    """The metric names `MetricCheck` accepts.

    ``exact_match``, ``token_f1`` and ``substring_recall`` are `judgecards.metrics` functions with
    their default (SQuAD) normalisation. ``rouge1``, ``rouge2``, … and ``rougeL`` are the F1
    (``fmeasure``) of `judgecards.metrics.rouge` for that type; any ``rougeN`` with N ≥ 1 works.

    Returns:
        The names, with ``rougeN`` standing for every N.
    """
    return [*_METRICS, "rouge1", "rouge2", "rougeN", "rougeL"]


def _metric_function(metric: str) -> MetricFunction:
    if metric in _METRICS:
        return _METRICS[metric]
    if _ROUGE.fullmatch(metric):
        return _rouge_f1(metric)
    known = ", ".join(metric_check_names())
    raise _ArgumentError(f"unknown metric {metric!r} (known: {known})", "metric")


@dataclass(frozen=True)
class MetricCheck:
    """A deterministic metric of a prediction field against a reference field, with bounds.

    The item fails when the value is below ``min`` or above ``max``; it is accepted (passes now,
    and skips every later tier, the judge included) when the value is within
    ``[accept_min, accept_max]``; otherwise it goes on. All bounds are inclusive and optional,
    but at least one must be given; a value that both fails and is accepted fails.

    Examples: ``MetricCheck("token_f1", min=0.2)`` sends only answers sharing at least a fifth of
    their tokens with the gold on to the judge; ``MetricCheck("exact_match", accept_min=1)``
    passes exact matches without the judge and sends the rest on.

    Args:
        metric: a name from `metric_check_names` (``exact_match``, ``token_f1``,
            ``substring_recall``, ``rouge1``, ``rouge2``, ``rougeL``, …), or any function
            ``(prediction, references) -> float``.
        prediction: the item field with the answer to score (a string).
        reference: the item field with the reference: a string or a non-empty list of strings
            (the best-matching one counts).
        min / max: the item fails outside ``[min, max]``.
        accept_min / accept_max: the item is accepted inside ``[accept_min, accept_max]``.
        name: label in reports and the key of the value in `ItemOutcome.values`; default the
            metric's name.

    Raises:
        ValueError: unknown metric name, no bound, or a lower bound above its upper bound.
    """

    metric: str | MetricFunction
    prediction: str = "model_output"
    reference: str = "gold_answer"
    min: float | None = None
    max: float | None = None
    accept_min: float | None = None
    accept_max: float | None = None
    name: str = ""
    function: MetricFunction = dataclass_field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        function = _metric_function(self.metric) if isinstance(self.metric, str) else self.metric
        object.__setattr__(self, "function", function)
        bounds = (self.min, self.max, self.accept_min, self.accept_max)
        if all(bound is None for bound in bounds):
            raise _ArgumentError(
                "give a bound: 'min'/'max' (fail outside) or 'accept_min'/'accept_max' (pass early inside)",
                "min",
            )
        for low, high in (("min", "max"), ("accept_min", "accept_max")):
            lo, hi = getattr(self, low), getattr(self, high)
            if lo is not None and hi is not None and lo > hi:
                raise _ArgumentError(f"{low} {lo} is greater than {high} {hi}", low)
        if not self.name:
            object.__setattr__(
                self, "name", self.metric if isinstance(self.metric, str) else self.metric.__name__
            )

    def check(self, item: Mapping[str, Any]) -> CheckResult:
        """Compute the metric for one item and compare it with the bounds.

        Args:
            item: one input mapping.

        Returns:
            ``fail``, ``accept`` or ``pass`` with the metric value as ``value`` (and a reason
            naming the bound for fail and accept); ``error`` when a field is missing or of the
            wrong type, or the metric refuses the input (e.g. `substring_recall` with only
            empty references).
        """
        prediction, problem = _text_field(item, self.prediction)
        if problem is not None:
            return problem
        references, problem = _field(item, self.reference)
        if problem is not None:
            return problem
        if not (
            isinstance(references, str)
            or (isinstance(references, list) and all(isinstance(r, str) for r in references))
        ):
            return CheckResult(
                "error", f"field {self.reference!r} must be a string or a list of strings"
            )
        try:
            value = float(self.function(prediction, references))
        except (ValueError, TypeError) as error:
            return CheckResult("error", f"{self.name}: {error}")
        if math.isnan(value):
            return CheckResult("error", f"{self.name} is NaN", value)
        shown = f"{self.name} {_number(value)}"
        if self.min is not None and value < self.min:
            return CheckResult("fail", f"{shown} < min {_number(self.min)}", value)
        if self.max is not None and value > self.max:
            return CheckResult("fail", f"{shown} > max {_number(self.max)}", value)
        above = self.accept_min is None or value >= self.accept_min
        below = self.accept_max is None or value <= self.accept_max
        if (self.accept_min is not None or self.accept_max is not None) and above and below:
            bound = " and ".join(
                f"{key} {_number(bound)}"
                for key, bound in (("accept_min", self.accept_min), ("accept_max", self.accept_max))
                if bound is not None
            )
            return CheckResult(
                "accept", f"{shown} within {bound}: accepted without later tiers", value
            )
        return CheckResult("pass", value=value)


# --------------------------------------------------------------------------- tier 3: the judge


class JudgeCheck:
    """The judge tier: a `judgecards.Judge` run on the items that passed every earlier tier.

    Survivors are judged together with ``Judge.ascore_many`` (at most ``concurrency`` calls in
    flight, results stored and cached as usual). An item passes when the judge's verdict is in
    ``pass_verdicts`` (if given) and every named score is within ``min_scores``/``max_scores``
    (inclusive). A judge error record (invalid output after re-asks, a failed call, a missing
    input) makes the item an ``error``.

    Args:
        judge: the judge (card + model) to run.
        inputs: card input name → item field; card inputs not named here are read from the item
            field of the same name. The item's ``id`` is passed on as the judge's item id.
        pass_verdicts: verdicts that pass, e.g. ``["match", "partial_match"]``.
        min_scores / max_scores: score axis → inclusive bound, e.g. ``{"correctness": 4}``.
        concurrency: judge calls in flight.
        name: the tier's name in reports; default ``judge``.

    Raises:
        ValueError: no pass criterion; an input, verdict or score axis the card does not have.
    """

    def __init__(
        self,
        judge: Judge,
        *,
        inputs: Mapping[str, str] | None = None,
        pass_verdicts: Iterable[str] | None = None,
        min_scores: Mapping[str, float] | None = None,
        max_scores: Mapping[str, float] | None = None,
        concurrency: int = 8,
        name: str = "judge",
    ) -> None:
        card = judge.card
        self.judge = judge
        self.inputs = dict(inputs or {})
        self.pass_verdicts = None if pass_verdicts is None else tuple(pass_verdicts)
        self.min_scores = dict(min_scores or {})
        self.max_scores = dict(max_scores or {})
        self.concurrency = concurrency
        self.name = name
        if concurrency < 1:
            raise _ArgumentError("must be at least 1", "concurrency")
        for key in self.inputs:
            if key not in card.spec.inputs:
                raise _ArgumentError(
                    f"{card.ref} has no input {key!r} (inputs: {', '.join(card.spec.inputs)})",
                    "inputs",
                    key,
                )
        if self.pass_verdicts is None and not self.min_scores and not self.max_scores:
            raise _ArgumentError(
                "say what passes: 'pass_verdicts', 'min_scores' or 'max_scores'", "pass_verdicts"
            )
        verdicts = _card_verdicts(judge)
        if self.pass_verdicts is not None:
            if not self.pass_verdicts:
                raise _ArgumentError("must list at least one verdict", "pass_verdicts")
            for index, verdict in enumerate(self.pass_verdicts):
                if verdicts is not None and verdict not in verdicts:
                    raise _ArgumentError(
                        f"{card.ref} never gives {verdict!r} (verdicts: {', '.join(verdicts)})",
                        "pass_verdicts",
                        index,
                    )
        axes = card.score_axes
        for key, bounds in (("min_scores", self.min_scores), ("max_scores", self.max_scores)):
            for axis in bounds:
                if axes and axis not in axes:
                    raise _ArgumentError(
                        f"{card.ref} has no score {axis!r} (scores: {', '.join(axes)})", key, axis
                    )

    def __repr__(self) -> str:
        return f"JudgeCheck({self.judge!r}, name={self.name!r})"

    def judge_item(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The mapping sent to the judge for one item: its ``id`` and the card's inputs.

        Args:
            item: one input mapping.

        Returns:
            ``{"id": …, card input: item[field], …}``; missing fields are left out, and the judge
            records them as an input error.
        """
        mapped: dict[str, Any] = {"id": item.get("id")}
        for name in self.judge.card.spec.inputs:
            source = self.inputs.get(name, name)
            if item.get(source) is not None:
                mapped[name] = item[source]
        return mapped

    def decide(self, result: JudgeResult) -> CheckResult:
        """Whether one judge result passes.

        Args:
            result: the judge's record for one item.

        Returns:
            ``error`` for an error record or a missing score axis, else ``pass`` or ``fail``
            with every unmet criterion in the reason.
        """
        if result.status != "ok":
            return CheckResult("error", f"judge error ({result.error_kind}): {result.error}")
        reasons = []
        if self.pass_verdicts is not None and result.verdict not in self.pass_verdicts:
            reasons.append(f"verdict {result.verdict!r} is not in {list(self.pass_verdicts)}")
        for axis, bound in self.min_scores.items():
            if axis not in result.scores:
                return CheckResult("error", f"the judge gave no {axis!r} score")
            if result.scores[axis] < bound:
                reasons.append(f"{axis} {_number(result.scores[axis])} < min {_number(bound)}")
        for axis, bound in self.max_scores.items():
            if axis not in result.scores:
                return CheckResult("error", f"the judge gave no {axis!r} score")
            if result.scores[axis] > bound:
                reasons.append(f"{axis} {_number(result.scores[axis])} > max {_number(bound)}")
        if reasons:
            return CheckResult("fail", "; ".join(reasons))
        return CheckResult(
            "pass", f"verdict {result.verdict!r}" if result.verdict is not None else None
        )


def _card_verdicts(judge: Judge) -> list[str] | None:
    """Every verdict the card's rules can give, or None when the judge's own verdict is kept."""
    spec = judge.card.spec.verdict
    if spec is None or not spec.rules:
        return None
    verdicts = [rule.then for rule in spec.rules]
    if spec.otherwise is not None:
        verdicts.append(spec.otherwise)
    return list(dict.fromkeys(verdicts))


# --------------------------------------------------------------------------- the pipeline


@dataclass(frozen=True)
class Tier:
    """A named group of deterministic checks; an item must pass all of them.

    Args:
        name: the tier's name in reports (unique within a `TieredEval`).
        checks: the checks, each applied to every item that reaches the tier.
    """

    name: str
    checks: Sequence[Check]

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(self.checks))
        if not self.checks:
            raise ValueError(f"tier {self.name!r} has no checks")


@dataclass(frozen=True)
class ItemOutcome:
    """The final outcome of one input item.

    Attributes:
        index: the item's 0-based position in the input.
        id: the item's ``id`` field as a string, if it has one.
        outcome: ``pass``, ``fail`` or ``error``.
        tier: the name of the tier that decided it (the last tier for an item that passed all).
        tier_number: that tier's 1-based position.
        accepted: passed early by an ``accept`` result, skipping the later tiers.
        reasons: why, from the deciding tier: every failed or erroring check's reason, or the
            accepting metric, or the judge's verdict.
        values: metric values computed on the way, by check name.
        judge: the judge's record, for items that reached the judge.
    """

    index: int
    id: str | None
    outcome: Outcome
    tier: str
    tier_number: int
    accepted: bool = False
    reasons: tuple[str, ...] = ()
    values: Mapping[str, float] = dataclass_field(default_factory=dict)
    judge: JudgeResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready row: every attribute, the judge record reduced to its decision fields."""
        row: dict[str, Any] = {
            "index": self.index, "id": self.id, "outcome": self.outcome, "tier": self.tier,
            "tier_number": self.tier_number, "accepted": self.accepted, "reasons": list(self.reasons),
            "values": dict(self.values), "judge": None,
        }  # fmt: skip
        if self.judge is not None:
            row["judge"] = self.judge.model_dump(
                mode="json",
                include={
                    "id",
                    "status",
                    "verdict",
                    "scores",
                    "model_verdict",
                    "card",
                    "model",
                    "cached",
                    "error_kind",
                    "error",
                    "usage",
                },
            )
        return row


@dataclass(frozen=True)
class TierStats:
    """Counts for one tier. ``items_in == passed + accepted + failed + errors``.

    Attributes:
        name: the tier's name.
        number: its 1-based position.
        kind: ``checks`` (deterministic) or ``judge``.
        items_in: items that reached the tier.
        passed: items that went on to the next tier (after the last tier: passed).
        accepted: items passed early here, skipping the later tiers.
        failed: items that failed here.
        errors: items the tier could not decide.
    """

    name: str
    number: int
    kind: Literal["checks", "judge"]
    items_in: int
    passed: int
    accepted: int
    failed: int
    errors: int


@dataclass(frozen=True)
class TieredReport:
    """What a `TieredEval` run did, per tier and per item.

    Attributes:
        items: one `ItemOutcome` per input item, in input order.
        tiers: one `TierStats` per tier, in order.
        judge_card / judge_model: the judge tier's card (``name@version``) and model, if any.
        judged: items sent to the judge (None without a judge tier).
        judge_calls_saved: items not sent to the judge, each a judgment not paid for:
            ``len(items) - judged`` (None without a judge tier). Counted per item; re-asks and
            transport retries the skipped items might have needed are not included.
        served_from_cache: judged items answered from the store or response cache, no call.
        estimated_tokens_avoided: ``judge_calls_saved`` times the mean tokens (input + output)
            of the judged items that made a call; None when none did.
    """

    items: tuple[ItemOutcome, ...]
    tiers: tuple[TierStats, ...]
    judge_card: str | None = None
    judge_model: str | None = None
    judged: int | None = None
    judge_calls_saved: int | None = None
    served_from_cache: int = 0
    estimated_tokens_avoided: int | None = None

    def count(self, outcome: Outcome) -> int:
        """Items with this final outcome.

        Args:
            outcome: ``pass``, ``fail`` or ``error``.

        Returns:
            How many items ended so.
        """
        return sum(1 for item in self.items if item.outcome == outcome)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data: totals, the judge section, tiers and every item."""
        judge = None
        if self.judge_card is not None:
            judge = {
                "card": self.judge_card, "model": self.judge_model,
                "mock": bool(self.judge_model and self.judge_model.startswith("mock:")),
                "judged": self.judged, "calls_saved": self.judge_calls_saved,
                "served_from_cache": self.served_from_cache,
                "estimated_tokens_avoided": self.estimated_tokens_avoided,
            }  # fmt: skip
        tiers = []
        for stats in self.tiers:
            decided = [
                i for i in self.items if i.tier_number == stats.number and i.outcome != "pass"
            ]
            tiers.append({
                "name": stats.name, "number": stats.number, "kind": stats.kind, "in": stats.items_in,
                "passed": stats.passed, "accepted": stats.accepted, "failed": stats.failed, "errors": stats.errors,
                "failures": [{"index": i.index, "id": i.id, "outcome": i.outcome, "reasons": list(i.reasons)} for i in decided],
            })  # fmt: skip
        return {
            "items": len(self.items),
            "passed": self.count("pass"),
            "failed": self.count("fail"),
            "errors": self.count("error"),
            "judge": judge,
            "tiers": tiers,
            "results": [item.to_dict() for item in self.items],
        }

    def as_text(self, *, max_listed: int = 20) -> str:
        """A table of the tiers, the totals, the judge savings and the failed items' reasons.

        Args:
            max_listed: failed or erroring items listed with their reasons; the rest are counted.

        Returns:
            Plain text for a terminal.
        """
        header = ("#", "tier", "kind", "in", "passed", "accepted", "failed", "errors")
        rows = [header] + [
            (
                str(s.number),
                s.name,
                s.kind,
                str(s.items_in),
                str(s.passed),
                str(s.accepted),
                str(s.failed),
                str(s.errors),
            )
            for s in self.tiers
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = [
            "  ".join(
                cell.ljust(w) if i in (1, 2) else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths))
            )
            for row in rows
        ]
        total = len(self.items)
        lines.append("")
        errors = self.count("error")
        lines.append(
            f"{total} items: {self.count('pass')} passed, {self.count('fail')} failed, "
            f"{errors} {'error' if errors == 1 else 'errors'}"
        )
        if self.judge_calls_saved is not None:
            share = f" ({self.judge_calls_saved / total:.0%})" if total else ""
            lines.append(
                f"judge {self.judge_card} on {self.judge_model}: {self.judged} of {total} items judged, "
                f"{self.judge_calls_saved} judge calls saved{share}, {self.served_from_cache} served from cache"
            )
            if self.estimated_tokens_avoided is not None:
                lines.append(
                    f"estimated tokens avoided: ~{self.estimated_tokens_avoided:,} (mean usage of the judged items)"
                )
        decided = [i for i in self.items if i.outcome != "pass"]
        if decided:
            lines.append("")
            lines.append("failed and errors:")
            for item in decided[:max_listed]:
                label = item.id if item.id is not None else f"#{item.index}"
                lines.append(f"  {label}  {item.outcome} at {item.tier}: {'; '.join(item.reasons)}")
            if len(decided) > max_listed:
                lines.append(f"  … and {len(decided) - max_listed} more")
        return "\n".join(lines)


_Stage = Tier | JudgeCheck
_PRECEDENCE: tuple[CheckStatus, ...] = ("fail", "error", "accept")
_OUTCOMES: dict[CheckStatus, Outcome] = {
    "pass": "pass",
    "accept": "pass",
    "fail": "fail",
    "error": "error",
}


class TieredEval:
    """Run tiers of checks in order; each tier sees only the items the earlier tiers passed on.

    Example::

        from judgecards import Judge
        from judgecards.metrics import JudgeCheck, LengthCheck, MetricCheck, RegexCheck, Tier, TieredEval

        pipeline = TieredEval([
            Tier("format", [RegexCheck("model_output", forbid=r"(?i)\\bas an ai\\b"), LengthCheck("model_output", max=2000)]),
            Tier("metric", [MetricCheck("exact_match", accept_min=1), MetricCheck("token_f1", min=0.1)]),
            JudgeCheck(Judge("reference", "openai:gpt-4o"), pass_verdicts=["match", "partial_match"]),
        ])
        report = pipeline.run(items)
        print(report.as_text())

    Args:
        tiers: in order. Each is a `Tier`, a single check (a one-check tier named after it), or a
            `JudgeCheck`, which must be the last and only judge tier.

    Raises:
        ValueError: no tiers, a judge tier that is not last, duplicate tier names, or two metric
            checks with the same name.
    """

    def __init__(self, tiers: Sequence[Tier | Check | JudgeCheck]) -> None:
        stages: list[_Stage] = []
        for tier in tiers:
            if isinstance(tier, (Tier, JudgeCheck)):
                stages.append(tier)
            elif isinstance(tier, Check):
                stages.append(Tier(tier.name, [tier]))
            else:
                raise TypeError(
                    f"a tier must be a Tier, a check or a JudgeCheck, not {type(tier).__name__}"
                )
        if not stages:
            raise ValueError("a TieredEval needs at least one tier")
        for position, stage in enumerate(stages):
            if isinstance(stage, JudgeCheck) and position != len(stages) - 1:
                raise _ArgumentError("the judge tier must be the last tier", position)
        names = [stage.name for stage in stages]
        for position, name in enumerate(names):
            if name in names[:position]:
                raise _ArgumentError(f"two tiers are named {name!r}", position, "name")
        seen: set[str] = set()
        for stage in stages:
            for check in stage.checks if isinstance(stage, Tier) else ():
                if isinstance(check, MetricCheck):
                    if check.name in seen:
                        raise ValueError(
                            f"two metric checks are named {check.name!r}; give one a distinct name"
                        )
                    seen.add(check.name)
        self.tiers: tuple[_Stage, ...] = tuple(stages)

    @property
    def judge(self) -> JudgeCheck | None:
        """The judge tier, if there is one."""
        last = self.tiers[-1]
        return last if isinstance(last, JudgeCheck) else None

    def run(
        self, items: Iterable[Mapping[str, Any]], *, progress: Progress | None = None
    ) -> TieredReport:
        """Evaluate every item; the judge is called only for the survivors of the earlier tiers.

        Args:
            items: input mappings (e.g. parsed JSONL lines); an ``id`` field is optional and is
                reported and passed to the judge.
            progress: called as ``progress(done, total, result)`` after each judged item.

        Returns:
            A `TieredReport` with one outcome per item, in input order.

        Raises:
            RuntimeError: called inside a running event loop; use `arun` there.
            TransportError: the judge's credentials were refused (every item would fail).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(items, progress=progress))
        raise RuntimeError(
            "TieredEval.run() cannot run inside an event loop; use `await pipeline.arun(...)`"
        )

    async def arun(
        self, items: Iterable[Mapping[str, Any]], *, progress: Progress | None = None
    ) -> TieredReport:
        """Async twin of `run`.

        Args:
            items: input mappings.
            progress: as in `run`.

        Returns:
            A `TieredReport`.
        """
        rows = list(items)
        values: list[dict[str, float]] = [{} for _ in rows]
        final: dict[int, ItemOutcome] = {}
        stats: list[TierStats] = []
        judged: list[JudgeResult] = []
        last = len(self.tiers)
        for number, stage in enumerate(self.tiers, start=1):
            alive = [index for index in range(len(rows)) if index not in final]
            decisions: list[tuple[CheckStatus, list[str]]] = []
            judge_results: list[JudgeResult | None] = [None] * len(alive)
            if isinstance(stage, JudgeCheck):
                batch = [stage.judge_item(rows[index]) for index in alive]
                if batch:
                    judged = await stage.judge.ascore_many(
                        batch, concurrency=stage.concurrency, progress=progress
                    )
                judge_results = list(judged)
                for judgment in judged:
                    decision = stage.decide(judgment)
                    decisions.append(
                        (decision.status, [decision.reason] if decision.reason else [])
                    )
            else:
                for index in alive:
                    decisions.append(_apply_tier(stage, rows[index], values[index]))
            counts = {"pass": 0, "accept": 0, "fail": 0, "error": 0}
            for index, (status, reasons), result in zip(alive, decisions, judge_results):
                counts[status] += 1
                if status == "pass" and number < last:
                    continue
                final[index] = ItemOutcome(
                    index=index,
                    id=None if rows[index].get("id") is None else str(rows[index]["id"]),
                    outcome=_OUTCOMES[status],
                    tier=stage.name,
                    tier_number=number,
                    accepted=status == "accept",
                    reasons=tuple(reasons),
                    values=values[index],
                    judge=result,
                )
            stats.append(TierStats(
                name=stage.name, number=number, kind="judge" if isinstance(stage, JudgeCheck) else "checks",
                items_in=len(alive), passed=counts["pass"], accepted=counts["accept"],
                failed=counts["fail"], errors=counts["error"],
            ))  # fmt: skip
        outcomes = tuple(final[index] for index in range(len(rows)))
        judge_tier = self.judge
        if judge_tier is None:
            return TieredReport(items=outcomes, tiers=tuple(stats))
        saved = len(rows) - stats[-1].items_in
        called = [
            r for r in judged if not r.cached and r.usage.input_tokens + r.usage.output_tokens > 0
        ]
        estimate = None
        if called:
            mean = sum(r.usage.input_tokens + r.usage.output_tokens for r in called) / len(called)
            estimate = round(mean * saved)
        return TieredReport(
            items=outcomes,
            tiers=tuple(stats),
            judge_card=judge_tier.judge.card.ref,
            judge_model=judge_tier.judge.model,
            judged=stats[-1].items_in,
            judge_calls_saved=saved,
            served_from_cache=sum(1 for r in judged if r.cached),
            estimated_tokens_avoided=estimate,
        )


def _apply_tier(
    tier: Tier, item: Mapping[str, Any], values: dict[str, float]
) -> tuple[CheckStatus, list[str]]:
    """Every check of the tier on one item, combined: fail > error > accept > pass."""
    results: list[CheckResult] = []
    for check in tier.checks:
        try:
            result = check.check(item)
        except Exception as error:
            result = CheckResult("error", f"{check.name} raised {type(error).__name__}: {error}")
        results.append(result)
        if isinstance(check, MetricCheck) and result.value is not None:
            values[check.name] = result.value
    for status in _PRECEDENCE:
        chosen = [r.reason or status for r in results if r.status == status]
        if chosen:
            return status, list(dict.fromkeys(chosen))
    return "pass", []
