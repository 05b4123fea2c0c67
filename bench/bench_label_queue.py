"""Time serving and storing labels in a large labelling queue (`calibration.LabelQueue`).

Usage::

    .venv/bin/python bench/bench_label_queue.py [--items 2000] [--labels 300] [--runs 3]

Each run writes ``--items`` judged ``reference@1`` results to a fresh database, draws them all
as one audit asking 2 labels per item, and has 3 labelers take turns: ``next`` (serve and hold
an item) then ``submit`` (store a full label), ``--labels`` times. It prints the median and
95th percentile of each call per run, then median [min – max] over the runs. Serving asks for
every item who labelled it and who holds it, so the time grows with the audit's size; it must
not grow with the labels already given.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._runs import Measure, repeat, table

MODEL = "openai:gpt-4o"
LABEL = {"verdict": "match", "correctness": 5, "completeness": 5, "style_fidelity": 5}


def one_run(items: int, labels: int) -> list[Measure]:
    from calibration.audits import Audit, LabelQueue
    from calibration.labels import open_store
    from judgecards.cards import load_card
    from judgecards.storage import JudgeResult

    card = load_card("reference@1")
    start = datetime(2025, 5, 1, tzinfo=timezone.utc)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        with open_store(db) as store:
            for i in range(items):
                result = JudgeResult(
                    id=f"r{i:06d}", item_id=f"i{i}", status="ok", verdict="match",
                    scores={"correctness": 5, "completeness": 5, "style_fidelity": 5},
                    card=card.ref, card_hash=card.hash, model=MODEL,
                    created_at=start + timedelta(seconds=i),
                )  # fmt: skip
                inputs = {"question": f"Q{i}?", "gold_answer": "G", "model_output": f"A{i}"}
                store.save(result, inputs=inputs, params={})
        with Audit(db) as audit:
            audit_id = audit.sample(card=card.ref, model=MODEL, n=items, seed=1).audit.id
        served: list[float] = []
        stored: list[float] = []
        with LabelQueue(db) as queue:
            queue.open(audit_id, labels_wanted=2)
            for turn in range(labels):
                labeler = f"labeler{turn % 3}"
                began = time.perf_counter()
                item = queue.next(audit_id, labeler)
                served.append(time.perf_counter() - began)
                assert item is not None
                began = time.perf_counter()
                queue.submit(audit_id, labeler, item.position, LABEL)
                stored.append(time.perf_counter() - began)
    return [
        Measure("next median", 1000 * statistics.median(served), " ms", 1),
        Measure("next p95", 1000 * statistics.quantiles(served, n=20)[-1], " ms", 1),
        Measure("submit median", 1000 * statistics.median(stored), " ms", 1),
        Measure("submit p95", 1000 * statistics.quantiles(stored, n=20)[-1], " ms", 1),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--labels", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results = repeat(lambda _: one_run(args.items, args.labels), args.runs)
    print(table(f"label queue, {args.items} items, {args.labels} labels", results))


if __name__ == "__main__":
    main()
