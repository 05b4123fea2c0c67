"""Verdicts are decided in code from the scores; the model's own verdict is only recorded."""

from __future__ import annotations

import pytest

from judgecards.cards import Bound, Card, VerdictRule, VerdictSpec, load_card
from judgecards.replies.verdicts import apply_rules, decide, extract_scores
from judgecards.schemas import ReferenceJudgment, ReferenceScores
from tests.builders import FIXTURES

USER_CARDS = FIXTURES / "cards" / "user"


@pytest.fixture(scope="module")
def reference() -> Card:
    return load_card("reference@1")


def judgment(correctness: int, completeness: int, verdict: str = "match") -> ReferenceJudgment:
    return ReferenceJudgment(
        scores=ReferenceScores(
            correctness=correctness, completeness=completeness, style_fidelity=5
        ),
        style_relevant=False,
        verdict=verdict,  # type: ignore[arg-type]
        delta="A difference.",
        decision_basis="A reason.",
    )


# The reference@1 rule: match if correctness >= 5 and completeness >= 4; partial_match if both
# >= 3; else mismatch. Each row sits on or next to a threshold.
REFERENCE_RULE = [
    (5, 5, "match"),
    (5, 4, "match"),          # both thresholds met exactly
    (5, 3, "partial_match"),  # completeness one below the match threshold
    (4, 5, "partial_match"),  # correctness one below the match threshold
    (4, 4, "partial_match"),
    (3, 3, "partial_match"),  # both exactly at the partial threshold
    (3, 5, "partial_match"),
    (5, 2, "mismatch"),       # completeness one below the partial threshold
    (2, 5, "mismatch"),       # correctness one below the partial threshold
    (3, 2, "mismatch"),
    (2, 3, "mismatch"),
    (1, 1, "mismatch"),
]  # fmt: skip


@pytest.mark.parametrize(("correctness", "completeness", "expected"), REFERENCE_RULE)
def test_reference_rule_at_its_boundaries(
    reference: Card, correctness: int, completeness: int, expected: str
) -> None:
    assert reference.spec.verdict is not None
    scores = {"correctness": correctness, "completeness": completeness, "style_fidelity": 5}
    assert apply_rules(reference.spec.verdict, scores) == expected

    decision = decide(reference, judgment(correctness, completeness, verdict="match"))
    assert decision.verdict == expected
    assert decision.model_verdict == "match"
    assert decision.verdict_overridden is (expected != "match")


def test_override_is_flagged_only_when_the_model_disagrees(reference: Card) -> None:
    agreed = decide(reference, judgment(4, 4, verdict="partial_match"))
    assert (agreed.verdict, agreed.model_verdict, agreed.verdict_overridden) == (
        "partial_match",
        "partial_match",
        False,
    )

    overridden = decide(reference, judgment(4, 4, verdict="match"))
    assert (overridden.verdict, overridden.model_verdict, overridden.verdict_overridden) == (
        "partial_match",
        "match",
        True,
    )

    generous = decide(reference, judgment(5, 5, verdict="mismatch"))
    assert (generous.verdict, generous.verdict_overridden) == ("match", True)


def test_scores_are_read_by_axis_name(reference: Card) -> None:
    assert extract_scores(reference, judgment(4, 2)) == {
        "correctness": 4,
        "completeness": 2,
        "style_fidelity": 5,
    }


def test_first_matching_rule_wins_and_max_bounds_hold() -> None:
    spec = VerdictSpec(
        rules=[
            VerdictRule(when={"x": Bound(max=1)}, then="bad"),
            VerdictRule(
                when={"x": Bound(min=1, max=3)}, then="middling"
            ),  # x == 1 already matched above
            VerdictRule(when={"x": Bound(min=3)}, then="good"),
        ],
        otherwise="unreachable",
    )
    assert [apply_rules(spec, {"x": x}) for x in (0, 1, 2, 3, 4)] == [
        "bad",
        "bad",
        "middling",
        "middling",
        "good",
    ]


def test_fractional_scores_compare_with_thresholds() -> None:
    spec = VerdictSpec(rules=[VerdictRule(when={"x": Bound(min=4)}, then="pass")], otherwise="fail")
    assert apply_rules(spec, {"x": 3.999}) == "fail"
    assert apply_rules(spec, {"x": 4.0}) == "pass"


def test_a_missing_axis_never_satisfies_a_rule() -> None:
    spec = VerdictSpec(rules=[VerdictRule(when={"x": Bound(min=0)}, then="pass")], otherwise="fail")
    assert apply_rules(spec, {}) == "fail"
    assert apply_rules(spec, {"y": 10}) == "fail"


def test_no_rules_means_the_models_verdict_is_kept() -> None:
    assert apply_rules(VerdictSpec(field="verdict"), {"x": 1}) is None


def test_a_card_without_verdict_has_none() -> None:
    card = load_card("rating@1", cards_dir=USER_CARDS)
    from judgecards.replies import parse_reply

    decision = decide(card, parse_reply(card, "Good.\nRating: [[8]]"))
    assert decision.scores == {"rating": 8}
    assert (
        decision.verdict is None
        and decision.model_verdict is None
        and not decision.verdict_overridden
    )


def test_inline_schema_card_rule() -> None:
    card = load_card("helpfulness@1", cards_dir=USER_CARDS)
    model = card.output_model
    helpful = decide(
        card, model.model_validate({"helpfulness": 4, "label": "unhelpful", "reason": "r"})
    )
    assert (helpful.verdict, helpful.model_verdict, helpful.verdict_overridden) == (
        "helpful",
        "unhelpful",
        True,
    )
    unhelpful = decide(
        card, model.model_validate({"helpfulness": 3, "label": "unhelpful", "reason": "r"})
    )
    assert (unhelpful.verdict, unhelpful.verdict_overridden) == ("unhelpful", False)
