"""The bounded-concurrency loop that runs a batch's items: at most N calls in flight.

It lives apart from `judgecards.judge` so the policy of *when* an item may start (a fixed
semaphore today; a pool shared by several batches, e.g. a jury's judges) is one place, and knows
nothing of cards, prompts or the store: ``work`` judges and saves one item, ``done`` is told of
each result as it lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

__all__ = ["run_pool"]

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")


async def run_pool(
    items: Sequence[Item],
    work: Callable[[Item], Awaitable[Outcome]],
    done: Callable[[Item, Outcome], None],
    *,
    slots: AbstractAsyncContextManager[Any],
) -> None:
    """Run ``work`` on every item, each inside ``slots`` (a semaphore, possibly shared).

    An exception from ``work`` (an authentication failure: every other item would fail too) stops
    the batch: items still waiting for a slot never start, running ones are cancelled, and the
    exception propagates. ``done`` runs outside the slot, so a slow callback holds no call back.
    """
    stopped = False

    async def run(item: Item) -> None:
        nonlocal stopped
        async with slots:
            # After a failure that stops the batch (auth), items still waiting for a slot must
            # not start: the slot is released before gather() can cancel them.
            if stopped:
                return
            try:
                outcome = await work(item)
            except BaseException:
                stopped = True
                raise
        done(item, outcome)

    tasks = [asyncio.ensure_future(run(item)) for item in items]
    try:
        if tasks:
            await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
