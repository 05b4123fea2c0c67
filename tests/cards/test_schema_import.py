"""``module:Model`` in a card or config imports only allow-listed modules, decided before anything
runs (issue 9, defect 10: under ``python -m judgecards`` a module in the working directory ran;
issue 22 item 8: any *installed* module was imported before it was checked, ``antigravity``
opened a browser and ``this`` printed)."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest

from judgecards.cards import parse_card_file
from judgecards.cards.schema_import import SCHEMA_MODULES_ENV, import_schema_model
from judgecards.errors import CardValidationError

EVIL = """from pathlib import Path
Path(__file__).with_name("RAN").write_text("the module ran")
from pydantic import BaseModel
class Judgment(BaseModel):
    rating: int
"""
CARD = """---
name: imported
version: 1
description: A card naming a schema module.
inputs:
  answer: {description: The answer.}
output:
  format: json
  schema: MODULE:Judgment
---
<answer>
{{ answer }}
</answer>
{{ output_schema }}
"""


def plant(directory: Path, module: str = "evil_schemas") -> Path:
    """A card in ``directory/cards`` naming ``module``, and that module in ``directory``."""
    (directory / f"{module}.py").write_text(EVIL)
    cards = directory / "cards"
    cards.mkdir()
    (cards / "imported.md.j2").write_text(CARD.replace("MODULE", module))
    (cards / f"{module}.py").write_text(EVIL)  # beside the card too
    return cards


def test_a_module_in_the_working_directory_is_refused_without_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cards = plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend("")  # what `python -m` puts first on sys.path
    monkeypatch.syspath_prepend(str(cards))

    with pytest.raises(CardValidationError) as caught:
        parse_card_file(cards / "imported.md.j2")

    error = caught.value
    assert error.field == "output.schema" and error.line == 9
    assert "refusing to import 'evil_schemas'" in str(error)
    assert "not an allowed schema module" in str(error) and SCHEMA_MODULES_ENV in str(error)
    assert not (tmp_path / "RAN").exists() and not (cards / "RAN").exists()
    assert "evil_schemas" not in sys.modules


def test_python_dash_m_in_a_directory_with_a_planted_module(tmp_path: Path) -> None:
    cards = plant(tmp_path, "planted")
    result = subprocess.run(
        [sys.executable, "-m", "judgecards", "cards", "show", "imported", "--cards-dir", str(cards)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "refusing to import 'planted'" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "RAN").exists()


def test_judgecards_schemas_are_allowed_and_installed_packages_are_not() -> None:
    from judgecards.schemas import ReferenceJudgment

    assert import_schema_model("judgecards.schemas:ReferenceJudgment") is ReferenceJudgment
    with pytest.raises(ValueError, match=r"refusing to import 'pydantic\.main'"):
        import_schema_model("pydantic.main:BaseModel")  # installed, but not allow-listed


def test_an_installed_module_is_never_imported_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A module in the user's site-packages with a visible effect on import (as `antigravity`
    # opens a browser); and `this`, in the standard library, prints the Zen when imported.
    (tmp_path / "installed_schemas.py").write_text(EVIL)
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(site, "USER_SITE", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "this", raising=False)
    for reference in ("installed_schemas:Judgment", "this:s", "antigravity:x"):
        with pytest.raises(ValueError, match="not an allowed schema module"):
            import_schema_model(reference)
    assert not (tmp_path / "RAN").exists()
    assert "installed_schemas" not in sys.modules and "this" not in sys.modules
    assert "antigravity" not in sys.modules and capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("reference", "words"),
    [
        ("judgecards.judging.judge:Judge", "not an allowed schema module"),  # ours, but not listed
        ("json:JSONDecoder", "is not a pydantic model"),  # listed below, but not a model
        ("no_such_module_x:M", "cannot import 'no_such_module_x'"),  # listed, not there
        ("pydantic:NoSuch", "has no attribute 'NoSuch'"),
        (".relative:M", "not an absolute module name"),
        ("pydantic", "not of the form module:Model"),
    ],
)
def test_refusals_say_why(reference: str, words: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCHEMA_MODULES_ENV, "json, no_such_module_x, pydantic")
    with pytest.raises(ValueError, match=words):
        import_schema_model(reference)


def test_the_user_can_trust_more_modules_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cards = plant(tmp_path, "trusted_schemas")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(SCHEMA_MODULES_ENV, "other, trusted_schemas")
    card = parse_card_file(cards / "imported.md.j2")
    assert card.output_model.__name__ == "Judgment"
    assert (tmp_path / "RAN").exists()  # it ran because the user said so
    sys.modules.pop("trusted_schemas", None)


def test_an_eval_config_cannot_import_a_planted_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from judgecards.cli import cli

    (tmp_path / "config_schemas.py").write_text(EVIL)
    (tmp_path / "items.jsonl").write_text('{"id": "1", "model_output": "{}"}\n')
    config = tmp_path / "eval.yaml"
    config.write_text(
        "items: items.jsonl\ntiers:\n  - checks:\n"
        "      - {type: json, field: model_output, schema: 'config_schemas:Judgment'}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend("")
    result = CliRunner().invoke(cli, ["eval", str(config), "--db", str(tmp_path / "j.db")])
    assert result.exit_code == 2, result.output
    assert f"{config}:4" in result.output and "refusing to import 'config_schemas'" in result.output
    assert not (tmp_path / "RAN").exists() and "config_schemas" not in sys.modules
