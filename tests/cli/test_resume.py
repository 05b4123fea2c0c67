"""Kill ``judgecards score`` with SIGKILL mid-run, run it again, and lose or repeat nothing.

The CLI runs as a real subprocess against the loopback fake server (real sockets, real OpenAI
SDK, no API key: a local base URL gets a placeholder key). The test polls the database until
some results are committed, kills the process without warning, and re-runs the same command.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from tests.builders import REPO, wait_for
from tests.fakes.server import FakeServer

N = 40

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


@pytest.fixture
def server(serve: Callable[..., FakeServer]) -> FakeServer:
    return serve(latency=0.05)


def ok_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with closing(sqlite3.connect(db, timeout=5)) as connection:
            return int(
                connection.execute("SELECT count(*) FROM results WHERE status = 'ok'").fetchone()[0]
            )
    except sqlite3.OperationalError:  # not migrated yet
        return 0


def test_sigkill_then_resume_redoes_only_unfinished_items(
    tmp_path: Path, server: FakeServer
) -> None:
    items = tmp_path / "items.jsonl"
    with items.open("w") as handle:
        for i in range(N):
            handle.write(json.dumps({
                "id": f"item-{i:02d}", "question": f"What is {i} + {i}?", "gold_answer": str(2 * i),
                "model_output": f"It is {2 * i}.",
            }) + "\n")  # fmt: skip
    db = tmp_path / "results.db"
    output = tmp_path / "out.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "JUDGECARDS_DB")}
    env["OPENAI_BASE_URL"] = server.base_url
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    command = [
        sys.executable, "-m", "judgecards", "score", "--card", "reference@1", "--model", "openai:gpt-4o",
        str(items), "--output", str(output), "--db", str(db), "--concurrency", "2", "--timeout", "10",
    ]  # fmt: skip

    first = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for(
            lambda: ok_rows(db) >= 5,
            alive=lambda: first.poll() is None,
            what="five results stored by the first run",
            poll=0.01,
        )
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(timeout=30)
        first.communicate()
    assert first.returncode == -signal.SIGKILL

    finished = ok_rows(db)
    assert 5 <= finished < N, "the run finished before it could be killed"
    assert not output.exists()  # the output file is only written at the end
    # A request the killed process had already written may still be on its way into the server.
    requests_before = -1
    while requests_before != server.requests:
        requests_before = server.requests
        time.sleep(0.1)

    second = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert second.returncode == 0, second.stderr[-2000:]

    assert server.requests - requests_before == N - finished
    with closing(sqlite3.connect(db)) as connection:
        rows = connection.execute("SELECT item_id, status FROM results").fetchall()
    assert len(rows) == N
    assert len({item_id for item_id, _ in rows}) == N
    assert {status for _, status in rows} == {"ok"}

    lines = output.read_text().splitlines()
    assert len(lines) == N
    assert [json.loads(line)["item_id"] for line in lines] == [f"item-{i:02d}" for i in range(N)]
    assert f"cache:     {finished} of {N} served without a call" in second.stdout
