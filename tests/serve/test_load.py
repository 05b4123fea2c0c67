"""Load: 20 labelers and 50 scoring requests per second on one SQLite file (about 10 s here;
bench/bench_serve_load.py runs the issue's 60 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.load import run_load


@pytest.mark.slow
def test_twenty_labelers_and_fifty_scores_a_second_lose_and_duplicate_nothing(
    tmp_path: Path,
) -> None:
    report = run_load(tmp_path, seconds=10, labelers=20, score_rate=50, items=300)
    print(report.summary())
    assert report.errors == []
    assert report.locked == 0
    assert report.served["score"] == report.score_sent == 500  # every request answered
    assert len(report.acknowledged) >= 60  # the labelers did label (about 7 each at best)
    assert report.lost == 0 and report.duplicated == 0
    assert report.unacknowledged == 0  # nothing stored that the server did not confirm
    assert report.over_wanted == 0  # no item got more labelers than it asked for
