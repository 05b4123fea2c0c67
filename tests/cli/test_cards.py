"""``judgecards cards`` and a broken card in ``--cards-dir`` (issue 9, defect 16: one broken card
blocked every command)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.builders import FIXTURES, run_cli

FIXTURES = FIXTURES / "cards"


def broken_dir(tmp_path: Path) -> Path:
    cards = tmp_path / "cards"
    cards.mkdir()
    shutil.copy(FIXTURES / "bad" / "unused_input.md.j2", cards / "helpfulness.md.j2")
    shutil.copytree(FIXTURES / "user" / "rating", cards / "rating")
    return cards


def test_cards_list_marks_the_broken_card_with_its_located_error(tmp_path: Path) -> None:
    cards = broken_dir(tmp_path)
    result = run_cli("cards", "list", "--cards-dir", str(cards), "--db", str(tmp_path / "j.db"))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("rating@1 ") and "unreleased" in line for line in lines)
    assert any(line.startswith("reference@1 ") and "released" in line for line in lines)
    [broken] = [line for line in lines if " broken " in line]
    assert broken.startswith("helpfulness@1 ")
    assert f"{cards / 'helpfulness.md.j2'}:8, field 'inputs.context'" in broken


def test_other_cards_still_work_and_the_broken_one_fails_when_used(tmp_path: Path) -> None:
    cards = broken_dir(tmp_path)
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "1", "question": "q", "answer": "a"}) + "\n")
    db = str(tmp_path / "j.db")

    shown = run_cli("cards", "show", "rating", "--cards-dir", str(cards))
    assert shown.exit_code == 0 and "rating@1" in shown.output
    scored = run_cli(
        "score", "--card", "rating", "--model", "mock:judge", str(items),
        "--output", str(tmp_path / "out.jsonl"), "--cards-dir", str(cards), "--db", db,
    )  # fmt: skip
    assert scored.exit_code == 0, scored.output

    failed = run_cli("cards", "show", "helpfulness", "--cards-dir", str(cards))
    assert failed.exit_code == 2
    assert f"{cards / 'helpfulness.md.j2'}:8" in failed.output and "Traceback" not in failed.output


def test_cards_lock_reports_broken_cards_and_exits_1(tmp_path: Path) -> None:
    cards = broken_dir(tmp_path)
    result = run_cli("cards", "lock", "--cards-dir", str(cards))
    assert result.exit_code == 1
    assert any(line.startswith("rating@1 sha256:") for line in result.stdout.splitlines())
    assert "broken: " in result.stderr and "helpfulness.md.j2:8" in result.stderr
