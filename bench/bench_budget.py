"""Benchmark of ``--max-cost`` (issue 22 item 10): how much of a cap a run spends, and whether
the provider's own bill ever passes it.

A loopback fake OpenAI server (in-process, latency L) answers every request and keeps the usage
it reported (its bill: prompt and completion tokens). Judge ``reference`` at gpt-4.1-mini's
prices with a cap:

  * **spend**: N items under a $CAP cap at concurrency 1, 8, 16 and 64: items judged and the
    share of the cap spent. A run should judge at any concurrency what it judges one item at a
    time, and stop only when the next item cannot fit.
  * **adversarial**: ``--max-tokens 80``, 90% malformed replies (not JSON, so every item is
    re-asked), ``--max-attempts 20``, concurrency 64: the provider's bill (its usage totals at
    the price) over the cap. Must never exceed 1.

Usage: .venv/bin/python bench/bench_budget.py [--runs 3] [--n 200] [--cap 0.01] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import os
import random
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
from tests.fakes.server import FakeServer, card_reply  # noqa: E402

MODEL = "openai:gpt-4.1-mini"
"""Priced so that the cap runs out about half way through 200 items (the fake server counts words
as tokens)."""


def malformed_mostly(share: float, seed: int) -> Any:
    rng = random.Random(seed)
    return lambda prompt: "I think it is fine." if rng.random() < share else card_reply(prompt)


def capped_run(
    server: FakeServer,
    n: int,
    *,
    cap: float,
    concurrency: int,
    db: Path,
    tag: str,
    **options: Any,
) -> tuple[int, float, float]:
    """(items judged, spent by the judge's count, the provider's bill) of one capped run.

    Keyword-only after ``n``: three numbers in a row at the call site were easy to swap."""
    from judgecards import Judge

    server.prompt_tokens = server.completion_tokens = 0
    with Judge("reference", MODEL, db=db, base_url=server.base_url, api_key="sk-bench",
               max_cost=cap, **options) as judge:  # fmt: skip
        results = judge.score_many(reference_items(n, tag), concurrency=concurrency)
        price = judge.prices.lookup(MODEL)
        spent = judge.budget.stats().spent if judge.budget else 0.0
    assert price is not None
    bill = price.cost(server.prompt_tokens, server.completion_tokens)
    return sum(r.status == "ok" for r in results), spent, bill


def run_once(args: argparse.Namespace, tmp: Path, index: int) -> list[Measure]:
    out: list[Measure] = []
    server = FakeServer(latency=args.latency).serve_in_thread()
    try:
        for concurrency in (1, 8, 16, 64):
            tag = f"spend-{index}-{concurrency}-{time.time_ns()}"
            judged, _, bill = capped_run(
                server, args.n, cap=args.cap, concurrency=concurrency, db=tmp / f"{tag}.db", tag=tag
            )
            out += [
                Measure(f"C={concurrency}: items judged of {args.n}", judged, "", 0),
                Measure(f"C={concurrency}: share of the cap spent", bill / args.cap, "", 3),
            ]
    finally:
        server.stop()
    server = FakeServer(latency=args.latency, reply=malformed_mostly(0.9, index)).serve_in_thread()
    try:
        tag = f"adversarial-{index}-{time.time_ns()}"
        judged, _, bill = capped_run(
            server,
            args.n,
            cap=args.cap,
            concurrency=64,
            db=tmp / f"{tag}.db",
            tag=tag,
            max_tokens=80,
            max_attempts=20,
        )
        out += [
            Measure("adversarial C=64: provider bill / cap", bill / args.cap, "x", 3, "<= 1"),
            Measure("adversarial C=64: items judged", judged, "", 0),
        ]
    finally:
        server.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--cap", type=float, default=0.01)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=3, help="repeats; the median is reported")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the fake judge is, rightly, never calibrated
    os.environ.pop("OPENAI_BASE_URL", None)
    tmp = Path(tempfile.mkdtemp(prefix="judgecards-bench-budget-"))
    results = repeat(lambda index: run_once(args, tmp, index), args.runs)
    print(table(f"--max-cost ${args.cap} on {args.n} items, {MODEL} prices, "
                f"L={args.latency * 1000:.0f} ms", results))  # fmt: skip


if __name__ == "__main__":
    main()
