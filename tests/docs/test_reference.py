"""The reference pages cover the code: every public name, CLI command, CLI option, error, card
key, table and environment variable has an entry (as sqlite-utils' test_docs.py does for its CLI).

The pages are generated at build time by ``docs/hooks.py``; these tests expand them the same way
and look for each entry, so a name added without docs, a hidden command or a page that lost its
marker fails here rather than on the site.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import click
import markdown
import pytest

from judgecards.cli import cli

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("judgecards_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def _expanded(page: str) -> str:
    return str(hooks.expand((DOCS / page).read_text(encoding="utf-8")))


@functools.cache
def _site_markdown() -> str:
    """Every page with its generated sections, as the site is built."""
    return "\n".join(
        hooks.expand(path.read_text(encoding="utf-8")) for path in sorted(DOCS.rglob("*.md"))
    )


def test_every_public_face_is_in_the_reference() -> None:
    """A package (or the testing module) with an ``__all__`` is a public face with a page."""
    found = {"judgecards", "calibration", "judgecards.testing"}
    for root in ("judgecards", "calibration"):
        package = importlib.import_module(root)
        for info in pkgutil.iter_modules(package.__path__, prefix=f"{root}."):
            name = info.name.rsplit(".", 1)[1]
            if not info.ispkg or name.startswith("_") or name == "cli":
                continue
            if hasattr(importlib.import_module(info.name), "__all__"):
                found.add(info.name)
    assert found == set(hooks.FACES)


@pytest.mark.parametrize("face", hooks.FACES)
def test_every_public_name_has_a_reference_entry(face: str) -> None:
    text = _site_markdown()
    names = importlib.import_module(face).__all__
    assert names, face
    missing = [name for name in names if f"\n::: {face}.{name}\n" not in text]
    assert not missing, f"{face}: no reference entry for {missing}"


def _commands(group: click.Command, path: str) -> list[tuple[str, click.Command]]:
    found = [(path, group)]
    if isinstance(group, click.Group):
        ctx = click.Context(group, info_name=path)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, name
            found += _commands(command, f"{path} {name}")
    return found


@pytest.fixture(scope="module")
def cli_reference() -> str:
    """The CLI page rendered as mkdocs-click renders it on the site."""
    html = markdown.markdown(
        (DOCS / "reference" / "cli.md").read_text(encoding="utf-8"),
        extensions=["attr_list", "tables", "mkdocs-click"],
    )
    return re.sub(r"<[^>]+>", "", html)


COMMANDS = _commands(cli, "judgecards")


def test_the_cli_has_its_commands() -> None:
    names = {path for path, _ in COMMANDS}
    assert {"judgecards score", "judgecards audit anchor create", "judgecards serve token"} <= names


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_cli_command_and_option_has_a_reference_entry(
    path: str, command: click.Command, cli_reference: str
) -> None:
    assert not command.hidden, f"{path} is hidden, so the reference omits it"
    headings = re.findall(r"^\s*(judgecards(?: [\w-]+)*)\s*$", cli_reference, re.MULTILINE)
    assert path in headings, f"no reference entry for `{path}`"
    section = cli_reference.split(f"\n{path}\n", 1)[1]
    section = re.split(r"\njudgecards(?: [\w-]+)*\n", section, maxsplit=1)[0]
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            for opt in param.opts:
                assert opt in section, f"`{path}`: option {opt} has no reference entry"


ENV_NAME = re.compile(r"""["'](JUDGECARDS_[A-Z_]+|[A-Z]+_API_KEY|[A-Z]+_BASE_URL)["']""")


def test_every_environment_variable_has_a_reference_entry() -> None:
    read = set()
    for root in ("judgecards", "calibration"):
        for path in (REPO / root).rglob("*.py"):
            read |= set(ENV_NAME.findall(path.read_text(encoding="utf-8")))
    assert read == set(hooks.ENVIRONMENT), "docs/hooks.py ENVIRONMENT differs from the code"
    page = _expanded("reference/environment.md")
    assert all(f"`{name}`" in page for name in read)


def test_every_error_has_a_reference_entry() -> None:
    import judgecards.errors

    page = _expanded("reference/errors.md")
    for name in judgecards.errors.__all__:
        assert f"**`{name}`**" in page, name
    assert "**`LabelQueueError`**" in page  # defined outside judgecards.errors
    assert "**`SmallSampleWarning`**" in page


def test_every_card_key_has_a_reference_entry() -> None:
    from judgecards.cards import FrontMatter, OutputSpec

    page = _expanded("reference/card-format.md")
    for model in (FrontMatter, OutputSpec):
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in page, name


def test_every_table_has_a_reference_entry(tmp_path: Path) -> None:
    import sqlite3

    from judgecards.storage import Store

    page = _expanded("reference/database.md")
    path = tmp_path / "all.db"
    with Store(path) as store:
        for _, migrations in hooks._migration_sets():
            store.migrate(migrations)
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
    public = [t for t in tables if not t.startswith(("sqlite_", "_"))]
    assert {"results", "labels", "comparisons"} <= set(public)
    for table in public:
        assert f"### `{table}`" in page, table
