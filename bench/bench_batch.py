"""Batch vs live: HTTP requests and cost for N items, through the real OpenAI SDK.

Against the loopback fake of the OpenAI batch API (`tests.fakes.batch_server`, which also
answers live calls), N ``reference@1`` items are judged three ways on fresh databases:
  * live: ``Judge.score_many`` (one request per item, plus re-asks);
  * batch: ``Judge.submit_batch`` then ``collect_batch(Judge, wait=True)``: every HTTP request
    counted (file upload, batch create, status polls, result file reads) plus the live re-asks
    of the replies that are not valid judgments (``--invalid`` share of the items);
  * a live run of the same items after the batch was collected (expected: 0 requests).
Cost is what the stored results say (gpt-4o-mini's list price; batch replies at its 50% batch
discount, re-asks at the live price; the fake bills one token per word).

Usage: .venv/bin/python bench/bench_batch.py [--runs 3] [--n 1000] [--invalid 0.02]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._runs import Measure, repeat, table  # noqa: E402
from judgecards.batch import collect_batch, submit_batch  # noqa: E402
from judgecards.judging import Judge  # noqa: E402
from tests.fakes.batch_server import BatchFake  # noqa: E402

MODEL = "openai:gpt-4o-mini"


def items(n: int, tag: str) -> list[dict[str, str]]:
    return [
        {"id": f"{tag}{k}", "question": f"What is {k} + {k}?", "gold_answer": str(2 * k),
         "model_output": f"{k} plus {k} is {2 * k}."}
        for k in range(n)
    ]  # fmt: skip


def judge(fake: BatchFake, db: Path) -> Judge:
    return Judge("reference@1", MODEL, db=db, api_key="sk-bench", base_url=fake.openai_url)


def one_run(n: int, invalid: float, tmp: Path, index: int) -> list[Measure]:
    batch_items = items(n, f"r{index}-")
    with BatchFake() as fake:
        with judge(fake, tmp / f"live{index}.db") as live_judge:
            fake.invalid = set()  # live replies are all valid: the fake's invalid set is batch-only
            before = fake.counts["requests"]
            live_results = live_judge.score_many(batch_items, concurrency=32)
            live_requests = fake.counts["requests"] - before
        with judge(fake, tmp / f"batch{index}.db") as batch_judge:
            before = fake.counts["requests"]
            started = time.perf_counter()
            job = submit_batch(batch_judge, batch_items)
            keys = [entry["custom_id"] for b in fake.batches.values() for entry in b.requests]
            fake.invalid = set(keys[: int(len(keys) * invalid)])
            collected = collect_batch(batch_judge, wait=True, poll=0.001)
            seconds = time.perf_counter() - started
            batch_requests = fake.counts["requests"] - before
            reasks = fake.counts["live"] - live_requests
            assert collected.finished and job.submitted == n
            before = fake.counts["requests"]
            again = batch_judge.score_many(batch_items, concurrency=32)
            later = fake.counts["requests"] - before
    live_cost = sum(r.cost_usd or 0.0 for r in live_results)
    batch_cost = sum(r.cost_usd or 0.0 for r in collected.results)
    assert all(r.ok for r in again)
    return [
        Measure("live: HTTP requests", live_requests, digits=0),
        Measure("batch: HTTP requests (all)", batch_requests, digits=0),
        Measure("batch: live re-asks among them", reasks, digits=0),
        Measure("batch: cost / live cost", batch_cost / live_cost, digits=3, target="~0.5"),
        Measure("batch: submit + collect wall time", seconds, unit=" s", digits=2),
        Measure("live run after collect: requests", later, digits=0, target="0"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--invalid", type=float, default=0.02)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        results = repeat(lambda index: one_run(args.n, args.invalid, tmp, index), args.runs)
    print(table(f"batch vs live, {args.n} items, {args.invalid:.0%} invalid batch replies",
                results))  # fmt: skip


if __name__ == "__main__":
    main()
