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

Usage: .venv/bin/python bench/bench_rate.py [--runs 3] [--n 200] [--latency 0.2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._items import reference_items  # noqa: E402
from bench._runs import Measure, repeat, table  # noqa: E402
from tests.fakes.server import spawn  # noqa: E402


def judge_run(
    base_url: str, n: int, concurrency: int, *, adaptive: bool, db: Path, tag: str
) -> dict[str, float]:
    from judgecards import Judge
    from judgecards.rate import RateLimits

    with Judge(
        "reference", "openai:fake-judge", db=db, base_url=base_url, api_key="sk-bench"
    ) as judge:
        judge.rates = RateLimits(adaptive=adaptive)
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
                base_url, n, c, adaptive=adaptive, db=tmp / f"{tag}-{name}.db", tag=f"{tag}-{name}"
            )
            for name, (c, adaptive) in modes.items()
        }
    finally:
        server.terminate()
        server.wait()
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
