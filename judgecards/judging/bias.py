"""Bias diagnostics reported next to judge results: verbosity and self-preference.

* **Verbosity bias**: LLM judges tend to favour longer answers (Zheng et al. 2023, §3.3). For
  single-answer and rubric scores, `verbosity_bias_single` correlates answer length with score; for
  pairwise verdicts, `verbosity_bias_pairwise` correlates the length difference with the
  preference and reports how often the longer answer wins. A correlation is a warning sign, not
  proof: longer answers are sometimes better.
* **Self-preference**: judges tend to favour answers from their own model family.
  `self_preference_warning` returns a warning when the judge's family (`model_family`) matches a
  compared model's.

Lengths may be in any unit (characters, words, tokens). Spearman correlations are unchanged by
the choice; Pearson correlations are not.

The correlations and their p-values are plain Python (`math`): every ``judgecards score``
summary computes them, and importing numpy and ``scipy.special`` for a few hundred numbers cost
each run about 0.35 s of CPU, a third of what the tool adds to a bare client script.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LengthCorrelation",
    "PairwiseVerbosity",
    "model_family",
    "self_preference_warning",
    "verbosity_bias_pairwise",
    "verbosity_bias_single",
]


@dataclass(frozen=True)
class LengthCorrelation:
    """Pearson and Spearman correlation between a length variable and a judgment.

    All four numbers are ``nan`` when the correlation is undefined: fewer than 3 items, or either
    variable constant (e.g. every verdict a tie).

    Attributes:
        pearson: Pearson's r.
        pearson_p: two-sided p-value of r (t-test, `scipy.stats.pearsonr`).
        spearman: Spearman's rho (ties get average ranks).
        spearman_p: two-sided p-value of rho (`scipy.stats.spearmanr`).
        n: number of items.
    """

    pearson: float
    pearson_p: float
    spearman: float
    spearman_p: float
    n: int

    def to_dict(self) -> dict[str, float | int | None]:
        """A strict-JSON dict (``nan`` becomes ``None``)."""
        return {
            "pearson": _json_float(self.pearson),
            "pearson_p": _json_float(self.pearson_p),
            "spearman": _json_float(self.spearman),
            "spearman_p": _json_float(self.spearman_p),
            "n": self.n,
        }


@dataclass(frozen=True)
class PairwiseVerbosity:
    """Length bias of pairwise verdicts.

    Attributes:
        correlation: correlation of ``len_a - len_b`` with the preference (+1 A won, -1 B won,
            0 tie), over all comparisons. With ties present the Pearson r is not strictly
            point-biserial; Spearman is the primary number.
        longer_wins: decisive comparisons (not ties) with unequal lengths won by the longer answer.
        decisive_unequal: decisive comparisons with unequal lengths.
        longer_wins_rate: ``longer_wins / decisive_unequal`` (``nan`` when 0); 0.5 = no bias.
        longer_wins_p: two-sided exact binomial test of ``longer_wins_rate`` against 0.5
            (``nan`` when ``decisive_unequal`` is 0).
    """

    correlation: LengthCorrelation
    longer_wins: int
    decisive_unequal: int
    longer_wins_rate: float
    longer_wins_p: float

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict (``nan`` becomes ``None``)."""
        return {
            "correlation": self.correlation.to_dict(),
            "longer_wins": self.longer_wins,
            "decisive_unequal": self.decisive_unequal,
            "longer_wins_rate": _json_float(self.longer_wins_rate),
            "longer_wins_p": _json_float(self.longer_wins_p),
        }


def verbosity_bias_single(lengths: Sequence[float], scores: Sequence[float]) -> LengthCorrelation:
    """Correlation between answer length and the judge's score (single-answer or rubric grading).

    Args:
        lengths: answer lengths, any unit.
        scores: the judge's scores, parallel to ``lengths``.

    Returns:
        A `LengthCorrelation`; positive values mean longer answers score higher.

    Raises:
        ValueError: the sequences differ in length or contain non-finite values.
    """
    return _correlate(lengths, scores)


def verbosity_bias_pairwise(
    len_a: Sequence[float],
    len_b: Sequence[float],
    winners: Sequence[str],
) -> PairwiseVerbosity:
    """Correlation between the length difference and the pairwise preference.

    Args:
        len_a: lengths of the A answers, any unit.
        len_b: lengths of the B answers.
        winners: the outcomes, ``"A"``, ``"B"`` or ``"tie"``, parallel to the lengths.

    Returns:
        A `PairwiseVerbosity`: the correlation of ``len_a - len_b`` with +1/-1/0 preferences and
        the rate at which the longer answer wins among decisive comparisons of unequal length.

    Raises:
        ValueError: the sequences differ in length, hold non-finite lengths or unknown winners.
    """
    if not len(len_a) == len(len_b) == len(winners):
        raise ValueError(
            f"len_a, len_b and winners must have equal length, got "
            f"{len(len_a)}, {len(len_b)}, {len(winners)}"
        )
    preference_of = {"A": 1.0, "B": -1.0, "tie": 0.0}
    for row, winner in enumerate(winners):
        if winner not in preference_of:
            raise ValueError(f"winner {row} must be 'A', 'B' or 'tie', got {winner!r}")
    diff = [a - b for a, b in zip(_finite(len_a, "len_a"), _finite(len_b, "len_b"))]
    preference = [preference_of[w] for w in winners]
    correlation = _correlate(diff, preference)
    counted = [(d, p) for d, p in zip(diff, preference) if p != 0 and d != 0]
    decisive_unequal = len(counted)
    longer_wins = sum(1 for d, p in counted if math.copysign(1.0, d) == p)
    if decisive_unequal:
        from scipy.stats import binomtest

        rate = longer_wins / decisive_unequal
        p = float(binomtest(longer_wins, decisive_unequal, 0.5, alternative="two-sided").pvalue)
    else:
        rate = p = math.nan
    return PairwiseVerbosity(correlation, longer_wins, decisive_unequal, rate, p)


# Model-line patterns, matched against the model name (provider prefix and org path removed) at
# the start or after a separator. Families are model lines, not vendors: "gemma" is not "gemini".
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("gpt", r"(?:chat)?gpt|o[134](?![0-9a-z])|davinci|babbage|curie"),
    ("claude", r"claude"),
    ("gemini", r"gemini"),
    ("gemma", r"gemma"),
    ("palm", r"palm|(?:text|chat)-bison"),
    ("llama", r"(?:code)?llama"),
    ("mistral", r"mistral|mixtral|codestral|ministral|magistral|pixtral|devstral"),
    ("qwen", r"qwen|qwq"),
    ("deepseek", r"deepseek"),
    ("phi", r"phi(?![a-z])"),
    ("command", r"command|c4ai|aya"),
    ("grok", r"grok"),
    ("falcon", r"falcon"),
    ("yi", r"yi(?![a-z])"),
    ("vicuna", r"vicuna"),
    ("alpaca", r"alpaca"),
)


@functools.cache
def _family_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The families' patterns, compiled on first use: every ``score`` summary imports this
    module for its length correlations, which need none of them."""
    return tuple(
        (family, re.compile(rf"(?:^|[-_/.:\s])(?:{pattern})")) for family, pattern in _FAMILIES
    )


# Providers whose own name is the best family guess when the model name is not recognised.
_PROVIDER_FAMILIES = {"anthropic": "claude", "mock": "mock"}


def model_family(model: str) -> str:
    """The model line a model string belongs to, for self-preference checks.

    The string may carry a provider prefix (``"openai:gpt-4o"``) and an org path
    (``"meta-llama/Llama-3.1-8B-Instruct"``). Known lines are recognised in the name:
    ``gpt`` (GPT, ChatGPT, o1/o3/o4, davinci), ``claude``, ``gemini``, ``gemma``, ``palm``,
    ``llama``, ``mistral`` (also Mixtral, Codestral…), ``qwen``, ``deepseek``, ``phi``,
    ``command``, ``grok``, ``falcon``, ``yi``, ``vicuna``, ``alpaca``. The ``mock`` provider is
    family ``"mock"``. Anything else gives the model name lowercased, without provider or org.

    Examples:
        ``"openai:gpt-4o"`` → ``"gpt"``; ``"anthropic:claude-sonnet-5-5"`` → ``"claude"``;
        ``"mock:x"`` → ``"mock"``; ``"ollama:qwen2.5:7b"`` → ``"qwen"``; ``"my-model"`` →
        ``"my-model"``.
    """
    text = model.strip()
    provider, sep, name = text.partition(":")
    if not sep or "/" in provider:
        provider, name = "", text
    provider = provider.lower()
    if provider == "mock":
        return "mock"
    lowered = name.lower()
    for family, pattern in _family_patterns():
        if pattern.search(lowered):
            return family
    if provider in _PROVIDER_FAMILIES:
        return _PROVIDER_FAMILIES[provider]
    return lowered.rsplit("/", 1)[-1] or provider


def self_preference_warning(judge_model: str, compared_models: Iterable[str]) -> str | None:
    """A warning when the judge is from the same model family as a compared model.

    Args:
        judge_model: the judge's model string, e.g. ``"openai:gpt-4o"``.
        compared_models: the models whose answers are judged (names or model strings).

    Returns:
        ``None`` when no family matches, else a one-line warning naming the family and models.
    """
    family = model_family(judge_model)
    same = [m for m in dict.fromkeys(compared_models) if model_family(m) == family]
    if not same:
        return None
    listed = ", ".join(same)
    return (
        f"self-preference risk: the judge {judge_model} is from the same model family "
        f"({family!r}) as {listed}; judges tend to favour their own family's answers — "
        f"consider a judge from another family or a second judge"
    )


def _finite(values: Sequence[float] | Iterable[float], name: str) -> list[float]:
    try:
        floats = [float(value) for value in values]
    except (TypeError, ValueError):
        floats = [math.nan]
    if not all(math.isfinite(value) for value in floats):
        raise ValueError(f"{name} must be a flat sequence of finite numbers")
    return floats


def _correlate(x: Sequence[float], y: Sequence[float]) -> LengthCorrelation:
    if len(x) != len(y):
        raise ValueError(f"the two sequences must have equal length, got {len(x)} and {len(y)}")
    xs, ys = _finite(x, "lengths"), _finite(y, "scores")
    n = len(xs)
    if n < 3 or all(v == xs[0] for v in xs) or all(v == ys[0] for v in ys):
        return LengthCorrelation(math.nan, math.nan, math.nan, math.nan, n)
    pearson, pearson_p = _pearson(xs, ys)
    spearman, spearman_p = _pearson(_ranks(xs), _ranks(ys))
    return LengthCorrelation(pearson, pearson_p, spearman, spearman_p, n)


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """r and its two-sided p-value (t with n - 2 df), as `scipy.stats.pearsonr` and, on ranks,
    `scipy.stats.spearmanr` give them (checked against both in the tests)."""
    n = len(xs)
    mean_x, mean_y = math.fsum(xs) / n, math.fsum(ys) / n
    dx = [x - mean_x for x in xs]
    dy = [y - mean_y for y in ys]
    sxx, syy = math.fsum(d * d for d in dx), math.fsum(d * d for d in dy)
    r = math.fsum(a * b for a, b in zip(dx, dy)) / math.sqrt(sxx * syy)
    r = min(1.0, max(-1.0, r))
    if abs(r) == 1.0:
        return r, 0.0
    df = n - 2
    t = r * math.sqrt(df / ((1.0 - r) * (1.0 + r)))
    # P(|T| >= |t|) for Student's t with df degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2).
    return r, _regularized_beta(df / 2.0, 0.5, df / (df + t * t))


def _regularized_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (modified
    Lentz), on the side of ``x`` where it converges fast (Numerical Recipes, 6.4)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300

    def floor(value: float) -> float:
        return value if abs(value) >= tiny else tiny

    c, d = 1.0, 1.0 / floor(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, 100_000):  # converges in O(sqrt(max(a, b))) steps
        even = m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m))
        d = 1.0 / floor(1.0 + even * d)
        c = floor(1.0 + even / c)
        h *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))
        d = 1.0 / floor(1.0 + odd * d)
        c = floor(1.0 + odd / c)
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, tied values sharing their average rank (`scipy.stats.rankdata`'s default)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end + 2) / 2.0
        for index in order[start : end + 1]:
            ranks[index] = shared
        start = end + 1
    return ranks


def _json_float(value: float) -> float | None:
    return None if math.isnan(value) else value
