"""A/B report statistics: the two-order rule, hand-computed reports, sign tests, LLMBar data."""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from judgecards.pairwise.report import (
    first_position_preference,
    pairwise_report,
    position_consistency,
)
from judgecards.pairwise.rules import PairOutcome, Verdict, resolve_pair


def outcomes_of(*orders: tuple[Verdict, Verdict], times: int = 1) -> list[PairOutcome]:
    return [PairOutcome.from_orders(first, second) for first, second in orders] * times


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        ("A", "A", "A"),
        ("B", "B", "B"),
        ("tie", "tie", "tie"),
        ("A", "B", "tie"),  # each order preferred the answer shown first
        ("B", "A", "tie"),  # each order preferred the answer shown second
        ("A", "tie", "tie"),
        ("tie", "A", "tie"),
        ("B", "tie", "tie"),
        ("tie", "B", "tie"),
    ],
)
def test_resolve_pair_requires_a_win_in_both_orders(
    first: Verdict, second: Verdict, winner: Verdict
) -> None:
    assert resolve_pair(first, second) == winner
    outcome = PairOutcome.from_orders(first, second)
    assert outcome.winner == winner
    assert outcome.position_consistent is (first == second)


def test_pair_outcome_validates() -> None:
    with pytest.raises(ValueError, match="inconsistent"):
        PairOutcome("A", "A", "B")
    with pytest.raises(ValueError, match="first_order must be one of"):
        resolve_pair("a", "A")  # type: ignore[arg-type]


# 12 comparisons, hand-tallied:
#   5 × (A, A)     A wins, consistent;  first-shown chosen: 1 (order 1 said A) + 0 = 1 each -> 5
#   2 × (B, B)     B wins, consistent;  0 + 1 (order 2, B shown first, said B)      each -> 2
#   2 × (A, B)     tie, inconsistent;   1 + 1                                       each -> 4
#   1 × (tie, tie) tie, consistent;     no decided single judgment                       -> 0
#   1 × (B, A)     tie, inconsistent;   0 + 0                                            -> 0
#   1 × (A, tie)   tie, inconsistent;   1 (the tie is left out)                          -> 1
HAND = (
    outcomes_of(("A", "A"), times=5)
    + outcomes_of(("B", "B"), times=2)
    + outcomes_of(("A", "B"), times=2)
    + outcomes_of(("tie", "tie"), ("B", "A"), ("A", "tie"))
)


def test_hand_computed_report() -> None:
    report = pairwise_report(HAND, model_a="new", model_b="old")
    assert (report.n, report.wins, report.losses, report.ties) == (12, 5, 2, 5)
    assert report.win_rate.value == pytest.approx(5 / 7)  # 0.714286, ties dropped
    assert report.win_rate.n == 7
    assert report.win_rate_ties_half.value == pytest.approx((5 + 5 / 2) / 12)  # 0.625
    # Sign test, 5 wins vs 2 losses: P(X <= 2 | n=7, p=1/2) = (1 + 7 + 21) / 128 = 29/128;
    # two-sided (symmetric) = 58/128 = 0.453125.
    assert report.sign_test_p == pytest.approx(58 / 128)
    assert report.position_consistency.value == pytest.approx(8 / 12)  # 5 + 2 + 1 consistent
    # 24 single judgments, 3 ties (two in (tie, tie), one in (A, tie)); first-shown chosen
    # 5 + 2 + 4 + 0 + 0 + 1 = 12 of the 21 decided ones.
    assert (report.single_judgments, report.single_ties) == (24, 3)
    assert report.single_tie_rate == pytest.approx(3 / 24)
    assert report.first_position_preference.value == pytest.approx(12 / 21)
    assert first_position_preference(HAND) == pytest.approx(12 / 21)
    assert position_consistency(HAND) == pytest.approx(8 / 12)
    for estimate in (
        report.win_rate,
        report.win_rate_ties_half,
        report.position_consistency,
        report.first_position_preference,
    ):
        assert 0.0 <= estimate.low <= estimate.value <= estimate.high <= 1.0
        assert estimate.level == 0.95


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        (9, 1, 2 * (1 + 10) / 1024),  # 2 * P(X <= 1 | 10) = 22/1024 = 0.021484375
        (10, 0, 2 / 1024),  # 0.001953125
        (8, 2, 2 * (1 + 10 + 45) / 1024),  # 112/1024 = 0.109375
        (5, 5, 1.0),
        (1, 0, 1.0),  # one game can never be significant: 2 * 1/2
    ],
)
def test_sign_test_against_hand_binomials(wins: int, losses: int, expected: float) -> None:
    outcomes = outcomes_of(("A", "A"), times=wins) + outcomes_of(("B", "B"), times=losses)
    outcomes += outcomes_of(("A", "B"), times=3)  # ties do not enter the sign test
    assert pairwise_report(outcomes, n_resamples=200).sign_test_p == pytest.approx(expected)


def test_judge_that_always_prefers_the_first_position() -> None:
    # Order 1 (A first) says A, order 2 (B first) says B: never the same verdict twice.
    report = pairwise_report(outcomes_of(("A", "B"), times=30))
    assert (report.wins, report.losses, report.ties) == (0, 0, 30)
    assert report.position_consistency.value == 0.0
    assert report.first_position_preference.value == 1.0
    assert report.first_position_preference.low == report.first_position_preference.high == 1.0
    assert math.isnan(report.win_rate.value) and math.isnan(report.sign_test_p)
    assert report.win_rate_ties_half.value == 0.5


def test_all_ties_and_empty_input() -> None:
    ties = pairwise_report(outcomes_of(("tie", "tie"), times=4))
    assert ties.position_consistency.value == 1.0
    assert math.isnan(ties.first_position_preference.value) and ties.single_ties == 8
    empty = pairwise_report([])
    assert empty.n == 0 and math.isnan(empty.win_rate_ties_half.value)
    assert math.isnan(empty.position_consistency.value) and math.isnan(empty.sign_test_p)
    json.dumps(empty.to_dict(), allow_nan=False)
    assert "0 comparisons" in empty.as_text()


def test_report_is_seeded_and_serialises() -> None:
    first = pairwise_report(HAND, seed=1)
    assert first == pairwise_report(HAND, seed=1)
    assert first.win_rate != pairwise_report(HAND, seed=2).win_rate
    data = json.loads(json.dumps(first.to_dict(), allow_nan=False))
    assert data["wins"] == 5 and data["win_rate"]["value"] == pytest.approx(5 / 7)
    assert data["verbosity"] is None and data["self_preference"] is None
    text = first.as_text()
    for needle in (
        "5 / 2 / 5",
        "0.714",
        "p = 0.4531",
        "position consistency",
        "first-position preference",
    ):
        assert needle in text


def test_report_carries_verbosity_and_self_preference() -> None:
    outcomes = outcomes_of(("A", "A"), ("B", "B"), ("A", "A"), ("A", "B"))
    report = pairwise_report(
        outcomes,
        len_a=[300, 100, 500, 50],
        len_b=[100, 400, 200, 50],
        model_a="gpt-4o-mini",
        model_b="claude-3-haiku",
        judge_model="openai:gpt-4o",
    )
    assert report.verbosity is not None
    assert (report.verbosity.longer_wins, report.verbosity.decisive_unequal) == (3, 3)
    assert report.self_preference is not None and "gpt-4o-mini" in report.self_preference
    assert (
        "longer answer wins" in report.as_text() and "warning: self-preference" in report.as_text()
    )
    with pytest.raises(ValueError, match="both len_a and len_b"):
        pairwise_report(outcomes, len_a=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="one entry per outcome"):
        pairwise_report(outcomes, len_a=[1], len_b=[2])


# --- real data: LLMBar's own judges, both orders ---------------------------------------------


def _llmbar_outcome(row: dict[str, Any]) -> PairOutcome:
    # "1" = output_1 (shown first in the original order) = A; "2" = B; null (unparseable) = tie.
    # LLMBar's `equal` counts null == null as agreement, which "tie" == "tie" reproduces.
    verdict: dict[str | None, Verdict] = {"1": "A", "2": "B", None: "tie"}
    return PairOutcome.from_orders(
        verdict[row["winner_swap_false"]], verdict[row["winner_swap_true"]]
    )


@pytest.fixture(scope="module")
def llmbar(
    shared_data: Path,
) -> tuple[
    dict[tuple[str, str, str], list[dict[str, Any]]], dict[tuple[str, str, str], dict[str, Any]]
]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    with (shared_data / "llmbar" / "evaluator_verdicts.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            groups[(row["subset"], row["evaluator"], row["strategy"])].append(row)
    with (shared_data / "llmbar" / "evaluator_statistics.jsonl").open() as handle:
        stats = {(s["subset"], s["evaluator"], s["strategy"]): s for s in map(json.loads, handle)}
    return groups, stats


def test_llmbar_gpt4_vanilla_natural(llmbar: Any) -> None:
    groups, stats = llmbar
    key = ("LLMBar/Natural", "GPT-4", "Vanilla")
    rows = groups[key]
    outcomes = [_llmbar_outcome(row) for row in rows]
    report = pairwise_report(outcomes)
    # Published: "equal": "95 / 100 = 95.0%", "correct_both": "93 / 100 = 93.0%".
    assert stats[key]["equal"].startswith("95 / 100")
    assert report.position_consistency.value == pytest.approx(0.95)
    gold: dict[int, Verdict] = {1: "A", 2: "B"}
    correct_both = sum(o.winner == gold[row["label"]] for o, row in zip(outcomes, rows))
    assert correct_both == 93
    assert report.n == 100 and report.ties == 100 - report.wins - report.losses


def test_llmbar_consistency_matches_all_published_statistics(llmbar: Any) -> None:
    groups, stats = llmbar
    assert len(groups) == 499
    for key, rows in groups.items():
        outcomes = [_llmbar_outcome(row) for row in rows]
        published = int(stats[key]["equal"].split("/")[0])
        assert position_consistency(outcomes) * len(outcomes) == pytest.approx(published), key
        gold: dict[int, Verdict] = {1: "A", 2: "B"}
        both = int(stats[key]["correct_both"].split("/")[0])
        assert sum(o.winner == gold[row["label"]] for o, row in zip(outcomes, rows)) == both, key


def test_llmbar_first_position_preference_flags_the_biased_judge(llmbar: Any) -> None:
    # Measured on LLMBar/Natural, Vanilla: GPT-4 0.505 [0.485, 0.530] (no detectable bias);
    # Falcon-180B 0.740 [0.690, 0.790] with position consistency 0.52 (strong first-position bias).
    groups, _ = llmbar
    gpt4 = pairwise_report(
        [_llmbar_outcome(r) for r in groups[("LLMBar/Natural", "GPT-4", "Vanilla")]]
    )
    falcon = pairwise_report(
        [_llmbar_outcome(r) for r in groups[("LLMBar/Natural", "Falcon", "Vanilla")]]
    )
    assert gpt4.first_position_preference.low <= 0.5 <= gpt4.first_position_preference.high
    assert falcon.first_position_preference.value == pytest.approx(0.74)
    assert falcon.first_position_preference.low > 0.6
    assert falcon.position_consistency.value == pytest.approx(0.52)


def test_text_never_names_an_interval_it_does_not_give() -> None:
    # With one comparison no interval exists; the text printed "1.000  95% CI, n=1" as if one did.
    one = pairwise_report(outcomes_of(("A", "A")), n_resamples=200).as_text()
    assert "win-rate (ties dropped)     1.000  95% CI n/a (n ≤ 1), n=1" in one
    two = pairwise_report(outcomes_of(("A", "A"), ("tie", "B")), n_resamples=200).as_text()
    for text in (one, two, pairwise_report([]).as_text()):
        for line in text.splitlines():
            if "95% CI" in line:
                assert re.search(r"\[[0-9.]+, [0-9.]+\]  95% CI|95% CI n/a", line), line
    assert "0.750 [" in two and "95% CI n/a (n ≤ 1), n=1" in two  # only the one-pair rate lacks it
