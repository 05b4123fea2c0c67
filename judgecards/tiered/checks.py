"""The deterministic checks of a tiered evaluation: format (regex, length, JSON) and metrics.

Each check gives one item one `CheckResult`: ``pass``, ``accept`` (metrics only: pass now and
skip the later tiers), ``fail`` or ``error`` (the check could not be applied). A check should
return an ``error`` result rather than raise. `judgecards.tiered.pipeline` runs them in tiers.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Literal, Protocol, runtime_checkable

from judgecards.metrics.rouge import rouge
from judgecards.metrics.text import exact_match, substring_recall, token_f1

__all__ = [
    "Check",
    "CheckArgumentError",
    "CheckResult",
    "CheckStatus",
    "JsonCheck",
    "LengthCheck",
    "MetricCheck",
    "RegexCheck",
    "format_number",
    "metric_check_names",
]

CheckStatus = Literal["pass", "accept", "fail", "error"]
MetricFunction = Callable[[str, "str | Sequence[str]"], float]

_SHOWN = 60  # characters of a value quoted in a reason


class CheckArgumentError(ValueError):
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


def format_number(value: float) -> str:
    """A metric value or bound as shown in reasons (four significant digits)."""
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
            raise CheckArgumentError("give a 'match' pattern, a 'forbid' pattern, or both", "match")
        for key in ("match", "forbid"):
            pattern = getattr(self, key)
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as error:
                    raise CheckArgumentError(f"invalid regular expression: {error}", key) from None
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
            raise CheckArgumentError("give 'min', 'max' or both", "min")
        for key in ("min", "max"):
            bound = getattr(self, key)
            if bound is not None and bound < 0:
                raise CheckArgumentError("must not be negative", key)
        if self.min is not None and self.max is not None and self.min > self.max:
            raise CheckArgumentError(f"min {self.min} is greater than max {self.max}", "min")
        if self.unit not in ("chars", "words"):
            raise CheckArgumentError("must be 'chars' or 'words'", "unit")
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
                raise CheckArgumentError(str(error), "schema") from None
        elif self.schema is not None and not hasattr(self.schema, "model_validate"):
            raise CheckArgumentError(
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
    # The rule cards follow: judgecards.schemas and JUDGECARDS_SCHEMA_MODULES only, decided
    # before anything runs (a config may come with the items, from anywhere).
    from judgecards.cards import import_schema_model

    try:
        return import_schema_model(reference)
    except ValueError as error:
        raise CheckArgumentError(f"cannot import {reference!r}: {error}", "schema") from None


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
    raise CheckArgumentError(f"unknown metric {metric!r} (known: {known})", "metric")


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
            raise CheckArgumentError(
                "give a bound: 'min'/'max' (fail outside) or 'accept_min'/'accept_max' (pass early inside)",
                "min",
            )
        for low, high in (("min", "max"), ("accept_min", "accept_max")):
            lo, hi = getattr(self, low), getattr(self, high)
            if lo is not None and hi is not None and lo > hi:
                raise CheckArgumentError(f"{low} {lo} is greater than {high} {hi}", low)
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
        shown = f"{self.name} {format_number(value)}"
        if self.min is not None and value < self.min:
            return CheckResult("fail", f"{shown} < min {format_number(self.min)}", value)
        if self.max is not None and value > self.max:
            return CheckResult("fail", f"{shown} > max {format_number(self.max)}", value)
        above = self.accept_min is None or value >= self.accept_min
        below = self.accept_max is None or value <= self.accept_max
        if (self.accept_min is not None or self.accept_max is not None) and above and below:
            bound = " and ".join(
                f"{key} {format_number(bound)}"
                for key, bound in (("accept_min", self.accept_min), ("accept_max", self.accept_max))
                if bound is not None
            )
            return CheckResult(
                "accept", f"{shown} within {bound}: accepted without later tiers", value
            )
        return CheckResult("pass", value=value)
