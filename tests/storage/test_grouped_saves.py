"""A streamed run stores the items that finish in the same turn of the event loop in one
transaction (start-up, issue 10 §5), and keeps both guarantees of one transaction per item:
a result is committed before anything reports it, and a failed save names its own result and
takes no other item with it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from judgecards import Judge, JudgeResult, Store, StoreError
from judgecards.storage import GroupedSaves


def items(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"i{i}", "question": f"Q{i}?", "gold_answer": "A.", "model_output": f"A {i}."}
        for i in range(n)
    ]


def commits(store: Store) -> list[str]:
    """Every COMMIT the store's connection runs from now on (SQLite's own statement trace)."""
    seen: list[str] = []
    store._conn.set_trace_callback(lambda sql: seen.append(sql) if sql == "COMMIT" else None)
    return seen


def test_a_stream_stores_its_items_in_fewer_transactions_each_committed_before_it_is_reported(
    tmp_path: Path,
) -> None:
    db = tmp_path / "run.db"
    judge = Judge("reference", "mock:judge", db=db)
    committed = commits(judge.store)
    other = sqlite3.connect(db)  # sees only what is committed
    reported: list[str] = []

    def progress(done: int, total: int, result: JudgeResult) -> None:
        rows = other.execute("SELECT status FROM results WHERE id = ?", (result.id,)).fetchall()
        assert rows == [("ok",)], f"item {done} reported before it was stored"
        reported.append(result.id)

    async def run() -> list[JudgeResult]:
        stream = judge.ascore_stream(items(40), concurrency=40, progress=progress, total=40)
        return [result async for result in stream]

    results = asyncio.run(run())
    other.close()
    judge.close()
    assert len(results) == len(reported) == 40 and all(r.status == "ok" for r in results)
    assert 1 <= len(committed) < 40


def test_a_failing_save_in_a_group_names_its_result_and_the_others_are_stored(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "run.db")
    good = [
        JudgeResult(id=f"r{i}", status="ok", card="reference@2", card_hash="h", model="m")
        for i in range(3)
    ]
    # card is NOT NULL in the results table: this row cannot be written.
    bad = JudgeResult.model_construct(id="broken", status="ok", card=None, card_hash="h", model="m")
    saves = GroupedSaves(store)

    async def run() -> list[BaseException | None]:
        return await asyncio.gather(
            *(saves.save(r, inputs={}, params={}) for r in [good[0], bad, *good[1:]]),
            return_exceptions=True,
        )

    outcomes = asyncio.run(run())
    assert [type(o).__name__ for o in outcomes] == [
        "NoneType",
        "StoreError",
        "NoneType",
        "NoneType",
    ]
    error = outcomes[1]
    assert isinstance(error, StoreError) and "save result broken" in str(error)
    stored = {row[0] for row in store.query("SELECT id FROM results")}
    assert stored == {"r0", "r1", "r2"}
    store.close()


def test_saves_made_in_one_turn_share_one_transaction(tmp_path: Path) -> None:
    store = Store(tmp_path / "run.db")
    committed = commits(store)
    saves = GroupedSaves(store)

    async def run() -> None:
        await asyncio.gather(
            *(
                saves.save(
                    JudgeResult(
                        id=f"r{i}", status="ok", card="reference@2", card_hash="h", model="m"
                    ),
                    inputs={"question": "Q?"},
                    params={},
                )
                for i in range(25)
            )
        )

    asyncio.run(run())
    assert len(committed) == 1 and saves.transactions == 1
    assert store.query("SELECT count(*) FROM results") == [(25,)]
    store.close()


@pytest.mark.parametrize("n", [1, 3])
def test_a_save_returns_only_once_committed(tmp_path: Path, n: int) -> None:
    store = Store(tmp_path / "run.db")
    saves = GroupedSaves(store)
    other = sqlite3.connect(tmp_path / "run.db")

    async def one(i: int) -> int:
        await saves.save(
            JudgeResult(id=f"r{i}", status="ok", card="reference@2", card_hash="h", model="m"),
            inputs={},
            params={},
        )
        return int(
            other.execute("SELECT count(*) FROM results WHERE id = ?", (f"r{i}",)).fetchone()[0]
        )

    async def run() -> list[int]:
        return await asyncio.gather(*(one(i) for i in range(n)))

    assert asyncio.run(run()) == [1] * n
    other.close()
    store.close()
