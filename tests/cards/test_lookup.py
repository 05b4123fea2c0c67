"""Looking a card up parses only the version asked for (start-up, issue 10 §5: each version's
template, schema and sandbox trial render cost milliseconds), and reports broken and missing
versions as a lookup always has."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judgecards.cards import card, load_card
from judgecards.errors import CardNotFound, CardValidationError
from tests.builders import FIXTURES

HELPFULNESS = FIXTURES / "cards" / "user" / "helpfulness"


@pytest.fixture
def library(tmp_path: Path) -> Path:
    shutil.copytree(HELPFULNESS, tmp_path / "helpfulness")
    return tmp_path


def parsed(directory: Path) -> set[str]:
    """The card files under ``directory`` that were parsed and validated (the parse cache)."""
    return {Path(path).name for path, _, _ in card._validated if path.startswith(str(directory))}


def version(library: Path, number: int, body: str) -> Path:
    """A copy of v2 as version ``number`` with ``body`` after its front-matter."""
    text = (library / "helpfulness" / "v2.md.j2").read_text()
    front = text.split("\n---\n", 1)[0].replace("version: 2", f"version: {number}")
    path = library / "helpfulness" / f"v{number}.md.j2"
    path.write_text(front + "\n---\n" + body)
    return path


def test_a_lookup_parses_only_the_version_it_returns(library: Path) -> None:
    assert load_card("helpfulness", cards_dir=library).version == 2
    assert parsed(library) == {"v2.md.j2"}
    assert load_card("helpfulness@1", cards_dir=library).version == 1
    assert parsed(library) == {"v1.md.j2", "v2.md.j2"}


def test_a_broken_newest_version_fails_the_lookup_of_the_newest_only(library: Path) -> None:
    broken = version(library, 3, "{% if answer %}unclosed\n")
    with pytest.raises(CardValidationError) as caught:
        load_card("helpfulness", cards_dir=library)
    assert caught.value.file == str(broken) and "Jinja syntax error" in str(caught.value)
    assert load_card("helpfulness@2", cards_dir=library).version == 2


def test_a_broken_older_version_does_not_hide_the_newest(library: Path) -> None:
    (library / "helpfulness" / "v1.md.j2").write_text("---\nname: helpfulness\nversion: [\n")
    assert load_card("helpfulness", cards_dir=library).version == 2
    with pytest.raises(CardValidationError):
        load_card("helpfulness@1", cards_dir=library)


def test_a_missing_version_names_the_versions_there_are(library: Path) -> None:
    with pytest.raises(CardNotFound, match=r"helpfulness has no version 7 \(versions: 1, 2\)"):
        load_card("helpfulness@7", cards_dir=library)
    with pytest.raises(CardNotFound, match="no card named 'nothing'"):
        load_card("nothing", cards_dir=library)
