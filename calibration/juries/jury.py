"""Several judges on the same items, aggregated: majority, weights fitted on labels, and a check.

* `majority_vote` — one vote per column; ties are left undecided, and the winning share is the
  jury's split, a confidence `calibration.selective_threshold` can use.
* `fit_jury` — a regularised (L2) logistic regression from every judge's verdicts (one-hot per
  column, so both answer orders of a pairwise judge enter separately) to the human label. It
  learns whom to follow, whom to ignore and whom to invert: on LLMBar, ChatGPT's verdicts are
  worse than chance and get a negative weight.
* `evaluate_jury` — the fitted jury held out (k-fold, repeated), beside each judge alone, the
  naive majority and Dawid–Skene (`calibration.juries.dawid_skene_model`), and a note that says plainly when
  the jury does worse than its best judge. On LLMBar's 419 items the naive majority of six judges
  gets 0.603 where GPT-4 alone gets 0.845: a jury can hurt, and this is how to know.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibration.juries._verdicts import (
    CodedVerdicts,
    Verdicts,
    column_accuracy,
    encode_verdicts,
    human_codes,
)
from calibration.juries.dawid_skene_model import dawid_skene

__all__ = [
    "FittedJury",
    "JudgeReliability",
    "JuryEvaluation",
    "MajorityVote",
    "evaluate_jury",
    "fit_jury",
    "majority_vote",
]


@dataclass(frozen=True)
class MajorityVote:
    """The outcome of `majority_vote`.

    Attributes:
        labels: the label with the most votes per item; ``None`` where the top labels tie or
            no judge gave a verdict.
        classes: the label scale (column order of ``shares``).
        shares: items × classes share of the item's (non-missing) votes for each label.
    """

    labels: tuple[Hashable | None, ...]
    classes: tuple[Hashable, ...]
    shares: NDArray[np.float64]

    @property
    def confidence(self) -> NDArray[np.float64]:
        """The winning share per item (1.0 when unanimous): the jury's split."""
        top: NDArray[np.float64] = self.shares.max(axis=1)
        return top

    def accuracy(self, human: Sequence[Any] | NDArray[Any]) -> float:
        """Agreement with human labels, a tie broken at random (scored 1/t for t tied labels
        that include the human one), so a 6–6 split counts as half right, not as wrong.

        Args:
            human: the human label of each item.

        Returns:
            The expected agreement in [0, 1].
        """
        index = {label: c for c, label in enumerate(self.classes)}
        top = self.shares == self.shares.max(axis=1, keepdims=True)
        top &= self.shares > 0
        score = 0.0
        for i, label in enumerate(human):
            c = index.get(label)
            if c is not None and top[i, c]:
                score += 1.0 / top[i].sum()
        return score / len(self.labels)


def majority_vote(verdicts: Verdicts, *, labels: Iterable[Hashable] | None = None) -> MajorityVote:
    """One vote per column, the most frequent label wins.

    Args:
        verdicts: items × judges matrix of labels; ``None``/NaN where a judge gave none.
        labels: the label scale; default the sorted observed labels.

    Returns:
        A `MajorityVote` with the winning labels (``None`` on ties), the vote shares and the
        split as a confidence.

    Raises:
        ValueError: a ragged or empty matrix, or fewer than two labels.
    """
    coded = encode_verdicts(verdicts, judges=None, labels=labels)
    shares = _vote_shares(coded)
    labels_out: list[Hashable | None] = []
    for row in shares:
        best = np.flatnonzero(row == row.max())
        labels_out.append(coded.classes[best[0]] if row.max() > 0 and best.size == 1 else None)
    return MajorityVote(tuple(labels_out), coded.classes, shares)


@dataclass(frozen=True)
class JudgeReliability:
    """How much one judge counts in a fitted jury.

    Attributes:
        judge: the judge's name (its columns are combined).
        agreement: its agreement with the human labels it was fitted on, averaged over its
            columns (a missing verdict is wrong).
        weight: the log-odds the jury adds for the label this judge votes, summed over its
            columns; negative when the jury learnt to do the opposite of what it says.
    """

    judge: str
    agreement: float
    weight: float


class FittedJury:
    """A jury whose weights were fitted on human labels (see `fit_jury`).

    Attributes:
        classes: the label scale, in the column order of `predict_proba`.
        judges: the name of each verdict column, as fitted.
        reliability: one `JudgeReliability` per judge, strongest weight first.
    """

    def __init__(self, model: Any, coded: CodedVerdicts, truth: NDArray[np.intp]) -> None:
        self._model = model
        self.classes = coded.classes
        self.judges = coded.judges
        self.reliability = _reliability(model, coded, truth)

    def predict_proba(self, verdicts: Verdicts) -> NDArray[np.float64]:
        """Probability of each label per item.

        Args:
            verdicts: items × judges, the same columns in the same order as when fitted.

        Returns:
            Items × classes probabilities.
        """
        coded = encode_verdicts(verdicts, judges=self.judges, labels=self.classes)
        full = np.zeros((len(coded.codes), len(self.classes)))
        full[:, self._model.classes_] = self._model.predict_proba(coded.one_hot())
        return full

    def predict(self, verdicts: Verdicts) -> list[Hashable]:
        """The jury's label per item.

        Args:
            verdicts: items × judges, the same columns in the same order as when fitted.

        Returns:
            The most probable label of each item.
        """
        return [self.classes[c] for c in self.predict_proba(verdicts).argmax(axis=1)]


def fit_jury(
    verdicts: Verdicts,
    human: Sequence[Any] | NDArray[Any],
    *,
    judges: Sequence[str] | None = None,
    labels: Iterable[Hashable] | None = None,
    regularization: float = 1.0,
) -> FittedJury:
    """Fit each judge's weight on human labels: an L2-regularised logistic regression.

    Args:
        verdicts: items × judges matrix of labels (``None``/NaN where a judge gave none); for
            pairwise judges pass both answer orders as separate columns.
        human: the human label of each item.
        judges: a name per column; repeat a name for a judge's several columns (e.g. both
            orders) to have them reported together.
        labels: the label scale; default the sorted labels seen in verdicts and human.
        regularization: inverse strength of the L2 penalty (scikit-learn's ``C``); smaller
            trusts the labels less.

    Returns:
        A `FittedJury` with ``predict``/``predict_proba`` and per-judge ``reliability``.

    Raises:
        ValueError: shapes disagree, a label is missing in ``human``, a label outside
            ``labels``, fewer than two labels, or ``regularization`` <= 0.
    """
    from sklearn.linear_model import LogisticRegression

    if not regularization > 0:
        raise ValueError(f"regularization must be > 0, got {regularization}")
    human_values = list(human.tolist() if isinstance(human, np.ndarray) else human)
    coded = encode_verdicts(verdicts, judges=judges, labels=labels, extra=human_values)
    truth = human_codes(human_values, coded)
    if np.unique(truth).size < 2:
        raise ValueError("the human labels hold a single label: there is nothing to fit")
    # Newton–Cholesky converges in a few steps on these small one-hot designs (15 ms on LLMBar
    # where lbfgs took 180 ms); scikit-learn < 1.6 has it for two classes only.
    solver = "newton-cholesky" if len(coded.classes) == 2 else "lbfgs"
    model = LogisticRegression(C=regularization, solver=solver, max_iter=2000)
    model.fit(coded.one_hot(), truth)
    return FittedJury(model, coded, truth)


@dataclass(frozen=True)
class JuryEvaluation:
    """A fitted jury held out, beside its judges alone and the label-free aggregators.

    Attributes:
        jury: the fitted jury's held-out accuracy, mean over repeats of k-fold.
        jury_spread: the standard deviation of that accuracy over the repeats.
        majority: the naive majority's accuracy (ties count as half right).
        dawid_skene: the accuracy of Dawid–Skene labels (fitted without the human labels).
        judges: each judge's accuracy alone, averaged over its columns.
        best_judge: the most accurate judge alone.
    """

    jury: float
    jury_spread: float
    majority: float
    dawid_skene: float
    judges: dict[str, float]
    best_judge: str

    @property
    def hurts(self) -> bool:
        """True when the fitted jury is less accurate held out than its best judge alone."""
        return self.jury < self.judges[self.best_judge]

    @property
    def note(self) -> str:
        """Plain sentences: is the jury worth it, and which aggregators hurt."""
        best = self.judges[self.best_judge]
        lines = [
            f"fitted jury {self.jury:.3f} held out vs {self.best_judge} alone {best:.3f}: "
            + (f"the jury hurts; use {self.best_judge} alone" if self.hurts else "the jury helps")
        ]
        for name, value in (("majority vote", self.majority), ("Dawid–Skene", self.dawid_skene)):
            if value < best:
                lines.append(f"{name} {value:.3f} hurts: worse than {self.best_judge} alone")
        return "; ".join(lines)


def evaluate_jury(
    verdicts: Verdicts,
    human: Sequence[Any] | NDArray[Any],
    *,
    judges: Sequence[str] | None = None,
    labels: Iterable[Hashable] | None = None,
    folds: int = 5,
    repeats: int = 20,
    regularization: float = 1.0,
    seed: int = 0,
) -> JuryEvaluation:
    """Is a fitted jury better than its best judge? Repeated stratified k-fold, held out.

    Args:
        verdicts: items × judges matrix of labels, as for `fit_jury`.
        human: the human label of each item.
        judges: a name per column (repeat a name for a judge's several columns).
        labels: the label scale; default the sorted labels seen.
        folds: folds per repeat (each fold is fitted on the others and scored).
        repeats: repeats with different fold assignments; the accuracy is their mean.
        regularization: as in `fit_jury`.
        seed: seed of the first repeat's folds (repeat r uses ``seed + r``).

    Returns:
        A `JuryEvaluation`; its ``hurts`` and ``note`` say whether to use the jury.

    Raises:
        ValueError: as `fit_jury`, or a human label held by fewer items than ``folds``.
    """
    from sklearn.model_selection import StratifiedKFold

    human_values = list(human.tolist() if isinstance(human, np.ndarray) else human)
    coded = encode_verdicts(verdicts, judges=judges, labels=labels, extra=human_values)
    truth = human_codes(human_values, coded)
    if folds < 2 or repeats < 1:
        raise ValueError(f"folds must be >= 2 and repeats >= 1, got {folds} and {repeats}")
    held = np.bincount(truth)
    if held[held > 0].min() < folds:
        raise ValueError(
            f"a human label is held by {int(held[held > 0].min())} item(s), fewer than "
            f"folds={folds}"
        )
    matrix = _as_object_matrix(coded)
    scores = []
    for r in range(repeats):
        predicted = np.empty(len(truth), dtype=np.intp)
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed + r)
        for train, test in splitter.split(np.zeros(len(truth)), truth):
            jury = fit_jury(
                matrix[train],
                [coded.classes[c] for c in truth[train]],
                judges=coded.judges,
                labels=coded.classes,
                regularization=regularization,
            )
            predicted[test] = jury.predict_proba(matrix[test]).argmax(axis=1)
        scores.append(float(np.mean(predicted == truth)))
    alone = column_accuracy(coded, truth)
    named = [coded.classes[c] for c in truth]
    unique_columns = tuple(f"{name} #{j}" for j, name in enumerate(coded.judges))
    ds = dawid_skene(matrix, judges=unique_columns, labels=coded.classes)
    return JuryEvaluation(
        jury=float(np.mean(scores)),
        jury_spread=float(np.std(scores)),
        majority=majority_vote(matrix, labels=coded.classes).accuracy(named),
        dawid_skene=float(np.mean([a == b for a, b in zip(ds.labels, named)])),
        judges=alone,
        best_judge=max(alone, key=lambda name: alone[name]),
    )


def _vote_shares(coded: CodedVerdicts) -> NDArray[np.float64]:
    k = len(coded.classes)
    counts = np.zeros((len(coded.codes), k))
    for c in range(k):
        counts[:, c] = (coded.codes == c).sum(axis=1)
    total = counts.sum(axis=1, keepdims=True)
    shares: NDArray[np.float64] = np.divide(
        counts, total, out=np.zeros_like(counts), where=total > 0
    )
    return shares


def _as_object_matrix(coded: CodedVerdicts) -> NDArray[Any]:
    """The labels back from codes (missing as None), for refitting on subsets of items."""
    lookup = np.empty(len(coded.classes) + 1, dtype=object)
    lookup[:-1] = coded.classes
    lookup[-1] = None
    out: NDArray[Any] = lookup[coded.codes]  # code -1 picks the trailing None
    return out


def _reliability(
    model: Any, coded: CodedVerdicts, truth: NDArray[np.intp]
) -> tuple[JudgeReliability, ...]:
    k = len(coded.classes)
    # Logit contributions as a (classes × features) matrix, whatever scikit-learn's shape for
    # two classes (one row for the second class against the first).
    coef = np.zeros((k, coded.codes.shape[1] * k))
    fitted = np.asarray(model.classes_)
    if len(fitted) == 2 and model.coef_.shape[0] == 1:
        coef[fitted[1]] = model.coef_[0]
    else:
        coef[fitted] = model.coef_
    weights: dict[str, float] = {}
    for j, name in enumerate(coded.judges):
        block = coef[:, j * k : (j + 1) * k]  # block[c, s]: pull towards class c when saying s
        support = [block[s, s] - np.delete(block[:, s], s).mean() for s in range(k)]
        weights[name] = weights.get(name, 0.0) + float(np.mean(support))
    agreement = column_accuracy(coded, truth)
    result = [JudgeReliability(name, agreement[name], weights[name]) for name in weights]
    return tuple(sorted(result, key=lambda r: -r.weight))
