"""Exit statuses and located errors of ``judgecards score``, through CliRunner and real processes.

0 every item has a valid judgment (or the error records are within --max-errors); 1 finished
with error records; 2 usage or input error, nothing judged (and nothing created); 130 on Ctrl-C
after saying what was saved.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from judgecards.cli import cli
from tests.builders import REPO, run_cli, wait_for, write_jsonl
from tests.fakes.server import DEFAULT_REPLY, FakeServer


def items(n: int, *, bad: set[int] = frozenset()) -> list[dict[str, str]]:  # type: ignore[assignment]
    return [
        {
            "id": f"q{i}",
            "question": f"Question {i}?" + (" BAD" if i in bad else ""),
            "gold_answer": f"Gold {i}",
            "model_output": f"Answer {i}",
        }
        for i in range(n)
    ]


def reply(prompt: str) -> str:
    return "not JSON at all" if "BAD" in prompt else DEFAULT_REPLY


@pytest.fixture
def server(serve: Callable[..., FakeServer]) -> FakeServer:
    """A private fake server whose judge cannot answer items marked BAD."""
    return serve(reply=reply)


def score(server: FakeServer, *args: str | Path) -> Result:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
    return run_cli(
        "score",
        "--card",
        "reference@1",
        "--model",
        "openai:local-judge",
        "--max-attempts",
        "1",
        *args,
        env=env,
    )


def ok_rows(db: Path) -> int:
    with closing(sqlite3.connect(db)) as connection:
        return int(
            connection.execute("SELECT count(*) FROM results WHERE status = 'ok'").fetchone()[0]
        )


# ---------------------------------------------------------------- 0 and 1


def test_every_item_failing_exits_1_not_0(tmp_path: Path, server: FakeServer) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", items(3, bad={0, 1, 2}))
    result = score(server, data, "--output", tmp_path / "o.jsonl", "--db", tmp_path / "s.db")
    assert result.exit_code == 1, result.output
    assert "3 of 3 items ended as error records (invalid_output 3); exit status 1" in result.stderr
    assert "errors:    3 (invalid_output 3)" in result.stdout
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 3  # the records are written


def test_max_errors_as_a_count_or_a_share(tmp_path: Path, server: FakeServer) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", items(4, bad={1}))
    common = [data, "--output", tmp_path / "o.jsonl", "--db", tmp_path / "s.db"]

    assert score(server, *common).exit_code == 1  # default: no error tolerated
    tolerated = score(server, *common, "--max-errors", "1")
    assert tolerated.exit_code == 0, tolerated.output
    assert "1 of 4 items ended as error records (invalid_output 1); within --max-errors 1." in (
        tolerated.stderr
    )
    assert score(server, *common, "--max-errors", "25%").exit_code == 0  # 1 of 4 is 25%
    assert score(server, *common, "--max-errors", "24.9%").exit_code == 1
    assert score(server, *common, "--max-errors", "0").exit_code == 1


@pytest.mark.parametrize("value", ["-1", "three", "5 %", "101%"])
def test_max_errors_rejects_what_it_cannot_read(tmp_path: Path, value: str) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", items(1))
    result = CliRunner().invoke(
        cli,
        ["score", "--card", "reference@1", "--model", "mock:judge", str(data),
         "--output", str(tmp_path / "o.jsonl"), "--max-errors", value],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "Invalid value for '--max-errors'" in result.stderr


# ---------------------------------------------------------------- 2: checked before anything


def test_an_unusable_output_path_fails_before_any_call(tmp_path: Path, server: FakeServer) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", items(3))
    db = tmp_path / "s.db"
    (tmp_path / "a-dir").mkdir()
    cases = [
        (tmp_path / "missing" / "o.jsonl", "--output's directory", "does not exist"),
        (tmp_path / "items.jsonl" / "o.jsonl", "--output's directory", "is not a directory"),
    ]
    if sys.platform == "linux":  # creating files in /proc fails even for root
        cases.append((Path("/proc/judgecards-out.jsonl"), "cannot create files in /proc", ""))
    for output, message, detail in cases:
        result = score(server, data, "--output", output, "--db", db)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"Error: {output}: ") and message in result.stderr
        assert detail in result.stderr
        assert "Traceback" not in result.output
    directory = score(server, data, "--output", tmp_path / "a-dir", "--db", db)
    assert directory.exit_code == 2 and "is a directory" in directory.stderr
    assert server.requests == 0  # nothing was paid for
    assert not db.exists()  # nor was the database created


def test_db_under_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", items(1))
    db = tmp_path / "nope" / "s.db"
    result = CliRunner().invoke(
        cli,
        ["score", "--card", "reference@1", "--model", "mock:judge", str(data),
         "--output", str(tmp_path / "o.jsonl"), "--db", str(db)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "Invalid value for '--db'" in result.stderr
    assert f"the directory {str(db.parent)!r} does not exist" in result.stderr
    assert not db.parent.exists() and not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"id": "x", "question": "caf\xe9"}\n', ":2: not UTF-8 (byte 0xe9 at column 29)"),
        (
            b'{"id": "x", "q": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
            ":2: JSON nested too deeply",
        ),
    ],
)
def test_undecodable_and_deeply_nested_lines_are_located(
    tmp_path: Path, line: bytes, message: str
) -> None:
    data = tmp_path / "items.jsonl"
    data.write_bytes(json.dumps(items(1)[0]).encode() + b"\n" + line)
    db = tmp_path / "s.db"
    result = CliRunner().invoke(
        cli,
        ["score", "--card", "reference@1", "--model", "mock:judge", str(data),
         "--output", str(tmp_path / "o.jsonl"), "--db", str(db)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"{data}{message}" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not db.exists()


def test_a_full_disk_leaves_no_temporary_file_and_a_rerun_writes_without_calls(
    tmp_path: Path, server: FakeServer
) -> None:
    if shutil.which("unshare") is None or sys.platform != "linux":
        pytest.skip("needs Linux and unshare(1) to mount a tiny tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         f"mount -t tmpfs -o size=16k tmpfs {small}"],
        capture_output=True, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {probe.stderr.decode()!r}")
    data = write_jsonl(tmp_path / "items.jsonl", items(40))  # ~40 kB of results: more than 16k
    db = tmp_path / "s.db"
    output = small / "out.jsonl"
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
    # Inside a private mount namespace: mount the tiny tmpfs, run, then list what it holds.
    script = (
        f'mount -t tmpfs -o size=16k tmpfs {small} && "$@"; status=$?; ls -A {small}; exit $status'
    )
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
         sys.executable, "-m", "judgecards", "score", "--card", "reference@1",
         "--model", "openai:local-judge", str(data), "--db", str(db), "--output", str(output)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"Error: {output}: cannot write: no space left on the device" in done.stderr
    assert "run the same command again to write the file without new calls" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # the listing: no out.jsonl, no temporary file left behind
    assert ok_rows(db) == 40 and server.requests == 40  # every judgment was kept

    again = score(server, data, "--output", tmp_path / "out.jsonl", "--db", db)
    assert again.exit_code == 0, again.output
    assert server.requests == 40 and len((tmp_path / "out.jsonl").read_text().splitlines()) == 40


# ---------------------------------------------------------------- 130


def test_ctrl_c_exits_130_says_what_was_saved_and_a_rerun_resumes(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    server = serve(latency=0.25)
    data = write_jsonl(tmp_path / "items.jsonl", items(24))
    db = tmp_path / "s.db"
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test",
           "JUDGECARDS_PROGRESS_SECONDS": "0.2"}  # fmt: skip
    command = [sys.executable, "-m", "judgecards", "score", "--card", "reference@1",
               "--model", "openai:local-judge", str(data), "--db", str(db),
               "--output", str(tmp_path / "o.jsonl"), "--concurrency", "2"]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )

    def four_stored() -> bool:
        try:
            return db.exists() and ok_rows(db) >= 4
        except sqlite3.OperationalError:
            return False  # not migrated yet

    wait_for(four_stored, alive=lambda: process.poll() is None, what="four results stored")
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    saved = ok_rows(db)
    assert 4 <= saved < 24
    assert f"{saved} items finished in this run and saved in {db}" in stderr
    assert "Run the same command again to resume" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert not (tmp_path / "o.jsonl").exists() and stdout == ""
    # A progress line went out even though stderr is a pipe, not a terminal.
    assert "judging " in stderr and "retries 0" in stderr and "/24 (" in stderr
    sent = server.requests

    again = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert server.requests - sent == 24 - saved  # only the unsaved items were judged
    assert f"cache:     {saved} of 24 served without a call" in again.stdout
    # The uncalibrated-judge warning is one clean line, not Python source.
    warning = (
        "Warning: reference@1 has never been calibrated against human labels for openai:local-judge"
    )
    assert again.stderr.count(warning) == 1
    assert "UncalibratedJudgeWarning" not in again.stderr and "warn(" not in again.stderr


def test_an_input_over_max_input_chars_is_refused_before_anything(tmp_path: Path) -> None:
    rows = items(3)
    rows[1]["model_output"] = "x" * 25
    rows[2]["gold_answer"] = "y" * 21
    data = write_jsonl(tmp_path / "items.jsonl", rows)
    db = tmp_path / "s.db"
    common = ["score", "--card", "reference@1", "--model", "mock:judge", str(data),
              "--output", str(tmp_path / "o.jsonl"), "--db", str(db)]  # fmt: skip
    result = CliRunner().invoke(cli, [*common, "--max-input-chars", "20"])
    assert result.exit_code == 2, result.output
    assert "2 problem(s) on 2 line(s), nothing was judged" in result.stderr
    assert f"{data}:2, field 'model_output': 25 characters, over --max-input-chars 20" in (
        result.stderr
    )
    assert f"{data}:3, field 'gold_answer': 21 characters, over --max-input-chars 20" in (
        result.stderr
    )
    assert not db.exists()
    unlimited = CliRunner().invoke(cli, [*common, "--max-input-chars", "0"])
    assert unlimited.exit_code == 0, unlimited.output
