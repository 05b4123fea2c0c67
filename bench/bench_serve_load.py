"""Load benchmark of ``judgecards serve`` (issue 11 §5): 20 simulated labelers and 50 scoring
requests per second (mock provider) against one SQLite file for 60 s.

Each run starts ``python -m judgecards serve`` on a fresh database, judges ``--items`` items and
opens an audit of them (``--labels-wanted`` labels per item), then for ``--seconds`` runs the
labelers (each: next item -> ``--think`` seconds -> POST /v1/labels) and open-loop one-item
/v1/score requests at ``--rate`` per second; then stops the server with SIGTERM and compares
the labels table with every label the server acknowledged (tests/fakes/load.py).

Prints, as the median [min – max] of ``--runs`` runs (default 3): requests served and per second,
p50/p95 latency (all requests, scores, label posts), errors, "database is locked" seen, labels
acknowledged, lost and duplicated. Targets: errors, locked, lost and duplicated all 0.

Usage: .venv/bin/python bench/bench_serve_load.py [--runs 3] [--seconds 60] [--labelers 20] [--rate 50]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._runs import Measure, repeat, table  # noqa: E402
from tests.fakes.load import run_load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--labelers", type=int, default=20)
    parser.add_argument("--rate", type=float, default=50.0, help="/v1/score requests per second")
    parser.add_argument(
        "--think", type=float, default=1.0, help="seconds a labeler spends per item"
    )
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--labels-wanted", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="repeats; the median is reported")
    args = parser.parse_args()

    def run(index: int) -> list[Measure]:
        workdir = Path(tempfile.mkdtemp(prefix=f"judgecards-serve-load-{index}-"))
        report = run_load(
            workdir, seconds=args.seconds, labelers=args.labelers, score_rate=args.rate,
            think=args.think, items=args.items, labels_wanted=args.labels_wanted,
        )  # fmt: skip
        print(report.summary(), file=sys.stderr)
        for error in report.errors[:5]:
            print(f"  error: {error}", file=sys.stderr)
        served = sum(report.served.values())
        ms = 1000.0
        return [
            Measure("requests served", served, digits=0),
            Measure("requests per second", served / report.seconds, "/s", 1),
            Measure("score requests sent", report.score_sent, digits=0),
            Measure("p50 latency, all", report.percentile(0.5) * ms, " ms", 0),
            Measure("p95 latency, all", report.percentile(0.95) * ms, " ms", 0),
            Measure("p50 latency, /v1/score", report.percentile(0.5, "score") * ms, " ms", 0),
            Measure("p95 latency, /v1/score", report.percentile(0.95, "score") * ms, " ms", 0),
            Measure("p50 latency, /v1/labels", report.percentile(0.5, "label") * ms, " ms", 0),
            Measure("p95 latency, /v1/labels", report.percentile(0.95, "label") * ms, " ms", 0),
            Measure("wall time (load + drain)", report.seconds, " s", 1),
            Measure("errors", len(report.errors), digits=0, target="0"),
            Measure("resent (kept-alive connection closed)", report.resent, digits=0),
            Measure('"database is locked"', report.locked, digits=0, target="0"),
            Measure("labels acknowledged", len(report.acknowledged), digits=0),
            Measure("labels lost", report.lost, digits=0, target="0"),
            Measure("labels duplicated", report.duplicated, digits=0, target="0"),
            Measure(
                "labels stored, never acknowledged", report.unacknowledged, digits=0, target="0"
            ),
        ]

    results = repeat(run, args.runs)
    title = (
        f"judgecards serve: {args.labelers} labelers (think {args.think:g} s) + {args.rate:g} "
        f"scores/s for {args.seconds:g} s, one SQLite file"
    )
    print(table(title, results))


if __name__ == "__main__":
    main()
