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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

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
    diff = _finite(len_a, "len_a") - _finite(len_b, "len_b")
    preference = np.array([preference_of[w] for w in winners])
    correlation = _correlate(diff, preference)
    counted = (preference != 0) & (diff != 0)
    decisive_unequal = int(counted.sum())
    longer_wins = int((np.sign(diff[counted]) == preference[counted]).sum())
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
_FAMILY_RES = tuple(
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
    for family, pattern in _FAMILY_RES:
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


def _finite(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be a flat sequence of finite numbers")
    return array


def _correlate(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> LengthCorrelation:
    if len(x) != len(y):
        raise ValueError(f"the two sequences must have equal length, got {len(x)} and {len(y)}")
    xs, ys = _finite(x, "lengths"), _finite(y, "scores")
    n = len(xs)
    if n < 3 or np.all(xs == xs[0]) or np.all(ys == ys[0]):
        return LengthCorrelation(math.nan, math.nan, math.nan, math.nan, n)
    pearson, pearson_p = _pearson(xs, ys)
    spearman, spearman_p = _pearson(_ranks(xs), _ranks(ys))
    return LengthCorrelation(pearson, pearson_p, spearman, spearman_p, n)


def _pearson(xs: np.ndarray, ys: np.ndarray) -> tuple[float, float]:
    """r and its two-sided p-value (t with n - 2 df), as `scipy.stats.pearsonr` and, on ranks,
    `scipy.stats.spearmanr` give them. Written out because importing ``scipy.stats`` takes about
    a second, and every ``judgecards score`` summary computes these; ``scipy.special`` is light.
    """
    from scipy.special import stdtr

    n = len(xs)
    r = min(1.0, max(-1.0, float(np.corrcoef(xs, ys)[0, 1])))
    if abs(r) == 1.0:
        return r, 0.0
    t = r * math.sqrt((n - 2) / ((1.0 - r) * (1.0 + r)))
    return r, float(2.0 * stdtr(n - 2, -abs(t)))


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their average rank (`scipy.stats.rankdata`'s default)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def _json_float(value: float) -> float | None:
    return None if math.isnan(value) else value
