"""Judge cards: versioned prompts with front-matter, validated on load, addressed as ``name@version``.

A card file is YAML front-matter between ``---`` lines followed by a Jinja body (see
``prompts/reference/v1.md.j2``). Built-in cards ship inside the wheel (``judgecards/_cards``) and
come from ``prompts/`` in a source checkout; users add directories with ``cards_dir=``,
``--cards-dir`` or ``JUDGECARDS_CARDS_DIR`` (``os.pathsep``-separated).

Released versions are immutable: each card directory may hold a ``cards.lock`` with one line per
released version, ``name@version sha256:<hex>``. The hash is over the file's bytes with line
endings normalised to LF. Loading a locked card whose text changed raises `CardLockMismatch`;
a card absent from the lock loads as unreleased (``Card.released is False``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.resources
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from judgecards.errors import CardError, CardLockMismatch, CardNotFound, CardValidationError

__all__ = [
    "CARD_SUFFIX",
    "Card",
    "CardLibrary",
    "card_hash",
    "list_cards",
    "load_card",
]

CARD_SUFFIX = ".md.j2"
LOCK_FILE = "cards.lock"
CARDS_DIR_ENV = "JUDGECARDS_CARDS_DIR"
# Names a card body may use without declaring them as inputs.
INJECTED_VARIABLES = frozenset({"output_schema"})


# --------------------------------------------------------------------------- front-matter models


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Strict):
    """One input variable of a card."""

    description: str = ""
    required: bool = True


class OutputSpec(_Strict):
    """What the judge must reply and how its numbers are read.

    ``format: json`` validates a JSON object against ``schema`` (``module:Model`` or an inline
    JSON Schema). ``format: final_token`` reads the last line matching ``line`` (e.g.
    ``"Rating: [[{value}]]"``) as an integer in ``[min, max]``, as MT-Bench does. ``scores``
    lists dotted paths to the numeric axes; each axis is named by the last path component.
    """

    format: Literal["json", "final_token"] = "json"
    schema_: str | dict[str, Any] | None = Field(default=None, alias="schema")
    line: str | None = None
    field: str = "rating"
    min: int | None = None
    max: int | None = None
    scores: list[str] = []


class Bound(_Strict):
    min: float | None = None
    max: float | None = None


class VerdictRule(_Strict):
    when: dict[str, Bound]
    then: str


class VerdictSpec(_Strict):
    """How the verdict is decided in code. First matching rule wins; no rules → the model's own."""

    field: str | None = None
    rules: list[VerdictRule] = []
    otherwise: str | None = None


class Defaults(_Strict):
    temperature: float | None = 0.0
    max_tokens: int = Field(default=1024, gt=0)
    top_logprobs: int | None = Field(default=None, ge=0, le=20)


class FrontMatter(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    version: int = Field(ge=1, strict=True)  # YAML gives an int; "2", 2.0 or true is a mistake
    description: str
    inputs: dict[str, InputSpec]
    output: OutputSpec
    verdict: VerdictSpec | None = None
    defaults: Defaults = Defaults()
    system: str | None = None


# --------------------------------------------------------------------------- the card


@dataclass(frozen=True)
class Card:
    """A loaded, validated judge card. Build one with `load_card` or `CardLibrary.get`."""

    spec: FrontMatter
    body: str
    path: Path
    sha256: str
    released: bool
    body_line: int = field(repr=False)  # 1-based line of the body's first line in the file

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def version(self) -> int:
        return self.spec.version

    @property
    def ref(self) -> str:
        """``name@version``, as stored with every result."""
        return f"{self.spec.name}@{self.spec.version}"

    @property
    def hash(self) -> str:
        """``sha256:<hex>``, the form used in cards.lock and stored with every result."""
        return f"sha256:{self.sha256}"

    @cached_property
    def output_model(self) -> type[BaseModel]:
        """The pydantic model a reply must satisfy."""
        return _resolve_output_model(self.spec.output, self.path)

    @cached_property
    def output_schema(self) -> str:
        """The JSON Schema shown to the judge (``{{ output_schema }}`` in the body)."""
        return json.dumps(self.output_model.model_json_schema(), indent=2)

    @cached_property
    def final_line(self) -> re.Pattern[str] | None:
        """For ``final_token`` cards, the regex of the final line; the value is group 1."""
        line = self.spec.output.line
        if self.spec.output.format != "final_token" or line is None:
            return None
        before, _, after = line.partition("{value}")
        return re.compile(re.escape(before) + r"\s*(-?\d+(?:\.\d+)?)\s*" + re.escape(after))

    @property
    def score_axes(self) -> dict[str, str]:
        """Axis name → dotted path into the judgment."""
        paths = self.spec.output.scores or (
            [self.spec.output.field] if self.spec.output.format == "final_token" else []
        )
        return {path.rsplit(".", 1)[-1]: path for path in paths}

    def __str__(self) -> str:
        return self.ref


def card_hash(data: bytes) -> str:
    """sha256 hex of a card file with CRLF/CR normalised to LF (the documented lock contract)."""
    normalised = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return hashlib.sha256(normalised).hexdigest()


# --------------------------------------------------------------------------- parsing a file


def parse_card_file(path: Path, *, locked: Mapping[str, str] | None = None) -> Card:
    """Read, validate and check one card file. Errors name the file, the line and the field."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as error:
        raise CardValidationError(f"not UTF-8 text ({error})", file=path) from error
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise CardValidationError("must start with a '---' front-matter line", file=path, line=1)
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise CardValidationError(
            "front-matter has no closing '---' line", file=path, line=1
        ) from None
    front_text = "\n".join(lines[1:end])
    body = "\n".join(lines[end + 1 :])
    body_line = end + 2

    try:
        raw = yaml.safe_load(front_text)
        node = yaml.compose(front_text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None
        # PyYAML's own text counts lines from the start of the front-matter, not of the file;
        # say what went wrong and let the error's file:line be the one place numbers appear.
        problem = getattr(error, "problem", None) or str(error)
        context = getattr(error, "context", None)
        column = f" at column {mark.column + 1}" if mark is not None else ""
        detail = f"{problem}{column}" + (f" ({context})" if context else "")
        raise CardValidationError(
            f"invalid YAML front-matter: {detail}", file=path, line=line
        ) from error
    if not isinstance(raw, dict):
        raise CardValidationError("front-matter must be a mapping", file=path, line=2)
    try:
        spec = FrontMatter.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        loc = [str(part) for part in first["loc"]]
        # pydantic's "Extra inputs are not permitted" reads as if it were about the card's inputs.
        message = f"unknown key {loc[-1]!r}" if first["type"] == "extra_forbidden" else first["msg"]
        raise CardValidationError(
            message, file=path, line=_line_of(node, loc), field=".".join(loc) or None
        ) from None

    sha = card_hash(data)
    ref = f"{spec.name}@{spec.version}"
    released = False
    if locked is not None and ref in locked:
        expected = locked[ref]
        if expected != f"sha256:{sha}":
            raise CardLockMismatch(
                f"{ref} is released and locked as {expected} but the file hashes to sha256:{sha}; "
                "released cards are immutable: add a new version instead "
                "(`judgecards cards lock` prints the line for it)",
                file=path,
            )
        released = True
    card = Card(spec=spec, body=body, path=path, sha256=sha, released=released, body_line=body_line)
    _check_card(card, node)
    return card


def _check_card(card: Card, node: yaml.Node | None) -> None:
    """Catch a card author's mistakes at load time, before any call is paid for."""
    from jinja2 import TemplateSyntaxError, meta

    from judgecards.render import environment

    spec = card.spec
    try:
        parsed = environment().parse(card.body)
    except TemplateSyntaxError as error:
        raise CardValidationError(
            f"Jinja syntax error: {error.message}",
            file=card.path,
            line=card.body_line + (error.lineno or 1) - 1,
        ) from None
    used = meta.find_undeclared_variables(parsed)
    for name in sorted(used - set(spec.inputs) - INJECTED_VARIABLES):
        raise CardValidationError(
            f"the body uses {{{{ {name} }}}} but it is not declared under inputs",
            file=card.path,
            line=_body_line_of(card, name),
            field=f"inputs.{name}",
        )
    for name in sorted(set(spec.inputs) - used):
        raise CardValidationError(
            f"input {name!r} is declared but the body never uses it",
            file=card.path,
            line=_line_of(node, ["inputs", name]),
            field=f"inputs.{name}",
        )
    output = spec.output
    if output.format == "json" and output.schema_ is None:
        raise CardValidationError(
            "a json card needs output.schema",
            file=card.path,
            line=_line_of(node, ["output"]),
            field="output.schema",
        )
    if output.format == "final_token":
        if not output.line or output.line.count("{value}") != 1:
            raise CardValidationError(
                "a final_token card needs output.line containing '{value}' once, e.g. 'Rating: [[{value}]]'",
                file=card.path,
                line=_line_of(node, ["output"]),
                field="output.line",
            )
        if output.min is None or output.max is None or output.min > output.max:
            raise CardValidationError(
                "a final_token card needs output.min <= output.max",
                file=card.path,
                line=_line_of(node, ["output"]),
                field="output.min",
            )
    try:
        schema = card.output_model.model_json_schema()
    except CardError:
        raise
    except Exception as error:  # a broken user model: say where it came from
        raise CardValidationError(
            f"output schema is unusable: {error}",
            file=card.path,
            line=_line_of(node, ["output", "schema"]),
            field="output.schema",
        ) from error
    for path in card.score_axes.values():
        if not _schema_has_path(schema, path.split(".")):
            raise CardValidationError(
                f"score path {path!r} is not in the output schema",
                file=card.path,
                line=_line_of(node, ["output", "scores"]),
                field="output.scores",
            )
    if spec.verdict is not None:
        for index, rule in enumerate(spec.verdict.rules):
            for axis in rule.when:
                if axis not in card.score_axes:
                    raise CardValidationError(
                        f"verdict rule uses {axis!r}, which is not a score axis ({', '.join(card.score_axes)})",
                        file=card.path,
                        line=_line_of(node, ["verdict", "rules", str(index), "when", axis]),
                        field=f"verdict.rules.{index}.when.{axis}",
                    )
        if spec.verdict.rules and spec.verdict.otherwise is None:
            raise CardValidationError(
                "verdict rules need an 'otherwise' verdict",
                file=card.path,
                line=_line_of(node, ["verdict"]),
                field="verdict.otherwise",
            )


def _line_of(node: yaml.Node | None, loc: Sequence[str]) -> int | None:
    """1-based file line of a front-matter path (the front-matter starts on line 2)."""
    if node is None:
        return None
    current: yaml.Node = node
    line: int = node.start_mark.line
    for key in loc:
        if isinstance(current, yaml.MappingNode):
            pair = next(
                ((k, v) for k, v in current.value if getattr(k, "value", None) == key), None
            )
            if pair is None:
                # The key is missing: point at the mapping that should hold it.
                break
            # The key's line, not the value's: a block mapping value starts on the next line.
            line = pair[0].start_mark.line
            current = pair[1]
        elif (
            isinstance(current, yaml.SequenceNode)
            and key.isdigit()
            and int(key) < len(current.value)
        ):
            current = current.value[int(key)]
            line = current.start_mark.line
        else:
            break
    return line + 2


def _body_line_of(card: Card, name: str) -> int | None:
    word = r"\b" + re.escape(name) + r"\b"
    # Prefer the line where the name is used inside {{ }} or {% %}: the same word in the prose
    # around it ("apply the rubric below") is not the mistake.
    lines = card.body.split("\n")
    for pattern in (re.compile(r"\{[{%][^}]*" + word), re.compile(word)):
        for offset, text in enumerate(lines):
            if pattern.search(text):
                return card.body_line + offset
    return None


def _schema_has_path(schema: Mapping[str, Any], path: list[str]) -> bool:
    definitions = schema.get("$defs", {})
    node: Mapping[str, Any] = schema
    for part in path:
        while "$ref" in node:
            node = definitions.get(node["$ref"].rsplit("/", 1)[-1], {})
        properties = node.get("properties", {})
        if part not in properties:
            return False
        node = properties[part]
    return True


# --------------------------------------------------------------------------- output models


def _resolve_output_model(output: OutputSpec, path: Path) -> type[BaseModel]:
    if output.format == "final_token":
        assert output.min is not None and output.max is not None
        model: type[BaseModel] = create_model(
            "FinalTokenJudgment",
            __config__=ConfigDict(extra="ignore"),
            reasoning=(
                str,
                Field(default="", description="The judge's reasoning before the final line."),
            ),
            **{output.field: (int, Field(ge=output.min, le=output.max))},  # type: ignore[call-overload]
        )
        return model
    schema = output.schema_
    if isinstance(schema, str):
        module_name, _, attribute = schema.partition(":")
        try:
            target = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError, ValueError) as error:
            raise CardValidationError(
                f"cannot import output schema {schema!r}: {error}", file=path, field="output.schema"
            ) from None
        if not (isinstance(target, type) and issubclass(target, BaseModel)):
            raise CardValidationError(
                f"{schema!r} is not a pydantic model", file=path, field="output.schema"
            )
        return target
    if isinstance(schema, dict):
        return _model_from_json_schema(schema, "Judgment", path, "output.schema")
    raise CardValidationError("output.schema is missing", file=path, field="output.schema")


_JSON_TYPES: dict[str, type] = {"integer": int, "number": float, "string": str, "boolean": bool}


def _model_from_json_schema(
    schema: Mapping[str, Any], name: str, path: Path, where: str
) -> type[BaseModel]:
    """A pydantic model for a small inline JSON Schema (objects, scalars, enums, ranges, arrays).

    Enough for user cards written without Python; anything richer belongs in a pydantic model
    referenced as ``module:Model``.
    """
    if schema.get("type") != "object":
        raise CardValidationError("inline schema must be an object schema", file=path, field=where)
    required = set(schema.get("required", ()))
    fields: dict[str, Any] = {}
    for key, sub in (schema.get("properties") or {}).items():
        annotation = _annotation(sub, f"{name}_{key}", path, f"{where}.properties.{key}")
        constraints = {
            "ge": sub.get("minimum"),
            "le": sub.get("maximum"),
            "min_length": sub.get("minLength"),
            "max_length": sub.get("maxLength"),
            "description": sub.get("description"),
        }
        given = {k: v for k, v in constraints.items() if v is not None}
        if key in required:
            fields[key] = (annotation, Field(**given))
        else:
            fields[key] = (annotation | None, Field(default=None, **given))
    model: type[BaseModel] = create_model(name, __config__=ConfigDict(extra="ignore"), **fields)
    return model


def _annotation(sub: Mapping[str, Any], name: str, path: Path, where: str) -> Any:
    if "enum" in sub:
        return Literal[tuple(sub["enum"])]
    kind = sub.get("type")
    if kind in _JSON_TYPES:
        return _JSON_TYPES[kind]
    if kind == "object":
        return _model_from_json_schema(sub, name, path, where)
    if kind == "array":
        return list[_annotation(sub.get("items", {"type": "string"}), name, path, f"{where}.items")]  # type: ignore[misc]
    raise CardValidationError(f"unsupported schema type {kind!r}", file=path, field=where)


# --------------------------------------------------------------------------- the library


def builtin_cards_dir() -> Path:
    """Where the built-in cards are: inside the wheel, else ``prompts/`` of a source checkout."""
    packaged = Path(str(importlib.resources.files("judgecards"))) / "_cards"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "prompts"


def user_card_dirs(
    cards_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
) -> list[Path]:
    """User card directories from the argument, else ``JUDGECARDS_CARDS_DIR``."""
    if cards_dir is None:
        env = os.environ.get(CARDS_DIR_ENV, "")
        return [Path(p) for p in env.split(os.pathsep) if p]
    if isinstance(cards_dir, (str, os.PathLike)):
        return [Path(cards_dir)]
    return [Path(p) for p in cards_dir]


def read_lock(directory: Path) -> dict[str, str]:
    """``{"name@version": "sha256:<hex>"}`` from a directory's cards.lock (empty if none)."""
    lock_path = directory / LOCK_FILE
    if not lock_path.is_file():
        return {}
    entries: dict[str, str] = {}
    for number, line in enumerate(lock_path.read_text("utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or "@" not in parts[0] or not parts[1].startswith("sha256:"):
            raise CardValidationError(
                "expected 'name@version sha256:<hex>'", file=lock_path, line=number
            )
        entries[parts[0]] = parts[1]
    return entries


class CardLibrary:
    """The cards visible from a set of directories: user directories first, then the built-ins.

    Two directories may hold the same ``name@version`` only with identical text; anything else is
    an error, because results would otherwise depend on directory order.
    """

    def __init__(
        self,
        cards_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    ) -> None:
        self.directories = [*user_card_dirs(cards_dir), builtin_cards_dir()]
        for directory in self.directories[:-1]:
            if not directory.is_dir():
                raise CardNotFound("card directory does not exist", file=directory)
        self._cards: dict[str, Card] | None = None

    def _load(self) -> dict[str, Card]:
        if self._cards is not None:
            return self._cards
        cards: dict[str, Card] = {}
        for directory in self.directories:
            lock = read_lock(directory)
            for path in sorted(directory.rglob(f"*{CARD_SUFFIX}")):
                card = parse_card_file(path, locked=lock)
                existing = cards.get(card.ref)
                if existing is not None and existing.sha256 != card.sha256:
                    raise CardValidationError(
                        f"{card.ref} is also defined, differently, in {existing.path}",
                        file=path,
                        field="version",
                    )
                cards.setdefault(card.ref, card)
        self._cards = cards
        return cards

    def cards(self) -> list[Card]:
        """Every card version, sorted by name then version."""
        return sorted(self._load().values(), key=lambda c: (c.name, c.version))

    def get(self, ref: str) -> Card:
        """Resolve ``name@version``; ``name`` alone (or ``name@latest``) means the newest version."""
        name, _, version = ref.partition("@")
        cards = self._load()
        candidates = [c for c in cards.values() if c.name == name]
        if not candidates:
            known = ", ".join(sorted({c.name for c in cards.values()})) or "none"
            raise CardNotFound(f"no card named {name!r} (known: {known})", field="card")
        if not version or version == "latest":
            return max(candidates, key=lambda c: c.version)
        if not version.isdigit():
            raise CardNotFound(f"card version must be a number in {ref!r}", field="card")
        for card in candidates:
            if card.version == int(version):
                return card
        versions = ", ".join(str(c.version) for c in sorted(candidates, key=lambda c: c.version))
        raise CardNotFound(f"{name} has no version {version} (versions: {versions})", field="card")


def load_card(
    ref: str | Card,
    *,
    cards_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
) -> Card:
    """Load a card by ``name[@version]`` from the user directories and the built-ins."""
    if isinstance(ref, Card):
        return ref
    return CardLibrary(cards_dir).get(ref)


def list_cards(
    *, cards_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None
) -> list[Card]:
    """Every card version visible with these directories."""
    return CardLibrary(cards_dir).cards()


def lock_lines(cards: Iterable[Card]) -> list[str]:
    """The cards.lock lines for these cards."""
    return [f"{card.ref} {card.hash}" for card in cards]
