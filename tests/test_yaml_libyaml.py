"""libyaml scans and parses YAML when PyYAML has it (start-up: every card's front-matter is read
when one card is looked up); what a document loads to, where each node was written, and how a
bad document is refused must stay exactly the pure-Python loader's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from judgecards import safe_yaml as _yaml
from judgecards.cards.card import CARD_SUFFIX, builtin_cards_dir
from judgecards.errors import InputError
from tests.builders import REPO
from tests.builders import YAML_BOMB as BOMB

pytestmark = pytest.mark.skipif(_yaml._CParser is None, reason="PyYAML built without libyaml")

PACKAGE = REPO / "judgecards"


def _compose(loader_class: Any, text: str) -> tuple[Any, list[Any]]:
    """The loaded data and every node's (kind, tag, line, column, scalar value), in order."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    seen: list[Any] = []
    pending = [node]
    while pending:
        current = pending.pop()
        seen.append((type(current).__name__, current.tag, current.start_mark.line,
                     current.start_mark.column))  # fmt: skip
        if isinstance(current, yaml.SequenceNode):
            pending.extend(reversed(current.value))
        elif isinstance(current, yaml.MappingNode):
            pending.extend(part for pair in reversed(current.value) for part in reversed(pair))
        else:
            seen.append(current.value)
    return data, seen


def _front(path: Path) -> str:
    return path.read_text("utf-8").split("\n---", 1)[0].removeprefix("---\n")


def test_libyaml_reads_every_shipped_card_and_table_as_the_pure_python_loader_does() -> None:
    shipped = [(p, _front(p)) for p in sorted(builtin_cards_dir().rglob(f"*{CARD_SUFFIX}"))]
    shipped += [
        (p, p.read_text("utf-8")) for p in (PACKAGE / "prices.yml", PACKAGE / "cache_minimums.yml")
    ]
    assert len(shipped) >= 12
    for path, text in shipped:
        assert _compose(_yaml._FastBoundedLoader, text) == _compose(_yaml._BoundedLoader, text), (
            path
        )


def test_libyaml_reads_the_test_cards_the_pure_python_loader_accepts_alike() -> None:
    # The fixtures hold broken cards too: what the pure-Python loader refuses, load_yaml refuses
    # in its words whatever libyaml does (the next test).
    compared = 0
    for path in sorted((REPO / "tests" / "fixtures" / "cards").rglob(f"*{CARD_SUFFIX}")):
        try:
            slow = _compose(_yaml._BoundedLoader, _front(path))
        except yaml.YAMLError:
            continue
        assert _compose(_yaml._FastBoundedLoader, _front(path)) == slow, path
        compared += 1
    assert compared >= 5


def test_the_libyaml_loader_enforces_the_alias_and_depth_bounds_itself() -> None:
    with pytest.raises(yaml.YAMLError, match="aliases expand to more than"):
        _yaml._FastBoundedLoader(BOMB).get_single_node()
    with pytest.raises(yaml.YAMLError, match="nested deeper than 100 levels"):
        _yaml._FastBoundedLoader("x: " + "[" * 200 + "]" * 200 + "\n").get_single_node()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # libyaml: "did not find expected ',' or ']'"
        ("a: [1, 2\n", "f.yaml:2: invalid YAML: expected ',' or ']', but got '<stream end>'"),
        # libyaml: "mapping values are not allowed in this context"
        ("a: b: c\n", "f.yaml:1: invalid YAML: mapping values are not allowed here at column 5"),
    ],
)
def test_a_document_libyaml_refuses_is_refused_in_the_pure_python_loaders_words(
    text: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        _yaml.load_yaml(text, file="f.yaml", error=InputError)
    assert str(caught.value).startswith(message)
