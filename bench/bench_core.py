"""Benchmark of the judge core against a local fake OpenAI-compatible server.

Prints, as the median [min – max] of ``--runs`` runs (default 3), each ratio measured within one run:
  * wall time of ``Judge.score_many`` on N items at latency L and concurrency C, as a ratio to the
    floor N·L/C and to a plain ``AsyncOpenAI`` + semaphore + pydantic loop over the same prompts
    (the bare minimum any tool must do);
  * client CPU time per item at L = 0, ours and the plain loop's;
  * peak resident memory of this process;
  * a fully cached re-run of 10,000 items;
  * ``judgecards --help`` start-up time.

Targets (issue 2): ≤ 1.05 × plain loop and ≤ 1.10 × floor at L = 200 ms, C = 32; CPU per item
≤ 2 × the plain loop's; cached re-run of 10,000 items < 1 s; ``--help`` < 0.5 s.

Usage: .venv/bin/python bench/bench_core.py [--runs 3] [--n 1000] [--latency 0.2] [--concurrency 32] [--cached-n 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


from bench._items import reference_items  # noqa: E402
from bench._runs import Measure, repeat, table  # noqa: E402
from tests.fakes.server import spawn as start_server  # noqa: E402


def run_ours(
    base_url: str, data: list[dict[str, str]], concurrency: int, db: Path
) -> tuple[float, float]:
    from judgecards import Judge

    judge = Judge("reference", "openai:fake-judge", db=db, base_url=base_url, api_key="sk-bench")
    cpu, wall = time.process_time(), time.perf_counter()
    results = judge.score_many(data, concurrency=concurrency)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    bad = [r for r in results if r.status != "ok"]
    assert not bad, bad[0]
    return wall, cpu


def run_plain(base_url: str, data: list[dict[str, str]], concurrency: int) -> tuple[float, float]:
    import openai

    from judgecards.cards import load_card, render
    from judgecards.schemas import ReferenceJudgment

    card = load_card("reference")
    prompts = [render(card, item) for item in data]  # rendering is not charged to the plain loop

    async def main() -> None:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
        semaphore = asyncio.Semaphore(concurrency)

        async def one(prompt: object) -> ReferenceJudgment:
            async with semaphore:
                response = await client.chat.completions.create(
                    model="fake-judge",
                    messages=[
                        {"role": "system", "content": prompt.system or ""},  # type: ignore[attr-defined]
                        {"role": "user", "content": prompt.user},  # type: ignore[attr-defined]
                    ],
                    temperature=0.0,
                    max_tokens=800,
                )
                return ReferenceJudgment.model_validate_json(
                    response.choices[0].message.content or ""
                )

        await asyncio.gather(*(one(p) for p in prompts))
        await client.close()

    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - wall, time.process_time() - cpu


def help_time() -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "judgecards", "--help"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--cpu-n", type=int, default=1000)
    parser.add_argument("--cached-n", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=3, help="repeats; the median is reported")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the fake judge is, rightly, never calibrated
    n, latency, concurrency = args.n, args.latency, args.concurrency
    os.environ.pop("OPENAI_BASE_URL", None)
    tmp = Path(tempfile.mkdtemp(prefix="judgecards-bench-"))
    floor = n * latency / concurrency
    cached_items = reference_items(args.cached_n, "cached")

    server, cached_url = start_server(0.0)
    try:  # the database every run re-reads for the cached measure, filled once
        first_wall, _ = run_ours(cached_url, cached_items, 64, tmp / "cached.db")
    finally:
        server.terminate()
    print(f"cached database filled: {args.cached_n} items in {first_wall:.1f} s", file=sys.stderr)

    def one_run(index: int) -> list[Measure]:
        server, base_url = start_server(latency)
        try:
            # Warm both paths (imports, connection pools), then time them back to back.
            run_plain(base_url, reference_items(concurrency, f"warm{index}"), concurrency)
            run_ours(
                base_url, reference_items(concurrency, f"warm{index}"), concurrency, tmp / "warm.db"
            )
            plain_wall, _ = run_plain(base_url, reference_items(n, f"plain{index}"), concurrency)
            ours_wall, _ = run_ours(
                base_url, reference_items(n, f"ours{index}"), concurrency, tmp / f"l{index}.db"
            )
        finally:
            server.terminate()
        server, base_url = start_server(0.0)
        try:
            run_plain(base_url, reference_items(64, f"warm0-{index}"), concurrency)
            run_ours(base_url, reference_items(64, f"warm0-{index}"), concurrency, tmp / "warm0.db")
            _, plain_cpu = run_plain(
                base_url, reference_items(args.cpu_n, f"cpu-plain{index}"), concurrency
            )
            _, ours_cpu = run_ours(
                base_url,
                reference_items(args.cpu_n, f"cpu-ours{index}"),
                concurrency,
                tmp / f"cpu{index}.db",
            )
            # The filling server's URL: stored results are keyed by the endpoint, and a fully
            # cached re-run calls nothing (its server has stopped: a call would fail loudly).
            rerun_wall, _ = run_ours(cached_url, cached_items, 64, tmp / "cached.db")
        finally:
            server.terminate()
        return [
            Measure("score_many / plain loop", ours_wall / plain_wall, "×", target="≤ 1.05"),
            Measure("score_many / floor N·L/C", ours_wall / floor, "×", target="≤ 1.10"),
            Measure(
                "plain loop / floor", plain_wall / floor, "×", target="the machine's own overhead"
            ),
            Measure("CPU per item, judgecards", ours_cpu / args.cpu_n * 1000, " ms", 2),
            Measure("CPU per item, plain loop", plain_cpu / args.cpu_n * 1000, " ms", 2),
            Measure("CPU judgecards / plain", ours_cpu / plain_cpu, "×", 2, "≤ 2"),
            Measure(f"cached re-run of {args.cached_n}", rerun_wall, " s", 2, "< 1 s"),
            Measure("judgecards --help", help_time() * 1000, " ms", 0, "best of 5, < 500 ms"),
        ]

    results = repeat(one_run, args.runs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        table(
            f"judgecards core benchmark (N={n}, L={latency * 1000:.0f} ms, C={concurrency}, "
            f"floor {floor:.2f} s)",
            results,
        )
    )
    print(f"  peak RSS of the benchmark process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
