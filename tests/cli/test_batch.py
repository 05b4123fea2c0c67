"""``judgecards batch ...`` (and the old ``score --batch``, ``compare --batch``) as whole processes, against the
loopback fake of both batch APIs: a collector killed while waiting resumes without submitting
again, and a later live run of the same items makes no call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import REPO, wait_for, write_items
from tests.fakes.batch_server import BatchFake


@pytest.fixture
def fake() -> Iterator[BatchFake]:
    with BatchFake() as server:
        yield server


def write_sides(tmp_path: Path) -> tuple[str, str]:
    """Two outputs files of the same two questions, for a pairwise card."""
    for side, text in (("a", "Paris."), ("b", "The capital of France is Paris, a large city.")):
        lines = [
            json.dumps(
                {
                    "id": f"q{k}",
                    "question": f"Capital of France ({k})?",
                    "answer": f"{text} {k}",
                    "model": f"model-{side}",
                }
            )
            for k in range(2)
        ]
        (tmp_path / f"{side}.jsonl").write_text("\n".join(lines) + "\n")
    return str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")


def environment(fake: BatchFake) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test-batch", "OPENAI_BASE_URL": fake.openai_url}


def judgecards(fake: BatchFake, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judgecards", *args],
        cwd=REPO, env=environment(fake), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def score_args(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "score", "--card", "reference@1", "--model", "openai:gpt-4o-mini",
        str(tmp_path / "items.jsonl"), "--output", str(tmp_path / "out.jsonl"),
        "--db", str(tmp_path / "j.db"), *extra,
    ]  # fmt: skip


def submit_args(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "batch", "submit", str(tmp_path / "items.jsonl"), "--card", "reference@1",
        "--model", "openai:gpt-4o-mini", "--db", str(tmp_path / "j.db"), *extra,
    ]  # fmt: skip


def test_a_collector_killed_while_waiting_resumes_without_submitting_again(
    fake: BatchFake, tmp_path: Path
) -> None:
    write_items(tmp_path / "items.jsonl", 4)
    submitted = judgecards(fake, *submit_args(tmp_path))
    assert submitted.returncode == 0, submitted.stderr
    assert "next: judgecards batch collect jcs-" in submitted.stdout
    assert not (tmp_path / "out.jsonl").exists()
    assert fake.counts["creates"] == 1

    fake.hold = True  # the batch stays in progress while the collector waits
    collector = subprocess.Popen(
        [sys.executable, "-m", "judgecards", "batch", "collect", "--wait", "--poll", "0.05",
         "--db", str(tmp_path / "j.db")],
        cwd=REPO, env=environment(fake), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    wait_for(
        lambda: fake.counts["retrieves"] >= 3,
        alive=lambda: collector.poll() is None,
        what="three polls of the batch",
    )
    collector.send_signal(signal.SIGKILL)
    _, progress = collector.communicate(timeout=30)
    assert fake.counts["retrieves"] >= 3
    assert "batches 0/1 ended" in progress and "validating" in progress  # the progress line

    fake.hold = False
    resumed = judgecards(fake, "batch", "collect", "--wait", "--poll", "0.05",
                         "--db", str(tmp_path / "j.db"))  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "stored 4 result(s) this time (4 ok" in resumed.stdout
    assert fake.counts["creates"] == 1  # nothing submitted again

    live = judgecards(fake, *score_args(tmp_path))
    assert live.returncode == 0, live.stderr
    assert fake.counts["live"] == 0  # every item answered from the store
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["item_id"] for r in written] == ["i0", "i1", "i2", "i3"]
    assert {r["via"] for r in written} == {"batch"} and all(r["status"] == "ok" for r in written)


def test_list_status_cancel_then_judge_the_canceled_items_live(
    fake: BatchFake, tmp_path: Path
) -> None:
    write_items(tmp_path / "items.jsonl", 3)
    db = str(tmp_path / "j.db")
    assert judgecards(fake, *submit_args(tmp_path)).returncode == 0
    listed = judgecards(fake, "batch", "list", "--db", db)
    assert "submitted (not retrieved)" in listed.stdout and "submitted 3" in listed.stdout
    status = judgecards(fake, "batch", "status", "--db", db)
    assert "validating" in status.stdout
    submission = listed.stdout.split()[0].rsplit("-", 1)[0]
    cancelled = judgecards(fake, "batch", "cancel", submission, "--db", db)
    assert cancelled.returncode == 0 and "cancelling" in cancelled.stdout
    collected = judgecards(fake, "batch", "collect", "--wait", "--poll", "0.05", "--db", db)
    assert "canceled 3" in collected.stdout and "--live" in collected.stdout
    assert fake.counts["live"] == 0
    live = judgecards(fake, "batch", "collect", "--live", "--db", db)
    assert live.returncode == 0, live.stderr
    assert "judged live: 3 item(s)" in live.stdout and fake.counts["live"] == 3
    assert "resubmitted" not in judgecards(fake, "batch", "list", "--db", db).stdout
    assert "judged_live 3" in judgecards(fake, "batch", "list", "--db", db).stdout


def test_batch_refuses_plan_and_a_mock_model(fake: BatchFake, tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", 1)
    both = judgecards(fake, *submit_args(tmp_path, "--plan"))
    assert both.returncode == 2 and "No such option '--plan'" in both.stderr
    args = submit_args(tmp_path)
    args[args.index("openai:gpt-4o-mini")] = "mock:judge"
    mock = judgecards(fake, *args)
    assert mock.returncode == 2 and "has none" in mock.stderr
    assert fake.counts["creates"] == 0


def test_pairs_in_a_batch_then_collect_writes_comparisons(fake: BatchFake, tmp_path: Path) -> None:
    a, b = write_sides(tmp_path)
    db = str(tmp_path / "j.db")
    model = ["--card", "pairwise@1", "--model", "openai:gpt-4o-mini"]
    submitted = judgecards(fake, "batch", "submit", a, b, *model, "--db", db)
    assert submitted.returncode == 0, submitted.stderr
    assert "4 submitted" in submitted.stdout and fake.counts["creates"] == 1
    collected = judgecards(fake, "batch", "collect", "--wait", "--poll", "0.05", "--db", db)
    assert "comparisons written: 2 pair(s)" in collected.stdout, collected.stderr
    ranked = judgecards(fake, "rank", "--db", db, "--card", "pairwise@1")
    assert ranked.returncode == 0 and "model-a" in ranked.stdout and "model-b" in ranked.stdout
    assert fake.counts["live"] == 0


def test_batch_submit_of_two_outputs_files_is_compare_batch(
    fake: BatchFake, tmp_path: Path
) -> None:
    """``batch submit A B --card pairwise`` is the new spelling of ``compare --batch``: the same
    requests, the same comparisons once collected; the old one says so in one line."""
    a, b = write_sides(tmp_path)
    model = ["--card", "pairwise@1", "--model", "openai:gpt-4o-mini"]
    new_db, old_db = str(tmp_path / "new.db"), str(tmp_path / "old.db")
    new = judgecards(fake, "batch", "submit", a, b, *model, "--db", new_db)
    output = str(tmp_path / "o.jsonl")
    old = judgecards(fake, "compare", a, b, *model, "--output", output, "--db", old_db, "--batch")
    assert new.returncode == old.returncode == 0, new.stderr + old.stderr
    assert "deprecated" not in new.stderr and "4 submitted" in new.stdout
    assert [line for line in old.stderr.splitlines() if "deprecated" in line] == [
        "Warning: compare --batch is deprecated and will be removed in the next release: use "
        "judgecards batch submit A B --card pairwise"
    ]
    assert old.stdout.replace(old_db, new_db).split("jcs-")[0] == new.stdout.split("jcs-")[0]
    assert "comparisons already decidable and written: 0" in new.stdout
    first, second = fake.batches.values()
    assert [r["body"] for r in first.requests] == [r["body"] for r in second.requests]

    written = {}
    for db in (new_db, old_db):
        collected = judgecards(fake, "batch", "collect", "--wait", "--poll", "0.05", "--db", db)
        assert "comparisons written: 2 pair(s)" in collected.stdout, collected.stderr
        output = tmp_path / f"{Path(db).stem}.jsonl"
        live = judgecards(fake, "compare", a, b, *model, "--output", str(output), "--db", db)
        assert live.returncode == 0, live.stderr
        written[db] = [
            (row["id"], row["winner"], row["model_a"], row["model_b"])
            for row in map(json.loads, output.read_text().splitlines())
        ]
    assert written[new_db] == written[old_db] and len(written[new_db]) == 2
    assert fake.counts["live"] == 0


def test_batch_submit_takes_two_files_only_with_a_pairwise_card(
    fake: BatchFake, tmp_path: Path
) -> None:
    a, b = write_sides(tmp_path)
    items = str(write_items(tmp_path / "items.jsonl", 1))
    db = tmp_path / "j.db"
    for files, message in (
        ([a, b], "reference@1 is not a pairwise card"),
        ([items, a, b], "3 files given: give ITEMS (one file) or A B"),
        ([], "Missing argument 'ITEMS'"),
    ):
        args = ["batch", "submit", *files, "--card", "reference@1", "--model", "openai:gpt-4o-mini"]
        refused = judgecards(fake, *args, "--db", str(db))
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    assert fake.counts["creates"] == 0 and not db.exists()


def test_a_batch_whose_create_call_never_answered_can_be_given_up(
    fake: BatchFake, tmp_path: Path
) -> None:
    write_items(tmp_path / "items.jsonl", 2)
    db = str(tmp_path / "j.db")
    fake.create_status = 503  # it may or may not have created the batch
    failed = judgecards(fake, *submit_args(tmp_path))
    assert failed.returncode == 2 and "may exist" in failed.stderr
    fake.create_status = None
    again = judgecards(fake, *submit_args(tmp_path))
    assert "2 already waiting in a batch" in again.stdout  # never paid for twice
    status = judgecards(fake, "batch", "status", "--db", db)
    assert "provider batches: none matches" in status.stdout
    given_up = judgecards(fake, "batch", "cancel", failed.stderr.split()[2], "--db", db)
    assert "no provider batch found; canceled here" in given_up.stdout, given_up.stderr
    resent = judgecards(fake, *submit_args(tmp_path))
    assert "2 submitted" in resent.stdout and fake.counts["creates"] == 1


def test_collect_re_asks_in_the_output_mode_the_batch_was_sent_in(
    fake: BatchFake, tmp_path: Path
) -> None:
    write_items(tmp_path / "items.jsonl", 2)
    submitted = judgecards(fake, *submit_args(tmp_path, "--set", "output_mode=prompt"))
    assert submitted.returncode == 0, submitted.stderr
    (batch,) = fake.batches.values()
    assert all("response_format" not in entry["body"] for entry in batch.requests)
    fake.invalid = {batch.requests[0]["custom_id"]}
    collected = judgecards(fake, "batch", "collect", "--wait", "--poll", "0.05",
                           "--db", str(tmp_path / "j.db"))  # fmt: skip
    assert "(2 ok" in collected.stdout, collected.stderr
    (reask,) = fake.live_bodies
    assert "response_format" not in reask and len(reask["messages"]) == 4  # system + 3 turns


def test_collect_exits_1_when_it_stores_error_records(fake: BatchFake, tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", 2)
    submitted = judgecards(fake, *submit_args(tmp_path, "--max-attempts", "1"))
    assert submitted.returncode == 0, submitted.stderr
    fake.invalid = {next(iter(fake.batches.values())).requests[0]["custom_id"]}
    collected = judgecards(fake, "batch", "collect", "--wait", "--poll", "0.05",
                           "--db", str(tmp_path / "j.db"))  # fmt: skip
    assert collected.returncode == 1
    assert "1 of 2 items ended as error records (invalid_output 1)" in collected.stderr
    assert fake.counts["live"] == 0  # --max-attempts 1 at submission: no re-ask


def test_the_output_written_after_collect_carries_what_the_batch_billed(
    fake: BatchFake, tmp_path: Path
) -> None:
    """Issue 22 item 23: the output written after ``batch collect`` said cost_usd 0.0."""
    import re
    import sqlite3
    from contextlib import closing

    write_items(tmp_path / "items.jsonl", 3)
    assert judgecards(fake, *submit_args(tmp_path)).returncode == 0
    db = tmp_path / "j.db"
    collected = judgecards(fake, "batch", "collect", "--wait", "--poll", "0.05", "--db", str(db))
    assert collected.returncode == 0, collected.stderr
    written = judgecards(fake, *score_args(tmp_path))
    assert written.returncode == 0, written.stderr
    assert fake.counts["live"] == 0
    with closing(sqlite3.connect(db)) as connection:
        billed = dict(connection.execute("SELECT item_id, cost_usd FROM results").fetchall())
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {r["item_id"]: r["cost_usd"] for r in rows} == billed
    assert all(cost > 0 for cost in billed.values())
    assert all(r["via"] == "batch" and r["cached"] and r["usage"]["input_tokens"] for r in rows)
    # This run paid nothing: the summary's cost and tokens are this run's only.
    assert re.search(
        r"cost: +\$0\.0+ this run, 3 served from cache", written.stderr + written.stdout
    )


def test_compare_after_collect_reports_no_spend_for_batch_judgments(
    fake: BatchFake, tmp_path: Path
) -> None:
    """Batch judgments served from the store carry their bill (issue 22 item 23), and the run
    that writes them still says it paid nothing."""
    a, b = write_sides(tmp_path)
    db = str(tmp_path / "j.db")
    model = ["--card", "pairwise@1", "--model", "openai:gpt-4o-mini", "--db", db]
    assert judgecards(fake, "batch", "submit", a, b, *model).returncode == 0
    args = ["compare", a, b, *model, "--output", str(tmp_path / "cmp.jsonl")]
    assert (
        judgecards(fake, "batch", "collect", "--wait", "--poll", "0.05", "--db", db).returncode == 0
    )
    again = judgecards(fake, *args, "--json")
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout[again.stdout.index("{\n") :])
    assert summary["judgments_served_without_call"] == 4 and summary["cost_usd"] == 0
    assert fake.counts["live"] == 0
