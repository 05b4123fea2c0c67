"""Classification metrics with the class balance printed next to the headline.

An accuracy of 0.90 means little if 88% of the items are one class, so `classification_report`
always carries the per-class table (support and predicted counts, their shares, precision,
recall, F1) and the majority-class baseline alongside accuracy and macro/micro F1. The numbers
come from scikit-learn (``accuracy_score``, ``precision_recall_fscore_support``) with
``zero_division=0``: a class that is never predicted has precision 0, a class that never occurs
has recall 0, and neither raises a warning.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = ["ClassStats", "ClassificationReport", "accuracy", "classification_report"]


@dataclass(frozen=True)
class ClassStats:
    """One row of the class-balance table.

    Attributes:
        label: the class.
        support: items whose true label is this class.
        predicted: items predicted as this class.
        support_share: ``support / n``.
        predicted_share: ``predicted / n``.
        precision: of the items predicted as this class, the fraction that are (0 if none).
        recall: of the items of this class, the fraction predicted as it (0 if none).
        f1: harmonic mean of precision and recall (0 when both are 0).
    """

    label: Hashable
    support: int
    predicted: int
    support_share: float
    predicted_share: float
    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class ClassificationReport:
    """Accuracy, macro and micro F1 and the class-balance table.

    Attributes:
        accuracy: fraction of items whose prediction equals the label, with a bootstrap
            interval over items.
        macro_f1: unweighted mean of the per-class F1 over ``classes``.
        micro_f1: F1 of the pooled counts over ``classes``; equals accuracy when every label
            that occurs is among ``classes``.
        majority_baseline: accuracy of always predicting the most frequent true class.
        classes: the class-balance table, one `ClassStats` per class.
        n: number of items.
    """

    accuracy: Estimate
    macro_f1: float
    micro_f1: float
    majority_baseline: float
    classes: tuple[ClassStats, ...]
    n: int

    def __str__(self) -> str:
        headline = (
            f"accuracy {self.accuracy}  macro-F1 {self.macro_f1:.3f}  micro-F1 {self.micro_f1:.3f}"
            f"  majority baseline {self.majority_baseline:.3f}"
        )
        header = (
            f"{'class':<16}{'support':>9}{'share':>8}{'predicted':>11}{'share':>8}"
            f"{'precision':>11}{'recall':>8}{'F1':>7}"
        )
        lines = [headline, header]
        for row in self.classes:
            lines.append(
                f"{str(row.label)[:15]:<16}{row.support:>9}{row.support_share:>8.3f}"
                f"{row.predicted:>11}{row.predicted_share:>8.3f}{row.precision:>11.3f}"
                f"{row.recall:>8.3f}{row.f1:>7.3f}"
            )
        return "\n".join(lines)


def accuracy(
    y_true: Sequence[Hashable],
    y_pred: Sequence[Hashable],
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Fraction of items whose prediction equals the true label, with a bootstrap interval.

    The per-example metric is ``1.0 if y_pred[i] == y_true[i] else 0.0``.

    Args:
        y_true: true labels.
        y_pred: predicted labels, same length and order.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of the accuracy; ``nan`` for no items.
    """
    truth, predicted = _paired_labels(y_true, y_pred)
    correct = [1.0 if t == p else 0.0 for t, p in zip(truth, predicted)]
    return bootstrap_ci(correct, level=level, n_resamples=n_resamples, seed=seed)


def classification_report(
    y_true: Sequence[Hashable],
    y_pred: Sequence[Hashable],
    *,
    labels: Sequence[Hashable] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> ClassificationReport:
    """Accuracy, per-class precision/recall/F1, macro and micro F1, and the class balance.

    Args:
        y_true: true labels (strings, ints or bools; one type per call).
        y_pred: predicted labels, same length and order. A prediction outside the true labels
            (say an unparseable "garbage" verdict) is simply wrong and gets its own row.
        labels: the classes to report, in this order; default every label seen in either
            sequence, sorted. Macro and micro F1 are taken over these classes only.
        level: confidence level of the accuracy interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        A `ClassificationReport`; ``str(report)`` prints the headline and the table.

    Raises:
        ValueError: for no items or sequences of different lengths.
    """
    from sklearn.metrics import f1_score, precision_recall_fscore_support
    from sklearn.utils.multiclass import unique_labels

    truth, predicted = _paired_labels(y_true, y_pred)
    if not truth:
        raise ValueError("classification_report needs at least one item")
    classes = list(labels) if labels is not None else list(unique_labels(truth, predicted))
    if not classes:
        raise ValueError("labels must name at least one class")
    precision, recall, f1, support = precision_recall_fscore_support(
        truth, predicted, labels=classes, average=None, zero_division=0.0
    )
    micro = f1_score(truth, predicted, labels=classes, average="micro", zero_division=0.0)
    n = len(truth)
    predicted_counts = {label: 0 for label in classes}
    for label in predicted:
        if label in predicted_counts:
            predicted_counts[label] += 1
    true_counts: dict[Hashable, int] = {}
    for label in truth:
        true_counts[label] = true_counts.get(label, 0) + 1
    rows = tuple(
        ClassStats(
            label=_plain(label),
            support=int(support[i]),
            predicted=predicted_counts[label],
            support_share=int(support[i]) / n,
            predicted_share=predicted_counts[label] / n,
            precision=float(precision[i]),
            recall=float(recall[i]),
            f1=float(f1[i]),
        )
        for i, label in enumerate(classes)
    )
    return ClassificationReport(
        accuracy=accuracy(truth, predicted, level=level, n_resamples=n_resamples, seed=seed),
        macro_f1=float(np.mean(f1)),
        micro_f1=float(micro),
        majority_baseline=max(true_counts.values()) / n,
        classes=rows,
        n=n,
    )


def _paired_labels(
    y_true: Sequence[Hashable], y_pred: Sequence[Hashable]
) -> tuple[list[Hashable], list[Hashable]]:
    if isinstance(y_true, str) or isinstance(y_pred, str):
        raise TypeError("pass sequences of labels, not a string")
    truth, predicted = list(y_true), list(y_pred)
    if len(truth) != len(predicted):
        raise ValueError(f"{len(truth)} true labels but {len(predicted)} predictions")
    return truth, predicted


def _plain(label: Hashable) -> Hashable:
    """numpy scalars (from sklearn's label sorting) back to Python values for clean printing."""
    item = getattr(label, "item", None)
    return item() if callable(item) and isinstance(label, np.generic) else label
