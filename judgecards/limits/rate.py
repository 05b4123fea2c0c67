"""Adaptive concurrency for one provider and model: how many calls a run keeps in flight.

A fixed concurrency answers a server that accepts 8 concurrent requests with a storm of 429s
when asked for 64. The `AdaptiveLimiter` instead learns what the server takes, per run, the way
TCP learns a link's capacity:

- **Slow start.** It begins with `START` calls in flight (never more than asked) and adds one
  per success, which doubles the window each round trip, until the first overload. Starting at
  the asked concurrency would send a whole burst that a small server can only refuse.
- **Only sustained refusals count.** A refusal is *sustained* when the call was sent with more
  calls in flight than any recently answered call had beside it (the server has not been seen
  serving that many at once; in slow start, only once a second such refusal comes before any
  call is served higher, since one alone may be chance while the limit grows), when it ends a
  streak of three refusals, or when refusals are at least `SUSTAINED_SHARE` of the recent
  outcomes. Before anything is answered a lone refusal only cuts: a refusal comes back at once
  and a reply only after the model's latency, so a random 429 often comes first. Anything else is *isolated*: a server refusing a share of requests at random
  (another client's burst, a load balancer) refuses at levels it has just served. An isolated
  refusal neither cuts the limit nor pauses the other calls; the refused call alone waits its
  ``retry-after`` (or its backoff) and is sent again. Cutting on each one, with a shared pause
  of the 1 s real providers send, pinned a run with 10% random 429s at one call in flight.
- **Cut to what the server serves.** A sustained 429, 529 (overloaded) or 503 with
  ``retry-after`` sets the limit to the calls still in flight besides the refused one: a server
  that refuses at once, without queuing, is serving those, so they are its capacity. One refusal lowers the
  limit by at most the factor `DECREASE`, so a lone refusal (few calls in flight: a
  requests-per-minute limit, another client) never collapses it, while repeated ones still take
  it down to 1. A burst refused together lands, refusal by refusal, on what the server accepted.
  Cutting to 0.75 times that instead (TCP's multiplicative decrease) left a server of 8 serving 6
  after every probe, for the two round trips the limit took to climb back.
- **Probing.** Each success then adds ``probe / limit``, ``probe`` more calls in flight per
  round trip: 1 at first, halved (down to 1/16) each time the server refuses again at the
  level it refused at before, so a steady server is probed less and less often (a probe costs
  one refused request, not a slot: the cut returns to the level that was being served). The
  limit grows only while in use (at least half of it in flight): a run with fewer items than
  the limit does not inflate it.
- **Queued retries.** A refused call that gave no ``retry-after`` while other calls were in
  flight (`Refusal.wait_for_slot`) waits for a slot here instead of a timed backoff: the cut
  holds it until one of those calls ends, which is when the server has room again (a backoff of
  a second or more idled the run's last slots).
- **Shared pause.** When the server refuses most calls (or every call so far), a ``retry-after``
  holds every new call to this model until it has passed, not only the retry of the call that
  got it. A refusal above the level served is answered by the cut alone: its own call waits
  the ``retry-after`` (1 s from real providers), the calls within the limit go on.
- **First come, first served.** A freed slot wakes the longest waiting call, and only as many
  are woken as slots are free (waking every waiter on each reply cost a few percent of a run's
  CPU at 64 waiters).
- **Token buckets.** Optional ``rpm`` (requests per minute) and ``tpm`` (tokens per minute)
  limits, each a bucket holding one second's allowance (at least one request's worth),
  refilled continuously. A call reserves its estimated input tokens plus its ``max_tokens``;
  the reply's reported usage gives back what it did not use.

The limit never exceeds the asked concurrency (``ceiling``) and never falls below 1. The
limiter is state of a run, not of a provider (providers stay pure): `judgecards.judging.judge` makes one
per batch, and one per `Judge` for single calls. It serves threads (`acquire_blocking`) and event
loops (`acquire`) alike. ``clock`` is injectable so tests can step time.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import islice
from typing import Literal

from judgecards.providers.base import RetryDecision

__all__ = [
    "DECREASE",
    "START",
    "SUSTAINED_SHARE",
    "AdaptiveLimiter",
    "LimiterStats",
    "Permit",
    "RateLimits",
    "Refusal",
    "is_overload",
]

START = 8
"""Calls in flight before anything is known about the server (capped at the asked concurrency):
judgecards' default concurrency, so an adaptive run never starts slower than a default one."""

DECREASE = 0.75
"""The most one overload cuts the limit by (CUBIC's 0.7 rounded up). The cut itself goes to the
calls the server was serving; this bounds it when few were in flight, so one refusal that says
little about concurrency (a requests-per-minute limit, another client's burst) costs at most a
quarter of the limit, and only repeated refusals take it lower."""

SUSTAINED_SHARE = 0.3
"""Refusals among the recent outcomes that make a refusal sustained whatever its level (at
least two): a server over its capacity or a requests-per-minute limit refuses most calls for a
while; with 10% of 429s at random, a refusal finds 30% of the last 32 outcomes refused about
once in 400."""

_MIN_PROBE = 1 / 16
_MIN_WINDOW = 32  # recent outcomes (and successes) looked at: this many at least, or 2 × limit
_HISTORY = 256
_STREAK = 3  # refusals in a row that are sustained whatever their level
_OVERLOADED = {429, 529}


def is_overload(decision: RetryDecision) -> bool:
    """Whether a failed call says "too many at once": a 429 that may pass, Anthropic's 529
    "overloaded", or a 503 that names a time to come back. Other errors say nothing about load."""
    if decision.kind == "rate_limit":
        return True
    return decision.status in _OVERLOADED or (
        decision.status == 503 and decision.retry_after is not None
    )


@dataclass(frozen=True)
class Permit:
    """Leave to send one call: what it reserved, and the window it was sent in."""

    tokens: int
    epoch: int
    waited: float
    level: int = 1  # calls in flight once it was taken, itself included


@dataclass(frozen=True)
class Refusal:
    """What an overload did, for the retry of the refused call.

    Attributes:
        paused_until: when the shared pause it caused ends (-inf: none); the call's own retry
            wait covers it, so its next `AdaptiveLimiter.acquire` passes it as ``paused_until``.
        wait_for_slot: other calls were still in flight and the cut left no slot free, so the
            retry can wait for a slot (one of those calls ending) instead of a timed backoff.
    """

    paused_until: float
    wait_for_slot: bool


@dataclass(frozen=True)
class LimiterStats:
    """What the limiter did in a run, for its summary.

    Attributes:
        ceiling: the asked concurrency (None: no ceiling, for single calls).
        concurrency: the limit at the end; lowest: the lowest a cut took it to (None: no cut).
        requests: calls let through; overloads: of which answered with an overload (429…);
        isolated: of those, refusals that were not sustained (no cut, no shared pause).
        decreases: times the limit was cut; pauses: times a ``retry-after`` paused every call,
        paused_s: for how long in all.
        rpm / tpm: the token-bucket limits in force (None: none).
    """

    ceiling: int | None
    concurrency: int
    lowest: int | None
    requests: int
    overloads: int
    decreases: int
    pauses: int
    paused_s: float
    rpm: float | None
    tpm: float | None
    isolated: int = 0

    def as_text(self) -> str:
        """One line for a run summary."""
        asked = "unbounded" if self.ceiling is None else str(self.ceiling)
        buckets = "".join(
            f", {name} {value:g}"
            for name, value in (("rpm", self.rpm), ("tpm", self.tpm))
            if value is not None
        )
        return (
            f"concurrency {asked} asked, {self.concurrency} at the end"
            f"{'' if self.lowest is None else f' (lowest {self.lowest})'}; "
            f"{self.overloads} rate-limited of {self.requests} requests"
            f"{f' ({self.isolated} isolated)' if self.isolated else ''}, "
            f"{self.decreases} cut(s), {self.pauses} shared pause(s) ({self.paused_s:.1f}s)"
            f"{buckets}"
        )


class _Bucket:
    """A token bucket: ``rate`` per second, holding at most ``capacity``."""

    def __init__(self, per_minute: float, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` can be taken (a call larger than the bucket waits for a
        full bucket and takes it below zero, so it is slowed, never refused)."""
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate


_Waker = Callable[[], None]


@dataclass(frozen=True)
class _Wait:
    """What an acquirer must wait for: ``seconds`` (inf: a call to end), for a shared pause
    ending at ``pause``, or (``pause`` None) for the token buckets."""

    seconds: float
    pause: float | None = None


class AdaptiveLimiter:
    """The calls in flight to one provider and model, adapted to what the server accepts.

    Args:
        ceiling: the asked concurrency, never exceeded (None: no ceiling).
        rpm / tpm: optional requests- and tokens-per-minute limits.
        start: calls in flight at first (`START`, at most ``ceiling``).
        decrease: the limit's factor on an overload (`DECREASE`).
        clock: monotonic seconds.
    """

    def __init__(
        self,
        ceiling: int | None,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        start: int = START,
        decrease: float = DECREASE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ceiling is not None and ceiling < 1:
            raise ValueError("concurrency must be at least 1")
        if start < 1:
            raise ValueError("start must be at least 1")
        if not 0.0 < decrease < 1.0:
            raise ValueError("decrease must lie strictly between 0 and 1")
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive")
        self.ceiling = ceiling
        self._decrease = decrease
        self._clock = clock
        now = clock()
        self._limit = float(start if ceiling is None else min(start, ceiling))
        self._lowest: int | None = None  # the lowest limit after a cut
        self._slow_start = True
        self._capacity: float | None = None  # the limit the last refusal left: what was served
        self._probe = 1.0
        self._epoch = 0
        self._in_flight = 0
        self._promised = 0  # slots held for waiters woken but not yet back
        self._paused_until = -math.inf
        self._rpm = None if rpm is None else _Bucket(rpm, now)
        self._tpm = None if tpm is None else _Bucket(tpm, now)
        self._limits = (rpm, tpm)
        self._lock = threading.Lock()
        self._waiters: deque[_Waker] = deque()
        self._requests = self._overloads = self._decreases = self._pauses = 0
        self._isolated = 0
        self._paused_s = 0.0
        self._outcomes: deque[bool] = deque(maxlen=_HISTORY)  # True: refused
        self._served: deque[int] = deque(maxlen=_HISTORY)  # levels of recent successes
        self._above_refused = 0  # refusals above the level served since it last rose

    # ---------------------------------------------------------------- taking a permit

    def _try_take(
        self, tokens: int, paused_until: float, bucket_waited: bool, woken: bool
    ) -> Permit | _Wait:
        """A permit, or what to wait for. ``paused_until``: a pause the caller has already
        waited out (its own retry wait, or a sleep here); ``bucket_waited``: it has slept what
        the buckets asked, so it takes its share now even if a bucket goes below zero;
        ``woken``: a freed slot was held for it (`_wake_free`), which it takes or gives up now."""
        if woken:
            self._promised -= 1
        now = self._clock()
        if now < self._paused_until and self._paused_until > paused_until:
            return _Wait(self._paused_until - now, pause=self._paused_until)
        if self._in_flight + self._promised >= int(self._limit):
            return _Wait(math.inf)
        wait = 0.0
        for bucket, amount in ((self._rpm, 1.0), (self._tpm, float(tokens))):
            if bucket is not None:
                bucket.refill(now)
                wait = max(wait, bucket.wait_for(amount))
        if wait > 0.0 and not bucket_waited:
            return _Wait(wait)
        if self._rpm is not None:
            self._rpm.level -= 1.0
        if self._tpm is not None:
            self._tpm.level -= tokens
        self._in_flight += 1
        self._requests += 1
        return Permit(tokens=tokens, epoch=self._epoch, waited=0.0, level=self._in_flight)

    def acquire_blocking(
        self,
        tokens: int = 0,
        *,
        sleep: Callable[[float], None] = time.sleep,
        paused_until: float = -math.inf,
    ) -> Permit:
        """Wait in this thread until a call may be sent.

        ``tokens``: the call's estimated tokens; ``sleep``: how to wait out a pause or a bucket
        (the retry policy's, so tests record waits instead of sleeping: each such wait is slept
        once, never re-checked against the clock); ``paused_until``: the end of a pause the
        caller already waited for (`overloaded` returns it to the call that caused it)."""
        started = self._clock()
        event = threading.Event()
        bucket_waited = woken = False
        while True:
            with self._lock:
                outcome = self._try_take(tokens, paused_until, bucket_waited, woken)
                if isinstance(outcome, Permit):
                    waited = self._clock() - started
                    return Permit(outcome.tokens, outcome.epoch, waited, outcome.level)
                if math.isinf(outcome.seconds):
                    event.clear()
                    # Back at the front if a slot held for it was taken from under it (a cut).
                    (self._waiters.appendleft if woken else self._waiters.append)(event.set)
            woken = False
            if math.isinf(outcome.seconds):
                try:
                    event.wait()
                except BaseException:
                    self._abandon(event.set)
                    raise
                woken = True
                continue
            sleep(outcome.seconds)
            if outcome.pause is None:
                bucket_waited = True
            else:
                paused_until = outcome.pause

    async def acquire(
        self,
        tokens: int = 0,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        paused_until: float = -math.inf,
    ) -> Permit:
        """Async twin of `acquire_blocking`: waits in this event loop."""
        started = self._clock()
        loop = asyncio.get_running_loop()
        bucket_waited = woken = False
        while True:
            with self._lock:
                outcome = self._try_take(tokens, paused_until, bucket_waited, woken)
                if isinstance(outcome, Permit):
                    waited = self._clock() - started
                    return Permit(outcome.tokens, outcome.epoch, waited, outcome.level)
                if math.isinf(outcome.seconds):
                    future: asyncio.Future[None] = loop.create_future()
                    wake = _waker(loop, future)
                    (self._waiters.appendleft if woken else self._waiters.append)(wake)
            woken = False
            if math.isinf(outcome.seconds):
                try:
                    await future
                except BaseException:  # cancelled: a slot held for it goes to the next waiter
                    self._abandon(wake)
                    raise
                woken = True
                continue
            await sleep(outcome.seconds)
            if outcome.pause is None:
                bucket_waited = True
            else:
                paused_until = outcome.pause

    def _abandon(self, waker: _Waker) -> None:
        """A waiter that stops waiting: out of the queue, or, if a slot was already held for
        it, that slot to the next waiter."""
        with self._lock:
            if waker in self._waiters:
                self._waiters.remove(waker)
            else:
                self._promised -= 1
                self._wake_free()

    def _wake_free(self) -> None:
        """Wake the longest waiting callers, one per free slot, holding each slot for the one
        woken so a newcomer cannot take it first (called with the lock held)."""
        free = int(self._limit) - self._in_flight - self._promised
        while free > 0 and self._waiters:
            self._promised += 1
            self._waiters.popleft()()
            free -= 1

    # ---------------------------------------------------------------- giving it back

    def succeeded(self, permit: Permit, used_tokens: int | None = None) -> None:
        """The call was answered; ``used_tokens``: the tokens it reported (None: unknown)."""
        with self._lock:
            if permit.level > self._served_level():
                self._above_refused = 0  # served more at once than before: refusals were not load
            self._outcomes.append(False)
            self._served.append(permit.level)
            # Grow only a limit in use (half of it or more in flight), so a run with fewer items
            # than the limit does not inflate it; replies landing together release slots before
            # waiting calls can take them, so "all of it in flight" would miss most of them.
            if 2 * self._in_flight >= self._limit:
                self._limit = self._capped(self._limit + self._step())
            if self._tpm is not None and used_tokens is not None:
                self._tpm.level = min(
                    self._tpm.capacity, self._tpm.level + permit.tokens - used_tokens
                )
            self._release()

    def overloaded(self, permit: Permit, retry_after: float | None) -> Refusal:
        """The server said "too many" (see `is_overload`); ``retry_after`` if it said when."""
        with self._lock:
            self._overloads += 1
            self._outcomes.append(True)
            kind = self._refusal_kind(permit)
            if kind == "isolated":
                # The server was just seen serving this many at once. No cut and no shared
                # pause; the refused call waits its own retry-after or backoff.
                self._isolated += 1
                self._release()
                return Refusal(paused_until=-math.inf, wait_for_slot=False)
            # The other calls still in flight are what the server is serving: the limit falls to
            # them (by at most one factor DECREASE a refusal). A burst refused together thus
            # lands, refusal by refusal, on what the server accepted.
            serving = self._in_flight - 1
            self._limit = max(1.0, self._decrease * self._limit, min(self._limit, serving))
            if permit.epoch == self._epoch:  # the first refusal of a call sent since the last cut
                self._epoch += 1
                self._decreases += 1
                self._slow_start = False
                # Refused again where it was last time: probe above that level half as often.
                same_level = self._capacity is not None and abs(self._limit - self._capacity) < 1.5
                self._probe = max(self._probe / 2, _MIN_PROBE) if same_level else 1.0
            self._capacity = self._limit
            self._lowest = min(self._lowest or int(self._limit), int(self._limit))
            until = -math.inf
            # A refusal above the level served says only "fewer at once": the cut is the answer,
            # and the refused call waits its own retry-after. Only a server refusing most calls
            # (or all, so far) is waited for by every call.
            if kind == "flood" and retry_after is not None and retry_after > 0:
                now = self._clock()
                until = now + retry_after
                if until > self._paused_until:
                    self._pauses += 1
                    self._paused_s += until - max(now, self._paused_until)
                    self._paused_until = until
            self._release()
            # In flight (after this one's release) at or over the limit: a slot frees only when
            # one of them ends.
            queued = serving > 0 and self._in_flight + self._promised >= int(self._limit)
            return Refusal(paused_until=until, wait_for_slot=queued)

    def released(self, permit: Permit) -> None:
        """The call failed for a reason that says nothing about load (a 500, a timeout…)."""
        with self._lock:
            self._release()

    def _release(self) -> None:
        self._in_flight -= 1
        self._wake_free()

    def _step(self) -> float:
        """How much one success adds: 1 in slow start (doubling per round trip), else
        ``probe / limit``
        (``probe`` more calls per round trip: the cut left the limit at what the server serves,
        so anything above it is a probe)."""
        return 1.0 if self._slow_start else self._probe / self._limit

    def _window(self) -> int:
        return max(_MIN_WINDOW, 2 * int(self._limit))

    def _served_level(self) -> int:
        """The most calls in flight beside which a recent call was answered."""
        return max(islice(reversed(self._served), self._window()), default=0)

    def _refusal_kind(self, permit: Permit) -> Literal["isolated", "level", "flood"]:
        """What a refusal of a call sent at ``permit.level`` says: ``level``, more were in flight
        than the server was recently seen serving ("fewer at once"; in slow start, for the second
        time since that level last rose), or the first refusal before anything was answered;
        ``flood``, a second refusal before anything was answered, the last `_STREAK` outcomes
        were refusals, or refusals are
        `SUSTAINED_SHARE` of the recent outcomes ("not now"); else ``isolated``."""
        served = self._served_level()
        recent = list(islice(reversed(self._outcomes), self._window()))
        if served == 0:
            # Nothing answered yet: a refusal comes back at once and a reply only after the
            # model's latency, so a lone one (a random 429) says "fewer" at most; a second, "not now".
            return "flood" if sum(recent) >= 2 else "level"
        if permit.level > served:
            if not self._slow_start:
                return "level"  # a probe above what the server serves
            # While the limit grows, one refusal above it may be chance (a random 429 at the
            # new level); a second before any call is served above it is the server's limit.
            self._above_refused += 1
            return "level" if self._above_refused >= 2 else "isolated"
        if len(recent) >= _STREAK and all(recent[:_STREAK]):
            return "flood"
        refused = sum(recent)
        if refused >= 2 and refused >= SUSTAINED_SHARE * len(recent):
            return "flood"
        return "isolated"

    def _capped(self, limit: float) -> float:
        return limit if self.ceiling is None else min(limit, float(self.ceiling))

    # ---------------------------------------------------------------- reporting

    @property
    def concurrency(self) -> int:
        """Calls allowed in flight now."""
        return int(self._limit)

    @property
    def in_flight(self) -> int:
        """Calls holding a permit now."""
        return self._in_flight

    def stats(self) -> LimiterStats:
        """What the limiter did so far."""
        with self._lock:
            return LimiterStats(
                ceiling=self.ceiling,
                concurrency=int(self._limit),
                lowest=self._lowest,
                requests=self._requests,
                overloads=self._overloads,
                decreases=self._decreases,
                pauses=self._pauses,
                paused_s=self._paused_s,
                rpm=self._limits[0],
                tpm=self._limits[1],
                isolated=self._isolated,
            )


class RateLimits:
    """A judge's rate settings and the limiters they made (``judge.rates``).

    Each batch gets a fresh `AdaptiveLimiter` (`for_run`), since what a server accepted an hour
    ago says little now; single calls (``score``, ``ascore``) share one with no ceiling (`single`),
    so callers in several threads or tasks still pause together on a ``retry-after``. The
    ``rpm`` / ``tpm`` buckets are per limiter: a batch and single calls running at the same time
    each get the full allowance.
    """

    def __init__(
        self, *, rpm: float | None = None, tpm: float | None = None, adaptive: bool = True
    ) -> None:
        if not adaptive and (rpm is not None or tpm is not None):
            raise ValueError("rpm and tpm need the limiter (adaptive=True)")
        self.rpm = rpm
        self.tpm = tpm
        self.adaptive = adaptive
        # Validates rpm and tpm. ``adaptive=False`` (for benchmarks: the fixed concurrency of
        # old, the semaphore alone) has no limiter at all.
        self.single = AdaptiveLimiter(None, rpm=rpm, tpm=tpm) if adaptive else None
        self.last: AdaptiveLimiter | None = None

    def for_run(self, ceiling: int | None) -> AdaptiveLimiter | None:
        """A limiter for one batch that asked for ``ceiling`` calls in flight."""
        if not self.adaptive:
            return None
        self.last = AdaptiveLimiter(ceiling, rpm=self.rpm, tpm=self.tpm)
        return self.last

    def stats(self) -> LimiterStats | None:
        """What the last batch's limiter did (single calls' if no batch has run; None if
        not adaptive)."""
        limiter = self.last or self.single
        return None if limiter is None else limiter.stats()


def _waker(loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> _Waker:
    """Resolves ``future`` from any thread: directly in its own loop (no self-pipe write),
    through ``call_soon_threadsafe`` from another."""

    def wake() -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            _resolve(future)
        else:
            loop.call_soon_threadsafe(_resolve, future)

    return wake


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
