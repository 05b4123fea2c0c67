"""YAML from card directories and eval configs is untrusted: aliases and nesting are bounded
(issue 9, defect 10: an alias bomb in an inline JSON Schema took 6.8 GB)."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from judgecards.cards import parse_card_file
from judgecards.errors import CardValidationError, InputError
from judgecards.safe_yaml import MAX_ALIAS_NODES, load_yaml
from tests.builders import YAML_BOMB as BOMB

# Nodes added by aliases (a sequence counts itself and its items): b adds 9 * 10 = 90, c adds
# 9 * 91 = 819, d adds 9 * 820 = 7,380, 8,289 in all; the first alias on line 6 (e: *d, 7,381
# nodes) takes the total to 15,670, over 10,000.


def test_an_alias_bomb_is_refused_at_the_alias_that_crosses_the_limit() -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(InputError) as caught:
            load_yaml(BOMB, file="config.yaml", error=InputError)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.perf_counter() - started < 2 and peak < 20_000_000
    error = caught.value
    assert (error.file, error.line) == ("config.yaml", 6)
    assert f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes" in str(error)
    assert str(error).startswith("config.yaml:6: invalid YAML: ")


def test_anchors_reused_a_few_times_still_load() -> None:
    text = "base: &base {type: integer, minimum: 1, maximum: 5}\nx: *base\ny: {<<: *base, maximum: 10}\n"
    data = load_yaml(text, file="f.yaml", error=InputError).data
    assert data["x"] == {"type": "integer", "minimum": 1, "maximum": 5}
    assert data["y"] == {"type": "integer", "minimum": 1, "maximum": 10}


def test_a_recursive_alias_and_deep_nesting_are_located_errors() -> None:
    with pytest.raises(InputError, match="refers to a node that contains it") as caught:
        load_yaml("ok: 1\nloop: &l [1, [2, *l]]\n", file="f.yaml", error=InputError)
    assert caught.value.line == 2
    deep = "x:\n  y: " + "[" * 5000 + "]" * 5000 + "\n"  # a RecursionError before the bound
    with pytest.raises(InputError, match="nested deeper than 100 levels") as caught:
        load_yaml(deep, file="f.yaml", error=InputError)
    assert caught.value.line == 2


def test_a_card_with_an_alias_bomb_in_its_inline_schema(tmp_path: Path) -> None:
    bomb = BOMB.replace("laughs:", "x-laughs:").replace("\n  ", "\n      ")
    text = (
        "---\nname: bomb\nversion: 1\ndescription: d\n"
        "inputs:\n  answer: {description: a}\n"
        "output:\n  format: json\n  schema:\n    type: object\n"
        "    properties: {rating: {type: integer}}\n"
        f"    {bomb}"
        "---\n<answer>\n{{ answer }}\n</answer>\n{{ output_schema }}\n"
    )
    path = tmp_path / "bomb.md.j2"
    path.write_text(text)
    bomb_line = next(n for n, line in enumerate(text.splitlines(), 1) if "e: &e" in line)
    with pytest.raises(CardValidationError) as caught:
        parse_card_file(path)
    assert (caught.value.file, caught.value.line) == (str(path), bomb_line)
    assert "invalid YAML front-matter: aliases expand" in str(caught.value)


def test_an_eval_config_with_an_alias_bomb_in_an_inline_schema(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from judgecards.cli import cli

    (tmp_path / "items.jsonl").write_text('{"id": "1", "model_output": "{}"}\n')
    schema = BOMB.replace("laughs:", "x-laughs:").replace("\n  ", "\n              ")
    config = tmp_path / "eval.yaml"
    config.write_text(
        "items: items.jsonl\ntiers:\n  - name: format\n    checks:\n"
        "      - type: json\n        field: model_output\n        schema:\n"
        f"            {schema}"
    )
    bomb_line = next(
        n for n, line in enumerate(config.read_text().splitlines(), 1) if "e: &e" in line
    )
    tracemalloc.start()
    try:
        result = CliRunner().invoke(cli, ["eval", str(config), "--db", str(tmp_path / "j.db")])
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert result.exit_code == 2, result.output
    assert (
        f"{config}:{bomb_line}: invalid YAML: aliases expand to more than 10,000" in result.output
    )
    assert peak < 50_000_000
    assert not (tmp_path / "j.db").exists()  # nothing was judged or created
