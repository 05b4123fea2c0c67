"""Batch APIs through the real OpenAI and Anthropic SDKs against a loopback fake of both
(`tests.fakes.batch_server`): what is submitted, split and stored, and how results come back."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from judgecards.batch import BatchError, collect_batch, submit_batch
from judgecards.batch.repository import BatchRepository
from judgecards.judging import Judge
from tests.builders import BATCH_PROVIDERS as PROVIDERS
from tests.builders import batch_judge_on as judge_on
from tests.builders import qa_items as items
from tests.builders import sql_rows as rows
from tests.builders import submitted_entries
from tests.fakes.batch_server import BatchFake


@pytest.fixture
def fake() -> Iterator[BatchFake]:
    with BatchFake() as server:
        yield server


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_batch_line_is_the_live_request_body(
    fake: BatchFake, provider: str, tmp_path: Path
) -> None:
    with judge_on(fake, provider, tmp_path / "live.db") as judge:
        judge.score_many(items(1))
    with judge_on(fake, provider, tmp_path / "batch.db") as judge:
        job = submit_batch(judge, items(1))
    (entry,) = submitted_entries(fake)
    assert entry["body"] == fake.live_bodies[0]
    assert job.submitted == 1 and len(job.batches) == 1
    assert entry["custom_id"] == rows(tmp_path / "live.db", "SELECT id FROM results")[0][0]
    if provider == "openai":
        line = json.loads(fake.uploads[0])
        assert (line["method"], line["url"]) == ("POST", "/v1/chat/completions")


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_collected_results_are_live_results_and_a_later_live_run_makes_no_call(
    fake: BatchFake, provider: str, tmp_path: Path
) -> None:
    db = tmp_path / "j.db"
    with judge_on(fake, provider, db) as judge:
        submit_batch(judge, items(3))
        lines: list[str] = []
        collected = collect_batch(judge, wait=True, poll=0.001, progress=lines.append)
        assert collected.finished and len(collected.results) == 3
        assert all(r.ok and r.via == "batch" and not r.cached for r in collected.results)
        again = judge.score_many(items(3))
    assert fake.counts["live"] == 0 and fake.counts["creates"] == 1
    assert [r.verdict for r in again] == ["match"] * 3 and all(r.cached for r in again)
    assert rows(db, "SELECT via, count(*) FROM results GROUP BY via") == [("batch", 3)]
    # The replies are in the response cache too: a no-cache-of-results judge reuses them.
    assert rows(db, "SELECT count(*) FROM response_cache") == [(3,)]
    statuses = [line.split(": ", 1)[1].split()[1] for line in lines]
    if provider == "openai":
        assert statuses == ["validating", "in_progress", "finalizing", "completed"]
    else:
        assert statuses == ["in_progress", "in_progress", "ended"]


@pytest.mark.parametrize(
    ("provider", "model", "cache_read"),
    [("openai", "openai:gpt-4o-mini", 0), ("anthropic", "anthropic:claude-haiku-4-5", 40)],
)
def test_batch_results_cost_the_batch_price(
    fake: BatchFake, tmp_path: Path, provider: str, model: str, cache_read: int
) -> None:
    fake.cache_read = cache_read  # tokens billed at the cache-read rate, discounted as well
    url = fake.openai_url if provider == "openai" else fake.base_url
    costs = []
    for name in ("live", "batch"):
        with Judge("reference@1", model, db=tmp_path / f"{name}.db", api_key="sk-test",
                   base_url=url) as judge:  # fmt: skip
            if name == "live":
                (result,) = judge.score_many(items(1))
            else:
                submit_batch(judge, items(1))
                (result,) = collect_batch(judge, wait=True, poll=0.001).results
        costs.append(result)
    live, batched = costs
    assert live.usage == batched.usage and live.cost_usd
    assert live.usage.cache_read_tokens == cache_read
    assert batched.cost_usd == pytest.approx(live.cost_usd * 0.5)  # both models: 50% off


def test_submissions_split_at_the_request_limit(fake: BatchFake, tmp_path: Path) -> None:
    with judge_on(fake, "openai", tmp_path / "j.db") as judge:
        job = submit_batch(judge, items(5), max_requests=2)
    assert [b.requests for b in job.batches] == [2, 2, 1]
    assert fake.counts["creates"] == 3 and fake.counts["uploads"] == 3
    assert sorted(e["custom_id"] for e in submitted_entries(fake)) == sorted(
        r[0] for r in rows(tmp_path / "j.db", "SELECT custom_id FROM batch_items")
    )


def test_submissions_split_at_the_byte_limit(fake: BatchFake, tmp_path: Path) -> None:
    with judge_on(fake, "anthropic", tmp_path / "j.db") as judge:
        one = len(
            judge._first_request(judge._prepare(items(1)[0], item_id="i0")).messages[0].content
        )
        job = submit_batch(judge, items(4), max_bytes=2 * one + 2500)
    sizes = [b.requests for b in job.batches]
    assert sum(sizes) == 4 and len(sizes) > 1 and max(sizes) <= 2


def test_a_request_over_the_byte_limit_stops_before_any_upload(
    fake: BatchFake, tmp_path: Path
) -> None:
    with judge_on(fake, "openai", tmp_path / "j.db") as judge:
        with pytest.raises(BatchError, match="over the batch limit"):
            submit_batch(judge, items(3), max_bytes=200)
    assert fake.counts["uploads"] == 0 and fake.counts["creates"] == 0
    assert rows(tmp_path / "j.db", "SELECT count(*) FROM batch_jobs") == [(0,)]


def test_stored_cached_and_waiting_items_are_not_submitted(fake: BatchFake, tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with judge_on(fake, "openai", db) as judge:
        judge.score_many(items(2))  # i0, i1 stored
    with judge_on(fake, "openai", db, cache=True) as judge:
        first = submit_batch(judge, items(4))
        again = submit_batch(judge, items(4))  # i2, i3 now wait in the first batch
    assert (first.stored, first.submitted) == (2, 2)
    assert (again.stored, again.waiting, again.submitted, again.submission) == (2, 2, 0, None)
    assert fake.counts["creates"] == 1


def test_an_item_whose_reply_is_cached_is_judged_from_the_cache(
    fake: BatchFake, tmp_path: Path
) -> None:
    db = tmp_path / "j.db"
    with judge_on(fake, "openai", db) as judge:
        judge.score_many(items(1))
    # Same item, another id: a new result, but its first request's reply is in the cache.
    with judge_on(fake, "openai", db) as judge:
        job = submit_batch(judge, [{**items(1)[0], "id": "other"}])
    assert (job.cached, job.submitted, fake.counts["live"]) == (1, 0, 1)
    assert rows(db, "SELECT count(*) FROM results WHERE item_id = 'other'") == [(1,)]


def test_inputs_are_checked_before_anything_is_uploaded(fake: BatchFake, tmp_path: Path) -> None:
    bad = {"id": "bad", "question": "q"}  # no gold_answer / model_output
    with judge_on(fake, "openai", tmp_path / "j.db") as judge:
        job = submit_batch(judge, [bad, *items(1)])
    assert (job.refused, job.submitted) == (1, 1)
    (entry,) = submitted_entries(fake)
    assert rows(tmp_path / "j.db", "SELECT item_id, error_kind FROM results") == [("bad", "input")]
    assert entry["custom_id"] != "bad"


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_expired_and_errored_items_are_left_then_resubmitted(
    fake: BatchFake, provider: str, tmp_path: Path
) -> None:
    db = tmp_path / "j.db"
    with judge_on(fake, provider, db) as judge:
        submit_batch(judge, items(4))
        keys = [e["custom_id"] for e in submitted_entries(fake)]
        fake.expire, fake.errored = {keys[0]}, {keys[1]}
        first = collect_batch(judge, wait=True, poll=0.001)
        assert first.left == {"expired": 1, "errored": 1} and len(first.results) == 2
        fake.expire, fake.errored = set(), set()
        second = collect_batch(judge, wait=True, poll=0.001, retry="resubmit")
    assert second.resubmitted is not None and second.resubmitted.submitted == 2
    assert fake.counts["creates"] == 2 and fake.counts["live"] == 0
    assert sorted(e["custom_id"] for e in list(fake.batches.values())[1].requests) == sorted(
        keys[:2]
    )
    assert second.finished and len(second.results) == 2
    assert rows(db, "SELECT count(*) FROM results WHERE status = 'ok' AND via = 'batch'") == [(4,)]


def test_items_a_batch_left_can_be_judged_live_instead(fake: BatchFake, tmp_path: Path) -> None:
    with judge_on(fake, "openai", tmp_path / "j.db") as judge:
        submit_batch(judge, items(3))
        fake.expire = {submitted_entries(fake)[2]["custom_id"]}
        collected = collect_batch(judge, wait=True, poll=0.001, retry="live")
    assert collected.live == 1 and collected.finished
    assert fake.counts["live"] == 1 and fake.counts["creates"] == 1
    assert sorted(r.via for r in collected.results) == ["batch", "batch", "live"]


def test_an_invalid_batch_reply_is_re_asked_live(fake: BatchFake, tmp_path: Path) -> None:
    with judge_on(fake, "anthropic", tmp_path / "j.db") as judge:
        submit_batch(judge, items(2))
        fake.invalid = {submitted_entries(fake)[0]["custom_id"]}
        collected = collect_batch(judge, wait=True, poll=0.001)
    by_attempts = sorted((r.attempts, r.via, r.status) for r in collected.results)
    assert by_attempts == [(1, "batch", "ok"), (2, "batch", "ok")]
    assert fake.counts["live"] == 1  # the re-ask, a normal live request
    assert len(fake.live_bodies[0]["messages"]) == 3  # the conversation: ask, reply, feedback


@pytest.mark.parametrize(
    ("status", "state"), [(500, "submitting"), (400, "failed"), (429, "failed")]
)
def test_a_failed_create_call_is_recorded_and_nothing_is_judged(
    fake: BatchFake, tmp_path: Path, status: int, state: str
) -> None:
    db = tmp_path / "j.db"
    fake.create_status = status
    with judge_on(fake, "openai", db) as judge:
        with pytest.raises(BatchError, match="create call failed"):
            submit_batch(judge, items(2))
    # A 500 may have created the batch: the row stays 'submitting' for collect to look for;
    # a 400 created nothing: the row says so and the items may be submitted again.
    assert rows(db, "SELECT state, provider_batch_id FROM batch_jobs") == [(state, None)]
    assert rows(db, "SELECT count(*) FROM results") == [(0,)]
    fake.create_status = None
    with judge_on(fake, "openai", db) as judge:
        again = submit_batch(judge, items(2))
    assert again.submitted == (2 if state == "failed" else 0)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_batch_whose_id_was_never_stored_is_found_and_collected(
    fake: BatchFake, provider: str, tmp_path: Path
) -> None:
    db = tmp_path / "j.db"
    with judge_on(fake, provider, db) as judge:
        job = submit_batch(judge, items(2))
        # As if the process died after the create call, before storing the provider's id.
        BatchRepository(judge.store).update_job(
            job.batches[0].id, provider_batch_id=None, state="submitting"
        )
        collected = collect_batch(judge, wait=True, poll=0.001)
    assert collected.finished and len(collected.results) == 2
    assert fake.counts["creates"] == 1
    assert rows(db, "SELECT provider_batch_id, note FROM batch_jobs")[0] == (
        job.batches[0].provider_batch_id,
        "provider id found by listing the provider's batches",
    )


def test_a_mock_judge_has_no_batch_api(tmp_path: Path) -> None:
    from judgecards.errors import ProviderConfigError

    with Judge("reference", "mock:judge", db=tmp_path / "j.db") as judge:
        with pytest.raises(ProviderConfigError, match="no"):
            submit_batch(judge, items(1))


def test_collecting_with_other_judge_settings_is_refused(fake: BatchFake, tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with judge_on(fake, "openai", db) as judge:
        job = submit_batch(judge, items(1))
    with judge_on(fake, "openai", db, max_tokens=99) as other:
        with pytest.raises(BatchError, match="other settings"):
            collect_batch(other, job.submission)
        assert collect_batch(other).jobs == []  # not this judge's batches


def pairs(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"p{k}", "question": f"Name a colour ({k}).", "answer_a": f"Red {k}.",
         "answer_b": f"A colour is blue, number {k}.", "model_a": "m-a", "model_b": "m-b"}
        for k in range(n)
    ]  # fmt: skip


def test_compare_batch_writes_the_comparisons_a_live_compare_would(
    fake: BatchFake, tmp_path: Path
) -> None:
    from judgecards.batch.pairs import submit_pairs
    from judgecards.pairwise.compare import compare_many

    with Judge("pairwise@1", PROVIDERS["openai"], db=tmp_path / "live.db", api_key="sk-test",
               base_url=fake.openai_url) as judge:  # fmt: skip
        live = compare_many(judge, pairs(3))
    assert fake.counts["live"] == 6
    with Judge("pairwise@1", PROVIDERS["openai"], db=tmp_path / "b.db", api_key="sk-test",
               base_url=fake.openai_url) as judge:  # fmt: skip
        job, decided = submit_pairs(judge, pairs(3))
        assert (job.submitted, decided) == (6, [])  # both orders of 3 pairs; none decided yet
        collected = collect_batch(judge, wait=True, poll=0.001)
        assert collected.comparisons == 3
        again = compare_many(judge, pairs(3))
    assert fake.counts["live"] == 6  # the later live compare made no call
    stored = rows(tmp_path / "b.db", "SELECT pair_id, winner, model_a, model_b FROM comparisons "
                  "ORDER BY pair_id")  # fmt: skip
    assert stored == [(c.pair_id, c.winner, "m-a", "m-b") for c in live]
    assert [c.winner for c in again] == [c.winner for c in live]
    assert rows(tmp_path / "b.db", "SELECT count(*) FROM comparisons") == [(3,)]


def test_a_judge_with_a_spending_cap_does_not_submit(fake: BatchFake, tmp_path: Path) -> None:
    with judge_on(fake, "openai", tmp_path / "j.db", max_cost=1.0) as judge:
        with pytest.raises(BatchError, match="max_cost"):
            submit_batch(judge, items(1))
    assert fake.counts["requests"] == 0


def test_a_batch_that_fails_validation_leaves_its_items_errored_with_the_reason(
    fake: BatchFake, tmp_path: Path
) -> None:
    fake.reject_file = True
    with judge_on(fake, "openai", tmp_path / "j.db") as judge:
        submit_batch(judge, items(2))
        failed = collect_batch(judge, wait=True, poll=0.001)
        assert failed.left == {"errored": 2} and failed.results == []
        assert failed.jobs[0].provider_status == "failed"
        assert "line 1: invalid_request: The model is not available" in str(failed.jobs[0].note)
        fake.reject_file = False
        again = collect_batch(judge, wait=True, poll=0.001, retry="resubmit")
    assert again.finished and len(again.results) == 2 and fake.counts["creates"] == 2
    errors = rows(tmp_path / "j.db", "SELECT DISTINCT error FROM batch_items WHERE job_id LIKE "
                  "(SELECT id FROM batch_jobs ORDER BY created_at LIMIT 1)")  # fmt: skip
    assert errors == [("errored: line 1: invalid_request: The model is not available for "
                       "batches.",)]  # fmt: skip


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_submission_whose_process_died_before_its_create_call_is_reported_not_awaited(
    fake: BatchFake, provider: str, tmp_path: Path
) -> None:
    """Issue 22 item 13: ``collect --wait`` waited forever for a batch never created."""
    import socket
    import subprocess
    import sys

    from judgecards.batch.collect import UNFOUND_ROUNDS

    db = tmp_path / "j.db"
    fake.create_status = 500  # the create call never creates anything: the row stays
    with judge_on(fake, provider, db) as judge:
        with pytest.raises(BatchError):
            submit_batch(judge, items(2))
    (job_id,) = [row[0] for row in rows(db, "SELECT id FROM batch_jobs")]
    # As left by a submitting process that was killed before its create call: it still holds
    # the row, and it is gone.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    with judge_on(fake, provider, db) as judge:
        BatchRepository(judge.store).update_job(
            job_id, owner=f"{socket.gethostname()}:{dead.stdout.strip()}:dead", state="submitting"
        )
    fake.create_status = None

    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        assert len(waits) < 50, "collect --wait is still waiting for a batch never created"

    with judge_on(fake, provider, db) as judge:
        collected = collect_batch(judge, wait=True, poll=1.0, sleep=sleep)
    assert collected.unsent == {job_id: 2} and collected.waiting == 0
    assert not collected.finished and len(waits) == UNFOUND_ROUNDS - 1
    assert f"batch cancel {job_id}" in collected.as_text()
    assert fake.counts["creates"] == 0  # nothing was created behind the user's back
    assert rows(db, "SELECT state FROM batch_jobs") == [("submitting",)]


def test_a_batch_submitted_before_keys_named_the_endpoint_is_still_collected(
    fake: BatchFake, tmp_path: Path
) -> None:
    """Upgrading while a batch runs (issue 22 item 11 changed the keys): its custom ids are the
    old keys, and collecting it stores every result instead of refusing the batch."""
    import hashlib

    db = tmp_path / "j.db"
    fake.hold = True
    with judge_on(fake, "openai", db) as judge:
        submit_batch(judge, items(2))
        params = judge.params
    # The keys as the previous release computed them (no endpoint), written where it wrote them.
    (batch,) = fake.batches.values()
    for request, item in zip(batch.requests, items(2)):
        inputs = {name: item[name] for name in ("question", "gold_answer", "model_output")}
        old = hashlib.sha256(json.dumps(
            [judge.card.hash, judge.model, params, item["id"], inputs], sort_keys=True, default=str
        ).encode()).hexdigest()[:32]  # fmt: skip
        with closing(sqlite3.connect(db)) as connection, connection:
            connection.execute(
                "UPDATE batch_items SET custom_id = ? WHERE custom_id = ?",
                (old, request["custom_id"]),
            )
        request["custom_id"] = old
    fake.hold = False
    with judge_on(fake, "openai", db) as judge:
        collected = collect_batch(judge, wait=True, poll=0.001)
        again = judge.score_many(items(2))
    assert collected.finished and [r.ok for r in collected.results] == [True, True]
    assert all(r.cached for r in again) and fake.counts["live"] == 0  # from the response cache


def test_the_stored_settings_keep_the_providers_timeout(tmp_path: Path) -> None:
    from judgecards.batch.submit import judge_settings

    with Judge(
        "reference",
        "openai:gpt-4o-mini",
        db=tmp_path / "j.db",
        api_key="sk-seam-never-stored",
        timeout=12.5,
    ) as judge:
        settings = judge_settings(judge)
    assert settings["timeout"] == 12.5 and "sk-seam" not in json.dumps(settings)
