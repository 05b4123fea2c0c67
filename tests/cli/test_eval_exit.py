"""``judgecards eval``: exit statuses, nothing created for a bad config, progress of the judge tier."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.builders import run_cli
from tests.fakes.server import DEFAULT_REPLY, FakeServer

CONFIG = """\
items: items.jsonl
tiers:
  - name: format
    checks:
      - {type: length, field: model_output, min: 1}
  - name: judge
    judge:
      card: reference
      model: openai:judge
      pass_verdicts: [PASS]
      concurrency: 2
"""


def items(n: int) -> list[dict[str, str]]:
    return [
        {"id": f"q{i}", "question": f"Question {i}?", "gold_answer": "Gold",
         "model_output": "" if i == 0 else f"Answer {i}" + (" BROKEN" if i == 1 else "")}
        for i in range(n)
    ]  # fmt: skip


def setup(tmp_path: Path, *, pass_verdicts: str = "[match]", n: int = 4) -> Path:
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in items(n)))
    config = tmp_path / "eval.yaml"
    config.write_text(CONFIG.replace("[PASS]", pass_verdicts))
    return config


@pytest.fixture
def fake(serve: Callable[..., FakeServer]) -> FakeServer:
    return serve(reply=lambda prompt: "no verdict" if "BROKEN" in prompt else DEFAULT_REPLY)


def evaluate(fake: FakeServer, tmp_path: Path, config: Path, *extra: str) -> Result:
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
    return run_cli("eval", config, "--db", tmp_path / "e.db", *extra, env=env)


def test_a_judge_error_exits_1_and_a_failed_tier_does_not(fake: FakeServer, tmp_path: Path) -> None:
    result = evaluate(fake, tmp_path, setup(tmp_path))
    # q0 fails the format tier (an outcome, not an error); q1's judge never answers in JSON.
    assert result.exit_code == 1, result.output
    assert "1 of 4 items ended as error records (judge: invalid_output 1); exit status 1" in (
        result.stderr
    )
    lines = [line for line in result.stderr.splitlines() if line.startswith("judge tier ")]
    assert lines[-1].startswith("judge tier 3/3 (100%)  ok 2  errors 1  retries 0")

    tolerated = evaluate(fake, tmp_path, setup(tmp_path), "--max-errors", "1")
    assert tolerated.exit_code == 0, tolerated.output


def test_a_bad_judge_setting_creates_no_database(fake: FakeServer, tmp_path: Path) -> None:
    result = evaluate(fake, tmp_path, setup(tmp_path, pass_verdicts="[great]"))
    assert result.exit_code == 2, result.output
    assert "eval.yaml:" in result.stderr and "great" in result.stderr
    assert not (tmp_path / "e.db").exists() and fake.requests == 0


def test_an_undecodable_items_line_is_located(fake: FakeServer, tmp_path: Path) -> None:
    config = setup(tmp_path)
    with (tmp_path / "items.jsonl").open("ab") as handle:
        handle.write(b'{"id": "x", "model_output": "\xc3\x28"}\n')
    result = evaluate(fake, tmp_path, config)
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'items.jsonl'}:5: not UTF-8 (byte 0xc3 at column 30)" in result.stderr
    assert not (tmp_path / "e.db").exists() and fake.requests == 0


def test_an_unwritable_output_is_refused_first(fake: FakeServer, tmp_path: Path) -> None:
    output = tmp_path / "items.jsonl" / "rows.jsonl"  # under a file, not a directory
    result = evaluate(fake, tmp_path, setup(tmp_path), "--output", str(output))
    assert result.exit_code == 2
    assert f"Error: {output}: --output's directory" in result.stderr
    assert "is not a directory" in result.stderr
    assert not (tmp_path / "e.db").exists() and fake.requests == 0


def test_a_judged_input_over_max_input_chars_is_an_error_record(
    fake: FakeServer, tmp_path: Path
) -> None:
    config = setup(tmp_path, n=3)
    rows = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    rows[1]["model_output"] = "long answer " * 10  # 120 characters, and no longer BROKEN
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = evaluate(fake, tmp_path, config, "--max-input-chars", "100")
    assert result.exit_code == 1, result.output
    assert "1 of 3 items ended as error records (judge: input 1)" in result.stderr
    assert fake.requests == 1  # only q2 was sent: q0 failed the format tier, q1 was refused
