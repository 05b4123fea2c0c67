"""The ``judgecards`` command, through click's CliRunner (and one real subprocess)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgecards.cli import cli
from judgecards.providers.mock import MOCK_BANNER
from tests.builders import FIXTURES, REPO, run_cli, write_jsonl
from tests.fakes.server import DEFAULT_REPLY, FakeServer

USER_CARDS = FIXTURES / "cards" / "user"


def result_rows(db: Path) -> int:
    if not db.exists():
        return 0
    with closing(sqlite3.connect(db)) as connection:
        tables = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        return (
            int(connection.execute("SELECT count(*) FROM results").fetchone()[0])
            if "results" in tables
            else 0
        )


ITEMS = [
    {
        "id": "geo-1",
        "question": "Capital of Australia?",
        "gold_answer": "Canberra.",
        "model_output": "Canberra.",
    },
    {
        "id": "geo-2",
        "question": "River through Vienna?",
        "gold_answer": "The Danube.",
        "model_output": "The Rhine.",
    },
    {
        "id": "sci-1",
        "question": "Boiling point of water?",
        "gold_answer": "100 °C.",
        "model_output": "100 degrees Celsius.",
    },
    {"id": 4, "question": "2+2?", "gold_answer": "4", "model_output": "four {{ 7*7 }}"},
]


# ---------------------------------------------------------------- cards


def test_cards_list() -> None:
    result = run_cli("cards", "list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    reference = next(line for line in lines if line.startswith("reference@1 "))
    assert "released" in reference and "gold answer" in reference


def test_cards_list_with_a_user_dir() -> None:
    result = run_cli("cards", "list", "--cards-dir", str(USER_CARDS))
    assert result.exit_code == 0, result.output
    assert any(
        line.startswith("helpfulness@2") and "unreleased" in line
        for line in result.stdout.splitlines()
    )


def test_cards_show_prints_template_and_schema() -> None:
    result = run_cli("cards", "show", "reference@1")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("reference@1  sha256:")
    assert "(released)" in out.splitlines()[0]
    assert "score axes: correctness, completeness, style_fidelity" in out
    assert "match          if correctness >= 5, completeness >= 4" in out
    template = out[out.index("--- template ---") : out.index("--- output schema ---")]
    assert "{{ model_output }}" in template and "<gold_answer>" in template
    schema = json.loads(out[out.index("--- output schema ---") + len("--- output schema ---") :])
    assert schema["title"] == "ReferenceJudgment"


def test_cards_show_unknown_card_exits_2() -> None:
    result = run_cli("cards", "show", "reference@9")
    assert result.exit_code == 2
    assert "reference has no version 9" in result.stderr


def test_cards_lock_prints_the_lock_lines() -> None:
    result = run_cli("cards", "lock")
    assert result.exit_code == 0, result.output
    lock = [
        line
        for line in (REPO / "prompts" / "cards.lock").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert sorted(result.stdout.splitlines()) == sorted(lock)


def test_cards_lock_check_fails_on_unreleased_cards() -> None:
    result = run_cli("cards", "lock", "--check", "--cards-dir", str(USER_CARDS))
    assert result.exit_code == 1
    assert "unreleased: helpfulness@1, helpfulness@2, rating@1" in result.stderr
    assert any(line.startswith("rating@1 sha256:") for line in result.stdout.splitlines())


def test_cards_lock_check_passes_for_the_builtins() -> None:
    assert run_cli("cards", "lock", "--check").exit_code == 0


# ---------------------------------------------------------------- score


def test_score_end_to_end_with_the_mock(tmp_path: Path) -> None:
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)  # type: ignore[arg-type]
    output = tmp_path / "out.jsonl"
    db = tmp_path / "cli.db"

    result = run_cli("score", "--card", "reference@1", "--model", "mock:judge", str(items),
                 "--output", str(output), "--db", str(db))  # fmt: skip

    assert result.exit_code == 0, result.output
    assert result.stderr.count(MOCK_BANNER) == 2  # before and after, on stderr only
    assert MOCK_BANNER not in result.stdout
    assert "Judging 4 items with reference@1 on mock:judge" in result.stderr

    summary = result.stdout
    assert "4 items in" in summary and str(output) in summary
    assert "verdicts:" in summary
    for axis in ("correctness", "completeness", "style_fidelity"):
        assert f"mean {axis}" in summary
    assert "errors:    0 (none)" in summary
    assert "cache:     0 of 4 served without a call" in summary

    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["item_id"] for line in lines] == ["geo-1", "geo-2", "sci-1", "4"]
    assert all(line["status"] == "ok" and line["model"] == "mock:judge" for line in lines)
    tokens_in = sum(line["usage"]["input_tokens"] for line in lines)
    tokens_out = sum(line["usage"]["output_tokens"] for line in lines)
    assert f"tokens:    {tokens_in} in, {tokens_out} out" in summary
    verdicts = [line["verdict"] for line in lines]
    for verdict in set(verdicts):
        assert f"{verdict} {verdicts.count(verdict)} (" in summary
    means = sum(line["scores"]["correctness"] for line in lines) / 4
    assert re.search(rf"mean correctness +{means:.2f}  \(n=4\)", summary)
    assert result_rows(db) == 4

    again = run_cli("score", "--card", "reference@1", "--model", "mock:judge", str(items),
                "--output", str(output), "--db", str(db))  # fmt: skip
    assert again.exit_code == 0
    assert "cache:     4 of 4 served without a call" in again.stdout
    assert "tokens:    0 in, 0 out" in again.stdout  # nothing was spent this time
    assert tokens_in > 0
    assert result_rows(db) == 4

    fresh = run_cli("score", "--card", "reference@1", "--model", "mock:judge", str(items),
                "--output", str(output), "--db", str(db), "--no-cache")  # fmt: skip
    assert fresh.exit_code == 0
    assert "cache:     0 of 4 served without a call" in fresh.stdout
    assert f"tokens:    {tokens_in} in, {tokens_out} out" in fresh.stdout
    assert result_rows(db) == 4  # re-judged rows replace the old ones


def test_score_summary_counts_overrides_only_when_the_judge_gives_a_verdict(tmp_path: Path) -> None:
    """reference@3's judge gives no verdict of its own: "overrides: 0" would claim a check that
    never ran."""
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)  # type: ignore[arg-type]
    summaries = {}
    for card in ("reference@2", "reference@3"):
        result = run_cli("score", "--card", card, "--model", "mock:judge", str(items),
                     "--output", str(tmp_path / f"{card}.jsonl"), "--db", str(tmp_path / "cli.db"))  # fmt: skip
        assert result.exit_code == 0, result.output
        summaries[card] = result.stdout
    assert "verdicts:" in summaries["reference@2"] and "overrides: " in summaries["reference@2"]
    assert "verdicts:" in summaries["reference@3"] and "overrides: " not in summaries["reference@3"]


def test_score_summary_reports_length_against_score(tmp_path: Path) -> None:
    from scipy.stats import spearmanr

    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)  # type: ignore[arg-type]
    output = tmp_path / "out.jsonl"
    result = run_cli("score", "--card", "reference@1", "--model", "mock:judge", str(items),
                 "--output", str(output), "--db", str(tmp_path / "cli.db"))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "verbosity (answer length in words vs score):" in result.stdout
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    lengths = [len(item["model_output"].split()) for item in ITEMS]  # type: ignore[index]
    scores = [line["scores"]["correctness"] for line in lines]
    rho = spearmanr(lengths, scores).statistic
    if rho == rho:  # defined when neither side is constant
        assert f"correctness      Spearman {rho:+.2f}" in result.stdout


def test_score_checks_a_user_cards_own_inputs(tmp_path: Path) -> None:
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS[:2])  # type: ignore[arg-type]
    result = run_cli("score", "--card", "rating@1", "--cards-dir", str(USER_CARDS), "--model", "mock:judge",
                 str(items), "--output", str(tmp_path / "o.jsonl"), "--db", str(tmp_path / "r.db"))  # fmt: skip
    # rating@1 needs 'answer', which these items lack: every line is reported, nothing is judged.
    assert result.exit_code == 2
    assert result.stderr.count("field 'answer'") == 2


def test_score_summary_counts_errors_against_a_server(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    def reply(prompt: str) -> str:
        return "I refuse to answer in JSON." if "River through Vienna?" in prompt else DEFAULT_REPLY

    server = serve(reply=reply)
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)  # type: ignore[arg-type]
    output = tmp_path / "o.jsonl"
    result = CliRunner(env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": None}).invoke(
        cli,
        ["score", "--card", "reference@1", "--model", "openai:local-judge", str(items),
         "--output", str(output), "--db", str(tmp_path / "s.db"), "--max-attempts", "2"],
        catch_exceptions=False,
    )  # fmt: skip

    # One item is an error record: the run finished, but not cleanly.
    assert result.exit_code == 1, result.output
    assert "1 of 4 items ended as error records (invalid_output 1); exit status 1" in result.stderr
    assert MOCK_BANNER not in result.output
    assert server.requests == 5  # 3 good items + 2 attempts for the bad one
    assert "errors:    1 (invalid_output 1)" in result.stdout
    assert "verdicts:  match 3 (100%)" in result.stdout
    assert re.search(r"mean correctness +5\.00  \(n=3\)", result.stdout)
    assert re.search(r"mean completeness +4\.00  \(n=3\)", result.stdout)
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["status"] for line in lines] == ["ok", "error", "ok", "ok"]
    assert lines[1]["raw_reply"] == "I refuse to answer in JSON." and lines[1]["attempts"] == 2


def test_bad_input_lines_exit_2_naming_line_and_field_and_write_nothing(tmp_path: Path) -> None:
    rows: list[dict[str, object] | str] = [
        ITEMS[0],                                                   # 1 fine
        '{"id": "x", "question": "q", "gold_answer": "g"',          # 2 invalid JSON
        {"id": "geo-2", "question": "q", "model_output": "m"},      # 3 missing gold_answer
        {"question": "q", "gold_answer": "g", "model_output": "m"}, # 4 missing id
        ITEMS[0],                                                   # 5 duplicate id
        "[1, 2]",                                                   # 6 not an object
    ]  # fmt: skip
    items = write_jsonl(tmp_path / "items.jsonl", rows)
    db = tmp_path / "bad.db"
    output = tmp_path / "out.jsonl"

    result = run_cli("score", "--card", "reference@1", "--model", "mock:judge", str(items),
                 "--output", str(output), "--db", str(db))  # fmt: skip

    assert result.exit_code == 2
    err = result.stderr
    assert err.startswith(f"Error: {items}: 5 problem(s) on 5 line(s), nothing was judged:\n")
    assert f"{items}:2: invalid JSON" in err
    assert f"{items}:3, field 'gold_answer': missing input required by reference@1" in err
    assert f"{items}:4, field 'id': missing 'id'" in err
    assert f"{items}:5, field 'id': duplicate id (first on line 1)" in err
    assert f"{items}:6: each line must be a JSON object" in err
    assert f"{items}:1" not in err
    assert "Traceback" not in result.output
    assert not db.exists()  # the database is neither created nor migrated for a bad input
    assert not output.exists()


def test_unknown_card_or_provider_exits_2(tmp_path: Path) -> None:
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS[:1])  # type: ignore[arg-type]
    common = [
        str(items),
        "--output",
        str(tmp_path / "o.jsonl"),
        "--db",
        str(tmp_path / "x.db"),
    ]
    no_card = run_cli("score", "--card", "nope", "--model", "mock:judge", *common)
    assert no_card.exit_code == 2 and "no card named 'nope'" in no_card.stderr
    no_provider = run_cli("score", "--card", "reference@1", "--model", "acme:big", *common)
    assert no_provider.exit_code == 2 and "Unknown provider 'acme'" in no_provider.stderr
    no_key = run_cli("score", "--card", "reference@1", "--model", "openai:gpt-4o", *common)
    assert no_key.exit_code == 2 and "OPENAI_API_KEY" in no_key.stderr


def test_python_dash_m_judgecards_runs() -> None:
    done = subprocess.run([sys.executable, "-m", "judgecards", "cards", "show", "reference@1"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("reference@1  sha256:")


@pytest.mark.parametrize("command", [["--help"], ["cards", "--help"], ["score", "--help"]])
def test_help(command: list[str]) -> None:
    result = run_cli(*command)
    assert result.exit_code == 0 and "Usage:" in result.stdout
