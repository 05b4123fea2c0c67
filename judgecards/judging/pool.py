"""The bounded-concurrency loop that runs a batch's items, streaming: at most N calls in flight,
results in input order, and only a bounded window of items in memory.

It lives apart from `judgecards.judging.judge` so the policy of *when* an item may start (a semaphore; a
pool shared by several batches, e.g. a jury's judges) is one place. `stream_pool` knows nothing
of cards, prompts or the store; `stream_judgments` feeds it a `Judge`'s items chunk by chunk,
each chunk's stored results looked up in one query, so 200,000 items cost what 20,000 do.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Hashable,
    Iterable,
    Mapping,
)
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from judgecards.judging.prepared import ItemJudge, PreparedItem
from judgecards.storage import JudgeResult

__all__ = [
    "LOOKUP_CHUNK",
    "Progress",
    "Ready",
    "chunks",
    "stream_judgments",
    "stream_pool",
    "window_for",
]

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")
T = TypeVar("T")

Progress = Callable[[int, int, JudgeResult], None]
"""Called after each item of a batch as ``progress(done, total, result)``."""

LOOKUP_CHUNK = 500
"""Items prepared, and looked up in the store, together (one query per chunk)."""

_WINDOW_PER_SLOT = 8
_MIN_WINDOW = 256


def window_for(concurrency: int) -> int:
    """Items held between being read and being yielded: enough that one slow item (a long
    retry-after) does not idle the other slots at once, small enough to bound memory."""
    return max(_MIN_WINDOW, _WINDOW_PER_SLOT * concurrency)


@dataclass(frozen=True)
class Ready(Generic[Outcome]):
    """An entry answered without work (a stored result, a refused input): kept in its place."""

    outcome: Outcome


async def chunks(items: Iterable[T] | AsyncIterable[T], size: int) -> AsyncGenerator[list[T], None]:
    """``items`` (sync or async) as lists of at most ``size``, read only as they are asked for;
    closing this closes the items' iterator (a file being read, say)."""
    chunk: list[T] = []
    if isinstance(items, AsyncIterable):
        source = aiter(items)
        try:
            async for value in source:
                chunk.append(value)
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        finally:
            if isinstance(source, AsyncGenerator):
                await source.aclose()
    else:
        iterator = iter(items)
        try:
            for value in iterator:
                chunk.append(value)
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        finally:
            if isinstance(iterator, Generator):
                iterator.close()
    if chunk:
        yield chunk


class _Stopped(Exception):
    """An item that was waiting for a slot when the batch stopped."""


async def stream_pool(  # noqa: PLR0912, PLR0915  one scheduling loop; its cases share its state
    entries: AsyncIterator[Item | Ready[Outcome]],
    work: Callable[[Item], Awaitable[Outcome]],
    done: Callable[[Item, Outcome], None],
    *,
    slots: AbstractAsyncContextManager[Any],
    window: int,
    key: Callable[[Item], Hashable],
) -> AsyncGenerator[Outcome, None]:
    """Each entry's outcome, in entry order: `Ready` ones as they are, the others from ``work``
    run inside ``slots`` (a semaphore, possibly shared with other batches).

    At most ``window`` entries are held between being read and being yielded; entries are read
    only as the window frees. Entries with the same ``key`` while both are held share one run.
    ``done`` is told of each outcome as it lands (outside the slot, in completion order).

    An exception from ``work`` (an authentication failure: every other item would fail too)
    stops the batch: items still waiting for a slot never start, running ones are cancelled, and
    the exception propagates. Closing the iterator early cancels what is running.
    """
    failed: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
    held: deque[tuple[Hashable, asyncio.Future[Outcome]] | Ready[Outcome]] = deque()
    running: dict[Hashable, asyncio.Future[Outcome]] = {}

    async def run(item: Item) -> Outcome:
        async with slots:
            # After a failure that stops the batch, items still waiting for a slot must not
            # start: the slot is released before they can be cancelled.
            if failed.done():
                raise _Stopped
            try:
                outcome = await work(item)
            except Exception as error:
                if not failed.done():
                    failed.set_result(error)
                raise
        done(item, outcome)
        return outcome

    exhausted = False
    try:
        while True:
            while not exhausted and len(held) < window:
                try:
                    entry = await anext(entries)
                except StopAsyncIteration:
                    exhausted = True
                    break
                if isinstance(entry, Ready):
                    held.append(entry)
                    continue
                name = key(entry)
                task = running.get(name)
                if task is None:
                    task = running[name] = asyncio.ensure_future(run(entry))
                held.append((name, task))
            if not held:
                return
            head = held[0]
            if isinstance(head, Ready):
                held.popleft()
                yield head.outcome
                continue
            name, task = head
            if not task.done():
                either: list[asyncio.Future[Any]] = [task, failed]
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if failed.done():
                raise failed.result()
            held.popleft()
            if running.get(name) is task:
                del running[name]
            yield task.result()
    finally:
        tasks = [entry[1] for entry in held if not isinstance(entry, Ready)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        close = getattr(entries, "aclose", None)
        if close is not None:
            await close()


async def stream_judgments(
    judge: ItemJudge,
    items: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
    work: Callable[[PreparedItem], Awaitable[JudgeResult]],
    *,
    concurrency: int,
    progress: Progress | None,
    pool: AbstractAsyncContextManager[Any] | None,
    total: int | None,
) -> AsyncGenerator[JudgeResult, None]:
    """`Judge.ascore_stream`'s body: ``items`` prepared and looked up in the store a chunk at a
    time (a refused input is stored as its error record there), the rest judged by ``work``
    (one item's run and save) in the pool."""
    finished = 0

    def report(result: JudgeResult) -> None:
        nonlocal finished
        finished += 1
        if progress is not None:
            assert total is not None  # Judge.ascore_stream insists
            progress(finished, total, result)

    async def entries() -> AsyncIterator[PreparedItem | Ready[JudgeResult]]:
        async with aclosing(chunks(items, LOOKUP_CHUNK)) as batches:
            async for chunk in batches:
                for entry in judge.prepare(chunk, record_refusals=True):
                    if entry.state == "to_call":
                        yield entry
                        continue
                    assert entry.result is not None  # stored, or its input error record
                    report(entry.result)
                    yield Ready(entry.result)

    results = stream_pool(
        entries(),
        work,
        lambda _item, result: report(result),
        slots=pool or asyncio.Semaphore(concurrency),
        window=window_for(concurrency),
        key=lambda item: item.key,
    )
    try:
        async for result in results:
            yield result
    finally:
        await results.aclose()
        await judge.provider.aclose()
