"""Streaming judgments: `Judge.ascore_stream` reads items only as a bounded window frees, yields
results in input order, and stops cleanly; ``judgecards score`` checks every line in a first pass
and then judges and writes line by line, never holding the file.

Providers are the real SDKs over a scripted transport (`tests.fakes.http`), or the mock.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from judgecards import Judge, TransportError
from judgecards.judge_pool import LOOKUP_CHUNK, window_for
from tests.fakes.http import Script, openai_chat, reference_judgment, unauthorized
from tests.fakes.judges import openai_judge

GOOD = openai_chat(reference_judgment())


def item(i: int) -> dict[str, Any]:
    return {
        "id": f"i{i}",
        "question": "Name the largest planet in the solar system.",
        "gold_answer": "Jupiter.",
        "model_output": f"Candidate {i}: Jupiter.",
    }


class Counted:
    """A generator of items that counts how many have been read."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.read = 0
        self.closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            for i in range(self.n):
                self.read += 1
                yield item(i)
        finally:
            self.closed = True


def index_of(request: httpx2.Request) -> int:
    prompt = json.dumps(json.loads(request.content)["messages"])
    return int(prompt.split("Candidate ", 1)[1].split(":", 1)[0])


async def collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [result async for result in stream]


def test_items_are_read_only_as_the_window_frees(tmp_path: Path) -> None:
    # Before: every item was read and prepared before the first call (a list of all of them).
    source = Counted(5_000)
    judge = Judge("reference@1", "mock:judge", db=tmp_path / "j.db")

    async def first() -> tuple[Any, int]:
        stream = judge.ascore_stream(iter(source), concurrency=4)
        result = await anext(stream)
        read = source.read
        await stream.aclose()
        return result, read

    result, read = asyncio.run(first())
    judge.close()
    assert result.item_id == "i0"
    assert read <= window_for(4) + LOOKUP_CHUNK
    assert source.closed  # closing the stream closed the source


def test_results_come_in_input_order_whatever_finishes_first(tmp_path: Path) -> None:
    async def reply(request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(0.002 * (12 - index_of(request)))  # the first item is the slowest
        return openai_chat(reference_judgment())

    script = Script(default=reply)
    judge = openai_judge(script, db=tmp_path / "j.db")
    finished: list[str | None] = []

    async def source() -> AsyncIterator[dict[str, Any]]:
        for i in range(12):
            yield item(i)

    stream = judge.ascore_stream(
        source(), concurrency=12, total=12, progress=lambda d, t, r: finished.append(r.item_id)
    )
    results = asyncio.run(collect(stream))
    judge.close()
    assert [r.item_id for r in results] == [f"i{i}" for i in range(12)]
    assert finished != [f"i{i}" for i in range(12)]  # they did finish out of order
    assert sorted(finished, key=lambda name: int(str(name)[1:])) == [r.item_id for r in results]


def test_a_resumed_stream_is_answered_from_the_store_chunk_by_chunk(tmp_path: Path) -> None:
    n = LOOKUP_CHUNK + 37  # a full chunk and one that is not
    first = openai_judge(Script(default=GOOD), db=tmp_path / "j.db")
    assert all(r.status == "ok" for r in first.score_many([item(i) for i in range(n)]))
    first.close()
    script = Script()  # any call would fail the test
    again = openai_judge(script, db=tmp_path / "j.db")
    results = asyncio.run(collect(again.ascore_stream(iter(Counted(n)), concurrency=8)))
    again.close()
    assert script.requests == []
    assert [r.item_id for r in results] == [f"i{i}" for i in range(n)]
    assert all(r.cached for r in results)


def test_repeated_items_in_the_window_share_one_call(tmp_path: Path) -> None:
    script = Script(GOOD)
    judge = openai_judge(script, db=tmp_path / "j.db", cache=False)
    results = asyncio.run(collect(judge.ascore_stream([item(1), item(1)], concurrency=2)))
    judge.close()
    assert len(script.requests) == 1
    assert [r.id for r in results] == [results[0].id] * 2


def test_an_authentication_failure_stops_the_stream(tmp_path: Path) -> None:
    script = Script(unauthorized(), default=GOOD)
    judge = openai_judge(script, db=tmp_path / "j.db")
    source = Counted(2_000)

    async def run() -> None:
        async for _ in judge.ascore_stream(iter(source), concurrency=1):
            pass

    with pytest.raises(TransportError):
        asyncio.run(run())
    judge.close()
    assert len(script.requests) == 1  # items waiting for the slot never started
    assert source.closed


def test_progress_needs_a_total_for_items_without_a_length(tmp_path: Path) -> None:
    judge = Judge("reference@1", "mock:judge", db=tmp_path / "j.db")
    with pytest.raises(ValueError, match="total="):
        judge.ascore_stream(iter([item(0)]), progress=lambda d, t, r: None)
    with pytest.raises(ValueError, match="concurrency"):
        judge.ascore_stream([item(0)], concurrency=0)
    judge.close()
