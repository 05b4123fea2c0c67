"""Adaptive concurrency for one provider and model: how many calls a run keeps in flight.

A fixed concurrency answers a server that accepts 8 concurrent requests with a storm of 429s
when asked for 64. The `AdaptiveLimiter` instead learns what the server takes, per run, the way
TCP learns a link's capacity:

- **Slow start.** It begins with `START` calls in flight (never more than asked) and adds one
  per success, which doubles the window each round trip, until the first overload. Starting at
  the asked concurrency would send a whole burst that a small server can only refuse.
- **Additive increase.** After the first overload, each success adds ``1 / limit`` (one more
  call in flight per round trip) up to the calls the server was serving when it last refused
  one more, and ``probe / limit`` above that: ``probe`` is 1 at first and halved (down to
  1/16) each time the server refuses again at the level it refused at before, so a steady
  server is probed less and less often. The limit grows only while in use (at least half of it
  in flight): a run with fewer items than the limit does not inflate it.
- **Multiplicative decrease.** A 429, a 529 (overloaded) or a 503 with ``retry-after`` cuts
  the limit to `DECREASE` times the smaller of the limit and the other calls still in flight
  (the server is serving at most those), but never below `DECREASE` squared times the limit.
  A refusal of a call sent before that cut lowers the limit at most by one more `DECREASE`,
  towards `DECREASE` times the calls in flight. A burst refused together thus lands near what
  the server accepted in one round trip, where one cut per round trip would take several, each
  with its own burst of refusals; one lone refusal never collapses the limit.
- **Shared pause.** A ``retry-after`` holds every new call to this model until it has passed,
  not only the retry of the call that got it.
- **Token buckets.** Optional ``rpm`` (requests per minute) and ``tpm`` (tokens per minute)
  limits, each a bucket holding one second's allowance (at least one request's worth),
  refilled continuously. A call reserves its estimated input tokens plus its ``max_tokens``;
  the reply's reported usage gives back what it did not use.

The limit never exceeds the asked concurrency (``ceiling``) and never falls below 1. The
limiter is state of a run, not of a provider (providers stay pure): `judgecards.judge` makes one
per batch, and one per `Judge` for single calls. It serves threads (`acquire_blocking`) and event
loops (`acquire`) alike. ``clock`` is injectable so tests can step time.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from judgecards.providers.base import RetryDecision

__all__ = [
    "DECREASE",
    "START",
    "AdaptiveLimiter",
    "LimiterStats",
    "Permit",
    "RateLimits",
    "is_overload",
]

START = 8
"""Calls in flight before anything is known about the server (capped at the asked concurrency):
judgecards' default concurrency, so an adaptive run never starts slower than a default one."""

DECREASE = 0.75
"""The limit's factor on an overload (CUBIC's 0.7 rounded up: a gentler cut than TCP Reno's 0.5
keeps a server that is just at its limit busier while the limit climbs back)."""

_MIN_PROBE = 1 / 16
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


@dataclass(frozen=True)
class LimiterStats:
    """What the limiter did in a run, for its summary.

    Attributes:
        ceiling: the asked concurrency (None: no ceiling, for single calls).
        concurrency: the limit at the end; lowest: the lowest a cut took it to (None: no cut).
        requests: calls let through; overloads: of which answered with an overload (429…).
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
            f"{self.overloads} rate-limited of {self.requests} requests, "
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
        self._last_overload: float | None = None  # the limit when the server last refused
        self._probe = 1.0
        self._epoch = 0
        self._in_flight = 0
        self._paused_until = -math.inf
        self._rpm = None if rpm is None else _Bucket(rpm, now)
        self._tpm = None if tpm is None else _Bucket(tpm, now)
        self._limits = (rpm, tpm)
        self._lock = threading.Lock()
        self._waiters: list[_Waker] = []
        self._requests = self._overloads = self._decreases = self._pauses = 0
        self._paused_s = 0.0

    # ---------------------------------------------------------------- taking a permit

    def _try_take(self, tokens: int, paused_until: float, bucket_waited: bool) -> Permit | _Wait:
        """A permit, or what to wait for. ``paused_until``: a pause the caller has already
        waited out (its own retry wait, or a sleep here); ``bucket_waited``: it has slept what
        the buckets asked, so it takes its share now even if a bucket goes below zero."""
        now = self._clock()
        if now < self._paused_until and self._paused_until > paused_until:
            return _Wait(self._paused_until - now, pause=self._paused_until)
        if self._in_flight >= int(self._limit):
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
        return Permit(tokens=tokens, epoch=self._epoch, waited=0.0)

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
        bucket_waited = False
        while True:
            with self._lock:
                outcome = self._try_take(tokens, paused_until, bucket_waited)
                if isinstance(outcome, Permit):
                    return Permit(outcome.tokens, outcome.epoch, self._clock() - started)
                if math.isinf(outcome.seconds):
                    event.clear()
                    self._waiters.append(event.set)
            if math.isinf(outcome.seconds):
                event.wait()
                self._forget(event.set)
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
        bucket_waited = False
        while True:
            woken: asyncio.Future[None] = loop.create_future()

            def wake(future: asyncio.Future[None] = woken) -> None:
                loop.call_soon_threadsafe(_resolve, future)

            with self._lock:
                outcome = self._try_take(tokens, paused_until, bucket_waited)
                if isinstance(outcome, Permit):
                    return Permit(outcome.tokens, outcome.epoch, self._clock() - started)
                if math.isinf(outcome.seconds):
                    self._waiters.append(wake)
            if math.isinf(outcome.seconds):
                try:
                    await woken
                finally:
                    self._forget(wake)
                continue
            await sleep(outcome.seconds)
            if outcome.pause is None:
                bucket_waited = True
            else:
                paused_until = outcome.pause

    def _forget(self, waker: _Waker) -> None:
        with self._lock:
            if waker in self._waiters:
                self._waiters.remove(waker)

    def _wake_all(self) -> None:
        """Let every waiter look again (called with the lock held)."""
        waiters, self._waiters = self._waiters, []
        for waker in waiters:
            waker()

    # ---------------------------------------------------------------- giving it back

    def succeeded(self, permit: Permit, used_tokens: int | None = None) -> None:
        """The call was answered; ``used_tokens``: the tokens it reported (None: unknown)."""
        with self._lock:
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

    def overloaded(self, permit: Permit, retry_after: float | None) -> float:
        """The server said "too many" (see `is_overload`); ``retry_after`` if it said when.
        Returns when the shared pause ends (-inf: none), which the caller's own retry wait
        covers: its next `acquire` passes it as ``paused_until``."""
        with self._lock:
            self._overloads += 1
            # The calls still in flight are what the server may be serving: the limit falls to
            # a share of them, so a burst refused together leaves it near what was accepted
            # (each refusal lowers it further) instead of cutting once per round trip.
            serving = float(self._in_flight - 1)
            fresh = permit.epoch == self._epoch  # the first refusal of this window
            beta, limit = self._decrease, self._limit
            if fresh:  # between beta^2 and beta times the limit
                limit = beta * max(min(limit, serving), beta * limit)
            else:  # a call sent before the last cut: at most one more factor beta
                limit = max(beta * limit, min(limit, beta * serving))
            self._limit = max(1.0, limit)
            if fresh:
                self._epoch += 1
                self._decreases += 1
                self._slow_start = False
                # Refused again where it was last time: probe above that level half as often.
                level = self._limit / self._decrease
                same_level = self._last_overload is not None and (
                    abs(level - self._last_overload) < 1.5
                )
                self._probe = max(self._probe / 2, _MIN_PROBE) if same_level else 1.0
                self._last_overload = level
            self._lowest = min(self._lowest or int(self._limit), int(self._limit))
            until = -math.inf
            if retry_after is not None and retry_after > 0:
                now = self._clock()
                until = now + retry_after
                if until > self._paused_until:
                    self._pauses += 1
                    self._paused_s += until - max(now, self._paused_until)
                    self._paused_until = until
            self._release()
            return until

    def released(self, permit: Permit) -> None:
        """The call failed for a reason that says nothing about load (a 500, a timeout…)."""
        with self._lock:
            self._release()

    def _release(self) -> None:
        self._in_flight -= 1
        self._wake_all()

    def _step(self) -> float:
        """How much one success adds: 1 in slow start (doubling per round trip); else one call
        per round trip (``1 / limit``) up to the calls the server was serving when it last
        refused one more, and ``probe / limit`` above that: ``probe`` more calls per round
        trip, 1 at first, halved each time the server refuses at the level it refused at last
        time (down to 1/16)."""
        if self._slow_start:
            return 1.0
        if self._last_overload is not None and self._limit < self._last_overload:
            return 1.0 / self._limit
        return self._probe / self._limit

    def _capped(self, limit: float) -> float:
        return limit if self.ceiling is None else min(limit, float(self.ceiling))

    # ---------------------------------------------------------------- reporting

    @property
    def concurrency(self) -> int:
        """Calls allowed in flight now."""
        return int(self._limit)

    def stats(self) -> LimiterStats:
        """What the limiter did so far."""
        with self._lock:
            return LimiterStats(
                ceiling=self.ceiling, concurrency=int(self._limit), lowest=self._lowest,
                requests=self._requests, overloads=self._overloads, decreases=self._decreases,
                pauses=self._pauses, paused_s=self._paused_s, rpm=self._limits[0],
                tpm=self._limits[1],
            )  # fmt: skip


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


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
