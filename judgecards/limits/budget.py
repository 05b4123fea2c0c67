"""A spending cap for a judge (``Judge(max_cost=)``, ``--max-cost USD``).

The rule: no call is *sent* when what has been spent, plus what the calls already reserved are
projected to cost, plus this call's projection would pass the cap. A call's projection is its
request's input tokens as characters / 4 (`judgecards.limits.plan.estimate_tokens`) and a reply at its
``max_tokens`` cap, at the model's price; an item whose first reply is already in the response
cache is projected at nothing, and items already stored are never run.

- **Starting an item** (`CostCap.admit`) reserves its first call. Items not started are returned
  as ``not_judged`` results: not errors, never stored, so running again with a higher cap
  judges exactly them.
- **Each later call of an item** (a re-ask after an invalid reply, the larger retry of a cut
  one) reserves its own projection before it is sent (`CostCap.reserve_call`), on top of what
  the item holds; an item whose next call can never fit ends as an error record
  (``error_kind="max_cost"``, what it spent counted), so a re-ask never takes the spend past the
  cap. An item's reservation is given back when it settles at its actual cost.
- **Waiting, not refusing.** A call that does not fit while other items hold reservations for
  calls in flight waits for them to settle (a reply is usually far below its cap, so room comes
  back) and is reconsidered; it is refused only when it cannot fit with no other call pending.
  So a run at concurrency 64 judges what a run at concurrency 1 does, and stops only when the
  next item cannot fit.

What is spent can then pass the cap only if the provider counts more input tokens than
characters / 4 (a reply is never billed past its ``max_tokens``).

Items that must run together or not at all (a comparison's two orders: half a pair decides
nothing) are held together (`CostCap.together`): the first of them to start reserves all of their
first calls at once, or none of them starts.

A model without a price cannot be capped (its spend is unknown, never 0): `CostCap.of` refuses
it before anything runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from judgecards.errors import BudgetError, RenderError
from judgecards.limits.plan import estimate_tokens
from judgecards.limits.pricing import ModelPrice, format_cost
from judgecards.providers.base import CompletionRequest
from judgecards.storage import JudgeResult

__all__ = ["BudgetStats", "CostCap"]


@dataclass(frozen=True)
class BudgetStats:
    """Spend against the cap, in US dollars.

    Attributes:
        cap: the cap; spent: billed by the items this judge finished under it;
        in_flight: projected cost of the items still running; not_judged: items not started.
    """

    cap: float
    spent: float
    in_flight: float
    not_judged: int

    def as_text(
        self,
        *,
        not_judged: int | None = None,
        unit: str = "item",
        finished: str = "items",
        over: str = "the provider counted more input tokens",
    ) -> str:
        """One line for a run summary. A run of pairs counts its own units left
        (``not_judged`` pairs, not the judgments the cap stopped) and names them (``unit``,
        ``finished``: what a re-run does not pay for again, ``over``: why spend can pass the cap).
        """
        left_units = self.not_judged if not_judged is None else not_judged
        over_text = f" (over: {over})" if self.spent > self.cap else ""
        left = (
            f"; {left_units} {unit}(s) not judged: run again with a higher --max-cost to "
            f"judge them (finished {finished} cost nothing again)"
            if left_units
            else ""
        )
        return f"{format_cost(self.spent)} spent of {format_cost(self.cap)} cap{over_text}{left}"


class CostCap:
    """What one judge may still spend; thread-safe (items of a batch reserve concurrently, from
    threads or event loops alike)."""

    def __init__(self, cap: float, price: ModelPrice) -> None:
        if not cap >= 0:
            raise BudgetError(f"--max-cost must be a number of US dollars >= 0, not {cap!r}")
        self.cap = cap
        self.price = price
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a reservation settled or was released
        self._futures: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._spent = 0.0
        self._reserved: dict[str, float] = {}  # items started and not settled
        self._held: dict[str, float] = {}  # a started group's items not started yet
        self._waiting: dict[str, int] = {}  # started items waiting for room for their next call
        self._queue: deque[int] = deque()  # items waiting to start, in the order they came
        self._tickets = 0
        self._not_judged = 0
        self._groups: dict[str, _Group] = {}

    @classmethod
    def of(cls, cap: float | None, price: ModelPrice | None, model: str) -> CostCap | None:
        """The cap for ``model`` at ``price`` (None: no cap).

        Raises:
            BudgetError: a cap on a model with no price, whose spend could not be counted.
        """
        if cap is None:
            return None
        if price is None:
            raise BudgetError(
                f"--max-cost needs a price for {model}, and it has none: add one with --prices "
                "(or JUDGECARDS_PRICES); an unknown price is never counted as 0"
            )
        return cls(cap, price)

    def projected(self, request: CompletionRequest) -> float:
        """The most one call can cost: estimated input tokens, a reply at its cap."""
        return self.price.cost(estimate_tokens(request), request.max_tokens)

    def admit(
        self,
        key: str,
        first_request: Callable[[], CompletionRequest],
        cached: Callable[[CompletionRequest], bool],
    ) -> bool:
        """Whether item ``key`` may start, its first call reserved if so: its ``first_request``
        projected, at nothing when that reply is ``cached`` or the item cannot be rendered (it
        ends as an input error record, never sent). An item held in a group (`together`) starts
        exactly when its group does. While it does not fit but other items hold reservations
        for calls in flight, this thread waits for them to settle."""
        projected = self._first_projection(key, first_request, cached)
        return self._wait_blocking(key, projected, admit=True)

    async def aadmit(
        self,
        key: str,
        first_request: Callable[[], CompletionRequest],
        cached: Callable[[CompletionRequest], bool],
    ) -> bool:
        """Async twin of `admit`: waits in this event loop, never blocking it."""
        projected = self._first_projection(key, first_request, cached)
        return await self._wait(key, projected, admit=True)

    def reserve_call(self, key: str, request: CompletionRequest) -> bool:
        """Reserve a later call of started item ``key`` (a re-ask, a larger retry) before it is
        sent, waiting while other calls may still give room; False: it can never fit, so the
        item must stop (what it holds stays reserved until it settles)."""
        return self._wait_blocking(key, self.projected(request), admit=False)

    async def areserve_call(self, key: str, request: CompletionRequest) -> bool:
        """Async twin of `reserve_call`."""
        return await self._wait(key, self.projected(request), admit=False)

    def _first_projection(
        self,
        key: str,
        first_request: Callable[[], CompletionRequest],
        cached: Callable[[CompletionRequest], bool],
    ) -> float:
        if key in self._groups:
            return 0.0  # its group's projections decide
        try:
            request = first_request()
            return 0.0 if cached(request) else self.projected(request)
        except RenderError:
            return 0.0

    def _wait_blocking(self, key: str, projected: float, *, admit: bool) -> bool:
        with self._lock:
            ticket: int | None = None
            entered = False
            try:
                while (verdict := self._decide(key, projected, admit, ticket)) is None:
                    if admit and ticket is None:
                        ticket = self._queue_up()
                    if not entered and not admit:
                        self._enter(key)
                        entered = True
                    self._changed.wait()
                return verdict
            finally:
                self._done_waiting(key, ticket, entered)

    async def _wait(self, key: str, projected: float, *, admit: bool) -> bool:
        loop = asyncio.get_running_loop()
        ticket: int | None = None
        entered = False
        try:
            while True:
                with self._lock:
                    verdict = self._decide(key, projected, admit, ticket)
                    if verdict is not None:
                        return verdict
                    if admit and ticket is None:
                        ticket = self._queue_up()
                    if not entered and not admit:
                        self._enter(key)  # before this call's own future is listed
                        entered = True
                    future: asyncio.Future[None] = loop.create_future()
                    self._futures.append((loop, future))
                await future
        finally:
            with self._lock:
                self._done_waiting(key, ticket, entered)

    def _queue_up(self) -> int:
        """A place in the queue of items waiting to start: they are decided in the order they
        came, so an item that came later cannot take the room an earlier one waits for."""
        self._tickets += 1
        self._queue.append(self._tickets)
        return self._tickets

    def _done_waiting(self, key: str, ticket: int | None, entered: bool) -> None:
        if ticket is not None:
            self._queue.remove(ticket)
            self._wake()  # the next in the queue is decided now
        if entered:
            self._leave(key)

    def _enter(self, key: str) -> None:
        """Started item ``key`` waits for room for its next call: the others' rule for waiting
        changes (`_decide`), so they look again (called with the lock held)."""
        self._waiting[key] = self._waiting.get(key, 0) + 1
        self._wake()

    def _leave(self, key: str) -> None:
        left = self._waiting[key] - 1
        if left:
            self._waiting[key] = left
        else:
            del self._waiting[key]

    def _fits(self, projected: float) -> bool:
        committed = self._spent + sum(self._reserved.values()) + sum(self._held.values())
        return committed + projected <= self.cap

    def _decide(self, key: str, projected: float, admit: bool, ticket: int | None) -> bool | None:
        """Reserve for ``key`` and True if its call fits, False if it never can, None if it
        may once calls in flight settle or items queued before it are decided (called with the
        lock held)."""
        group = self._groups.get(key) if admit else None
        if group is not None and group.admitted is not None:
            if group.admitted:  # started without a new check: its share was held for it
                self._reserved[key] = self._held.pop(key, 0.0)
            else:
                self._not_judged += 1
            return group.admitted
        if admit and self._queue and self._queue[0] != ticket:
            return None
        need = projected if group is None else sum(group.projections.values())
        if self._fits(need):
            if group is None:
                self._reserved[key] = self._reserved.get(key, 0.0) + projected
            else:
                group.admitted = True
                for other, share in group.projections.items():
                    target = self._reserved if other == key else self._held
                    target[other] = target.get(other, 0.0) + share
            return True
        # A new item waits while any item holds a reservation: a started one will settle, send
        # its next call or stop; a started group's item not started yet is next in line for a
        # slot (items take slots in order, and its group's first item holds one). A started
        # item's next call waits only for items with a call in flight; among items all waiting
        # for their next call, none waits for another (one stops and settles instead), so
        # waiting never deadlocks.
        if admit and (self._held or any(other != key for other in self._reserved)):
            return None
        if not admit and any(o != key and o not in self._waiting for o in self._reserved):
            return None
        if admit:
            if group is not None:
                group.admitted = False
            self._not_judged += 1
        return False

    def _wake(self) -> None:
        """Reservations changed: every waiting call looks again (called with the lock held)."""
        self._changed.notify_all()
        futures, self._futures = self._futures, []
        for loop, future in futures:
            if future.done() or loop.is_closed():
                continue  # its waiter was cancelled, or its run ended
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # the loop closed meanwhile
                continue

    @contextmanager
    def together(self, groups: Iterable[Mapping[str, float]]) -> Iterator[None]:
        """Within this block, each group (item key → projected cost; items already stored are
        left out) starts as a whole or not at all: the first of its items to start reserves every
        projection of the group, a later one starts without a new check, and if the first is
        refused so is the rest. On leaving, what a group reserved for items that never started
        is released."""
        held: dict[str, _Group] = {}
        for projections in groups:
            group = _Group(dict(projections))
            for key in group.projections:
                held.setdefault(key, group)  # a repeated item belongs to its first group
        with self._lock:
            self._groups.update(held)
        try:
            yield
        finally:
            with self._lock:
                for key in held:
                    self._groups.pop(key, None)
                    self._held.pop(key, None)
                self._wake()

    def settle(self, key: str, cost: float | None) -> None:
        """Item ``key`` finished having cost ``cost`` (None cannot happen on a priced model)."""
        with self._lock:
            self._reserved.pop(key, None)
            self._spent += cost or 0.0
            self._wake()

    def not_judged(self, **fields: object) -> JudgeResult:
        """The record of an item not started (the item's id, card and model in ``fields``)."""
        return JudgeResult.model_validate(
            {
                **fields,
                "status": "not_judged",
                "cost_usd": 0.0,
                "error": f"not judged: its projected cost would pass --max-cost {format_cost(self.cap)}",
            }
        )

    def stopped(self) -> str:
        """The error of an item whose next call (a re-ask) could not fit under the cap."""
        return (
            f"stopped before its next call: that call's projected cost would pass --max-cost "
            f"{format_cost(self.cap)} (what it already spent is counted); run again with a "
            "higher --max-cost to judge it"
        )

    def stats(self) -> BudgetStats:
        """Spend against the cap now."""
        with self._lock:
            in_flight = sum(self._reserved.values()) + sum(self._held.values())
            return BudgetStats(self.cap, self._spent, in_flight, self._not_judged)


@dataclass
class _Group:
    """Items that start together: their projections and whether they were let start (None:
    none of them has asked yet)."""

    projections: dict[str, float]
    admitted: bool | None = None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
