"""The SQLite store: per-item durability, round trips, the response cache, migrations."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from judgecards import Judge, JudgeResult, RetryPolicy, Store, StoreError, TokenUsage
from judgecards.providers.base import Completion, TokenLogprob, Usage
from judgecards.providers.openai import OpenAIProvider
from judgecards.store import default_db_path
from tests.fakes.http import Script, Waits, openai_chat, reference_judgment

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
    store.save(result(), inputs={}, params={}, cache_entries=[("k1", "openai", completion)])
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
    waits = Waits()
    provider = OpenAIProvider(
        "gpt-4o",
        api_key="sk-test-store",
        http_client=script.client(),
        async_http_client=script.async_client(),
    )
    judge = Judge(
        "reference",
        "openai:gpt-4o",
        provider=provider,
        retry=RetryPolicy(sleep=waits, async_sleep=waits.asleep),
    )
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
    result = Judge("reference", "mock:judge").score(**INPUTS)
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
    result = Judge("reference", "mock:judge").score(**INPUTS)
    assert result.model.startswith("mock:")
    assert result.output is not None and "placeholder" in result.output["delta"].lower()


def test_a_judge_used_as_a_context_manager_closes_the_database_it_opened(tmp_path: Path) -> None:
    import sqlite3

    from judgecards import Judge

    with Judge("reference", "mock:judge", db=tmp_path / "owned.db") as judge:
        assert judge.score(question="q", gold_answer="g", model_output="o").status == "ok"
    with pytest.raises(sqlite3.ProgrammingError):
        judge.store.db.conn.execute("SELECT 1")
