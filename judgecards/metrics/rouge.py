"""ROUGE-N (clipped n-gram overlap) and ROUGE-L (longest common subsequence).

The scores agree with Google's ``rouge-score`` package (``RougeScorer(types, use_stemmer=False)``)
to floating-point precision; the tests check 1e-9 on SummEval. That means the same tokenisation:

1. lower-case the text (``str.lower``);
2. every maximal run of ``[a-z0-9]`` characters is a token; everything else (punctuation,
   accented or non-Latin letters, whitespace) separates tokens and is dropped.

No stemming and no stop-word removal. For ROUGE-N the overlap of a pair is the clipped count
``sum(min(count_pred(g), count_ref(g)))`` over n-grams ``g``; precision divides it by the number of
prediction n-grams, recall by the number of reference n-grams (a side with no n-grams gives 0).
ROUGE-L uses the length of the longest common subsequence of the two token lists instead (0 when
either side is empty). F1 is ``2PR / (P + R)`` and 0 when ``P + R == 0``.

Note the argument order: judgecards puts the prediction first everywhere, while
``rouge_score``'s ``scorer.score(target, prediction)`` puts the reference first.

Speed: each text is tokenised once per call, n-grams are counted with `collections.Counter`,
and the LCS length uses the bit-parallel algorithm of Allison and Dix (1986) on Python integers,
so one pass over the shorter text replaces the quadratic table. ``bench/bench_rouge.py`` measures
it against ``rouge-score``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = ["RougeScore", "RougeSummary", "mean_rouge", "rouge"]

DEFAULT_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL")
_TOKEN = re.compile(r"[a-z0-9]+")
_ROUGE_N = re.compile(r"rouge([1-9][0-9]*)")


@dataclass(frozen=True)
class RougeScore:
    """Precision, recall and F1 of one ROUGE type for one prediction.

    Attributes:
        precision: overlap / prediction size, in [0, 1].
        recall: overlap / reference size, in [0, 1].
        fmeasure: harmonic mean of the two, in [0, 1].
    """

    precision: float
    recall: float
    fmeasure: float


@dataclass(frozen=True)
class RougeSummary:
    """Mean precision, recall and F1 of one ROUGE type over a data set, each with an interval."""

    precision: Estimate
    recall: Estimate
    fmeasure: Estimate


def rouge(
    prediction: str,
    references: str | Sequence[str],
    *,
    types: Sequence[str] = DEFAULT_TYPES,
    tokenizer: Callable[[str], Sequence[Hashable]] | None = None,
) -> dict[str, RougeScore]:
    """ROUGE scores of one prediction against one or several references.

    For "the cat sat" against "the cat sat on the mat": ROUGE-1 recall 3/6 = 0.5, ROUGE-2 recall
    2/5 = 0.4 ("the cat", "cat sat" out of five reference bigrams), ROUGE-L LCS 3, so P = 1,
    R = 0.5 and F1 = 2/3.

    Args:
        prediction: the generated text.
        references: one reference, or several; for each ROUGE type separately, the reference
            with the highest F1 counts (the first one on ties), as ``rouge_score``'s
            ``score_multi`` does.
        types: any of ``"rouge1"``, ``"rouge2"``, ... (``"rougeN"`` for a positive N) and
            ``"rougeL"``. Summary-level ``"rougeLsum"`` is not supported.
        tokenizer: replaces the default ``rouge-score`` tokenisation described in the module
            docstring; must return a sequence of hashable tokens.

    Returns:
        A dict from each requested type to its `RougeScore`.

    Raises:
        ValueError: for an unknown ROUGE type or an empty sequence of references.
    """
    orders = _parse_types(types)
    tokenize = tokenizer or _tokenize
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError("rouge needs at least one reference")
    predicted = _Tokens(tokenize(prediction))
    best: dict[str, RougeScore] = {}
    for ref in refs:
        scores = _score(predicted, _Tokens(tokenize(ref)), orders)
        for name, score in scores.items():
            if name not in best or score.fmeasure > best[name].fmeasure:
                best[name] = score
    return best


def mean_rouge(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    *,
    types: Sequence[str] = DEFAULT_TYPES,
    tokenizer: Callable[[str], Sequence[Hashable]] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> dict[str, RougeSummary]:
    """Mean ROUGE precision, recall and F1 over a data set, with bootstrap intervals.

    The mean is over examples (macro average), as ``rouge_score``'s ``BootstrapAggregator``
    reports in its ``mid`` row; the intervals come from `bootstrap_ci` over examples.

    Args:
        predictions: one generated text per example.
        references: for each example one reference or several (see `rouge`).
        types: as in `rouge`.
        tokenizer: as in `rouge`.
        level: confidence level of the intervals.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        A dict from each type to its `RougeSummary`.
    """
    if isinstance(predictions, str) or isinstance(references, str):
        raise TypeError("pass a sequence of predictions and a sequence of references, not a string")
    if len(predictions) != len(references):
        raise ValueError(
            f"{len(predictions)} predictions but {len(references)} references; they must pair up"
        )
    per_example = [
        rouge(p, r, types=types, tokenizer=tokenizer) for p, r in zip(predictions, references)
    ]
    summary: dict[str, RougeSummary] = {}
    for name in _parse_types(types):

        def estimate(field: str, name: str = name) -> Estimate:
            values = [getattr(scores[name], field) for scores in per_example]
            return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)

        summary[name] = RougeSummary(
            estimate("precision"), estimate("recall"), estimate("fmeasure")
        )
    return summary


def _tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _parse_types(types: Sequence[str]) -> dict[str, int]:
    """Map each ROUGE type to its n-gram order, with 0 standing for LCS."""
    if isinstance(types, str):
        types = (types,)
    if not types:
        raise ValueError("ask for at least one ROUGE type")
    orders: dict[str, int] = {}
    for name in types:
        if name == "rougeL":
            orders[name] = 0
        elif match := _ROUGE_N.fullmatch(name):
            orders[name] = int(match.group(1))
        else:
            raise ValueError(
                f"unknown ROUGE type {name!r}; use 'rouge1', 'rouge2', ... or 'rougeL'"
            )
    return orders


class _Tokens:
    """A token list with its n-gram counts computed once and reused across references."""

    __slots__ = ("_counts", "tokens")

    def __init__(self, tokens: Sequence[Hashable]) -> None:
        self.tokens = list(tokens)
        self._counts: dict[int, Counter[Hashable]] = {}

    def ngrams(self, n: int) -> Counter[Hashable]:
        counts = self._counts.get(n)
        if counts is None:
            tokens = self.tokens
            if n == 1:
                counts = Counter(tokens)
            else:
                counts = Counter(zip(*(tokens[i:] for i in range(n))))
            self._counts[n] = counts
        return counts


def _score(predicted: _Tokens, reference: _Tokens, orders: dict[str, int]) -> dict[str, RougeScore]:
    scores: dict[str, RougeScore] = {}
    for name, n in orders.items():
        if n == 0:
            pred_size, ref_size = len(predicted.tokens), len(reference.tokens)
            overlap = (
                _lcs_length(predicted.tokens, reference.tokens) if pred_size and ref_size else 0
            )
        else:
            pred_counts, ref_counts = predicted.ngrams(n), reference.ngrams(n)
            pred_size = max(len(predicted.tokens) - n + 1, 0)
            ref_size = max(len(reference.tokens) - n + 1, 0)
            overlap = _clipped_overlap(pred_counts, ref_counts)
        precision = overlap / pred_size if pred_size else 0.0
        recall = overlap / ref_size if ref_size else 0.0
        fmeasure = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        scores[name] = RougeScore(precision, recall, fmeasure)
    return scores


def _clipped_overlap(a: Counter[Hashable], b: Counter[Hashable]) -> int:
    # Intersecting the key views runs in C; only shared n-grams reach the Python loop.
    return sum([min(a[gram], b[gram]) for gram in a.keys() & b.keys()])


def _lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison and Dix 1986).

    Bit i of ``row`` stands for position i of ``a`` (the longer list). Each token of ``b``
    updates the whole row with a few big-integer operations; at the end the LCS length is the
    number of zero bits among the ``len(a)`` low bits.
    """
    if len(a) < len(b):
        a, b = b, a
    masks: dict[Hashable, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(a)) - 1
    row = full
    for token in b:
        mask = masks.get(token)
        if mask is not None:
            matched = row & mask
            row = ((row + matched) | (row - matched)) & full
    return len(a) - row.bit_count()
