"""``judgecards eval CONFIG`` end to end: YAML and TOML configs, the mock judge and a real SDK
against the loopback fake server, and config errors that name the file, the line and the key."""

from __future__ import annotations

import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from judgecards.providers.mock import MOCK_BANNER
from tests.builders import EVAL_ITEMS as ITEMS
from tests.builders import EVAL_SURVIVORS as SURVIVORS
from tests.builders import EVAL_YAML as YAML
from tests.builders import REPO, run_cli
from tests.builders import eval_setup as setup
from tests.fakes.server import FakeServer

TOML = """\
items = "items.jsonl"

[[tiers]]
name = "format"

[[tiers.checks]]
type = "length"
field = "model_output"
min = 1

[[tiers.checks]]
type = "regex"
field = "model_output"
forbid = '(?i)\\bas an ai\\b'

[[tiers]]
name = "metric"
checks = [
  { type = "metric", metric = "exact_match", accept_min = 1 },
  { type = "metric", metric = "token_f1", min = 0.05 },
]

[[tiers]]
name = "judge"

[tiers.judge]
card = "reference@1"
model = "MODEL"
pass_verdicts = ["match", "partial_match", "mismatch"]
"""


def error_of(result: Result) -> str:
    assert result.exit_code == 2, result.output
    return result.stderr


def stored_results(db: Path) -> int:
    with closing(sqlite3.connect(db)) as connection:
        return int(connection.execute("SELECT count(*) FROM results").fetchone()[0])


# ---------------------------------------------------------------- runs


@pytest.mark.parametrize("config, name", [(YAML, "eval.yaml"), (TOML, "eval.toml")])
def test_mock_run_writes_every_item_and_reports_the_savings(
    tmp_path: Path, config: str, name: str
) -> None:
    path = setup(tmp_path, config, name)
    output, db = tmp_path / "out" / "rows.jsonl", tmp_path / "j.db"
    output.parent.mkdir()

    result = run_cli("eval", str(path), "--output", str(output), "--json", "--db", str(db))

    assert result.exit_code == 0, result.output
    assert result.stderr.count(MOCK_BANNER) == 2
    report = json.loads(result.stdout)
    assert (report["items"], report["passed"] + report["failed"] + report["errors"]) == (6, 6)
    assert report["judge"] == {
        "card": "reference@1", "model": "mock:judge", "mock": True, "judged": SURVIVORS,
        "calls_saved": len(ITEMS) - SURVIVORS, "served_from_cache": 0,
        "estimated_tokens_avoided": report["judge"]["estimated_tokens_avoided"],
    }  # fmt: skip
    assert report["judge"]["estimated_tokens_avoided"] > 0
    assert [
        (t["name"], t["in"], t["passed"], t["accepted"], t["failed"], t["errors"])
        for t in report["tiers"]
    ] == [
        ("format", 6, 4, 0, 2, 0),
        ("metric", 4, 2, 1, 1, 0),
        ("judge", 2, 2, 0, 0, 0),  # every verdict passes in this config
    ]
    rows = [json.loads(line) for line in output.read_text("utf-8").splitlines()]
    assert [row["id"] for row in rows] == [item["id"] for item in ITEMS]
    assert [(row["outcome"], row["tier"]) for row in rows] == [
        ("pass", "metric"), ("fail", "format"), ("fail", "format"), ("fail", "metric"), ("pass", "judge"), ("pass", "judge"),
    ]  # fmt: skip
    assert rows[0]["accepted"] is True and rows[4]["judge"]["model"] == "mock:judge"
    assert stored_results(db) == SURVIVORS
    assert not list(tmp_path.glob("out/*.tmp"))


def test_text_report_and_relative_items_path_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    path = setup(configs, YAML)
    monkeypatch.chdir(tmp_path)  # items.jsonl is found beside the config, not in the cwd

    result = run_cli("eval", "configs/eval.yaml", "--db", str(tmp_path / "j.db"))

    assert result.exit_code == 0, result.output
    assert path.exists()
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["#", "tier", "kind", "in", "passed", "accepted", "failed", "errors"]
    assert lines[1].split() == ["1", "format", "checks", "6", "4", "0", "2", "0"]
    assert (
        "judge reference@1 on mock:judge: 2 of 6 items judged, 4 judge calls saved (67%), 0 served from cache"
        in result.stdout
    )
    assert "  empty  fail at format: model_output is 0 chars, fewer than min 1" in result.stdout
    assert "(--output FILE keeps one row per item)" in result.stdout


def test_the_example_config_runs(tmp_path: Path) -> None:
    output = tmp_path / "rows.jsonl"
    result = run_cli(
        "eval",
        str(REPO / "examples" / "eval_config.yaml"),
        "--output",
        str(output),
        "--json",
        "--db",
        str(tmp_path / "j.db"),
    )

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    lines = (REPO / "examples" / "eval_items.jsonl").read_text("utf-8").splitlines()
    assert report["items"] == len(lines) == len(output.read_text("utf-8").splitlines())
    assert [(t["in"], t["failed"], t["accepted"]) for t in report["tiers"]] == [
        (10, 3, 0),
        (7, 1, 3),
        (3, report["tiers"][2]["failed"], 0),
    ]
    assert report["judge"]["calls_saved"] == 7


def test_real_sdk_is_called_only_for_survivors(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = setup(tmp_path, YAML, model="openai:gpt-4o")
    before = server.requests

    result = run_cli("eval", str(path), "--json", "--db", str(tmp_path / "j.db"))

    assert result.exit_code == 0, result.output
    assert MOCK_BANNER not in result.stderr
    assert server.requests - before == SURVIVORS
    report = json.loads(result.stdout)
    assert report["judge"]["judged"] == SURVIVORS and report["judge"]["mock"] is False
    assert {r["id"]: r["judge"]["verdict"] for r in report["results"] if r["judge"]} == {
        "j1": "match",
        "j2": "match",
    }


def test_a_config_without_a_judge_needs_no_database(tmp_path: Path) -> None:
    path = setup(
        tmp_path,
        "items: items.jsonl\ntiers:\n  - checks:\n      - {type: json, field: model_output}\n",
    )
    db = tmp_path / "never.db"

    result = run_cli("eval", str(path), "--json", "--db", str(db))

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["judge"] is None and report["tiers"][0]["name"] == "tier 1"
    assert report["results"][0]["reasons"] == [
        "model_output is not JSON: Expecting value at line 1 column 1"
    ]
    assert not db.exists() and MOCK_BANNER not in result.stderr


# ---------------------------------------------------------------- config errors


@pytest.mark.parametrize(
    "old, new, where, message",
    [
        (
            "        forbid:",
            "        forbidd:",
            "eval.yaml:10, field 'tiers.0.checks.1.forbidd'",
            "unknown key 'forbidd'",
        ),
        (
            "accept_min: 1}",
            "accept_mn: 1}",
            "eval.yaml:13, field 'tiers.1.checks.0.accept_mn'",
            "unknown key 'accept_mn'",
        ),
        (
            "metric: token_f1",
            "metric: bleu",
            "eval.yaml:14, field 'tiers.1.checks.1.metric'",
            "unknown metric 'bleu'",
        ),
        (
            "type: regex",
            "type: regexp",
            "eval.yaml:8, field 'tiers.0.checks.1'",
            "unknown check type 'regexp'",
        ),
        (
            "'(?i)\\bas an ai\\b'",
            "'(unclosed'",
            "eval.yaml:10, field 'tiers.0.checks.1.forbid'",
            "invalid regular expression",
        ),
        ("min: 1\n", "min: many\n", "eval.yaml:7, field 'tiers.0.checks.0.min'", "valid integer"),
        (
            "card: reference@1",
            "card: referenc",
            "eval.yaml:17, field 'tiers.2.judge.card'",
            "no card named 'referenc'",
        ),
        (
            "mismatch]",
            "wrong]",
            "eval.yaml:20, field 'tiers.2.judge.pass_verdicts.2'",
            "reference@1 never gives 'wrong'",
        ),
        (
            "{model_output: model_output}",
            "{answer: model_output}",
            "eval.yaml:19, field 'tiers.2.judge.inputs.answer'",
            "reference@1 has no input 'answer'",
        ),
        (
            "concurrency: 4",
            "concurrency: 0",
            "eval.yaml:21, field 'tiers.2.judge.concurrency'",
            "greater than or equal to 1",
        ),
        (
            "        field: model_output\n        min: 1",
            "        field: model_ouput\n        min: 1",
            "eval.yaml:6, field 'tiers.0.checks.0.field'",
            "no item in",
        ),
        (
            "items: items.jsonl",
            "items: missing.jsonl",
            "eval.yaml:1, field 'items'",
            "items file not found",
        ),
        (
            "      model: MODEL\n",
            "",
            "eval.yaml:16, field 'tiers.2.judge.model'",
            "missing key 'model'",
        ),
    ],
)
def test_yaml_config_errors_name_file_line_and_key(
    tmp_path: Path, old: str, new: str, where: str, message: str
) -> None:
    assert old in YAML
    path = setup(tmp_path, YAML.replace(old, new, 1))
    db = tmp_path / "j.db"

    error = error_of(run_cli("eval", str(path), "--db", str(db)))

    assert f"{tmp_path / where}: " in error and message in error, error
    assert not db.exists() or stored_results(db) == 0  # nothing was judged


def test_several_config_errors_are_listed_together(tmp_path: Path) -> None:
    config = YAML.replace("min: 1\n", "min: 1\n        max: x\n", 1).replace(
        "type: regex", "type: regexp"
    )
    error = error_of(run_cli("eval", str(setup(tmp_path, config))))
    assert "2 problem(s) in the config:" in error
    assert (
        "eval.yaml:8, field 'tiers.0.checks.0.max'" in error
        and "eval.yaml:9, field 'tiers.0.checks.1'" in error
    )


def test_judge_tier_must_be_last(tmp_path: Path) -> None:
    config = "items: items.jsonl\ntiers:\n  - judge: {card: reference@1, model: mock:judge, pass_verdicts: [match]}\n  - checks: [{type: length, field: model_output, max: 9}]\n"
    error = error_of(run_cli("eval", str(setup(tmp_path, config))))
    assert "eval.yaml:3, field 'tiers.0': the judge tier must be the last tier" in error


def test_a_tier_has_checks_or_a_judge(tmp_path: Path) -> None:
    error = error_of(
        run_cli("eval", str(setup(tmp_path, "items: items.jsonl\ntiers:\n  - name: nothing\n")))
    )
    assert "eval.yaml:3, field 'tiers.0': a tier has either 'checks'" in error


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    error = error_of(
        run_cli(
            "eval", str(setup(tmp_path, "items: items.jsonl\ntiers:\n  - checks: [\n  - x: y\n"))
        )
    )
    assert "eval.yaml:4: invalid YAML" in error


@pytest.mark.parametrize(
    "old, new, where, message",
    [
        (
            "forbid =",
            "forbidd =",
            "eval.toml:14, field 'tiers.0.checks.1.forbidd'",
            "unknown key 'forbidd'",
        ),
        # Keys inside a multi-line array point at the array's key.
        (
            "accept_min = 1",
            "accept_mn = 1",
            "eval.toml:18, field 'tiers.1.checks.0.accept_mn'",
            "unknown key 'accept_mn'",
        ),
        (
            '"mismatch"]',
            '"wrong"]',
            "eval.toml:29, field 'tiers.2.judge.pass_verdicts.2'",
            "never gives 'wrong'",
        ),
        ('card = "reference@1"', 'card = "reference@1', "eval.toml:27", "invalid TOML"),
    ],
)
def test_toml_config_errors_name_file_line_and_key(
    tmp_path: Path, old: str, new: str, where: str, message: str
) -> None:
    assert old in TOML
    path = setup(tmp_path, TOML.replace(old, new, 1), "eval.toml")
    error = error_of(run_cli("eval", str(path)))
    assert f"{tmp_path / where}" in error and message in error, error


def test_toml_without_tomllib_or_tomli_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python 3.10 has no tomllib; None in sys.modules makes the import fail as it would there.
    monkeypatch.setitem(sys.modules, "tomllib", None)
    monkeypatch.setitem(sys.modules, "tomli", None)
    error = error_of(run_cli("eval", str(setup(tmp_path, TOML, "eval.toml"))))
    assert "TOML configs need Python 3.11+ or the tomli package" in error and "YAML" in error


def test_output_directory_must_exist_before_the_run(tmp_path: Path) -> None:
    error = error_of(
        run_cli(
            "eval", str(setup(tmp_path, YAML)), "--output", str(tmp_path / "nope" / "rows.jsonl")
        )
    )
    assert "nope/rows.jsonl: --output's directory" in error and "does not exist" in error


def test_unknown_config_format(tmp_path: Path) -> None:
    error = error_of(run_cli("eval", str(setup(tmp_path, "{}", "eval.json"))))
    assert "a config must be YAML (.yaml, .yml) or TOML (.toml)" in error


def test_bad_item_lines_are_all_reported_before_any_call(tmp_path: Path) -> None:
    rows: list[Any] = [ITEMS[0], "not json", {"question": "no id"}, ITEMS[0], "[1]"]
    db = tmp_path / "j.db"
    error = error_of(run_cli("eval", str(setup(tmp_path, YAML, items=rows)), "--db", str(db)))
    assert "items.jsonl: 4 problem(s) on 4 line(s), nothing was evaluated:" in error
    for expected in (
        ":2: invalid JSON",
        ":3, field 'id': missing 'id'",
        ":4, field 'id': duplicate id (first on line 1)",
        ":5: each line must be a JSON object",
    ):
        assert expected in error
    assert not db.exists()  # a bad items file neither creates nor migrates the database


# ---------------------------------------------------------------- --model


def test_model_option_replaces_the_configured_judge_model(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A config written for the offline mock runs on a real model without editing it (before,
    # examples/run.sh ran the tiered eval on mock:judge even with a real model configured).
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = setup(tmp_path, YAML, model="mock:judge")
    before = server.requests

    result = run_cli(
        "eval", str(path), "--json", "--model", "openai:gpt-4o", "--db", str(tmp_path / "j.db")
    )

    assert result.exit_code == 0, result.output
    assert server.requests - before == SURVIVORS and MOCK_BANNER not in result.stderr
    report = json.loads(result.stdout)
    assert report["judge"]["model"] == "openai:gpt-4o" and report["judge"]["mock"] is False


def test_model_option_drops_a_base_url_meant_for_another_provider(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The config's base_url belongs to its OpenAI server (here a closed port): a replacement model
    # from another provider must go to that provider's own URL, not there.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url.removesuffix("/v1"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    closed = "      concurrency: 4\n      base_url: http://127.0.0.1:9/v1\n"
    path = setup(tmp_path, YAML.replace("      concurrency: 4\n", closed), model="openai:gpt-4o")
    before = server.requests

    result = run_cli(
        "eval",
        str(path),
        "--json",
        "--model",
        "anthropic:claude-test",
        "--db",
        str(tmp_path / "j.db"),
    )

    assert result.exit_code == 0, result.output
    assert server.requests - before == SURVIVORS
    assert json.loads(result.stdout)["judge"]["model"] == "anthropic:claude-test"


def test_model_option_without_a_judge_tier_is_a_usage_error(tmp_path: Path) -> None:
    path = setup(
        tmp_path, "items: items.jsonl\ntiers:\n  - checks: [{type: json, field: model_output}]\n"
    )
    error = error_of(run_cli("eval", str(path), "--model", "openai:gpt-4o"))
    assert (
        "--model openai:gpt-4o replaces the judge tier's model, but the config has no judge tier"
        in error
    )
    assert f"{path}:2" in error
