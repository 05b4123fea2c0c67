"""Two collectors of the same batches never pay twice: an item is claimed in the database before
anything is paid for it (a live re-ask, a live judgment, a new batch), and a collector that
finds an item claimed by a running one leaves it to it (or waits, with ``wait``). A claim whose
holder is gone (killed) is taken over, so nothing is stranded.

The collectors run against the loopback fake of both batch APIs with the real SDKs; the fake's
``gate`` holds every paid request, so a test catches the first collector in the middle of paying.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judgecards.batch import BatchCollection, collect_batch, submit_batch
from judgecards.batch.claims import claim_stamp
from judgecards.cli import cli
from judgecards.judging import Judge
from tests.builders import BATCH_PROVIDERS as PROVIDERS
from tests.builders import REPO, compare_args, submitted_entries, wait_for
from tests.builders import batch_judge_on as judge_on
from tests.builders import qa_items as items
from tests.builders import sql_rows as rows
from tests.fakes.batch_server import BatchFake

pytest_plugins = ["pytester"]


@pytest.fixture
def fake() -> Iterator[BatchFake]:
    with BatchFake() as server:
        yield server


class Collector(threading.Thread):
    """One `collect_batch` on its own judge (its own connection to the database)."""

    def __init__(self, fake: BatchFake, db: Path, **options: Any) -> None:
        super().__init__(daemon=True)
        self.fake, self.db, self.options = fake, db, options
        self.lines: list[str] = []
        self.collection: BatchCollection | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with judge_on(self.fake, "openai", self.db) as judge:
                self.collection = collect_batch(
                    judge, poll=0.01, progress=self.lines.append, **self.options
                )
        except BaseException as error:  # reported by the test
            self.error = error

    def result(self) -> BatchCollection:
        self.join(60)
        assert not self.is_alive() and self.error is None, self.error
        assert self.collection is not None
        return self.collection


def submit(fake: BatchFake, db: Path, n: int) -> list[str]:
    with judge_on(fake, "openai", db) as judge:
        submit_batch(judge, items(n))
    return [entry["custom_id"] for entry in submitted_entries(fake)]


@pytest.mark.parametrize("second_waits", [False, True])
def test_two_collectors_re_ask_an_invalid_batch_reply_once(
    fake: BatchFake, tmp_path: Path, second_waits: bool
) -> None:
    db = tmp_path / "j.db"
    keys = submit(fake, db, 3)
    fake.invalid = {keys[0]}
    fake.gate = threading.Event()
    first = Collector(fake, db, wait=True)
    first.start()
    wait_for(lambda: fake.counts["held"] == 1)  # the first collector is paying for the re-ask
    second = Collector(fake, db, wait=second_waits)
    second.start()
    if second_waits:
        wait_for(lambda: any("another collector" in line for line in second.lines))
        assert second.is_alive()  # it waits for the first, and pays for nothing
    else:
        second.join(30)  # it leaves the item to the first and returns at once
        assert not second.is_alive()
    fake.gate.set()
    one, two = first.result(), second.result()
    assert fake.counts["live"] == 1  # the re-ask was sent once
    assert sorted((r.attempts, r.status) for r in one.results) == [(1, "ok"), (1, "ok"), (2, "ok")]
    assert two.results == []
    if second_waits:
        assert two.finished and two.busy == {}
    else:
        assert sum(two.busy.values()) == 1 and not two.finished
        text = two.as_text()
        assert f"pid {os.getpid()}" in text and "being collected by another collector" in text
    assert rows(db, "SELECT state, owner, count(*) FROM batch_items GROUP BY state, owner") == [
        ("collected", None, 3)
    ]
    assert rows(db, "SELECT state FROM batch_jobs") == [("collected",)]


def test_two_collectors_judge_left_items_live_once(fake: BatchFake, tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    keys = submit(fake, db, 3)
    fake.expire, fake.errored = {keys[0]}, {keys[1]}
    with judge_on(fake, "openai", db) as judge:
        assert collect_batch(judge, wait=True, poll=0.001).left == {"expired": 1, "errored": 1}
    fake.expire, fake.errored = set(), set()
    fake.gate = threading.Event()
    first = Collector(fake, db, retry="live")
    first.start()
    wait_for(lambda: fake.counts["held"] == 1)  # judging the left items live (the first alone)
    second = Collector(fake, db, retry="live")
    second.start()
    second.join(30)
    assert not second.is_alive()
    fake.gate.set()
    one, two = first.result(), second.result()
    assert fake.counts["live"] == 2 and (one.live, two.live) == (2, 0)
    assert sum(two.busy.values()) == 2
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok'") == [(3,)]
    assert sorted(r[0] for r in rows(db, "SELECT state FROM batch_items")) == [
        "collected", "judged_live", "judged_live",
    ]  # fmt: skip


def test_two_collectors_resubmit_left_items_once(fake: BatchFake, tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    keys = submit(fake, db, 3)
    fake.expire = {keys[0], keys[1]}
    with judge_on(fake, "openai", db) as judge:
        collect_batch(judge, wait=True, poll=0.001)
    fake.expire = set()
    fake.gate = threading.Event()
    first = Collector(fake, db, retry="resubmit", wait=True)
    first.start()
    wait_for(lambda: fake.counts["held"] == 1)  # the new batch's create call
    second = Collector(fake, db, retry="resubmit")
    second.start()
    second.join(30)
    assert not second.is_alive()
    # The new batch's row has no provider id yet: it is not taken for a lost create call.
    status = CliRunner(env={"OPENAI_API_KEY": "sk-test"}).invoke(
        cli, ["batch", "status", "--db", str(db)]
    )
    assert f"pid {os.getpid()} on " in status.output, status.output
    assert "is making its create call" in status.output
    fake.gate.set()
    one, two = first.result(), second.result()
    assert fake.counts["creates"] == 2  # the submission and one re-submission
    assert one.resubmitted is not None and one.resubmitted.submitted == 2
    assert two.resubmitted is None and sum(two.busy.values()) == 2
    assert one.finished and len(one.results) == 2
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok' AND via = 'batch'") == [(3,)]
    assert rows(db, "SELECT note, owner FROM batch_jobs") == [(None, None), (None, None)]


class Clock:
    """A Unix-time clock that moves only when told to: claims age by it, not by wall time."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_a_running_collector_keeps_its_claims_past_the_lease(
    fake: BatchFake, tmp_path: Path
) -> None:
    """A re-ask may take longer than the lease: the holder renews its claims while it runs."""
    db = tmp_path / "j.db"
    fake.invalid = {submit(fake, db, 2)[0]}
    fake.gate = threading.Event()
    clock = Clock()
    first = Collector(fake, db, wait=True, claim_lease=0.4, clock=clock)
    first.start()
    wait_for(lambda: fake.counts["held"] == 1)
    clock.now += 1.2  # three leases later: only a renewal since keeps the claim in force
    renewed = claim_stamp(clock.now)
    wait_for(
        lambda: (
            (stamps := rows(db, "SELECT claimed_at FROM batch_items WHERE owner IS NOT NULL"))
            and all(stamp >= renewed for (stamp,) in stamps)
        ),
        alive=first.is_alive,
        what="the first collector's renewal",
    )
    second = Collector(fake, db, claim_lease=0.4, clock=clock)
    second.start()
    two = second.result()
    fake.gate.set()
    first.result()
    assert sum(two.busy.values()) == 1 and two.results == []
    assert fake.counts["live"] == 1


def claim(db: Path, owner: str, seconds_ago: float) -> None:
    """Mark every item as claimed by ``owner`` that long ago (as another collector would)."""
    at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - seconds_ago))
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE batch_items SET owner = ?, claimed_at = ?", (owner, at))


@pytest.mark.parametrize(
    ("owner", "seconds_ago", "taken"),
    [
        ("other-host:4242:abcd1234", 5, False),  # a live claim on another machine: left
        ("other-host:4242:abcd1234", 600, True),  # not renewed for longer than the lease
        ("{host}:{dead}:abcd1234", 5, True),  # this machine, and its process is gone
        ("{host}:{zombie}:abcd1234", 5, True),  # killed, not yet reaped by its parent
        ("{host}:{me}:abcd1234", 5, False),  # this process (another thread): alive
    ],
)
def test_a_claim_is_taken_over_only_when_its_holder_is_gone(
    fake: BatchFake, tmp_path: Path, owner: str, seconds_ago: float, taken: bool
) -> None:
    import socket

    db = tmp_path / "j.db"
    submit(fake, db, 2)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    zombie = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    zombie.send_signal(signal.SIGKILL)
    wait_for(
        lambda: Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    )
    holder = owner.format(
        host=socket.gethostname(), dead=gone.pid, me=os.getpid(), zombie=zombie.pid
    )
    claim(db, holder, seconds_ago)
    with judge_on(fake, "openai", db) as judge:
        for _ in range(6):  # the fake's batch ends on its fourth retrieve
            found = collect_batch(judge, wait=False, claim_lease=120)
            if found.jobs[0].state != "submitted":
                break
    zombie.wait()
    assert (len(found.results), sum(found.busy.values())) == ((2, 0) if taken else (0, 2))
    assert fake.counts["live"] == 0


def environment(fake: BatchFake) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test-batch", "OPENAI_BASE_URL": fake.openai_url}


def collect_process(fake: BatchFake, db: Path, log: Path) -> subprocess.Popen[str]:
    """``batch collect --wait`` as a process; its progress lines (stderr) go to ``log``."""
    with log.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "judgecards", "batch", "collect", "--wait", "--poll", "0.05",
             "--db", str(db)],
            cwd=REPO, env=environment(fake), stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip


def test_a_collector_killed_mid_collect_leaves_exactly_the_rest_to_the_other(
    fake: BatchFake, tmp_path: Path
) -> None:
    db = tmp_path / "j.db"
    keys = submit(fake, db, 4)
    fake.invalid = {keys[0]}
    fake.gate = threading.Event()
    first = collect_process(fake, db, tmp_path / "first.log")
    wait_for(lambda: fake.counts["held"] == 1)  # re-asking the 4th item
    wait_for(lambda: rows(db, "SELECT count(*) FROM results") == [(3,)])  # the 3 valid ones stored
    log = tmp_path / "second.log"
    second = collect_process(fake, db, log)
    wait_for(lambda: "another collector" in log.read_text())  # it sees the claim and waits
    assert second.poll() is None and fake.counts["held"] == 1
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)  # reaped: its pid is gone
    fake.gate.set()
    out, _ = second.communicate(timeout=60)
    assert second.returncode == 0, log.read_text()
    assert "stored 1 result(s) this time (1 ok" in out  # exactly the rest
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok'") == [(4,)]
    assert rows(db, "SELECT state, owner, count(*) FROM batch_items GROUP BY state, owner") == [
        ("collected", None, 4)
    ]
    # The killed collector's re-ask was lost with it; the second asked once more.
    assert fake.counts["live"] == 2 and fake.counts["creates"] == 1


def test_a_collector_killed_mid_collect_is_finished_by_a_re_run(
    fake: BatchFake, tmp_path: Path
) -> None:
    db = tmp_path / "j.db"
    keys = submit(fake, db, 3)
    fake.invalid = {keys[1]}
    fake.gate = threading.Event()
    first = collect_process(fake, db, tmp_path / "first.log")
    wait_for(lambda: fake.counts["held"] == 1)
    wait_for(lambda: rows(db, "SELECT count(*) FROM results") == [(2,)])
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    fake.gate.set()
    again = subprocess.run(
        [sys.executable, "-m", "judgecards", "batch", "collect", "--db", str(db)],
        cwd=REPO, env=environment(fake), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "stored 1 result(s) this time (1 ok" in again.stdout
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok'") == [(3,)]


def test_offline_without_the_cache_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"offline.*cache"):
        Judge("reference", PROVIDERS["openai"], db=tmp_path / "j.db", offline=True, cache=False)
    assert not (tmp_path / "j.db").exists()


def test_the_pytest_plugin_refuses_an_offline_judge_without_the_cache(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(
        test_inner="""
def test_uses_a_judge_without_cache(judge):
    judge("reference", cache=False)
"""
    )
    result = pytester.runpytest_subprocess(
        f"--judge-db={tmp_path / 'j.db'}", "--judge-offline", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)
    assert "ValueError: offline=True answers only from stored judgments" in result.stdout.str()


@pytest.mark.parametrize("command", ["score", "compare"])
def test_a_plan_without_the_cache_needs_no_key_and_counts_every_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """A plan is built on the offline stand-in provider; with --no-cache that used to be an
    offline judge without its cache, which is now refused."""

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if command == "score":
        path = tmp_path / "items.jsonl"
        path.write_text("".join(json.dumps(item) + "\n" for item in items(2)))
        args: list[Any] = [
            "score", "--card", "reference@1", "--model", "openai:gpt-4o", path,
            "--output", tmp_path / "out.jsonl", "--db", tmp_path / "j.db",
        ]  # fmt: skip
    else:
        args = compare_args(tmp_path, 1, model="openai:gpt-4o")
        args[args.index("SERVER")] = "http://127.0.0.1:9"
    result = CliRunner().invoke(cli, [str(arg) for arg in [*args, "--plan", "--no-cache"]])
    assert result.exit_code == 0, result.output
    assert ": 2 to judge" in result.output
