"""What an importer produces, and the one way it reaches the disk.

Both importers build an `ImportPlan` (cards, tiered-eval configs, items files and the parts they
could not translate) without touching the disk; `write_plan` then writes it into a scratch
directory beside the output, loads every card with `judgecards.cards` and every config with the
tiered-eval loader (built on the offline mock model, so no key is needed), and only then moves
the directory into place. A bug or a refused card therefore leaves nothing half-written, and an
existing directory with files in it is never touched.

Text from the imported config is data. It reaches a card body through `jinja_body`, which turns
only the placeholders an importer resolved into Jinja variables and writes every other brace so
that Jinja prints it as it was: a rubric can never run template code.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from judgecards.errors import InputError, OutputError
from judgecards.safe_yaml import YamlDocument, load_yaml

__all__ = [
    "CardDraft",
    "Gap",
    "ImportPlan",
    "ImportResult",
    "input_name",
    "jinja_body",
    "read_source",
    "slug",
    "unique",
    "write_plan",
]

CARDS_DIR = "cards"
NOTES_FILE = "IMPORT_NOTES.md"

_PLACEHOLDER = re.compile(r"\{\{\s*(.*?)\s*\}\}", re.S)
_NAME = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Gap:
    """A part of the source config the output does not reproduce exactly.

    ``left_out`` parts are missing from the output (the command exits 1); the others were
    translated approximately, as ``reason`` says.
    """

    where: str
    line: int | None
    what: str
    reason: str
    left_out: bool = True

    def __str__(self) -> str:
        place = f"{self.where} (line {self.line})" if self.line else self.where
        kind = "not translated" if self.left_out else "approximated"
        return f"{place}: {self.what}: {kind}: {self.reason}"


@dataclass(frozen=True)
class CardDraft:
    """A user judge card to write as ``cards/<name>/v1.md.j2``."""

    name: str
    description: str
    inputs: Mapping[str, Mapping[str, Any]]
    body: str
    schema: Mapping[str, Any] | None = None
    schema_ref: str | None = None  # "module:Model" instead of an inline schema
    scores: Sequence[str] = ()
    verdict: Mapping[str, Any] | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    system: str | None = None


@dataclass
class ImportPlan:
    """Everything one import writes, built in memory first."""

    source: Path
    kind: str
    cards: list[CardDraft] = field(default_factory=list)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def gap(
        self, where: str, line: int | None, what: str, reason: str, *, left_out: bool = True
    ) -> None:
        self.gaps.append(Gap(where, line, what, reason, left_out))


@dataclass(frozen=True)
class ImportResult:
    """The files an import wrote and what it could not translate (`Gap`)."""

    output: Path
    cards: tuple[Path, ...]
    configs: tuple[Path, ...]
    items: tuple[Path, ...]
    notes: Path
    gaps: tuple[Gap, ...]

    @property
    def left_out(self) -> tuple[Gap, ...]:
        """The gaps missing from the output; a clean import has none."""
        return tuple(gap for gap in self.gaps if gap.left_out)


def read_source(path: Path, what: str) -> YamlDocument:
    """A JSON or YAML config, parsed with the bounded YAML loader (its errors name the line).

    Raises:
        InputError: unreadable, not UTF-8, or not valid YAML/JSON.
    """
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the {what}: {error}", file=path) from None
    if path.suffix.lower() == ".json":
        # JSON is read as YAML for its line numbers; YAML refuses tab indentation, and in
        # valid JSON a raw tab can only be whitespace between tokens.
        text = text.replace("\t", " ")
    return load_yaml(text, file=path, error=InputError)


def slug(text: str, *, prefix: str = "x") -> str:
    """A card or file name made of ``[a-z0-9_-]`` that starts with a letter."""
    name = _NAME.sub("-", text.lower()).strip("-")[:60].strip("-") or prefix
    return name if name[0].isalpha() else f"{prefix}-{name}"


def unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``… when taken; the result is added to ``taken``."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate


# Names a body cannot use as a plain variable: Jinja's literals and operators (``{{ true }}`` is
# a constant, ``{{ not }}`` a syntax error), names the runtime defines, and injected variables.
_RESERVED = frozenset(
    {
        "true",
        "false",
        "none",
        "True",
        "False",
        "None",
        "and",
        "or",
        "not",
        "in",
        "is",
        "if",
        "else",
        "loop",
        "self",
        "varargs",
        "kwargs",
        "caller",
        "output_schema",
        "model_output",
        "prompt",
    }
)


def input_name(field: str, *, prefix: str) -> str:
    """The card input that holds the item field ``field`` (an identifier): the field's own name
    unless the body cannot use it as a variable, then ``<prefix>_<field>``."""
    return f"{prefix}_{field}" if field in _RESERVED else field


def _literal(text: str) -> str:
    # Only '{' opens Jinja syntax ({{, {%, {#); printing it from a string constant keeps every
    # brace, block tag and comment of the source text as plain text.
    return text.replace("{", '{{ "{" }}')


def jinja_body(text: str, resolve: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """The source template ``text`` as a card body, and the placeholders it could not map.

    ``resolve`` maps a placeholder's inner expression (``item.answer``, ``output``) to a card
    input name, or None; an unresolved placeholder is kept as literal text.
    """
    parts: list[str] = []
    unresolved: list[str] = []
    position = 0
    for found in _PLACEHOLDER.finditer(text):
        parts.append(_literal(text[position : found.start()]))
        name = resolve(found.group(1))
        if name is None:
            parts.append(_literal(found.group(0)))
            unresolved.append(found.group(0))
        else:
            parts.append("{{ " + name + " }}")
        position = found.end()
    parts.append(_literal(text[position:]))
    return "".join(parts), unresolved


class _OneLineDumper(yaml.SafeDumper):
    """Multi-line strings double-quoted on one line: a card's front-matter ends at the first
    line that reads ``---``, so no line of it may come from the imported text."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if "\n" in value or value.strip() == "---" else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_OneLineDumper.add_representer(str, _represent_str)


def _dump(data: Any) -> str:
    text: str = yaml.dump(
        data, Dumper=_OneLineDumper, sort_keys=False, allow_unicode=True, width=10**9
    )
    return text


def card_text(card: CardDraft) -> str:
    """The card file: YAML front-matter, then the body."""
    schema = card.schema_ref if card.schema is None else dict(card.schema)
    output: dict[str, Any] = {"format": "json", "schema": schema}
    if card.scores:
        output["scores"] = list(card.scores)
    front: dict[str, Any] = {
        "name": card.name,
        "version": 1,
        "description": card.description,
        "inputs": {name: dict(spec) for name, spec in card.inputs.items()},
        "output": output,
    }
    if card.verdict is not None:
        front["verdict"] = dict(card.verdict)
    if card.defaults:
        front["defaults"] = dict(card.defaults)
    if card.system:
        front["system"] = card.system
    return f"---\n{_dump(front)}---\n{card.body.rstrip()}\n"


def _notes_text(plan: ImportPlan, files: Sequence[str]) -> str:
    lines = [
        f"# Imported from {plan.source.name} ({plan.kind})",
        "",
        "Written by `judgecards import`. Run a config with",
        "`judgecards eval <config>.yaml --output results.jsonl [--model provider:model]`.",
        "",
        "## Files",
        "",
        *(f"- `{name}`" for name in files),
        "",
    ]
    if plan.notes:
        lines += ["## Before you run", "", *(f"- {note}" for note in plan.notes), ""]
    left_out = [gap for gap in plan.gaps if gap.left_out]
    approximated = [gap for gap in plan.gaps if not gap.left_out]
    lines += ["## Not translated", ""]
    lines += [f"- {gap}" for gap in left_out] or ["Nothing: every grader was translated."]
    lines += ["", "## Approximated", ""]
    lines += [f"- {gap}" for gap in approximated] or ["Nothing."]
    return "\n".join(lines) + "\n"


def _check_output(output: Path) -> None:
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise OutputError(
            "exists and is not an empty directory; choose a new directory (nothing is overwritten)",
            file=output,
        )
    if not output.parent.is_dir():
        raise OutputError(f"the directory {output.parent} does not exist", file=output)


def write_plan(plan: ImportPlan, output: Path) -> ImportResult:
    """Write ``plan`` into the new directory ``output`` (see the module docstring).

    Raises:
        OutputError: ``output`` exists and is not empty, or cannot be written.
    """
    _check_output(output)
    try:
        scratch = Path(tempfile.mkdtemp(prefix=".judgecards-import-", dir=output.parent))
    except OSError as error:
        raise OutputError(f"cannot write here: {error.strerror}", file=output) from None
    try:
        relative = _write_files(plan, scratch)
        _validate(plan, scratch)
        if output.exists():
            output.rmdir()
        scratch.rename(output)
    except OSError as error:
        shutil.rmtree(scratch, ignore_errors=True)
        raise OutputError(f"cannot write the import: {error}", file=output) from None
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return ImportResult(
        output=output,
        cards=tuple(output / p for p in relative if p.startswith(f"{CARDS_DIR}/")),
        configs=tuple(output / name for name in plan.configs),
        items=tuple(output / name for name in plan.items),
        notes=output / NOTES_FILE,
        gaps=tuple(plan.gaps),
    )


def _write_files(plan: ImportPlan, directory: Path) -> list[str]:
    written: list[str] = []
    for card in plan.cards:
        relative = f"{CARDS_DIR}/{card.name}/v1.md.j2"
        (directory / CARDS_DIR / card.name).mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(card_text(card), "utf-8")
        written.append(relative)
    for name, config in plan.configs.items():
        header = f"# Imported from {plan.source.name} by judgecards import; see {NOTES_FILE}.\n"
        (directory / name).write_text(header + _dump(config), "utf-8")
        written.append(name)
    for name, rows in plan.items.items():
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        (directory / name).write_text(text, "utf-8")
        written.append(name)
    (directory / NOTES_FILE).write_text(_notes_text(plan, written), "utf-8")
    return written


def _validate(plan: ImportPlan, directory: Path) -> None:
    """Load what was written the way ``judgecards eval`` will: a failure here is our bug."""
    from judgecards.cards import parse_card_file
    from judgecards.storage import Store
    from judgecards.tiered.config import build_pipeline, load_config

    for card in plan.cards:
        parse_card_file(directory / CARDS_DIR / card.name / "v1.md.j2")
    with Store(":memory:") as scratch:
        for name, config in plan.configs.items():
            loaded, source = load_config(directory / name)
            has_judge = any("judge" in tier for tier in config["tiers"])
            build_pipeline(loaded, source, db=scratch, model="mock:judge" if has_judge else None)
