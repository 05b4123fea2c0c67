"""Aggregating judges without human labels: the Dawid–Skene model, fitted by EM.

Each judge is modelled by a confusion matrix ``π_j[true, said]`` and the items by a prior over
true labels; expectation–maximisation alternates between the posterior of each item's label
(E-step) and the priors and confusion matrices that best explain the verdicts (M-step) (Dawid
and Skene, *Applied Statistics* 28(1), 1979). Unlike a majority vote it learns that a judge is
reliable, weak, or systematically inverted (on LLMBar's adversarial sets some judges are worse
than chance) — from the verdicts alone, so it needs no labels but can be fooled when most judges
share the same blind spot.

As in the reference implementation ``crowd-kit`` (which checks this one in the tests), EM starts
from the majority-vote shares, floors confusion entries at 1e-10 before normalising, and stops
when the evidence lower bound per verdict improves by less than ``tol``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration.juries._verdicts import Verdicts, encode_verdicts

__all__ = ["DawidSkeneResult", "dawid_skene"]

_FLOOR = 1e-10


@dataclass(frozen=True)
class DawidSkeneResult:
    """Labels inferred by `dawid_skene`, with what EM learnt about each judge.

    Attributes:
        labels: the most probable label of each item.
        posteriors: items × classes probabilities of each label.
        classes: the label scale (column order of ``posteriors`` and of each confusion matrix).
        priors: the estimated share of each true label.
        confusion: per judge column, ``confusion[j][t, s]`` = P(judge says s | true label t).
        reliability: per judge column, its estimated accuracy ``Σ_t prior_t·confusion[t, t]``.
        iterations: EM iterations run.
        converged: whether the bound stopped improving before ``max_iter``.
    """

    labels: tuple[Hashable, ...]
    posteriors: NDArray[np.float64]
    classes: tuple[Hashable, ...]
    priors: NDArray[np.float64]
    confusion: dict[str, NDArray[np.float64]]
    reliability: dict[str, float]
    iterations: int
    converged: bool


def dawid_skene(
    verdicts: Verdicts,
    *,
    judges: Sequence[str] | None = None,
    labels: Iterable[Hashable] | None = None,
    max_iter: int = 100,
    tol: float = 1e-5,
) -> DawidSkeneResult:
    """Infer each item's label from several judges' verdicts, without human labels.

    Args:
        verdicts: items × judges matrix of labels; ``None``/NaN where a judge gave none. For
            pairwise judges, one column per answer order works well (each order is a "judge").
        judges: a unique name per column (default ``"judge 0"``, …).
        labels: the label scale; default the sorted observed labels.
        max_iter: the most EM iterations to run.
        tol: stop when the evidence lower bound per verdict improves by less than this.

    Returns:
        A `DawidSkeneResult`: labels, posteriors, priors and each judge's confusion matrix and
        estimated accuracy.

    Raises:
        ValueError: a ragged or empty matrix, duplicate judge names, fewer than two labels, or
            no item any judge labelled. (An item no judge labelled gets the prior as its
            posterior.)
    """
    coded = encode_verdicts(verdicts, judges=judges, labels=labels)
    if len(set(coded.judges)) != len(coded.judges):
        raise ValueError("judges must name each column once (Dawid–Skene models every column)")
    if max_iter < 1 or not tol > 0:
        raise ValueError(f"max_iter must be >= 1 and tol > 0, got {max_iter} and {tol}")
    codes, k = coded.codes, len(coded.classes)
    # An item no judge gave a verdict on (every reply unparsed) carries no evidence: EM runs on
    # the others, and its posterior is the prior, as the model says (fit_jury and majority_vote
    # accept such items too).
    answered = np.asarray((codes >= 0).any(axis=1), dtype=bool)
    codes_all_rows = len(codes)
    if not answered.any():
        raise ValueError("no item has a verdict from any judge")
    codes = codes[answered]
    seen = codes >= 0
    # said[i, j, s] = 1 when judge j said label s on item i.
    said = np.zeros((*codes.shape, k))
    rows, cols = np.nonzero(seen)
    said[rows, cols, codes[rows, cols]] = 1.0

    posteriors = said.sum(axis=1) / said.sum(axis=(1, 2))[:, None]  # majority-vote shares
    priors = posteriors.mean(axis=0)
    confusion = _m_step(said, posteriors)
    bound, converged, iterations = -math.inf, False, 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 — the count is reported
        posteriors = _e_step(said, priors, confusion)
        priors = posteriors.mean(axis=0)
        confusion = _m_step(said, posteriors)
        new_bound = _lower_bound(said, posteriors, priors, confusion) / int(seen.sum())
        if new_bound - bound < tol:
            converged = True
            break
        bound = new_bound
    everyone = np.tile(priors, (codes_all_rows, 1))
    everyone[answered] = posteriors
    posteriors = everyone
    best = posteriors.argmax(axis=1)
    per_judge = {name: confusion[j] for j, name in enumerate(coded.judges)}
    return DawidSkeneResult(
        labels=tuple(coded.classes[c] for c in best),
        posteriors=posteriors,
        classes=coded.classes,
        priors=priors,
        confusion=per_judge,
        reliability={n: float(priors @ np.diag(m)) for n, m in per_judge.items()},
        iterations=iterations,
        converged=converged,
    )


def _m_step(said: NDArray[np.float64], posteriors: NDArray[np.float64]) -> NDArray[np.float64]:
    # counts[j, t, s] = expected number of items of true label t on which judge j said s.
    counts = np.einsum("it,ijs->jts", posteriors, said)
    counts = np.maximum(counts, _FLOOR)
    normalised: NDArray[np.float64] = counts / counts.sum(axis=2, keepdims=True)
    return normalised


def _e_step(
    said: NDArray[np.float64], priors: NDArray[np.float64], confusion: NDArray[np.float64]
) -> NDArray[np.float64]:
    log_like = np.log(np.maximum(priors, _FLOOR)) + np.einsum(
        "ijs,jts->it", said, np.log(confusion)
    )
    log_like -= log_like.max(axis=1, keepdims=True)
    like = np.exp(log_like)
    result: NDArray[np.float64] = like / like.sum(axis=1, keepdims=True)
    return result


def _lower_bound(
    said: NDArray[np.float64],
    posteriors: NDArray[np.float64],
    priors: NDArray[np.float64],
    confusion: NDArray[np.float64],
) -> float:
    # E_q[log p(verdicts, labels)] + H(q), the quantity EM increases.
    log_joint = np.einsum("ijs,jts->it", said, np.log(confusion))
    log_joint += np.log(np.maximum(priors, _FLOOR)) * (said.sum(axis=(1, 2)) > 0)[:, None]
    q = np.maximum(posteriors, _FLOOR)
    return float((posteriors * log_joint).sum() - (q * np.log(q)).sum())
