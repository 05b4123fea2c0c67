"""Bias diagnostics: length correlations (hand-computed), model families, self-preference."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judgecards.judging import (
    model_family,
    self_preference_warning,
    verbosity_bias_pairwise,
    verbosity_bias_single,
)


def test_single_hand_computed_correlation() -> None:
    # x = [1, 2, 3], y = [1, 3, 2]: deviations [-1, 0, 1] and [-1, 1, 0], cross-sum 1, squared
    # sums 2 and 2, so r = 1 / 2 = 0.5; the ranks equal the values, so rho = 0.5 too.
    # p-value: t = r * sqrt(n - 2) / sqrt(1 - r^2) = 1/sqrt(3); with 1 degree of freedom t is
    # Cauchy, p = 1 - 2 * atan(1/sqrt(3)) / pi = 1 - 2 * (pi/6) / pi = 2/3.
    result = verbosity_bias_single([1, 2, 3], [1, 3, 2])
    assert result.pearson == pytest.approx(0.5)
    assert result.spearman == pytest.approx(0.5)
    assert result.pearson_p == pytest.approx(2 / 3)
    assert result.n == 3


def test_single_detects_a_length_loving_judge() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(50, 800, 200)
    scores = np.clip(np.round(lengths / 100 + rng.normal(0, 1, 200)), 1, 10)
    result = verbosity_bias_single(lengths.tolist(), scores.tolist())
    assert result.spearman > 0.8 and result.spearman_p < 1e-10
    unbiased = verbosity_bias_single(lengths.tolist(), rng.integers(1, 11, 200).tolist())
    assert abs(unbiased.spearman) < 0.2


@pytest.mark.parametrize(
    ("lengths", "scores"),
    [([1, 2], [1, 2]), ([5, 5, 5, 5], [1, 2, 3, 4]), ([1, 2, 3, 4], [7, 7, 7, 7]), ([], [])],
)
def test_single_undefined_correlation_is_nan(lengths: list[float], scores: list[float]) -> None:
    result = verbosity_bias_single(lengths, scores)
    assert all(
        math.isnan(v)
        for v in (result.pearson, result.pearson_p, result.spearman, result.spearman_p)
    )
    assert json.dumps(result.to_dict(), allow_nan=False)


def test_single_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="equal length"):
        verbosity_bias_single([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="finite"):
        verbosity_bias_single([1, 2, float("nan")], [1, 2, 3])


def test_pairwise_hand_computed() -> None:
    # diff = len_a - len_b = [5, 10, -5, 0, 4]; preference = [+1, +1, +1, -1, 0].
    # Decisive with unequal lengths: items 0, 1, 2. The longer answer won items 0 and 1 (A longer,
    # A won) but not item 2 (A shorter, A won): 2 of 3. Item 3 (equal lengths) and item 4 (tie)
    # are left out. Binomial two-sided p for 2 of 3: every outcome is at most as likely as
    # P(2) = 3/8, so p = 1.
    result = verbosity_bias_pairwise(
        [10, 20, 5, 8, 7], [5, 10, 10, 8, 3], ["A", "A", "A", "B", "tie"]
    )
    assert (result.longer_wins, result.decisive_unequal) == (2, 3)
    assert result.longer_wins_rate == pytest.approx(2 / 3)
    assert result.longer_wins_p == pytest.approx(1.0)
    # Pearson of diff with preference: means 2.8 and 0.4; deviations [2.2, 7.2, -7.8, -2.8, 1.2]
    # and [0.6, 0.6, 0.6, -1.4, -0.4]; cross-sum 1.32 + 4.32 - 4.68 + 3.92 - 0.48 = 4.4;
    # squared sums 4.84 + 51.84 + 60.84 + 7.84 + 1.44 = 126.8 and 3 * 0.36 + 1.96 + 0.16 = 3.2:
    # r = 4.4 / sqrt(405.76) = 0.21843.
    assert result.correlation.pearson == pytest.approx(4.4 / math.sqrt(126.8 * 3.2))
    assert result.correlation.n == 5


def test_pairwise_judge_that_always_picks_the_longer_answer() -> None:
    rng = np.random.default_rng(1)
    len_a, len_b = rng.integers(10, 500, 100), rng.integers(10, 500, 100)
    winners = ["A" if a > b else "B" if b > a else "tie" for a, b in zip(len_a, len_b)]
    result = verbosity_bias_pairwise(len_a.tolist(), len_b.tolist(), winners)
    assert result.longer_wins_rate == 1.0
    assert result.longer_wins_p < 1e-20
    assert result.correlation.spearman > 0.85


def test_pairwise_all_ties_and_bad_input() -> None:
    result = verbosity_bias_pairwise([1, 2, 3], [3, 2, 1], ["tie", "tie", "tie"])
    assert math.isnan(result.correlation.spearman) and math.isnan(result.longer_wins_rate)
    assert result.decisive_unequal == 0
    assert json.dumps(result.to_dict(), allow_nan=False)
    with pytest.raises(ValueError, match="equal length"):
        verbosity_bias_pairwise([1, 2], [1], ["A", "B"])
    with pytest.raises(ValueError, match="winner 1"):
        verbosity_bias_pairwise([1, 2], [2, 1], ["A", "C"])


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("openai:gpt-4o", "gpt"),
        ("gpt-4", "gpt"),
        ("openai:o3-mini", "gpt"),
        ("chatgpt-4o-latest", "gpt"),
        ("openai:ft:gpt-4o-mini:acme::abc123", "gpt"),
        ("anthropic:claude-sonnet-4-5", "claude"),
        ("claude-v1", "claude"),
        ("anthropic:some-future-name", "claude"),
        ("mock:x", "mock"),
        ("mock:gpt-4o", "mock"),
        ("openai:meta-llama/Llama-3.1-8B-Instruct", "llama"),
        ("llama-13b", "llama"),
        ("codellama-34b-instruct", "llama"),
        ("ollama:qwen2.5:7b", "qwen"),
        ("Qwen/QwQ-32B", "qwen"),
        ("mistral-large-latest", "mistral"),
        ("mixtral-8x7b", "mistral"),
        ("gemini-1.5-pro", "gemini"),
        ("google/gemma-2-9b-it", "gemma"),
        ("deepseek-chat", "deepseek"),
        ("microsoft/phi-3-mini", "phi"),
        ("vicuna-13b-v1.2", "vicuna"),
        ("alpaca-13b", "alpaca"),
        ("openai:My-Local-Model", "my-local-model"),
        ("dolphin-2.9", "dolphin-2.9"),  # "phi" inside a word is not the phi family
    ],
)
def test_model_family(model: str, family: str) -> None:
    assert model_family(model) == family


def test_self_preference_warning() -> None:
    warning = self_preference_warning(
        "openai:gpt-4o", ["gpt-4o-mini", "claude-3-haiku", "gpt-4o-mini"]
    )
    assert warning is not None
    assert "'gpt'" in warning and "gpt-4o-mini" in warning and "claude" not in warning
    assert warning.count("gpt-4o-mini") == 1
    assert self_preference_warning("anthropic:claude-sonnet-4-5", ["gpt-4o", "llama-3-70b"]) is None
    assert self_preference_warning("openai:gpt-4", ["gpt-4", "claude-v1"]) is not None
