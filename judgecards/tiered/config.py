"""The config of ``judgecards eval``: a YAML or TOML file naming the items and the tiers.

The config names a JSONL file of items and the tiers, in order; the judge, if any, is the last
tier and sees only the items every earlier tier passed (`judgecards.tiered`)::

    items: reference_items.jsonl        # JSONL, one object with a unique "id" per line;
                                        # relative paths are read from the config's directory
    tiers:
      - name: format                    # optional; default "tier N" ("judge" for the judge)
        checks:                         # an item must pass every check of a tier
          - {type: regex, field: model_output, forbid: "(?i)as an ai language model"}
          - {type: length, field: model_output, min: 1, max: 2000, unit: chars}
          - {type: json, field: model_output, schema: {type: object, required: [answer]}}
      - name: metric
        checks:
          - {type: metric, metric: exact_match, accept_min: 1}   # exact matches skip the judge
          - {type: metric, metric: token_f1, min: 0.1}           # near-zero overlap fails
      - name: judge
        judge:
          card: reference               # name or name@version
          model: openai:gpt-4o          # or mock:judge for an offline dry run
          inputs: {gold_answer: gold_answer}   # card input -> item field (default: same name)
          pass_verdicts: [match, partial_match]
          min_scores: {correctness: 3}
          concurrency: 8

Keys are exactly the arguments of the check classes (`RegexCheck`, `LengthCheck`, `JsonCheck`,
`MetricCheck`, `JudgeCheck`); a ``json`` check's ``schema`` may also be ``"module:Model"``. The
judge section also takes ``max_attempts``, ``cache``, ``cards_dir``, ``base_url``, ``timeout``,
``output_mode`` and ``max_tokens`` (`judgecards.Judge`'s arguments).
Unknown keys are errors, and every error names the config file, the line and the key. TOML configs
use the same keys (``[[tiers]]``, ``[[tiers.checks]]``, ``[tiers.judge]``); they need Python 3.11+
or the ``tomli`` package, and their error lines are found by a best-effort scan of the text (`_toml_lines`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judgecards.cards import DEFAULT_MAX_INPUT_CHARS
from judgecards.errors import CardNotFound, InputError
from judgecards.judging import read_items as read_checked_items
from judgecards.tiered._toml_lines import toml_key_lines
from judgecards.tiered.checks import JsonCheck, LengthCheck, MetricCheck, RegexCheck
from judgecards.tiered.pipeline import JudgeCheck, Tier, TieredEval

if TYPE_CHECKING:
    from judgecards.judging import Judge
    from judgecards.limits import PriceTable
    from judgecards.storage import Store

__all__ = [
    "ConfigSource",
    "EvalConfig",
    "build_pipeline",
    "check_fields",
    "load_config",
    "read_items",
]

_SHOWN_PROBLEMS = 20

# --------------------------------------------------------------------------- the config file


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _RegexSpec(_Strict):
    type: Literal["regex"]
    name: str | None = None
    field: str
    match: str | None = None
    forbid: str | None = None


class _LengthSpec(_Strict):
    type: Literal["length"]
    name: str | None = None
    field: str
    min: int | None = None
    max: int | None = None
    unit: Literal["chars", "words"] = "chars"


class _JsonSpec(_Strict):
    type: Literal["json"]
    name: str | None = None
    field: str
    schema_: dict[str, Any] | bool | str | None = Field(default=None, alias="schema")


class _MetricSpec(_Strict):
    type: Literal["metric"]
    name: str | None = None
    metric: str
    prediction: str = "model_output"
    reference: str = "gold_answer"
    min: float | None = None
    max: float | None = None
    accept_min: float | None = None
    accept_max: float | None = None


_CheckSpec = Annotated[
    _RegexSpec | _LengthSpec | _JsonSpec | _MetricSpec, Field(discriminator="type")
]


class _JudgeSpec(_Strict):
    card: str
    model: str
    inputs: dict[str, str] = {}
    pass_verdicts: list[str] | None = None
    min_scores: dict[str, float] = {}
    max_scores: dict[str, float] = {}
    concurrency: int = Field(default=8, ge=1, le=1024)
    max_attempts: int = Field(default=3, ge=1, le=20)
    cache: bool = True
    cards_dir: str | list[str] | None = None
    base_url: str | None = None
    timeout: float = Field(default=60.0, gt=0)
    output_mode: Literal["auto", "native", "prompt"] | None = None
    max_tokens: int | None = Field(default=None, gt=0)


class _TierSpec(_Strict):
    name: str | None = None
    checks: list[_CheckSpec] | None = Field(default=None, min_length=1)
    judge: _JudgeSpec | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> _TierSpec:
        if (self.checks is None) == (self.judge is None):
            raise ValueError(
                "a tier has either 'checks' (a list) or a 'judge' section, not both or neither"
            )
        return self


class EvalConfig(_Strict):
    """A validated ``judgecards eval`` config (see the module docstring)."""

    items: str
    tiers: list[_TierSpec] = Field(min_length=1)


class ConfigSource:
    """A parsed config file and the means to turn an error location into a line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: Any = None
        self._yaml: Any = None  # judgecards.safe_yaml.YamlDocument, for YAML configs
        self._toml_lines: dict[tuple[str, ...], int] | None = None
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"cannot read the config: {error}", file=path) from None
        suffix = path.suffix.lower()
        if suffix in (".yaml", ".yml"):
            self._parse_yaml(text)
        elif suffix == ".toml":
            self._parse_toml(text)
        else:
            raise InputError("a config must be YAML (.yaml, .yml) or TOML (.toml)", file=path)
        if not isinstance(self.data, dict):
            raise InputError(
                "the config must be a mapping with 'items' and 'tiers'", file=path, line=1
            )

    def _parse_yaml(self, text: str) -> None:
        # The one bounded loader cards use too: an alias bomb in an inline schema is refused.
        from judgecards.safe_yaml import load_yaml

        self._yaml = load_yaml(text, file=self.path, error=InputError)
        self.data = self._yaml.data

    def _parse_toml(self, text: str) -> None:
        try:
            toml = importlib.import_module("tomllib")
        except ImportError:
            try:
                toml = importlib.import_module("tomli")
            except ImportError:
                raise InputError(
                    "TOML configs need Python 3.11+ or the tomli package (pip install tomli); "
                    "or write the config in YAML",
                    file=self.path,
                ) from None
        try:
            self.data = toml.loads(text)
        except toml.TOMLDecodeError as error:
            message = str(error)
            found = re.search(r"\s*\(at line (\d+), column (\d+)\)", message)
            line = int(found.group(1)) if found else None
            if found:
                message = f"{message[: found.start()]} at column {found.group(2)}"
            raise InputError(f"invalid TOML: {message}", file=self.path, line=line) from None
        self._toml_lines = toml_key_lines(text)

    def error(self, message: str, loc: Sequence[str | int]) -> InputError:
        """An InputError naming this file, the line of ``loc`` and ``loc`` as a dotted field."""
        path = [str(part) for part in loc]
        return InputError(
            message, file=self.path, line=self.line_of(path), field=".".join(path) or None
        )

    def line_of(self, path: Sequence[str]) -> int | None:
        if self._toml_lines is not None:
            for end in range(len(path), -1, -1):
                if tuple(path[:end]) in self._toml_lines:
                    return self._toml_lines[tuple(path[:end])]
            return None
        return self._yaml.line_of(path) if self._yaml is not None else None


def _clean_loc(data: Any, loc: Sequence[str | int]) -> list[str]:
    """Pydantic's error location as config keys, without the union tag it puts after a check's
    index (``tiers.0.checks.1.regex.field`` → ``tiers.0.checks.1.field``)."""
    out: list[str] = []
    current = data
    in_check = False
    for part in loc:
        if in_check and isinstance(current, dict) and current.get("type") == part:
            in_check = False
            continue
        in_check = False
        if isinstance(current, dict) and str(part) in current:
            current = current[str(part)]
        elif isinstance(current, list) and isinstance(part, int) and part < len(current):
            in_check = out[-1:] == ["checks"]
            current = current[part]
        else:
            current = None
        out.append(str(part))
    return out


def _pydantic_message(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    loc = error["loc"]
    if kind == "extra_forbidden":
        return f"unknown key {loc[-1]!r}"
    if kind == "missing":
        return f"missing key {loc[-1]!r}"
    if kind == "union_tag_not_found":
        return "each check needs a 'type': regex, length, json or metric"
    if kind == "union_tag_invalid":
        return f"unknown check type {error['input'].get('type')!r} (types: regex, length, json, metric)"
    message: str = error["msg"]
    return message.removeprefix("Value error, ")


def load_config(path: Path) -> tuple[EvalConfig, ConfigSource]:
    """Read and validate a config; errors name the file, the line and the key.

    Raises:
        InputError: unreadable, unparsable or invalid config.
    """
    source = ConfigSource(path)
    try:
        return EvalConfig.model_validate(source.data), source
    except ValidationError as error:
        problems = [
            source.error(_pydantic_message(e), _clean_loc(source.data, e["loc"]))
            for e in error.errors(include_url=False)
        ]
    if len(problems) == 1:
        raise problems[0]
    raise _combined(problems, path, "problem(s) in the config")


def _combined(problems: Sequence[InputError], path: Path, what: str) -> InputError:
    shown = "\n".join(f"  {p}" for p in problems[:_SHOWN_PROBLEMS])
    more = (
        f"\n  … and {len(problems) - _SHOWN_PROBLEMS} more"
        if len(problems) > _SHOWN_PROBLEMS
        else ""
    )
    return InputError(f"{len(problems)} {what}:\n{shown}{more}", file=path)


# --------------------------------------------------------------------------- building the pipeline


def build_pipeline(
    config: EvalConfig,
    source: ConfigSource,
    *,
    db: Store | Path | None = None,
    model: str | None = None,
    max_input_chars: int | None = DEFAULT_MAX_INPUT_CHARS,
    prices: PriceTable | None = None,
    judge_output: Mapping[str, Any] | None = None,
    stand_in: bool = False,
) -> TieredEval:
    """The `TieredEval` a config describes; the judge, if any, stores its results in ``db``.

    ``model`` (``judgecards eval --model``) replaces every judge tier's model, so one config runs
    offline on ``mock:judge`` and for real without editing it. A judge tier's ``base_url`` is kept
    when the replacement uses the same provider, and dropped when it names another (the URL
    belongs to the configured provider's server). ``max_input_chars`` is every judge's per-input
    limit (`judgecards.Judge`; ``None``: none): a longer input makes that item an error record.
    ``prices`` (``--prices``) prices every judge's results (else the shipped table and
    ``JUDGECARDS_PRICES``). ``judge_output`` (``--set``) overrides every judge tier's ``output_mode``,
    ``max_tokens`` and ``top_logprobs``. ``stand_in`` (``eval --plan``) gives every
    judge the offline stand-in provider (`judgecards.judging.replay`): no API key, no call possible.

    Raises:
        InputError: a check, card or judge setting the config names is invalid (with its line),
            or ``model`` is given for a config without a judge tier.
        JudgecardsError: the judge's provider cannot be set up (e.g. no API key).
    """
    classes: dict[str, Any] = {
        "regex": RegexCheck,
        "length": LengthCheck,
        "json": JsonCheck,
        "metric": MetricCheck,
    }
    if model is not None and not any(tier.judge is not None for tier in config.tiers):
        raise source.error(
            f"--model {model} replaces the judge tier's model, but the config has no judge tier",
            ("tiers",),
        )
    base = source.path.parent
    overrides = _JudgeOverrides(db, model, max_input_chars, prices, judge_output, stand_in)
    stages: list[Any] = []
    for position, tier in enumerate(config.tiers):
        if tier.judge is not None:
            loc: tuple[str | int, ...] = ("tiers", position, "judge")
            judge = _build_judge(tier.judge, source, loc, base, overrides)
            try:
                stages.append(
                    JudgeCheck(
                        judge,
                        inputs=tier.judge.inputs,
                        pass_verdicts=tier.judge.pass_verdicts,
                        min_scores=tier.judge.min_scores,
                        max_scores=tier.judge.max_scores,
                        concurrency=tier.judge.concurrency,
                        name=tier.name or "judge",
                    )
                )
            except ValueError as error:
                raise source.error(str(error), (*loc, *getattr(error, "path", ()))) from None
            continue
        checks = []
        for index, spec in enumerate(tier.checks or ()):
            arguments = spec.model_dump(exclude={"type"}, exclude_none=True, by_alias=True)
            try:
                checks.append(classes[spec.type](**arguments))
            except ValueError as error:
                raise source.error(
                    str(error), ("tiers", position, "checks", index, *getattr(error, "path", ()))
                ) from None
        stages.append(Tier(tier.name or f"tier {position + 1}", checks))
    try:
        return TieredEval(stages)
    except ValueError as error:
        raise source.error(str(error), ("tiers", *getattr(error, "path", ()))) from None


@dataclass(frozen=True)
class _JudgeOverrides:
    """What `build_pipeline`'s caller (``judgecards eval``'s options) sets for every judge tier."""

    db: Store | Path | None
    model: str | None
    max_input_chars: int | None
    prices: PriceTable | None
    judge_output: Mapping[str, Any] | None
    stand_in: bool


def _build_judge(
    spec: _JudgeSpec,
    source: ConfigSource,
    loc: tuple[str | int, ...],
    base: Path,
    overrides: _JudgeOverrides,
) -> Judge:
    from judgecards.judging import Judge, replay_stand_in

    model, prices = overrides.model, overrides.prices
    directories = [spec.cards_dir] if isinstance(spec.cards_dir, str) else spec.cards_dir
    options: dict[str, Any] = {
        "timeout": spec.timeout,
        "max_input_chars": overrides.max_input_chars,
    }
    chosen = {"output_mode": spec.output_mode, "max_tokens": spec.max_tokens}
    options.update({name: value for name, value in chosen.items() if value is not None})
    options.update(overrides.judge_output or {})  # --set top_logprobs=0 is None: "off", kept
    if prices is not None:
        options["prices"] = prices
    same_provider = model is None or model.partition(":")[0] == spec.model.partition(":")[0]
    if spec.base_url and same_provider:
        options["base_url"] = spec.base_url
    if overrides.stand_in:
        options["provider"] = replay_stand_in(model or spec.model)
    try:
        return Judge(
            spec.card,
            model or spec.model,
            db=overrides.db,
            cache=spec.cache,
            max_attempts=spec.max_attempts,
            cards_dir=[base / d for d in directories] if directories is not None else None,
            **options,
        )
    except CardNotFound as error:
        key = "cards_dir" if error.file is not None else "card"
        raise source.error(
            f"{error.reason}" + (f": {error.file}" if error.file else ""), (*loc, key)
        ) from None


def read_items(path: Path, source: ConfigSource) -> list[dict[str, Any]]:
    """Every line of the items file, checked: JSON objects with a unique, non-empty ``id``.

    Raises:
        InputError: the file is missing (naming the config line) or has bad lines (all listed).
    """
    if not path.is_file():
        raise source.error(f"items file not found: {path}", ("items",))
    return read_checked_items(path, action="nothing was evaluated", shown=_SHOWN_PROBLEMS)


def check_fields(
    config: EvalConfig,
    source: ConfigSource,
    pipeline: TieredEval,
    items: Sequence[Mapping[str, Any]],
    items_path: Path,
) -> None:
    """A field that no item has is a typo in the config, not a property of the data: refuse it.

    (A field missing from only some items makes those items errors in the report.)
    """
    present = set().union(*(item.keys() for item in items))
    wanted: list[tuple[str, tuple[str | int, ...]]] = []
    for position, tier in enumerate(config.tiers):
        for index, spec in enumerate(tier.checks or ()):
            loc: tuple[str | int, ...] = ("tiers", position, "checks", index)
            if isinstance(spec, _MetricSpec):
                wanted += [
                    (spec.prediction, (*loc, "prediction")),
                    (spec.reference, (*loc, "reference")),
                ]
            else:
                wanted.append((spec.field, (*loc, "field")))
    judge = pipeline.judge
    if judge is not None:
        loc = ("tiers", len(config.tiers) - 1, "judge")
        for name, input_spec in judge.judge.card.spec.inputs.items():
            if input_spec.required:
                source_field = judge.inputs.get(name, name)
                wanted.append(
                    (
                        source_field,
                        (*loc, "inputs", name) if name in judge.inputs else (*loc, "card"),
                    )
                )
    for field_name, loc in wanted:
        if field_name not in present:
            known = ", ".join(sorted(present))
            hint = (
                "" if loc[-1] != "card" else " (map a card input to an item field under 'inputs')"
            )
            raise source.error(
                f"no item in {items_path} has a field {field_name!r} (fields: {known}){hint}", loc
            )
