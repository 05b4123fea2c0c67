"""The SQLite store: per-item durability, round trips, the response cache, migrations."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx2
import pytest

from judgecards import Judge, JudgeResult, Store, StoreError, TokenUsage
from judgecards.providers.base import Completion, TokenLogprob, Usage
from judgecards.storage import CacheEntry, card_filter, default_db_path
from tests.builders import REPO
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge

INPUTS = {"question": "Capital of France?", "gold_answer": "Paris.", "model_output": "Paris."}


def result(id: str = "r1", **fields: object) -> JudgeResult:
    values: dict[str, object] = {
        "id": id, "item_id": "item-1", "status": "ok", "verdict": "match",
        "scores": {"correctness": 5, "completeness": 4.5}, "model_verdict": "match",
        "output": {"nested": {"a": [1, 2]}}, "raw_reply": "{...}", "card": "reference@1",
        "card_hash": "sha256:abc", "model": "openai:gpt-4o",
        "usage": TokenUsage(input_tokens=10, output_tokens=3), "latency_s": 0.25, "attempts": 2,
    }  # fmt: skip
    values.update(fields)
    return JudgeResult.model_validate(values)


def test_default_path_comes_from_the_environment(tmp_path: Path) -> None:
    assert default_db_path() == Path(os.environ["JUDGECARDS_DB"])
    store = Store()
    assert store.path == Path(os.environ["JUDGECARDS_DB"]) and store.path.is_file()


def test_schema_is_migrated_once_and_recorded(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "j.db"
    Store(path).close()
    Store(path).close()  # reopening applies nothing twice
    with closing(sqlite3.connect(path)) as db:
        names = [
            row[0]
            for row in db.execute(
                "SELECT name FROM _sqlite_migrations WHERE migration_set = 'judgecards' ORDER BY id"
            )
        ]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        journal = db.execute("PRAGMA journal_mode").fetchone()
    assert names[0] == "m001_results_and_cache"
    assert len(names) == len(set(names))
    assert {"results", "response_cache"} <= tables
    assert journal == ("wal",)


def test_an_unopenable_database_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    with pytest.raises(StoreError) as caught:
        Store(tmp_path / "adir")
    assert str(tmp_path / "adir") in str(caught.value)


def test_result_round_trip() -> None:
    store = Store()
    original = result()
    store.save(original, inputs=INPUTS, params={"temperature": 0.0, "max_tokens": 800})

    loaded, inputs = store.get("r1")  # type: ignore[misc]
    assert inputs == INPUTS
    assert loaded.model_dump(exclude={"cached"}) == original.model_dump(exclude={"cached"})
    assert store.get("nope") is None


def test_saving_the_same_id_replaces_the_row() -> None:
    store = Store()
    store.save(
        result(status="error", verdict=None, error_kind="transient", error="HTTP 500"),
        inputs={},
        params={},
    )
    store.save(result(), inputs={}, params={})
    rows = list(store.results())
    assert len(rows) == 1 and rows[0][0].status == "ok"


def test_finished_returns_only_successful_results_marked_cached() -> None:
    store = Store()
    store.save(result("ok1"), inputs={}, params={})
    store.save(result("err1", status="error", error_kind="invalid_output"), inputs={}, params={})
    found = store.finished(["ok1", "err1", "missing"])
    assert list(found) == ["ok1"]
    assert found["ok1"].cached is True
    assert found["ok1"].usage == TokenUsage()  # served without a call: nothing billed this time
    stored = store.get("ok1")
    assert stored is not None and stored[0].usage == TokenUsage(input_tokens=10, output_tokens=3)


def test_finished_handles_more_ids_than_sqlite_parameters() -> None:
    store = Store()
    store.save(result("needle"), inputs={}, params={})
    ids = [f"id{i}" for i in range(1200)] + ["needle"]
    assert list(store.finished(ids)) == ["needle"]


def test_results_filters() -> None:
    store = Store()
    now = datetime.now(timezone.utc)
    store.save(result("a", created_at=now - timedelta(days=2)), inputs={}, params={})
    store.save(result("b", card="reference@2", created_at=now), inputs={}, params={})
    store.save(
        result("c", model="mock:judge", status="error", created_at=now), inputs={}, params={}
    )
    store.save(result("d", card="pairwise@1", created_at=now), inputs={}, params={})

    def ids(**filters: object) -> list[str]:
        return [r.id for r, _ in store.results(**filters)]  # type: ignore[arg-type]

    assert ids() == ["a", "b", "c", "d"]
    assert ids(card="reference") == ["a", "b", "c"]
    assert ids(card="reference@2") == ["b"]
    assert ids(model="mock:judge") == ["c"]
    assert ids(status="ok") == ["a", "b", "d"]
    assert ids(since=now - timedelta(hours=1)) == ["b", "c", "d"]


def test_response_cache_round_trip_with_logprobs() -> None:
    store = Store()
    completion = Completion(
        text="Rating: [[7]]", model="gpt-4o-2024-08-06", usage=Usage(100, 7), finish_reason="stop",
        logprobs=(TokenLogprob("7", -0.1, (("7", -0.1), ("8", -2.5))),),
    )  # fmt: skip
    store.save(
        result(),
        inputs={},
        params={},
        cache_entries=[CacheEntry("k1", "openai", "gpt-4o", completion)],
    )
    cached = store.cached_completion("k1")
    assert cached is not None
    assert (cached.text, cached.model, cached.usage, cached.finish_reason) == (
        "Rating: [[7]]",
        "gpt-4o-2024-08-06",
        Usage(100, 7),
        "stop",
    )
    assert cached.logprobs == completion.logprobs
    assert store.cached_completion("k2") is None


def test_each_item_is_written_when_it_finishes() -> None:
    """When progress reports an item, its row is already committed, visible to another connection."""
    script = Script(default=openai_chat(reference_judgment()))
    judge = openai_judge(script)
    seen: list[int] = []

    def progress(done: int, total: int, finished: JudgeResult) -> None:
        with closing(sqlite3.connect(os.environ["JUDGECARDS_DB"])) as other:
            row = other.execute(
                "SELECT status FROM results WHERE id = ?", (finished.id,)
            ).fetchone()
            seen.append(other.execute("SELECT count(*) FROM results").fetchone()[0])
        assert row == ("ok",)

    items = [{"id": i, **INPUTS, "model_output": f"Paris ({i})."} for i in range(5)]
    judge.score_many(items, concurrency=1, progress=progress)
    assert seen == [1, 2, 3, 4, 5]


def test_stored_rows_carry_inputs_params_and_card_hash() -> None:
    result = Judge("reference@1", "mock:judge").score(**INPUTS)
    with closing(sqlite3.connect(os.environ["JUDGECARDS_DB"])) as db:
        row = db.execute(
            "SELECT card, card_hash, model, inputs, params, input_tokens FROM results WHERE id = ?",
            (result.id,),
        ).fetchone()
    card, card_hash, model, inputs, params, input_tokens = row
    assert (card, model) == ("reference@1", "mock:judge")
    assert card_hash.startswith("sha256:") and len(card_hash) == 71
    assert json.loads(inputs) == INPUTS
    assert json.loads(params)["max_tokens"] == 800
    assert input_tokens == result.usage.input_tokens > 0


def test_mock_results_are_labelled() -> None:
    result = Judge("reference@1", "mock:judge").score(**INPUTS)
    assert result.model.startswith("mock:")
    assert result.output is not None and "placeholder" in result.output["delta"].lower()


def test_a_judge_used_as_a_context_manager_closes_the_database_it_opened(tmp_path: Path) -> None:

    from judgecards import Judge

    with Judge("reference@1", "mock:judge", db=tmp_path / "owned.db") as judge:
        assert judge.score(question="q", gold_answer="g", model_output="o").status == "ok"
    with pytest.raises(StoreError, match="closed"):
        judge.store.get("anything")


# --------------------------------------------------------------------------- located errors


def test_a_database_under_a_path_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a directory")
    path = tmp_path / "afile" / "sub" / "j.db"
    with pytest.raises(StoreError) as caught:
        Store(path)
    assert str(path) in str(caught.value) and "cannot create directory" in str(caught.value)
    assert caught.value.path == str(path) and caught.value.operation == "open the database"


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database" * 200)
    with pytest.raises(StoreError, match="not a database") as caught:
        Store(path)
    assert str(path) in str(caught.value)


def test_corruption_in_late_pages_is_a_store_error_naming_the_file_and_the_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "big.db"
    store = Store(path)
    for i in range(300):
        store.save(result(f"r{i:04d}"), inputs={"text": "x" * 2000}, params={})
    store.close()  # the last connection checkpoints the WAL into the file
    size = path.stat().st_size
    with path.open("r+b") as handle:  # damage pages near the end; page 1 (the schema) is intact
        handle.seek(size - 20 * 4096)
        handle.write(b"\xff" * 16 * 4096)
    store = Store(path)  # opening reads only the first pages: fine
    with pytest.raises(StoreError) as caught:
        list(store.results())
    message = str(caught.value)
    assert str(path) in message and "read stored results" in message and "malformed" in message
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


def test_a_closed_store_says_so() -> None:
    store = Store()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.finished(["r1"])


def test_read_only_opening_never_creates_or_migrates(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(StoreError, match="no such file"):
        Store(missing, read_only=True)
    assert not missing.exists()
    Store(tmp_path / "j.db").save(result(), inputs={}, params={})
    with Store(tmp_path / "j.db", read_only=True) as store:
        assert [r.id for r, _ in store.results()] == ["r1"]
        with pytest.raises(StoreError, match="readonly"):
            store.save(result("r2"), inputs={}, params={})


# --------------------------------------------------------------------------- transactions


def test_a_failed_transaction_writes_nothing_and_names_what_it_was_doing() -> None:
    store = Store()
    with pytest.raises(StoreError, match="save two results") as caught:
        with store.transaction("save two results") as tx:
            tx.insert("comparisons", {"id": "c1"})  # NOT NULL columns missing
    assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)
    with pytest.raises(ValueError):
        with store.transaction("anything") as tx:
            tx.execute("DELETE FROM results")
            raise ValueError("not a database error: passes through, after the rollback")
    store.save(result(), inputs={}, params={})
    with store.transaction("outer") as tx:
        tx.execute("DELETE FROM results WHERE id = 'r1'")
        with pytest.raises(StoreError):
            with store.transaction("inner") as inner:  # a savepoint: only it is rolled back
                inner.execute("INSERT INTO nowhere VALUES (1)")
    assert store.get("r1") is None  # the outer delete was kept


# --------------------------------------------------------------------------- columns by name


def test_the_cache_keeps_the_requested_model_apart_from_the_one_the_server_reported() -> None:
    store = Store()
    completion = Completion(
        text="{}", model="gpt-4o-2024-08-06", usage=Usage(1, 1), finish_reason="stop"
    )
    store.save(
        result(),
        inputs={},
        params={},
        cache_entries=[CacheEntry("k", "openai", "gpt-4o", completion)],
    )
    with closing(sqlite3.connect(os.environ["JUDGECARDS_DB"])) as db:
        row = db.execute("SELECT provider, model, reply_model FROM response_cache").fetchone()
    assert row == ("openai", "gpt-4o", "gpt-4o-2024-08-06")


def test_a_judge_caches_its_requested_model_and_the_reported_one() -> None:
    script = Script(default=openai_chat(reference_judgment(), model="gpt-4o-2024-08-06"))
    openai_judge(script).score(**INPUTS)
    with closing(sqlite3.connect(os.environ["JUDGECARDS_DB"])) as db:
        rows = db.execute("SELECT model, reply_model FROM response_cache").fetchall()
    assert rows == [("gpt-4o", "gpt-4o-2024-08-06")]


def test_transport_retries_are_stored_and_read_back_but_not_when_served_from_the_store() -> None:
    store = Store()
    store.save(result(transport_retries=3), inputs={}, params={})
    stored = store.get("r1")
    assert stored is not None and stored[0].transport_retries == 3
    assert store.finished(["r1"])["r1"].transport_retries == 0  # no call, no retry this time


def test_a_database_from_before_transport_retries_is_migrated_and_reads_zero(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    Store(path).close()
    with closing(sqlite3.connect(path)) as db:  # roll the file back to the previous schema
        db.execute("ALTER TABLE results DROP COLUMN transport_retries")
        db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm003_transport_retries'")
        db.execute(
            "INSERT INTO results (id, card, card_hash, model, status, created_at) "
            "VALUES ('old', 'reference@1', 'sha256:x', 'mock:judge', 'ok', '2026-01-01T00:00:00+00:00')"
        )
        db.commit()
    stored = Store(path).get("old")
    assert stored is not None and stored[0].transport_retries == 0


def test_card_filter_matches_a_name_exactly_not_as_a_pattern() -> None:
    store = Store()
    for id, card in (
        ("a", "my_card@1"),
        ("b", "myXcard@1"),
        ("c", "My_card@2"),
        ("d", "my_card2@1"),
    ):
        store.save(result(id, card=card), inputs={}, params={})
    assert [r.id for r, _ in store.results(card="my_card")] == ["a"]
    assert [r.id for r, _ in store.results(card="my_card@1")] == ["a"]
    assert card_filter(None) == ([], [])
    assert store.card_refs("my_card") == ["my_card@1"]


def test_only_the_store_and_the_calibration_repository_hold_sql() -> None:
    """The lock that makes a Store thread-safe only helps if every statement goes through it."""
    import re

    root = REPO
    allowed = {
        "judgecards/storage/database.py", "judgecards/storage/store.py", "judgecards/storage/migrations.py",
        "calibration/labels/repository.py",
        "calibration/audits/queue_repository.py",  # the labelling queues (calibration.audits.queue)
        "calibration/labels/migrations.py",  # the calibration schema, applied through Store.migrate
        "calibration/cascades/repository.py",  # who decided each comparison of a pairwise cascade
        "judgecards/serve/repository.py",  # the server's tokens, through Store.transaction
        "judgecards/batch/repository.py",  # provider batches and their items (judgecards.batch)
        "judgecards/judging/duplicate_ids.py",  # a private temporary database of ids, not the store
    }  # fmt: skip
    sql = re.compile(
        r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b"
        r"|import sqlite3|\.conn\b|\._conn\b"
    )
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for package in ("judgecards", "calibration")
        for path in sorted((root / package).rglob("*.py"))
        if path.relative_to(root).as_posix() not in allowed
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if sql.search(line)
    ]
    assert offenders == []


def test_a_reply_with_a_lone_surrogate_is_stored_not_fatal(tmp_path: Path) -> None:
    # A reply whose text holds a lone surrogate (the HTTP body's JSON escape "\ud800" decodes
    # to one) cannot be encoded by SQLite; it used to raise UnicodeEncodeError out of
    # Store.save and stop the whole run.
    reply = reference_judgment(delta="It writes SURROGATE where the gold has an accent.")
    body = json.dumps(openai_chat(reply).json()).replace("SURROGATE", "\\ud800")
    odd = httpx2.Response(200, content=body.encode(), headers={"content-type": "application/json"})
    script = Script(odd, openai_chat(reference_judgment()))
    items = [
        {"id": "odd", "question": "q1", "gold_answer": "g1", "model_output": "o1"},
        {"id": "fine", "question": "q2", "gold_answer": "g2", "model_output": "o2"},
    ]
    with openai_judge(script, db=tmp_path / "s.db", max_attempts=1) as judge:
        results = judge.score_many(items, concurrency=1)
    assert [r.status for r in results] == ["ok", "ok"]
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        (raw,) = conn.execute("SELECT raw_reply FROM results WHERE item_id = 'odd'").fetchone()
    assert "\ufffd" in raw and "\ud800" not in raw
