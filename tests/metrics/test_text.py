"""Exact match, token F1 and substring recall: worked examples, edge cases and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecards.metrics import (
    exact_match,
    mean_exact_match,
    mean_substring_recall,
    mean_token_f1,
    substring_recall,
    token_f1,
)
from judgecards.metrics.text import normalize_answer

words = st.lists(
    st.sampled_from(
        ["the", "a", "an", "cat", "Cat", "sat", "on", "mat", "N.Y.C.", "new", "york", "!"]
    ),
    max_size=8,
).map(" ".join)


def test_exact_match_worked_example() -> None:
    # "nyc" vs ["New York City", "NYC"]: normalised "nyc" != "new york city" but == "nyc" -> 1.
    assert exact_match("nyc", ["New York City", "NYC"]) == 1.0
    assert exact_match("nyc", ["New York City"]) == 0.0
    # Raw comparison is case-sensitive.
    assert exact_match("nyc", ["New York City", "NYC"], normalize=None) == 0.0


def test_token_f1_worked_example_depends_on_article_removal() -> None:
    # SQuAD normalisation: "cat sat on" vs "the cat sat" -> tokens [cat, sat, on] vs [cat, sat].
    # overlap 2, P = 2/3, R = 2/2 = 1, F1 = 2 * (2/3) * 1 / (2/3 + 1) = (4/3) / (5/3) = 0.8.
    assert token_f1("cat sat on", "the cat sat") == pytest.approx(0.8, abs=1e-12)
    # Without article removal ("the" stays): [cat, sat, on] vs [the, cat, sat], overlap 2,
    # P = R = 2/3, F1 = 2/3.
    assert token_f1("cat sat on", "the cat sat", normalize=None) == pytest.approx(2 / 3, abs=1e-12)
    assert token_f1("cat sat on", "the cat sat", normalize=str.lower) == pytest.approx(
        2 / 3, abs=1e-12
    )


def test_normalize_answer_follows_the_official_order() -> None:
    assert normalize_answer("The  N.Y.C.!") == "nyc"
    assert normalize_answer("  An apple, a day ") == "apple day"
    # Articles are removed only as whole words, after punctuation is deleted: "the-end" -> "theend".
    assert normalize_answer("the-end") == "theend"
    assert normalize_answer("Theatre") == "theatre"
    # Only ASCII punctuation goes; the typographic apostrophe stays (as in the official script).
    assert normalize_answer("Rock’n’roll") == "rock’n’roll"
    assert normalize_answer("the a an") == ""


def test_token_f1_counts_repeated_tokens_as_a_multiset() -> None:
    # pred [cat, cat, cat] vs gold [cat]: overlap min(3, 1) = 1, P = 1/3, R = 1, F1 = 0.5.
    assert token_f1("cat cat cat", "cat") == pytest.approx(0.5)


def test_max_over_references() -> None:
    # F1 against "cat" = 2 * (1/2) * 1 / 1.5 = 2/3; against "black cat" = 1.0.
    assert token_f1("black cat", ["cat", "black cat"]) == 1.0
    assert token_f1("black cat", ["cat", "dog"]) == pytest.approx(2 / 3)


def test_no_answer_rules_follow_squad_v2() -> None:
    # A reference that normalises to "" is ignored while another reference exists ...
    assert exact_match("", ["the", "Paris"]) == 0.0
    assert exact_match("paris", ["the", "Paris"]) == 1.0
    # ... and when all do, the correct answer is the empty one.
    assert exact_match("", [""]) == 1.0
    assert token_f1("", [""]) == 1.0
    assert token_f1("Paris", [""]) == 0.0
    assert token_f1("", ["Paris"]) == 0.0
    # No common token at all -> 0, not a division error.
    assert token_f1("london", ["paris"]) == 0.0


def test_empty_reference_list_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one reference"):
        exact_match("x", [])
    with pytest.raises(ValueError, match="non-empty reference"):
        substring_recall("x", ["", "  "])
    with pytest.raises(TypeError):
        exact_match("x", [1])  # type: ignore[list-item]


def test_substring_recall_ignores_case_only() -> None:
    assert substring_recall("It was PARIS, I think.", ["paris"]) == 1.0
    assert substring_recall("It was Paris.", ["London", "paris."]) == 1.0
    assert substring_recall("It was Paris.", ["Paris!"]) == 0.0
    # casefold, not lower: German sharp s matches "ss".
    assert substring_recall("Die STRASSE", ["straße"]) == 1.0


def test_aggregates_average_over_examples() -> None:
    predictions = ["nyc", "boston", "cat sat on"]
    references: list[str | list[str]] = [["New York City", "NYC"], "Chicago", "the cat sat"]
    em = mean_exact_match(predictions, references)
    assert em.value == pytest.approx(1 / 3) and em.n == 3
    assert em.low <= em.value <= em.high
    f1 = mean_token_f1(predictions, references)
    assert f1.value == pytest.approx((1.0 + 0.0 + 0.8) / 3)
    assert mean_substring_recall(["the cat sat on"], ["cat sat"]).value == 1.0
    with pytest.raises(ValueError, match="pair up"):
        mean_exact_match(["a"], ["a", "b"])
    with pytest.raises(TypeError):
        mean_exact_match("abc", "abc")


def test_empty_data_set_gives_nan() -> None:
    assert math.isnan(mean_token_f1([], []).value)


@given(prediction=words, references=st.lists(words, min_size=1, max_size=3))
def test_scores_are_bounded_and_consistent(prediction: str, references: list[str]) -> None:
    em = exact_match(prediction, references)
    f1 = token_f1(prediction, references)
    assert em in (0.0, 1.0)
    assert 0.0 <= f1 <= 1.0
    if em == 1.0:
        assert f1 == 1.0
    # Adding a reference can only help (max over references) -- unless every reference was
    # empty after normalisation, where the SQuAD v2.0 "no answer" rule applies instead.
    if any(normalize_answer(r) for r in references):
        assert token_f1(prediction, [*references, "cat"]) >= f1
    if normalize_answer(prediction):
        assert exact_match(prediction, [*references, prediction]) == 1.0


@given(a=words, b=words)
def test_single_reference_f1_is_symmetric(a: str, b: str) -> None:
    assert token_f1(a, b) == pytest.approx(token_f1(b, a))


@given(text=st.text(max_size=40))
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalize_answer(text)
    assert normalize_answer(once) == once
