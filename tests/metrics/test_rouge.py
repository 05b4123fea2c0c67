"""ROUGE: the worked example, a differential test against Google's rouge-score, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgecards.metrics import mean_rouge, rouge
from judgecards.metrics.rouge import _lcs_length

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
rouge_tokenize = pytest.importorskip("rouge_score.tokenize")

TYPES = ["rouge1", "rouge2", "rougeL"]
FIELDS = ("precision", "recall", "fmeasure")


def test_worked_example() -> None:
    # prediction "the cat sat" (3 tokens), reference "the cat sat on the mat" (6 tokens).
    scores = rouge("the cat sat", "the cat sat on the mat")
    # ROUGE-1: clipped unigram overlap the/cat/sat = 3; P = 3/3, R = 3/6 = 0.5.
    assert scores["rouge1"].precision == 1.0 and scores["rouge1"].recall == 0.5
    # ROUGE-2: prediction bigrams {the cat, cat sat} both in the reference's 5 bigrams
    # {the cat, cat sat, sat on, on the, the mat}; P = 2/2, R = 2/5 = 0.4, F1 = 0.8/1.4 = 4/7.
    assert scores["rouge2"].recall == pytest.approx(0.4)
    assert scores["rouge2"].fmeasure == pytest.approx(4 / 7)
    # ROUGE-L: LCS "the cat sat" = 3; P = 1, R = 0.5, F1 = 2 * 0.5 / 1.5 = 2/3 = 0.667.
    assert scores["rougeL"].fmeasure == pytest.approx(2 / 3)
    assert round(scores["rougeL"].fmeasure, 3) == 0.667


def test_clipping_counts_each_reference_ngram_once() -> None:
    # "the the the" vs "the cat": overlap min(3, 1) = 1 -> P = 1/3, R = 1/2.
    score = rouge("the the the", "the cat", types=["rouge1"])["rouge1"]
    assert (score.precision, score.recall) == (pytest.approx(1 / 3), 0.5)


def test_empty_sides_score_zero() -> None:
    for prediction, reference in [("", "a b"), ("a b", ""), ("...", "!!!"), ("a", "b c")]:
        for score in rouge(prediction, reference).values():
            assert (score.precision, score.recall, score.fmeasure) == (0.0, 0.0, 0.0)


def test_argument_checks() -> None:
    with pytest.raises(ValueError, match="unknown ROUGE type"):
        rouge("a", "a", types=["rougeLsum"])
    with pytest.raises(ValueError, match="unknown ROUGE type"):
        rouge("a", "a", types=["rouge0"])
    with pytest.raises(ValueError, match="at least one reference"):
        rouge("a", [])
    assert set(rouge("a b c d", "a b c d", types=["rouge4"])) == {"rouge4"}


def test_custom_tokenizer() -> None:
    scores = rouge("Der Bär", "der bär", types=["rouge1"], tokenizer=lambda s: s.lower().split())
    assert scores["rouge1"].fmeasure == 1.0
    # The default tokenisation drops non-ASCII letters, as rouge-score does: "der b r".
    assert rouge("Der Bär", "der bär", types=["rouge1"])["rouge1"].fmeasure == 1.0


def _theirs(
    scorer: rouge_scorer.RougeScorer, prediction: str, references: list[str]
) -> dict[str, tuple[float, ...]]:
    scores = (
        scorer.score_multi(references, prediction)
        if len(references) > 1
        else scorer.score(references[0], prediction)
    )
    return {t: tuple(getattr(scores[t], f) for f in FIELDS) for t in TYPES}


def _ours(prediction: str, references: list[str]) -> dict[str, tuple[float, ...]]:
    scores = rouge(prediction, references, types=TYPES)
    return {t: tuple(getattr(scores[t], f) for f in FIELDS) for t in TYPES}


def _max_difference(a: dict[str, tuple[float, ...]], b: dict[str, tuple[float, ...]]) -> float:
    return max(abs(x - y) for t in TYPES for x, y in zip(a[t], b[t]))


def test_agrees_with_rouge_score_on_summeval(summeval_pairs: list[tuple[str, list[str]]]) -> None:
    """All 1,200 SummEval summaries vs their first reference, and the first 100 vs all 11."""
    scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=False)
    worst = 0.0
    for summary, references in summeval_pairs:
        worst = max(
            worst,
            _max_difference(
                _ours(summary, references[:1]), _theirs(scorer, summary, references[:1])
            ),
        )
    for summary, references in summeval_pairs[:100]:
        worst = max(
            worst, _max_difference(_ours(summary, references), _theirs(scorer, summary, references))
        )
    assert worst <= 1e-9

    # The corpus mean, too (rouge-score's BootstrapAggregator reports the mean as "mid").
    firsts = summeval_pairs[:300]
    means = mean_rouge([s for s, _ in firsts], [r[0] for _, r in firsts], n_resamples=200)
    their_mean = sum(scorer.score(r[0], s)["rougeL"].fmeasure for s, r in firsts) / len(firsts)
    assert means["rougeL"].fmeasure.value == pytest.approx(their_mean, abs=1e-12)
    assert means["rougeL"].fmeasure.low < their_mean < means["rougeL"].fmeasure.high


# Includes letters whose lower-casing is tricky: sharp s, dotted capital I, the Kelvin sign.
text = st.text(
    alphabet=st.sampled_from([*"abc AB1 .,-'\n\t\u00e9\u00fc", "\u00df", "\u0130", "\u212a"]),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(prediction=text, references=st.lists(text, min_size=1, max_size=3))
def test_agrees_with_rouge_score_on_random_text(prediction: str, references: list[str]) -> None:
    scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=False)
    assert (
        _max_difference(_ours(prediction, references), _theirs(scorer, prediction, references))
        <= 1e-12
    )


@given(text=st.text(max_size=80))
def test_tokenisation_matches_rouge_score(text: str) -> None:
    from judgecards.metrics.rouge import _tokenize

    assert _tokenize(text) == rouge_tokenize.tokenize(text, None)


def _lcs_table(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        previous_diagonal = 0
        for j, y in enumerate(b, start=1):
            previous_diagonal, row[j] = (
                row[j],
                previous_diagonal + 1 if x == y else max(row[j], row[j - 1]),
            )
    return row[-1]


tokens = st.lists(st.sampled_from("abcde"), max_size=80)


@settings(max_examples=300)
@given(a=tokens, b=tokens)
def test_bit_parallel_lcs_equals_dynamic_programming(a: list[str], b: list[str]) -> None:
    assert _lcs_length(a, b) == _lcs_table(a, b)


@given(prediction=text, reference=text)
def test_scores_are_bounded_and_lcs_sits_between_bigrams_and_unigrams(
    prediction: str, reference: str
) -> None:
    scores = rouge(prediction, reference)
    for score in scores.values():
        for value in (score.precision, score.recall, score.fmeasure):
            assert 0.0 <= value <= 1.0
    # An LCS is a common subsequence of unigrams, so it never exceeds the unigram overlap.
    assert scores["rougeL"].recall <= scores["rouge1"].recall + 1e-12
    # Identical texts score 1 wherever there are n-grams.
    same = rouge(reference, reference)
    if len(reference.split()) and same["rouge1"].precision:
        assert same["rouge1"].fmeasure == 1.0 and same["rougeL"].fmeasure == 1.0


def test_a_single_type_may_be_given_as_a_string() -> None:
    assert set(rouge("a b", "a b", types="rougeL")) == {"rougeL"}
    summary = mean_rouge(["a b", "a c"], ["a b", "a b"], types="rouge1", n_resamples=20)
    assert set(summary) == {"rouge1"}
    assert summary["rouge1"].recall.value == pytest.approx(0.75)
