"""The complexity rules stay what docs/explanation/layout.md says they are, and every exception
to them is explained: a `# noqa` for one of them carries a reason a reviewer can check."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
RULES = {
    "PLR0917": "max-positional-args",
    "PLR0913": "max-args",
    "PLR0915": "max-statements",
    "PLR0912": "max-branches",
}
_NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)(.*)$")


def _ruff_config() -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with (ROOT / "pyproject.toml").open("rb") as file:
        lint: dict[str, Any] = tomllib.load(file)["tool"]["ruff"]["lint"]
    return lint


def bare_noqas(text: str) -> list[int]:
    """Lines of ``text`` whose noqa silences a complexity rule without a reason of 3+ words."""
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        match = _NOQA.search(line)
        if match is None or not set(re.split(r"\s*,\s*", match.group(1))) & set(RULES):
            continue
        if len(match.group(2).split()) < 3:
            lines.append(number)
    return lines


def test_a_complexity_noqa_without_a_reason_is_found() -> None:
    text = (
        "def a(x, y, z, u, v, w):  # noqa: PLR0917  click passes one parameter per option\n"
        "def b(x, y, z, u, v, w):  # noqa: PLR0917\n"
        "def c(x, y, z, u, v, w):  # noqa: PLR0913, PLR0917 ok\n"
        "import os  # noqa: F401\n"
    )
    assert bare_noqas(text) == [2, 3]


def test_every_complexity_noqa_gives_a_reason() -> None:
    bare = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("judgecards", "calibration", "bench", "scripts")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number in bare_noqas(path.read_text(encoding="utf-8"))
    ]
    assert not bare, "a complexity noqa needs a reason after the codes:\n" + "\n".join(bare)


def test_the_rules_are_selected_with_the_documented_thresholds() -> None:
    lint = _ruff_config()
    assert set(RULES) <= set(lint["select"])
    page = (ROOT / "docs" / "explanation" / "layout.md").read_text(encoding="utf-8")
    for rule, setting in RULES.items():
        row = re.search(rf"^\| {rule} \|.*\| (\d+) \| \d+ \|$", page, re.MULTILINE)
        assert row is not None, f"docs/explanation/layout.md has no table row for {rule}"
        assert lint["pylint"][setting] == int(row.group(1)), (rule, setting)
