"""Benchmark of adaptive concurrency (issue 10 §5) against a server that takes 8 calls at once.

A loopback fake OpenAI server (its own process) accepts 8 concurrent requests and answers the
rest at once with a 429, with ``retry-after-ms`` (the time until its first slot frees) or, in
the second scenario, without. N items are judged asking concurrency C:

  * ``fixed C``: the semaphore alone (no limiter; judgecards before the limiter);
  * ``adaptive C``: the per-run `judgecards.rate.AdaptiveLimiter`;
  * ``fixed 8``: the semaphore at exactly the server's capacity, what a user who knew the
    limit would ask for: the best this client can do on this machine.

Reported per mode: requests sent, 429s, items that ended as errors, and wall time as a ratio to
the floor N·L/8 and to ``fixed 8`` in the same run (the floor ignores client overhead, which on a
busy 2-core machine is large; ``fixed 8`` pays the same overhead).

Targets (issue 10): adaptive, C = 64, N = 200: ≤ 40 rate-limited requests, no item lost, wall
≤ 1.2 × the floor at 8.

``--trace`` also prints, for each adaptive run, where its time went (`TracedLimiter`): the
limit and the calls in flight over time, slots left idle while items waited, time paused by
``retry-after``, and how long refused calls took to be sent again.

Usage: .venv/bin/python bench/bench_rate.py [--runs 3] [--n 200] [--latency 0.2] [--concurrency 64]
       [--trace]
"""

from __future__ import annotations

import argparse
import asyncio
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
from judgecards.rate import AdaptiveLimiter, Permit, RateLimits, Refusal  # noqa: E402
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
    server, base_url = spawn(latency, capacity=8, retry_after=retry_after)
    label = "retry-after" if retry_after else "no retry-after"
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
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the fake judge is, rightly, never calibrated
    os.environ.pop("OPENAI_BASE_URL", None)
    tmp = Path(tempfile.mkdtemp(prefix="judgecards-bench-rate-"))

    def run(_: int) -> list[Measure]:
        return scenario(True, args, tmp) + scenario(False, args, tmp)

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
