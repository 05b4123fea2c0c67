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

import dataclasses
import hashlib
import importlib.resources
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from jinja2 import Template, TemplateSyntaxError, meta
from jinja2.exceptions import SecurityError
from pydantic import BaseModel, ValidationError

from judgecards.cards.delimiters import card_tags
from judgecards.cards.output_models import resolve_output_model
from judgecards.cards.sandbox import (
    Placeholder,
    RenderLimitExceeded,
    compile_body,
    environment,
    render_bounded,
    static_problems,
    template_line,
)
from judgecards.cards.spec import (
    Bound,
    Defaults,
    FrontMatter,
    InputSpec,
    OutputSpec,
    VerdictRule,
    VerdictSpec,
)
from judgecards.errors import CardError, CardLockMismatch, CardNotFound, CardValidationError
from judgecards.safe_yaml import YamlDocument, load_yaml

__all__ = [
    "CARD_SUFFIX",
    "Bound",
    "BrokenCard",
    "Card",
    "CardLibrary",
    "Defaults",
    "FrontMatter",
    "InputSpec",
    "OutputSpec",
    "VerdictRule",
    "VerdictSpec",
    "card_hash",
    "list_cards",
    "load_card",
]

CARD_SUFFIX = ".md.j2"
LOCK_FILE = "cards.lock"
CARDS_DIR_ENV = "JUDGECARDS_CARDS_DIR"
# Names a card body may use without declaring them as inputs.
INJECTED_VARIABLES = frozenset({"output_schema"})


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
        return resolve_output_model(self.spec.output, self.path)

    @cached_property
    def output_schema(self) -> str:
        """The JSON Schema shown to the judge (``{{ output_schema }}`` in the body)."""
        return json.dumps(self.output_model.model_json_schema(), indent=2)

    @property
    def template(self) -> Template:
        """The body compiled for the sandbox (`judgecards.cards.sandbox.compile_body`, cached)."""
        return compile_body(self.body)

    @cached_property
    def tags(self) -> frozenset[str]:
        """The tag names the body delimits inputs with, neutralised inside input values."""
        return card_tags(self.body)

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


# Validated cards by (path, sha256, released): every Judge and command loads every card, and
# validation (YAML, schema, a trial render) costs milliseconds per card.
_validated: dict[tuple[str, str, bool], Card] = {}


def parse_card_file(path: Path, *, locked: Mapping[str, str] | None = None) -> Card:
    """Read, validate and check one card file. Errors name the file, the line and the field."""
    data = path.read_bytes()
    sha = card_hash(data)
    card = _validated.get((str(path), sha, False))
    if card is None:
        card = _validated[(str(path), sha, False)] = _parse(path, data, sha)
    expected = (locked or {}).get(card.ref)
    if expected is None:
        return card
    if expected != card.hash:
        raise CardLockMismatch(
            f"{card.ref} is released and locked as {expected} but the file hashes to {card.hash}; "
            "released cards are immutable: add a new version instead "
            "(`judgecards cards lock` prints the line for it)",
            file=path,
        )
    released = _validated.get((str(path), sha, True))
    if released is None:
        released = _validated[(str(path), sha, True)] = dataclasses.replace(card, released=True)
    return released


def _parse(path: Path, data: bytes, sha: str) -> Card:
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

    document = load_yaml(
        front_text, file=path, error=CardValidationError, first_line=2, what="YAML front-matter"
    )
    raw = document.data
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
            message, file=path, line=document.line_of(loc), field=".".join(loc) or None
        ) from None

    card = Card(spec=spec, body=body, path=path, sha256=sha, released=False, body_line=body_line)
    _check_card(card, document)
    return card


def _check_card(card: Card, document: YamlDocument) -> None:
    """Catch a card author's mistakes at load time, before any call is paid for."""
    try:
        parsed = environment().parse(card.body)
    except TemplateSyntaxError as error:
        raise CardValidationError(
            f"Jinja syntax error: {error.message}",
            file=card.path,
            line=card.body_line + (error.lineno or 1) - 1,
        ) from None
    _check_inputs(card, document, meta.find_undeclared_variables(parsed))
    _check_output_format(card, document)
    _check_score_axes(card, document)
    _check_verdict(card, document)
    _check_sandbox(card, parsed)


def _check_inputs(card: Card, document: YamlDocument, used: set[str]) -> None:
    """The body uses exactly the declared inputs (and the variables judgecards injects)."""
    declared = set(card.spec.inputs)
    for name in sorted(used - declared - INJECTED_VARIABLES):
        raise CardValidationError(
            f"the body uses {{{{ {name} }}}} but it is not declared under inputs",
            file=card.path,
            line=_body_line_of(card, name),
            field=f"inputs.{name}",
        )
    for name in sorted(declared - used):
        raise CardValidationError(
            f"input {name!r} is declared but the body never uses it",
            file=card.path,
            line=document.line_of(["inputs", name]),
            field=f"inputs.{name}",
        )


def _check_output_format(card: Card, document: YamlDocument) -> None:
    """Each output format has what it needs: a schema for json, a line and a range for
    final_token."""
    output = card.spec.output
    if output.format == "json" and output.schema_ is None:
        raise CardValidationError(
            "a json card needs output.schema",
            file=card.path,
            line=document.line_of(["output"]),
            field="output.schema",
        )
    if output.format == "final_token":
        if not output.line or output.line.count("{value}") != 1:
            raise CardValidationError(
                "a final_token card needs output.line containing '{value}' once, e.g. 'Rating: [[{value}]]'",
                file=card.path,
                line=document.line_of(["output"]),
                field="output.line",
            )
        if output.min is None or output.max is None or output.min > output.max:
            raise CardValidationError(
                "a final_token card needs output.min <= output.max",
                file=card.path,
                line=document.line_of(["output"]),
                field="output.min",
            )


def _check_score_axes(card: Card, document: YamlDocument) -> None:
    """The output schema can be built, and every score path names a field of it."""
    try:
        schema = card.output_model.model_json_schema()
    except CardError as error:
        raise CardValidationError(
            error.reason,
            file=card.path,
            line=error.line or document.line_of(["output", "schema"]),
            field=error.field,
        ) from None
    except Exception as error:  # a broken user model: say where it came from
        raise CardValidationError(
            f"output schema is unusable: {error}",
            file=card.path,
            line=document.line_of(["output", "schema"]),
            field="output.schema",
        ) from error
    for path in card.score_axes.values():
        if not _schema_has_path(schema, path.split(".")):
            raise CardValidationError(
                f"score path {path!r} is not in the output schema",
                file=card.path,
                line=document.line_of(["output", "scores"]),
                field="output.scores",
            )


def _check_verdict(card: Card, document: YamlDocument) -> None:
    """Verdict rules name score axes only, and end in an 'otherwise' verdict."""
    verdict = card.spec.verdict
    if verdict is None:
        return
    for index, rule in enumerate(verdict.rules):
        for axis in rule.when:
            if axis not in card.score_axes:
                raise CardValidationError(
                    f"verdict rule uses {axis!r}, which is not a score axis ({', '.join(card.score_axes)})",
                    file=card.path,
                    line=document.line_of(["verdict", "rules", str(index), "when", axis]),
                    field=f"verdict.rules.{index}.when.{axis}",
                )
    if verdict.rules and verdict.otherwise is None:
        raise CardValidationError(
            "verdict rules need an 'otherwise' verdict",
            file=card.path,
            line=document.line_of(["verdict"]),
            field="verdict.otherwise",
        )


def _check_sandbox(card: Card, parsed: Any) -> None:
    """Report what the sandbox would refuse at render time now, with its line in the file.

    The static check finds refused attributes, mutations and includes in every branch; a trial
    render with placeholder inputs (all inputs, then only the required ones) finds the rest
    that does not depend on the data: calls the sandbox refuses, budgets a body always blows.
    Errors that depend on the data (a type error on a placeholder) are left to render time.
    """
    for offset, problem in static_problems(parsed):
        raise CardValidationError(problem, file=card.path, line=card.body_line + offset - 1)
    inputs = card.spec.inputs
    trials: list[dict[str, Any]] = [
        {name: Placeholder(name) for name in inputs},
        {name: Placeholder(name) if spec.required else None for name, spec in inputs.items()},
    ]
    for variables in trials:
        try:
            render_bounded(card.template, {**variables, "output_schema": card.output_schema})
        except (SecurityError, RenderLimitExceeded, RecursionError) as error:
            line = template_line(error)
            reason = "nests calls too deeply" if isinstance(error, RecursionError) else error
            raise CardValidationError(
                f"the body cannot be rendered in the sandbox: {reason}",
                file=card.path,
                line=card.body_line + line - 1 if line is not None else card.body_line,
            ) from None
        except Exception:  # data-dependent: reported when real inputs fail
            continue


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


# --------------------------------------------------------------------------- the library


def builtin_cards_dir() -> Path:
    """Where the built-in cards are: inside the wheel, else ``prompts/`` of a source checkout."""
    packaged = Path(str(importlib.resources.files("judgecards"))) / "_cards"
    if packaged.is_dir():
        return packaged
    return Path(str(importlib.resources.files("judgecards"))).parent / "prompts"


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


@dataclass(frozen=True)
class BrokenCard:
    """A card file that failed to load, kept so that only using it fails.

    ``name`` and ``version`` come from the front-matter when it got that far, else from the
    file's path (``name/v2.md.j2`` or ``name.md.j2``); ``None`` when not even that is known.
    """

    path: Path
    error: CardError
    name: str | None
    version: int | None

    @property
    def ref(self) -> str:
        """``name@version`` as far as it is known (``name@?`` or the path when it is not)."""
        if self.name is None:
            return str(self.path)
        return f"{self.name}@{self.version if self.version is not None else '?'}"


class CardLibrary:
    """The cards visible from a set of directories: user directories first, then the built-ins.

    Two directories may hold the same ``name@version`` only with identical text; anything else is
    an error, because results would otherwise depend on directory order. A card that fails to
    load (or conflicts) does not hide the others: it is listed by `broken` and raises its error
    only when it is asked for, by name or because it could be the newest version of a name.
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
        self._broken: list[BrokenCard] = []

    def _load(
        self, name: str | None = None, version: int | Literal["newest"] | None = None
    ) -> dict[str, Card]:
        """Every card, or those named ``name`` (of them only ``version``, when given)."""
        if self._cards is not None:
            return self._cards
        cards: dict[str, Card] = {}
        self._broken = []
        found: list[tuple[Path, dict[str, str], CardError | None, int | None]] = []
        for directory in self.directories:
            lock_error: CardError | None = None
            try:
                lock = read_lock(directory)
            except CardError as error:
                lock, lock_error = {}, error
            for path in sorted(directory.rglob(f"*{CARD_SUFFIX}")):
                card_name, card_version = _identity(path) if name is not None else (None, None)
                if card_name == name:
                    found.append((path, lock, lock_error, card_version))
        if version is not None:  # a lookup parses one card; one whose version is unknown, too
            known = [entry[3] for entry in found if entry[3] is not None]
            wanted = max(known, default=None) if version == "newest" else version
            found = [entry for entry in found if entry[3] in (wanted, None)]
        for path, locked, lock_problem, _ in found:
            try:
                card = parse_card_file(path, locked=locked)
            except CardError as error:
                self._broken.append(BrokenCard(path, error, *_identity(path)))
                continue
            existing = cards.get(card.ref)
            problem = lock_problem
            if problem is None and existing is not None and existing.sha256 != card.sha256:
                problem = CardValidationError(
                    f"{card.ref} is also defined, differently, in {existing.path}",
                    file=path,
                    field="version",
                )
            if problem is not None:
                self._broken.append(BrokenCard(path, problem, card.name, card.version))
                continue
            cards.setdefault(card.ref, card)
        for broken in self._broken:
            # Both definitions of a conflicting version are unusable: which one is meant?
            cards.pop(broken.ref, None)
        if name is None:
            self._cards = cards
        return cards

    def cards(self) -> list[Card]:
        """Every card version that loaded, sorted by name then version."""
        return sorted(self._load().values(), key=lambda c: (c.name, c.version))

    def broken(self) -> list[BrokenCard]:
        """Every card file that failed to load, with its located error, in directory order."""
        self._load()
        return list(self._broken)

    def get(self, ref: str) -> Card:
        """Resolve ``name@version``; ``name`` alone (or ``name@latest``) means the newest version.

        Raises:
            CardNotFound: no such name or version.
            CardError: the card asked for is broken (its own located error).
        """
        name, _, version = ref.partition("@")
        latest = not version or version == "latest"
        if not latest and not version.isdigit():
            raise CardNotFound(f"card version must be a number in {ref!r}", field="card")
        cards = self._load(name, "newest" if latest else int(version))
        candidates = [c for c in cards.values() if c.name == name]
        newest = max((c.version for c in candidates), default=0)
        for broken in self._broken:
            if broken.name != name:
                continue
            # An unknown version could be the one asked for, or the newest: fail rather than
            # silently judge with another version.
            if broken.version is None or (
                broken.version > newest if latest else broken.version == int(version)
            ):
                raise broken.error
        if not candidates:  # not the version asked for: read them all to say which there are
            candidates = [c for c in self._load(name).values() if c.name == name]
        if not candidates:
            known = ", ".join(sorted({c.name for c in self._load().values()})) or "none"
            raise CardNotFound(f"no card named {name!r} (known: {known})", field="card")
        if latest:
            return max(candidates, key=lambda c: c.version)
        for card in candidates:
            if card.version == int(version):
                return card
        versions = ", ".join(str(c.version) for c in sorted(candidates, key=lambda c: c.version))
        raise CardNotFound(f"{name} has no version {version} (versions: {versions})", field="card")


_VERSION_FILE = re.compile(r"v(\d+)")


def _identity(path: Path) -> tuple[str | None, int | None]:
    """A broken card's name and version: from its front-matter if readable, else its path."""
    name: Any = None
    version: Any = None
    try:
        text = path.read_text("utf-8")
        front = text.split("\n---", 1)[0].removeprefix("---\n")
        data = load_yaml(front, file=path, error=CardValidationError).data
        if isinstance(data, dict):
            name, version = data.get("name"), data.get("version")
    except (OSError, UnicodeDecodeError, CardError):
        pass
    stem = path.name.removesuffix(CARD_SUFFIX)
    if not isinstance(name, str):
        found = _VERSION_FILE.fullmatch(stem)
        name = path.parent.name if found else stem
        version = int(found.group(1)) if found and version is None else version
    if isinstance(version, bool) or not isinstance(version, int):
        found = _VERSION_FILE.fullmatch(stem)
        version = int(found.group(1)) if found else None
    return name, version


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
