"""Time judgecards' ROUGE against Google's rouge-score on 10,000+ prediction/reference pairs.

Usage::

    .venv/bin/python bench/bench_rouge.py [--pairs N] [--runs R] [--data DIR]

The pairs are SummEval's 1,200 abstractive summaries, each against each of its document's 11
reference summaries (13,200 pairs), from ``../shared/data/summeval`` (override with ``--data`` or
``JUDGECARDS_SHARED_DATA``). Without that folder the script generates synthetic pairs, so it always
runs. Both sides compute ROUGE-1, ROUGE-2 and ROUGE-L without stemming; the script prints both
timings and the speed-up as the median [min – max] of ``--runs`` runs and the largest absolute difference over all
scores, and exits non-zero if that difference exceeds 1e-9. rouge-score is a test extra
(``pip install judgecards[test]``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TYPES = ("rouge1", "rouge2", "rougeL")
FIELDS = ("precision", "recall", "fmeasure")


def summeval_pairs(data: Path) -> list[tuple[str, str]]:
    references: dict[str, list[str]] = {}
    with (data / "summeval" / "documents.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            references[doc["id"]] = doc["references"]
    pairs: list[tuple[str, str]] = []
    with (data / "summeval" / "annotations_abstractive_12systems.jsonl").open(
        encoding="utf-8"
    ) as fh:
        for line in fh:
            row = json.loads(line)
            pairs.extend((row["decoded"], ref) for ref in references[row["id"]])
    return pairs


def synthetic_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)] + ["the", "a", "of", "and", "to", "in"] * 40

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(20, 80)))

    return [(text(), text()) for _ in range(count)]


def timed(fn: Callable[[], list[tuple[float, ...]]]) -> tuple[float, list[tuple[float, ...]]]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pairs", type=int, default=None, help="use the first N pairs (default: all)"
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="runs of both implementations; the median is reported"
    )
    default_data = os.environ.get("JUDGECARDS_SHARED_DATA", str(REPO.parent / "shared" / "data"))
    parser.add_argument("--data", type=Path, default=Path(default_data))
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    from rouge_score import rouge_scorer

    from bench._runs import Measure, repeat, table
    from judgecards.metrics.rouge import rouge

    if (args.data / "summeval" / "documents.jsonl").is_file():
        pairs, source = summeval_pairs(args.data), "SummEval summaries x references"
    else:
        pairs, source = synthetic_pairs(13_200), "synthetic pairs (shared data not found)"
    if args.pairs is not None:
        pairs = pairs[: args.pairs]
    if len(pairs) < 10_000:
        print(
            f"warning: only {len(pairs)} pairs; the issue asks for at least 10,000", file=sys.stderr
        )

    scorer = rouge_scorer.RougeScorer(list(TYPES), use_stemmer=False)

    def theirs() -> list[tuple[float, ...]]:
        out = []
        for prediction, reference in pairs:
            scores = scorer.score(reference, prediction)
            out.append(tuple(getattr(scores[t], f) for t in TYPES for f in FIELDS))
        return out

    def ours() -> list[tuple[float, ...]]:
        out = []
        for prediction, reference in pairs:
            scores = rouge(prediction, reference, types=TYPES)
            out.append(tuple(getattr(scores[t], f) for t in TYPES for f in FIELDS))
        return out

    def one_run(index: int) -> list[Measure]:
        nonlocal max_diff
        their_time, their_scores = timed(theirs)
        our_time, our_scores = timed(ours)
        diff = max(abs(a - b) for x, y in zip(our_scores, their_scores) for a, b in zip(x, y))
        max_diff = max(max_diff, diff)
        return [
            Measure("speed-up over rouge-score", their_time / our_time, "×", 2, "faster"),
            Measure("rouge-score", their_time / len(pairs) * 1e6, " us/pair", 1),
            Measure("judgecards", our_time / len(pairs) * 1e6, " us/pair", 1),
        ]

    max_diff = 0.0
    results = repeat(one_run, args.runs)
    print(table(f"ROUGE-1/2/L on {len(pairs):,} pairs ({source})", results))
    print(
        f"  max |difference|: {max_diff:.3g} over {len(pairs) * len(TYPES) * len(FIELDS):,} scores"
    )
    return 0 if max_diff <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
