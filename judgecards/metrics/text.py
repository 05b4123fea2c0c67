"""Answer-matching metrics for short answers: exact match, SQuAD token F1 and substring recall.

Every per-example function takes one prediction and one or several references and returns a
float in [0, 1]; with several references the best-matching one counts (the maximum). The
``mean_*`` functions average a per-example metric over a data set and return an `Estimate` with
a bootstrap interval over examples. Scores are fractions, not percentages (the official SQuAD
script prints 100 times these values).

Normalisation is the official SQuAD one (`normalize_answer`), identical in the v1.1 and v2.0
evaluation scripts, applied in this order:

1. lower-case;
2. delete every character in ``string.punctuation`` (ASCII punctuation only; ``’`` or ``–``
   survive);
3. replace the whole words ``a``, ``an`` and ``the`` with a space (regex ``\\b(a|an|the)\\b``);
4. collapse runs of whitespace to one space and strip the ends.

Pass ``normalize=None`` to compare raw strings (and split tokens on whitespace only), or any
``str -> str`` function of your own, e.g. ``str.lower``.

References that normalise to the empty string are ignored, unless all of them do; then the
expected answer is the empty string ("no answer", as in SQuAD v2.0).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeAlias

from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = [
    "Normalizer",
    "References",
    "exact_match",
    "mean_exact_match",
    "mean_substring_recall",
    "mean_token_f1",
    "normalize_answer",
    "substring_recall",
    "token_f1",
]

Normalizer: TypeAlias = Callable[[str], str]
"""A function applied to predictions and references before they are compared."""

References: TypeAlias = str | Sequence[str]
"""One reference string, or several (the best match counts)."""

_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Normalise an answer the way the official SQuAD evaluation scripts do.

    Lower-case, delete ASCII punctuation, replace the words a/an/the with a space and collapse
    whitespace, in that order. ``normalize_answer("The  N.Y.C.!")`` is ``"nyc"``.

    Args:
        text: any string.

    Returns:
        The normalised string; ``""`` when nothing but punctuation, articles and spaces remain.
    """
    text = text.lower().translate(_DROP_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(
    prediction: str, references: References, *, normalize: Normalizer | None = normalize_answer
) -> float:
    """1.0 if the normalised prediction equals any normalised reference, else 0.0.

    ``exact_match("nyc", ["New York City", "NYC"])`` is 1.0: "nyc" equals the normalised "NYC".

    Args:
        prediction: the model's answer.
        references: one reference or several; the best match counts.
        normalize: applied to both sides first; default `normalize_answer` (see the module
            docstring); ``None`` compares the raw strings.

    Returns:
        1.0 or 0.0.

    Raises:
        ValueError: if ``references`` is an empty sequence.
    """
    norm = normalize or _unchanged
    predicted = norm(prediction)
    return (
        1.0 if any(predicted == gold for gold in _normalised_references(references, norm)) else 0.0
    )


def token_f1(
    prediction: str, references: References, *, normalize: Normalizer | None = normalize_answer
) -> float:
    """SQuAD token F1: harmonic mean of bag-of-tokens precision and recall, best reference.

    Both sides are normalised, then split on whitespace. The overlap is the multiset
    intersection of the two token bags (a token counts as often as it occurs on both sides).
    If either side has no tokens the score is 1.0 when both are empty and 0.0 otherwise (the
    SQuAD v2.0 rule for "no answer").

    Worked example: "cat sat on" vs "the cat sat". With the default SQuAD normalisation the
    reference becomes "cat sat": overlap 2, precision 2/3, recall 2/2, F1 = 0.8. With
    ``normalize=None`` the article stays: overlap 2, precision 2/3, recall 2/3, F1 = 2/3.

    Args:
        prediction: the model's answer.
        references: one reference or several; the maximum F1 counts.
        normalize: as in `exact_match`.

    Returns:
        F1 in [0, 1].

    Raises:
        ValueError: if ``references`` is an empty sequence.
    """
    norm = normalize or _unchanged
    predicted = norm(prediction).split()
    return max(
        _bag_f1(predicted, gold.split()) for gold in _normalised_references(references, norm)
    )


def substring_recall(prediction: str, references: References) -> float:
    """1.0 if any reference occurs inside the prediction, ignoring case, else 0.0.

    Case is ignored with ``str.casefold``; nothing else is normalised (punctuation and spacing
    must match). Useful for long, chatty answers where exact match is hopeless:
    ``substring_recall("It was Paris, I think.", ["paris"])`` is 1.0.

    Args:
        prediction: the model's answer.
        references: one reference or several; empty references are ignored.

    Returns:
        1.0 or 0.0.

    Raises:
        ValueError: if there is no non-empty reference.
    """
    haystack = prediction.casefold()
    needles = [ref.casefold() for ref in _reference_list(references) if ref.strip()]
    if not needles:
        raise ValueError("substring_recall needs at least one non-empty reference")
    return 1.0 if any(needle in haystack for needle in needles) else 0.0


def mean_exact_match(
    predictions: Sequence[str],
    references: Sequence[References],
    *,
    normalize: Normalizer | None = normalize_answer,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean `exact_match` over a data set, with a bootstrap interval over examples.

    Args:
        predictions: one answer per example.
        references: for each example, one reference or a sequence of references.
        normalize: as in `exact_match`.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples (see `bootstrap_ci`).
        seed: bootstrap seed.

    Returns:
        An `Estimate` of the fraction of examples matched exactly.
    """
    scores = [exact_match(p, r, normalize=normalize) for p, r in _pairs(predictions, references)]
    return bootstrap_ci(scores, level=level, n_resamples=n_resamples, seed=seed)


def mean_token_f1(
    predictions: Sequence[str],
    references: Sequence[References],
    *,
    normalize: Normalizer | None = normalize_answer,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean `token_f1` over a data set, with a bootstrap interval over examples.

    Args:
        predictions: one answer per example.
        references: for each example, one reference or a sequence of references.
        normalize: as in `token_f1`.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of the mean F1.
    """
    scores = [token_f1(p, r, normalize=normalize) for p, r in _pairs(predictions, references)]
    return bootstrap_ci(scores, level=level, n_resamples=n_resamples, seed=seed)


def mean_substring_recall(
    predictions: Sequence[str],
    references: Sequence[References],
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean `substring_recall` over a data set, with a bootstrap interval over examples.

    Args:
        predictions: one answer per example.
        references: for each example, one reference or a sequence of references.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of the fraction of examples containing a reference.
    """
    scores = [substring_recall(p, r) for p, r in _pairs(predictions, references)]
    return bootstrap_ci(scores, level=level, n_resamples=n_resamples, seed=seed)


def _unchanged(text: str) -> str:
    return text


def _reference_list(references: References) -> list[str]:
    if isinstance(references, str):
        return [references]
    refs = list(references)
    if not refs:
        raise ValueError("at least one reference is needed")
    for ref in refs:
        if not isinstance(ref, str):
            raise TypeError(f"references must be strings, got {type(ref).__name__}")
    return refs


def _normalised_references(references: References, norm: Normalizer) -> list[str]:
    golds = [norm(ref) for ref in _reference_list(references)]
    # SQuAD v2.0: references that normalise to "" carry no answer; if none is left, the
    # question is unanswerable and the only correct prediction is the empty one.
    return [gold for gold in golds if gold] or [""]


def _bag_f1(predicted: list[str], gold: list[str]) -> float:
    if not predicted or not gold:
        return float(predicted == gold)
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def _pairs(
    predictions: Sequence[str], references: Sequence[References]
) -> zip[tuple[str, References]]:
    if isinstance(predictions, str) or isinstance(references, str):
        raise TypeError("pass a sequence of predictions and a sequence of references, not a string")
    if len(predictions) != len(references):
        raise ValueError(
            f"{len(predictions)} predictions but {len(references)} references; they must pair up"
        )
    return zip(predictions, references)
