"""``judgecards compare``: exit statuses, located input errors and progress (loopback server)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from judgecards.cli import cli
from tests.builders import run_cli
from tests.fakes.server import FakeServer, card_reply


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def sides(tmp_path: Path, n: int = 3) -> tuple[Path, Path]:
    a = [{"id": f"q{i}", "question": f"Question {i}?", "answer": f"A {i}"} for i in range(n)]
    b = [{"id": f"q{i}", "answer": f"B {i}" + (" BROKEN" if i == 0 else "")} for i in range(n)]
    return write(tmp_path / "a.jsonl", a), write(tmp_path / "b.jsonl", b)


def judge_breaks_on_marked_pairs(prompt: str) -> str:
    return "no verdict today" if "BROKEN" in prompt else card_reply(prompt)


@pytest.fixture
def fake(serve: Callable[..., FakeServer]) -> FakeServer:
    return serve(reply=judge_breaks_on_marked_pairs)


def compare(fake: FakeServer, tmp_path: Path, a: Path, b: Path, *extra: str) -> Result:
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
    return run_cli(
        "compare",
        "--model",
        "openai:judge",
        "--a",
        a,
        "--b",
        b,
        "--output",
        tmp_path / "out.jsonl",
        "--db",
        tmp_path / "c.db",
        "--max-attempts",
        "1",
        *extra,
        env=env,
    )


def test_failed_pairs_exit_1_unless_tolerated(fake: FakeServer, tmp_path: Path) -> None:
    a, b = sides(tmp_path)
    result = compare(fake, tmp_path, a, b)
    assert result.exit_code == 1, result.output
    assert "1 of 3 pairs ended as error records (invalid_output 1); exit status 1" in result.stderr
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 3
    # Progress counts single judgments (both orders), with a line even off a terminal.
    lines = [line for line in result.stderr.splitlines() if line.startswith("judging (both")]
    assert lines[-1].startswith("judging (both orders) 6/6 (100%)  ok 4  errors 2  retries 0")

    tolerated = compare(fake, tmp_path, a, b, "--max-errors", "34%")
    assert tolerated.exit_code == 0, tolerated.output
    assert "within --max-errors 34%" in tolerated.stderr


def test_all_pairs_judged_exits_0(serve: Callable[..., FakeServer], tmp_path: Path) -> None:
    a, b = sides(tmp_path)
    b.write_text(b.read_text().replace(" BROKEN", ""))
    result = compare(serve(), tmp_path, a, b)
    assert result.exit_code == 0, result.output
    assert "error records" not in result.stderr


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"id": "q1", "answer": "\xff"}\n', "b.jsonl:2: not UTF-8 (byte 0xff at column 25)"),
        (
            b'{"id": "q1", "answer": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n",
            "b.jsonl:2: JSON nested too deeply",
        ),
    ],
)
def test_bad_bytes_in_an_outputs_file_are_located(
    fake: FakeServer, tmp_path: Path, raw: bytes, message: str
) -> None:
    a, b = sides(tmp_path)
    b.write_bytes(b.read_bytes().splitlines(keepends=True)[0] + raw)
    result = compare(fake, tmp_path, a, b)
    assert result.exit_code == 2, result.output
    assert "1 problem(s) on 1 line(s), nothing was judged" in result.stderr
    assert message in result.stderr and "Traceback" not in result.output
    assert fake.requests == 0 and not (tmp_path / "c.db").exists()


def test_a_card_that_is_not_pairwise_is_refused_before_the_database(
    fake: FakeServer, tmp_path: Path
) -> None:
    a, b = sides(tmp_path)
    result = compare(fake, tmp_path, a, b, "--card", "reference@1")
    assert result.exit_code == 2
    assert "reference@1 is not a pairwise card" in result.stderr
    assert fake.requests == 0 and not (tmp_path / "c.db").exists()


def test_an_unusable_output_is_refused_before_any_call(fake: FakeServer, tmp_path: Path) -> None:
    a, b = sides(tmp_path)
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
    result = CliRunner(env=env).invoke(
        cli,
        ["compare", "--model", "openai:judge", "--a", str(a), "--b", str(b),
         "--output", str(tmp_path / "gone" / "out.jsonl"), "--db", str(tmp_path / "c.db")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--output's directory" in result.stderr and "does not exist" in result.stderr
    assert fake.requests == 0 and not (tmp_path / "c.db").exists()


def test_an_answer_over_max_input_chars_is_located(fake: FakeServer, tmp_path: Path) -> None:
    a, b = sides(tmp_path)
    write(b, [{"id": "q0", "answer": "B 0"}, {"id": "q1", "output": "z" * 40}])
    result = compare(fake, tmp_path, a, b, "--max-input-chars", "30")
    assert result.exit_code == 2, result.output
    assert f"{b}:2, field 'output': 40 characters (input 'answer'), over --max-input-chars 30" in (
        result.stderr
    )
    assert fake.requests == 0 and not (tmp_path / "c.db").exists()
