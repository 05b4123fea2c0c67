"""The report states the guarantee a cascade put in force, from the decisions the cascade stored.

Both cascades run end to end on real `Judge` objects over scripted transports (the judges and
labels of tests/builders.py, shared with the cascade tests); the report's runs are
then checked against the stored decision rows and the runs' own outcome.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from calibration.cascades import Cascade, PairwiseCascade
from calibration.cascades.repository import cascade_decisions, cascade_result_decisions
from judgecards.report import build_report, render_html
from judgecards.report.model import JudgeReport, Report
from judgecards.storage import Store
from tests.builders import (
    CASCADE_HUMAN,
    PAIR_CASCADE_CARD,
    cascade_calibrated,
    cascade_item,
    cascade_pair,
    pair_cascade_calibrated,
)

RESAMPLES = 200


def section(report: Report, card: str, model: str) -> JudgeReport:
    (found,) = [j for j in report.judges if (j.card, j.model) == (card, model)]
    return found


def test_a_single_item_cascade_states_its_guarantee_from_the_stored_decisions(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "single.db") as store:
        cheap, strong, _, _ = cascade_calibrated(store, tmp_path)
        before = build_report(store, n_resamples=RESAMPLES)
        assert all(not j.cascades for j in before.judges)
        assert (
            "No agreement guarantee is in force"
            in section(before, "single@1", "openai:cheap").guarantee
        )
        h = CASCADE_HUMAN
        run = Cascade([cheap, strong], target=0.85, delta=0.1).run(
            [
                cascade_item("t1", cheap=(h, 0.95), strong=(h, 0.99)),
                cascade_item("t2", cheap=(h + 1, 0.55), strong=(h, 0.99)),
                cascade_item("t3", cheap=(h + 1, 0.55), strong=(h + 2, 0.6)),
                cascade_item("t4", cheap=(h, 0.95), strong=(h, 0.99)),
            ]
        )  # fmt: skip
        rows = cascade_result_decisions(store, card="single@1")
        report = build_report(store, n_resamples=RESAMPLES)
    for model in ("openai:cheap", "openai:strong"):
        judge = section(report, "single@1", model)
        (stored,) = judge.cascades
        assert (stored.kind, stored.card, stored.target, stored.delta) == (
            "items", "single@1", 0.85, 0.1,
        )  # fmt: skip
        assert stored.created_at.isoformat() == rows[0]["created_at"]
        assert [(j.model, j.stage) for j in stored.judges] == [
            ("openai:cheap", 0), ("openai:strong", 1),
        ]  # fmt: skip
        for j in stored.judges:
            made = [r for r in rows if r["stage"] == j.stage]
            assert {r["threshold"] for r in made} == {j.threshold}
            assert j.sent == len(made) == run.stages[j.stage].sent
            assert j.decided == sum(r["trusted"] for r in made) == run.stages[j.stage].decided
        assert stored.n == 4 and stored.escalated == run.escalated == 1
        assert [stored.coverage(j) for j in stored.judges] == [0.5, 0.25]
        assert stored.audit_ids == (run.audit_id,)
        assert set(stored.audit_ids) == {r["audit_id"] for r in rows if r["audit_id"] is not None}
        text = judge.guarantee
        assert "≥ 85% on the items each judge decided" in text
        assert "probability ≥ 90% (δ = 0.1)" in text
        assert "openai:cheap (threshold 0.95) decided 50%" in text
        assert "openai:strong (threshold 0.99) decided 25%" in text
        assert f"1 item to people (audit #{run.audit_id})" in text
        assert "No agreement guarantee" not in text
    assert "openai:cheap (threshold 0.95) decided 50%" in render_html(report)


def test_a_pairwise_cascade_states_its_guarantee_and_a_rerun_replaces_the_older_run(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "pairs.db") as store:
        cheap, strong, _, _ = pair_cascade_calibrated(store, tmp_path)
        pairs = [
            cascade_pair("t1", cheap="AA", strong="AA"),
            cascade_pair("t2", cheap="AB", strong="BB"),
            cascade_pair("t3", cheap="BA", strong="AB"),
        ]
        cascade = PairwiseCascade([cheap, strong], target=0.85, delta=0.1)
        first = cascade.run(pairs)
        # Again, stricter: every comparison's row now belongs to the newer run.
        again = PairwiseCascade([cheap, strong], target=0.8, delta=0.05).run(pairs)
        rows = cascade_decisions(store, card=PAIR_CASCADE_CARD)
        report = build_report(store, n_resamples=RESAMPLES)
    assert {r["target"] for r in rows} == {0.8}
    judge = section(report, PAIR_CASCADE_CARD, "openai:strong")
    (stored,) = judge.cascades
    assert (stored.kind, stored.target, stored.delta) == ("pairs", 0.8, 0.05)
    assert stored.n == 3 and stored.escalated == again.escalated == 1
    assert [(j.model, j.threshold, j.sent, j.decided) for j in stored.judges] == [
        (s.model, s.threshold, s.sent, s.decided) for s in again.stages
    ]
    # The escalated pair still waits in the first run's audit: the re-run points at it.
    assert first.audit_id is not None and again.audit_id is None
    assert stored.audit_ids == (first.audit_id,)
    assert [stored.coverage(j) for j in stored.judges] == pytest.approx([1 / 3, 1 / 3])
    assert "cascade A B, 3 pairs" in judge.guarantee
    assert "≥ 80% on the pairs each judge decided" in judge.guarantee
    assert f"1 pair to people (audit #{first.audit_id})" in judge.guarantee
