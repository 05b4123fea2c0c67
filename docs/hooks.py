"""MkDocs hook: the reference pages are filled in from the code at build time, so they cannot drift.

A page asks for a generated section with a marker comment on a line of its own:

    <!-- generated: api judgecards -->     one mkdocstrings entry per name in ``judgecards.__all__``
    <!-- generated: moved judgecards -->   one entry per name moved off that face (``_MOVED``)
    <!-- generated: errors -->             the exception and warning tree
    <!-- generated: card-format -->        the card front-matter fields, from its pydantic models
    <!-- generated: database -->           every table of every migration set, from a fresh database
    <!-- generated: environment -->        every environment variable the code reads

``tests/docs/test_reference.py`` loads this file by path and checks that every public name, CLI
command and CLI option has an entry.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sqlite3
import tempfile
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MARKER = re.compile(r"^<!-- generated: ([a-z-]+)(?: ([\w.]+))? -->$", re.MULTILINE)

# The public faces: packages whose ``__all__`` is the supported API.
FACES = (
    "judgecards",
    "calibration",
    "calibration.stats",
    "calibration.labels",
    "calibration.estimates",
    "calibration.audits",
    "calibration.cascades",
    "calibration.juries",
    "calibration.alignment",
    "judgecards.cards",
    "judgecards.replies",
    "judgecards.judging",
    "judgecards.limits",
    "judgecards.storage",
    "judgecards.testing",
    "judgecards.batch",
    "judgecards.importers",
    "judgecards.metrics",
    "judgecards.providers",
    "judgecards.report",
    "judgecards.serve",
    "judgecards.tiered",
)

# Environment variables read by the code, with what they do. tests/docs/test_reference.py
# fails when the code reads one that is not listed here (or lists one it no longer reads).
ENVIRONMENT: dict[str, str] = {
    "ANTHROPIC_API_KEY": "API key for `anthropic:` models.",
    "ANTHROPIC_BASE_URL": "Base URL of an Anthropic-compatible server (else Anthropic's API).",
    "OPENAI_API_KEY": "API key for `openai:` models (not needed when `OPENAI_BASE_URL` is a "
    "local server: a placeholder is sent).",
    "OPENAI_BASE_URL": "Base URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp); "
    "`/v1` is added when missing.",
    "JUDGECARDS_DB": "The results database when `--db` / `Store(path)` is not given "
    "(default `./judgecards.db`).",
    "JUDGECARDS_CARDS_DIR": "Directories of your own judge cards (`os.pathsep`-separated), as "
    "`--cards-dir` gives them.",
    "JUDGECARDS_PRICES": "A YAML price file (as `--prices`) that overrides the shipped "
    "`prices.yml` entry by entry and adds models.",
    "JUDGECARDS_CACHE_MINIMUMS": "A YAML file of prompt-cache minimum lengths that overrides "
    "entries of the shipped `cache_minimums.yml` (Anthropic prompt caching).",
    "JUDGECARDS_PROGRESS_SECONDS": "Seconds between progress lines when stderr is not a "
    "terminal, and between `still working` lines of `report`, `audit ingest` and `audit report` "
    "(default 5).",
    "JUDGECARDS_SCHEMA_MODULES": "Module names (comma-separated) a card's `schema: module:Model` "
    "may import besides `judgecards.schemas`, the only one allowed otherwise (installed or not, "
    "no other module is imported); set by you, never by a card.",
}


def faces() -> dict[str, list[str]]:
    """Each public face and the names its ``__all__`` lists."""
    return {face: list(importlib.import_module(face).__all__) for face in FACES}


def api_section(face: str) -> str:
    """One mkdocstrings entry per public name, in ``__all__`` order."""
    names = importlib.import_module(face).__all__
    parts = []
    for name in names:
        parts.append(f"::: {face}.{name}\n")  # its heading and anchor come from mkdocstrings
    return "\n".join(parts)


def moved_section(face: str) -> str:
    """One mkdocstrings entry per name a face dropped, under the module it is imported from now.

    Names whose new home is another face (documented there) or `judgecards.errors` (the
    errors page) are left out, so each object has one entry.
    """
    moved: dict[str, str] = getattr(importlib.import_module(face), "_MOVED", {})
    parts = [
        f"::: {module}.{name}\n"
        for name, module in moved.items()
        if module not in FACES and module != "judgecards.errors"
    ]
    return "\n".join(parts)


def _all_modules() -> Iterator[types.ModuleType]:
    for package in ("judgecards", "calibration"):
        root = importlib.import_module(package)
        yield root
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if ".cli" in info.name or info.name.endswith("__main__"):
                continue
            try:
                yield importlib.import_module(info.name)
            except ImportError:  # an optional extra that is not installed
                continue


def _first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def error_classes() -> dict[str, type]:
    """Every exception and warning class the packages define, by qualified public name."""
    from judgecards.errors import JudgecardsError

    found: dict[str, type] = {}
    for module in _all_modules():
        for name, obj in vars(module).items():
            if (
                isinstance(obj, type)
                and obj.__module__.split(".")[0] in ("judgecards", "calibration")
                and not name.startswith("_")
                and (issubclass(obj, JudgecardsError) or issubclass(obj, Warning))
            ):
                found[name] = obj
    return found


def errors_section() -> str:
    classes = error_classes()
    lines = []

    def walk(cls: type, depth: int) -> None:
        if not cls.__name__.startswith("_"):
            where = f"`{cls.__module__}`"
            lines.append(f"{'    ' * depth}- **`{cls.__name__}`** ({where}): {_first_line(cls)}")
        children = sorted(cls.__subclasses__(), key=lambda c: c.__name__)
        for child in children:
            if child.__name__ in classes or child.__name__.startswith("_"):
                walk(child, depth + (0 if child.__name__.startswith("_") else 1))

    from judgecards.errors import JudgecardsError

    walk(JudgecardsError, 0)
    warnings = [c for c in classes.values() if issubclass(c, Warning)]
    lines.append("\nWarnings (not errors; shown once as `Warning: ...` by the CLI):\n")
    for cls in sorted(warnings, key=lambda c: c.__name__):
        lines.append(f"- **`{cls.__name__}`** (`{cls.__module__}`): {_first_line(cls)}")
    return "\n".join(lines) + "\n"


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation).replace("typing.", "")
    return text.replace("judgecards.cards.spec.", "").replace(" | ", " or ")


def card_format_section() -> str:
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    from judgecards.cards import spec as card_spec

    out = []
    seen: list[type[BaseModel]] = []

    def model(cls: type[BaseModel], heading: str) -> None:
        if cls in seen:
            return
        seen.append(cls)
        own = inspect.cleandoc(cls.__dict__.get("__doc__") or "")  # not BaseModel's
        out.append(f"### {heading}\n\n{own}\n")
        out.append("| key | type | default |\n|---|---|---|")
        nested = []
        for name, field in cls.model_fields.items():
            key = field.alias or name
            default = field.default
            shown = "required" if default is PydanticUndefined else f"`{default!r}`"
            if field.default_factory is not None:
                shown = "`" + repr(field.default_factory()) + "`"
            out.append(f"| `{key}` | `{_type_name(field.annotation)}` | {shown} |")
            for sub in vars(card_spec).values():
                if (
                    isinstance(sub, type)
                    and issubclass(sub, BaseModel)
                    and sub.__name__ in str(field.annotation)
                ):
                    nested.append((sub, f"`{key}` ({sub.__name__})"))
        out.append("")
        for sub, title in nested:
            model(sub, title)

    model(card_spec.FrontMatter, "Front-matter (FrontMatter)")
    return "\n".join(out)


def _migration_sets() -> list[tuple[str, Any]]:
    sets = [("judgecards", "judgecards.storage.migrations")]
    sets += [("judgecards.batch", "judgecards.batch.repository")]
    sets += [("judgecards.serve", "judgecards.serve.repository")]
    sets += [("calibration", "calibration.labels.migrations")]
    return [(name, importlib.import_module(module).migrations) for name, module in sets]


def database_section() -> str:
    from judgecards.storage import Store

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "docs.db"
        seen: set[str] = set()
        with Store(path) as store:
            for set_name, migrations in _migration_sets():
                store.migrate(migrations)
                conn = sqlite3.connect(path)
                tables = [
                    row[0]
                    for row in conn.execute(
                        "select name from sqlite_master where type='table' "
                        "and name not like 'sqlite_%' and name not like '\\_%' escape '\\' "
                        "order by name"
                    )
                ]
                new = [t for t in tables if t not in seen]
                out.append(f"## Migration set `{set_name}`\n")
                for table in new:
                    seen.add(table)
                    cols = conn.execute(f"pragma table_info([{table}])").fetchall()
                    out.append(f"### `{table}`\n\n| column | type | primary key |\n|---|---|---|")
                    for _, name, kind, _notnull, _default, pk in cols:
                        out.append(f"| `{name}` | {kind or ''} | {'yes' if pk else ''} |")
                    out.append("")
                conn.close()
    return "\n".join(out)


def environment_section() -> str:
    lines = ["| variable | what it does |", "|---|---|"]
    lines += [f"| `{name}` | {text} |" for name, text in ENVIRONMENT.items()]
    return "\n".join(lines) + "\n"


SECTIONS: dict[str, Callable[..., str]] = {
    "api": api_section,
    "moved": moved_section,
    "errors": errors_section,
    "card-format": card_format_section,
    "database": database_section,
    "environment": environment_section,
}


def expand(markdown: str) -> str:
    """Replace every marker in a page by its generated section."""

    def one(match: re.Match[str]) -> str:
        kind, argument = match.group(1), match.group(2)
        section = SECTIONS[kind]
        return section(argument) if argument else section()

    return MARKER.sub(one, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return expand(markdown)
