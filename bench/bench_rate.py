"""Benchmark of adaptive concurrency (issue 10 §5, issue 22 item 12).

**Capacity.** A loopback fake OpenAI server (its own process) accepts 8 concurrent requests and
answers the rest at once with a 429 carrying ``retry-after: 1`` (whole seconds, as real
providers send; the fake's old ``retry-after-ms`` of a few milliseconds hid what a shared pause
costs) or, in the second scenario, no ``retry-after``. N items are judged asking concurrency C:

  * ``fixed C``: the semaphore alone (no limiter; judgecards before the limiter);
  * ``adaptive C``: the per-run `judgecards.limits.rate.AdaptiveLimiter`;
  * ``fixed 8``: the semaphore at exactly the server's capacity, what a user who knew the
    limit would ask for: the best this client can do on this machine.

Reported per mode: requests sent, 429s, items that ended as errors, and wall time as a ratio to
the floor N·L/8 and to ``fixed 8`` in the same run (the floor ignores client overhead, which on a
busy 2-core machine is large; ``fixed 8`` pays the same overhead).

Targets (issue 10): adaptive, C = 64, N = 200: ≤ 40 rate-limited requests, no item lost, wall
≤ 1.2 × ``fixed 8``.

**Random 429s** (issue 22 item 12, ``--random``): a server with no capacity limit refuses 10% of
requests at random with ``retry-after: 1``; 400 items, C = 32, L = 300 ms: judgecards (adaptive)
against a bare ``AsyncOpenAI`` loop (an asyncio semaphore of 32, the SDK's own retries honouring
``retry-after``). Before the fix the limiter cut on every refusal and paused every call, and
ended at concurrency 1.

``--trace`` also prints, for each adaptive run, where its time went (`TracedLimiter`): the
limit and the calls in flight over time, slots left idle while items waited, time paused by
``retry-after``, and how long refused calls took to be sent again.

Usage: .venv/bin/python bench/bench_rate.py [--runs 3] [--n 200] [--latency 0.2] [--concurrency 64]
       [--trace] [--random] [--only-random]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._items import reference_items  # noqa: E402
from bench._runs import Measure, repeat, table  # noqa: E402
from judgecards.limits import AdaptiveLimiter, Permit, RateLimits, Refusal  # noqa: E402
from tests.fakes.server import spawn  # noqa: E402


class TracedLimiter(AdaptiveLimiter):
    """An `AdaptiveLimiter` that records, at each change, the limit and the calls in flight,
    and, per task, when a refused call was refused and when it was let through again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.t0 = time.perf_counter()
        self.steps: list[tuple[float, int, int, int]] = []  # (t, limit, in flight, waiting)
        self.waiting = 0
        self.refused_at: dict[object, float] = {}
        self.resent_after: list[float] = []

    def _note(self) -> None:
        now = time.perf_counter() - self.t0
        self.steps.append((now, self.concurrency, self.in_flight, self.waiting))

    async def acquire(self, tokens: int = 0, **options: Any) -> Permit:
        task = asyncio.current_task()
        self.waiting += 1
        try:
            permit = await super().acquire(tokens, **options)
        finally:
            self.waiting -= 1
        refused = self.refused_at.pop(task, None)
        if refused is not None:
            self.resent_after.append(time.perf_counter() - self.t0 - refused)
        self._note()
        return permit

    def succeeded(self, permit: Permit, used_tokens: int | None = None) -> None:
        super().succeeded(permit, used_tokens)
        self._note()

    def overloaded(self, permit: Permit, retry_after: float | None) -> Refusal:
        refusal = super().overloaded(permit, retry_after)
        self.refused_at[asyncio.current_task()] = time.perf_counter() - self.t0
        self._note()
        return refusal

    def report(self, capacity: int, latency: float) -> list[str]:
        """Where the run's time went, in a few lines."""
        end = self.steps[-1][0]
        below = idle = busy = 0.0
        for (t, limit, flying, waiting), (t_next, *_) in zip(self.steps, self.steps[1:]):
            span = t_next - t
            busy += span * min(flying, capacity)
            below += span if limit < capacity else 0.0
            idle += span * max(0, capacity - flying) if waiting else 0.0
        stats = self.stats()
        waits = sorted(self.resent_after)
        resent = (f"median {1000 * waits[len(waits) // 2]:.0f} ms, max {1000 * waits[-1]:.0f} ms"
                  if waits else "none")  # fmt: skip
        return [
            f"    {end:.2f} s; mean calls in flight (up to {capacity}) "
            f"{busy / end:.2f}; limit below {capacity} for {below:.2f} s "
            f"(lowest {stats.lowest}); slot-seconds idle while calls waited {idle:.2f} "
            f"(= {idle / capacity / latency:.1f} round trips)",
            f"    {stats.overloads} refused, {stats.decreases} cut(s); paused by retry-after "
            f"{stats.paused_s:.2f} s in {stats.pauses} pause(s); refused calls sent again "
            f"after: {resent}",
        ]


class TracedRates(RateLimits):
    """`RateLimits` whose batches get a `TracedLimiter`."""

    def for_run(self, ceiling: int | None) -> AdaptiveLimiter | None:
        self.last = TracedLimiter(ceiling)
        return self.last


def judge_run(
    base_url: str, n: int, concurrency: int, *, adaptive: bool, db: Path, tag: str,
    trace: bool = False,
) -> dict[str, Any]:  # fmt: skip
    from judgecards import Judge

    with Judge(
        "reference", "openai:fake-judge", db=db, base_url=base_url, api_key="sk-bench"
    ) as judge:
        judge.rates = TracedRates() if adaptive and trace else RateLimits(adaptive=adaptive)
        started = time.perf_counter()
        results = judge.score_many(reference_items(n, tag), concurrency=concurrency)
        wall = time.perf_counter() - started
        counters = judge.transport_counters
        stats = judge.rates.stats()
    return {
        "wall": wall,
        "requests": counters.requests,
        "rate_limited": counters.rate_limited,
        "failed": sum(1 for r in results if r.status != "ok"),
        "final": stats.concurrency if stats else concurrency,
        "limiter": judge.rates.last,
    }


def scenario(retry_after: bool, args: argparse.Namespace, tmp: Path) -> list[Measure]:
    n, latency, concurrency = args.n, args.latency, args.concurrency
    floor = n * latency / 8
    server, base_url = spawn(
        latency, capacity=8, retry_after=retry_after, retry_after_s=1.0 if retry_after else None
    )
    label = "retry-after 1 s" if retry_after else "no retry-after"
    try:
        tag = f"{label}-{time.time_ns()}"  # fresh items: nothing from the store or the cache
        # Warm-up (imports, connections), so the first mode measured does not pay for them.
        judge_run(base_url, 8, 8, adaptive=False, db=tmp / f"{tag}-warm.db", tag=f"{tag}-warm")
        modes = {
            "fixed 8": (8, False),
            f"fixed {concurrency}": (concurrency, False),
            f"adaptive {concurrency}": (concurrency, True),
        }
        measured = {
            name: judge_run(
                base_url, n, c, adaptive=adaptive, db=tmp / f"{tag}-{name}.db",
                tag=f"{tag}-{name}", trace=args.trace,
            )
            for name, (c, adaptive) in modes.items()
        }  # fmt: skip
    finally:
        server.terminate()
        server.wait()
    for name, m in measured.items():
        if isinstance(m["limiter"], TracedLimiter):
            lines = m["limiter"].report(8, latency)
            print(f"{label}: {name}, {m['wall']:.2f} s wall", *lines, sep="\n", file=sys.stderr)
    base = measured["fixed 8"]["wall"]
    out: list[Measure] = []
    for name, m in measured.items():
        adaptive = name.startswith("adaptive")
        out += [
            Measure(f"{label}: {name} wall / floor", m["wall"] / floor, "x", 2,
                    "<= 1.2" if adaptive else ""),
            Measure(f"{label}: {name} wall / fixed 8", m["wall"] / base, "x", 2),
            Measure(f"{label}: {name} requests", m["requests"], "", 0),
            Measure(f"{label}: {name} 429s", m["rate_limited"], "", 0, "<= 40" if adaptive else ""),
            Measure(f"{label}: {name} failed items", m["failed"], "", 0, "0" if adaptive else ""),
        ]  # fmt: skip
        if adaptive:
            out.append(Measure(f"{label}: {name} final concurrency", m["final"], "", 0))
    return out


async def bare_loop(
    base_url: str, items: list[dict[str, str]], concurrency: int
) -> tuple[int, int]:
    """A bare AsyncOpenAI loop over ``items``: (items failed, requests refused, as the SDK
    retried them). The SDK's retries honour ``retry-after``; five of them, so none is lost."""
    import httpx2
    from openai import AsyncOpenAI, RateLimitError

    refused = 0

    async def count(response: httpx2.Response) -> None:
        nonlocal refused
        refused += response.status_code == 429

    client = AsyncOpenAI(
        base_url=base_url, api_key="sk-bench", max_retries=5,
        http_client=httpx2.AsyncClient(event_hooks={"response": [count]}),  # type: ignore[list-item]
    )  # fmt: skip
    slots = asyncio.Semaphore(concurrency)
    failed = 0

    async def one(item: dict[str, str]) -> None:
        nonlocal failed
        async with slots:
            try:
                await client.chat.completions.create(
                    model="fake-judge", temperature=0, max_tokens=512,
                    messages=[{"role": "user", "content": json.dumps(item)}],
                )  # fmt: skip
            except RateLimitError:
                failed += 1

    await asyncio.gather(*(one(item) for item in items))
    await client.close()
    return failed, refused


def random_scenario(args: argparse.Namespace, tmp: Path) -> list[Measure]:
    """400 items, C=32, 300 ms, 10% random 429s with retry-after 1 s: judgecards vs a bare loop."""
    n, latency, concurrency = 400, 0.3, 32
    server, base_url = spawn(latency, refuse_share=0.1, retry_after_s=1.0)
    try:
        tag = f"random-{time.time_ns()}"
        judge_run(base_url, 8, 8, adaptive=True, db=tmp / f"{tag}-warm.db", tag=f"{tag}-warm")
        ours = judge_run(base_url, n, concurrency, adaptive=True, db=tmp / f"{tag}.db", tag=tag,
                         trace=args.trace)  # fmt: skip
        started = time.perf_counter()
        failed, refused = asyncio.run(
            bare_loop(base_url, reference_items(n, f"{tag}-bare"), concurrency)
        )
        bare = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait()
    if isinstance(ours["limiter"], TracedLimiter):
        print(f"random 429s: adaptive {concurrency}, {ours['wall']:.2f} s wall",
              *ours["limiter"].report(concurrency, latency), sep="\n", file=sys.stderr)  # fmt: skip
    label = "random 10% 429s"
    return [
        Measure(f"{label}: judgecards wall", ours["wall"], " s", 2),
        Measure(f"{label}: bare AsyncOpenAI wall", bare, " s", 2),
        Measure(f"{label}: judgecards / bare", ours["wall"] / bare, "x", 2),
        Measure(f"{label}: judgecards 429s", ours["rate_limited"], "", 0),
        Measure(f"{label}: bare 429s", refused, "", 0),
        Measure(f"{label}: judgecards final concurrency", ours["final"], "", 0),
        Measure(f"{label}: judgecards failed items", ours["failed"], "", 0, "0"),
        Measure(f"{label}: bare failed items", failed, "", 0),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3, help="repeats; the median is reported")
    parser.add_argument(
        "--trace", action="store_true", help="print where each adaptive run's time went"
    )
    parser.add_argument("--random", action="store_true", help="also the random-429 scenario")
    parser.add_argument("--only-random", action="store_true", help="only the random-429 scenario")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the fake judge is, rightly, never calibrated
    os.environ.pop("OPENAI_BASE_URL", None)
    tmp = Path(tempfile.mkdtemp(prefix="judgecards-bench-rate-"))

    def run(_: int) -> list[Measure]:
        capacity = (
            [] if args.only_random else scenario(True, args, tmp) + scenario(False, args, tmp)
        )
        return capacity + (random_scenario(args, tmp) if args.random or args.only_random else [])

    results = repeat(run, args.runs)
    print(
        table(
            f"adaptive rate: N={args.n}, L={args.latency * 1000:.0f} ms, asked C={args.concurrency}, "
            f"server capacity 8, floor N·L/8 = {args.n * args.latency / 8:.1f} s",
            results,
        )
    )


if __name__ == "__main__":
    main()
