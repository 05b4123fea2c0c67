"""Memory benchmark: peak RSS of ``judgecards score`` at N items against 10 × N items.

Each run is a fresh ``judgecards score`` process on the mock provider (no latency, no network),
with a new database, so the peak is everything one run holds: interpreter, imports, the items and
results in flight, the database's page cache. A run that held its whole file (or its results) in
memory would grow about tenfold in its item-dependent part; a streaming run's peak stays flat.
The peak is the child's own ``ru_maxrss`` (``os.wait4``), not the benchmark's.

Target (issue 10 §5): peak at 200,000 items ≤ 1.3 × the peak at 20,000.

Usage: .venv/bin/python bench/bench_memory.py [--runs 3] [--n 20000] [--factor 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._runs import Measure, repeat, table  # noqa: E402


def write_items(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            item = {
                "id": f"item-{i}",
                "question": f"What is the capital of country number {i}?",
                "gold_answer": f"City {i}.",
                "model_output": "I believe it is " + "quite " * (i % 17) + f"City {i}.",
            }
            handle.write(json.dumps(item) + "\n")


def peak_of_run(source: Path, workdir: Path, tag: str) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of one ``judgecards score`` process over ``source``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGECARDS_")}
    command = [
        sys.executable, "-m", "judgecards", "score", "--card", "reference", "--model",
        "mock:judge", str(source), "--output", str(workdir / f"{tag}.jsonl"),
        "--db", str(workdir / f"{tag}.db"), "--concurrency", "32",
    ]  # fmt: skip
    log = (workdir / f"{tag}.log").open("wb")
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    log.close()
    if process.returncode != 0:
        tail = (workdir / f"{tag}.log").read_text(encoding="utf-8", errors="replace")[-2000:]
        raise SystemExit(f"judgecards score failed ({process.returncode}):\n{tail}")
    return usage.ru_maxrss / 1024, elapsed  # Linux reports kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3, help="repeats; the median is reported")
    args = parser.parse_args()
    small, large = args.n, args.n * args.factor
    workdir = Path(tempfile.mkdtemp(prefix="judgecards-memory-"))
    small_items, large_items = workdir / "small.jsonl", workdir / "large.jsonl"
    write_items(small_items, small)
    write_items(large_items, large)

    def one_run(index: int) -> list[Measure]:
        small_peak, small_time = peak_of_run(small_items, workdir, f"small{index}")
        large_peak, large_time = peak_of_run(large_items, workdir, f"large{index}")
        for name in (f"small{index}.db", f"large{index}.db"):
            (workdir / name).unlink()
        return [
            Measure(f"peak RSS {large:,} / {small:,}", large_peak / small_peak, "×", 3, "≤ 1.3"),
            Measure(f"peak RSS at {small:,}", small_peak, " MB", 0),
            Measure(f"peak RSS at {large:,}", large_peak, " MB", 0),
            Measure(f"time at {small:,}", small_time, " s", 1),
            Measure(f"time at {large:,}", large_time, " s", 1),
        ]

    results = repeat(one_run, args.runs)
    print(
        table(
            f"judgecards score memory benchmark (mock provider, {small:,} vs {large:,} items)",
            results,
        )
    )


if __name__ == "__main__":
    main()
