"""Benchmark of pairwise `compare` against a local fake OpenAI-compatible server.

A swap doubles the calls: N pairs are 2·N judgments. Both orders of every pair go through one
bounded pool, so the floor at latency L and concurrency C is 2·N·L/C. Prints the median
[min – max] of ``--runs`` runs (default 3) of these, each measured within one run:

  * wall time of ``compare_many(judge, …)`` on N pairs as a ratio to that floor (target ≤ 1.10 at
    N = 1000, L = 200 ms, C = 32), next to a bare ``AsyncOpenAI`` + semaphore + pydantic loop over
    the same 2·N prompts, which shows how much of the gap is the machine and the SDK;
  * a repeated compare of the same pairs: how many judgments needed a call (target 0) and its
    wall time;
  * the report's position consistency, as a sanity check that the fake judge is consistent.

The fake server runs in its own process (``python -m tests.fakes.server``) so its work does not
compete with the client for the GIL; the SDK reaches it through ``OPENAI_BASE_URL``; results go
to a temporary database.

Usage: .venv/bin/python bench/bench_pairwise.py [--runs 3] [--n 1000] [--latency 0.2] [--concurrency 32]
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


from bench._runs import Measure, repeat, table  # noqa: E402
from tests.fakes.server import spawn as start_server  # noqa: E402


def pairs(n: int, tag: str) -> list[dict[str, str]]:
    return [
        {
            "id": f"{tag}-{i}",
            "question": f"Which river runs through city number {i}?",
            "answer_a": f"City {i} lies on river {i % 11}, which floods in spring.",
            "answer_b": f"It is river {i % 13}; the city grew around its harbour in the {i % 5 + 14}th century.",
            "model_a": "model-x",
            "model_b": "model-y",
        }
        for i in range(n)
    ]


def run(data: list[dict[str, str]], concurrency: int, db: Path) -> tuple[float, int, float]:
    """(wall seconds, judgments that needed a provider call, position consistency)."""
    from judgecards import Judge, compare_many, comparison_report

    judge = Judge("pairwise", "openai:fake-judge", db=db, api_key="sk-bench")
    started = time.perf_counter()
    comparisons = compare_many(judge, data, concurrency=concurrency)
    wall = time.perf_counter() - started
    failed = [c for c in comparisons if not c.ok]
    assert not failed, failed[0].error
    calls = sum(not o.cached for c in comparisons for o in (c.first_order, c.second_order))
    consistency = comparison_report(comparisons, n_resamples=200).position_consistency.value
    return wall, calls, consistency


def run_plain(base_url: str, data: list[dict[str, str]], concurrency: int) -> float:
    """The bare minimum any tool must do for the same 2·N judgments: render both orders, then
    ``AsyncOpenAI`` + a semaphore + pydantic validation, nothing stored. Rendering is not timed."""
    import asyncio

    import openai

    from judgecards.cards import load_card, render
    from judgecards.pairwise.compare import pair_orders
    from judgecards.schemas import PairwiseJudgment

    card = load_card("pairwise")
    prompts = [render(card, order) for pair in data for order in pair_orders(pair)]

    async def main() -> None:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
        semaphore = asyncio.Semaphore(concurrency)

        async def one(system: str | None, user: str) -> PairwiseJudgment:
            async with semaphore:
                response = await client.chat.completions.create(
                    model="fake-judge",
                    messages=[
                        {"role": "system", "content": system or ""},
                        {"role": "user", "content": user},
                    ],
                    temperature=0.0,
                    max_tokens=800,
                )
                return PairwiseJudgment.model_validate_json(
                    response.choices[0].message.content or ""
                )

        await asyncio.gather(*(one(p.system, p.user) for p in prompts))
        await client.close()

    started = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1000, help="pairs (each judged twice)")
    parser.add_argument(
        "--latency", type=float, default=0.2, help="seconds per request at the server"
    )
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3, help="repeats; the median is reported")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the fake judge is, rightly, never calibrated
    n, latency, concurrency = args.n, args.latency, args.concurrency
    tmp = Path(tempfile.mkdtemp(prefix="judgecards-bench-pairwise-"))
    floor = 2 * n * latency / concurrency

    server, base_url = start_server(latency)
    os.environ["OPENAI_BASE_URL"] = base_url
    try:
        run(pairs(concurrency, "warm"), concurrency, tmp / "warm.db")  # imports, connection pool
        run_plain(base_url, pairs(concurrency, "warm"), concurrency)

        def one_run(index: int) -> list[Measure]:
            # Back to back in one run, so machine noise hits both loops alike.
            plain_wall = run_plain(base_url, pairs(n, f"plain{index}"), concurrency)
            db = tmp / f"bench{index}.db"
            wall, _, consistency = run(pairs(n, f"bench{index}"), concurrency, db)
            rerun_wall, rerun_calls, _ = run(pairs(n, f"bench{index}"), concurrency, db)
            return [
                Measure("compare / plain loop", wall / plain_wall, "×", target="our overhead"),
                Measure("compare / floor 2·N·L/C", wall / floor, "×", target="≤ 1.10"),
                Measure("plain loop / floor", plain_wall / floor, "×", target="the machine's own"),
                Measure("repeated compare, calls", rerun_calls, "", 0, "0"),
                Measure("repeated compare, wall", rerun_wall, " s", 2),
                Measure("position consistency", consistency, "", 3, "fake judge: 1.000"),
            ]

        results = repeat(one_run, args.runs)
    finally:
        server.terminate()
        server.wait()
    print(
        table(
            f"judgecards pairwise benchmark (N={n} pairs, L={latency * 1000:.0f} ms, "
            f"C={concurrency}, floor {floor:.2f} s)",
            results,
        )
    )


if __name__ == "__main__":
    main()
