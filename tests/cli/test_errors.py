"""One error handler for every command, usage errors for impossible gates, clean warnings."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from judgecards.cli import _one_line_warnings
from judgecards.errors import UncalibratedJudgeWarning
from tests.builders import REPO, run_cli

CLI_DIR = REPO / "judgecards" / "cli"


def test_errors_are_handled_once_in_the_group_not_in_each_command() -> None:
    # No command catches JudgecardsError (or exits 2 by hand): the group prints and exits.
    for path in sorted(CLI_DIR.glob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                assert "JudgecardsError" not in ast.unparse(node.type), f"{path.name}:{node.lineno}"
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("fail", "sys.exit"):
                assert ast.unparse(node.args[0]) != "2", f"{path.name}:{node.lineno}"


@pytest.mark.parametrize(
    "args",
    [
        ["audit", "report", "--min-kappa", "2"],
        ["audit", "rerun", "--anchor-set", "x", "--model", "mock:judge", "--min-kappa", "1.5"],
        ["audit", "report", "--min-kappa", "-1.1"],
    ],
)
def test_a_kappa_gate_outside_minus_one_to_one_is_a_usage_error(
    args: list[str], tmp_path: Path
) -> None:
    result = run_cli(*args, "--db", str(tmp_path / "a.db"))
    assert result.exit_code == 2
    assert "Invalid value for '--min-kappa'" in result.stderr
    assert "-1.0<=x<=1.0" in result.stderr
    assert not (tmp_path / "a.db").exists()


def test_a_kappa_gate_of_one_is_allowed(tmp_path: Path) -> None:
    # Accepted as an option; it fails later only because there are no audits to gate on.
    from judgecards.storage import Store

    Store(tmp_path / "a.db").close()  # audit commands need an existing database
    result = run_cli("audit", "report", "--min-kappa", "1", "--db", str(tmp_path / "a.db"))
    assert result.exit_code == 2 and "no audits" in result.stderr
    assert "Invalid value" not in result.stderr


def test_rank_without_a_database_is_a_located_error_and_creates_none(tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    result = run_cli("rank", "--db", str(db))
    assert result.exit_code == 2
    assert result.stderr == f"Error: cannot open database {db}: no such file\n"
    assert not db.exists()


def test_rank_with_nothing_to_rank_says_so(tmp_path: Path) -> None:
    from judgecards.storage import Store

    db = tmp_path / "empty.db"
    Store(db).close()
    result = run_cli("rank", "--db", str(db))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: no stored pairwise comparisons with model labels")
    assert "Traceback" not in result.output


def test_warnings_print_as_one_line_inside_the_command_line() -> None:
    with _one_line_warnings():
        text = warnings.formatwarning(
            UncalibratedJudgeWarning("reference@1 has never been calibrated"),
            UncalibratedJudgeWarning,
            "/somewhere/judgecards/cli/score.py",
            42,
            "    warnings.warn(...)",
        )
    assert text == "Warning: reference@1 has never been calibrated\n"
    # Outside a command the default format (file, line and source) is back.
    assert "score.py:42" in warnings.formatwarning("x", UserWarning, "score.py", 42, "")
