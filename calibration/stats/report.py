"""One call for a judge–human calibration report: `calibrate`.

It gathers, for one label field (a verdict, or one score axis), the agreement rate, Cohen's kappa
(plus linear- and quadratic-weighted kappa for ordinal scales), the confusion matrix and per-class
precision/recall/F1 from scikit-learn, and optionally the human ceiling from `inter_annotator`.
A card with a verdict and several score axes gets one report per field.

Orientation: the humans are the reference. Confusion rows are human labels and columns the judge's;
per-class precision is "of the items the judge gave label X, the share humans also labelled X",
recall "of the items humans labelled X, the share the judge also did".
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from calibration.stats._core import (
    MIN_ITEMS,
    Labels,
    SmallSampleWarning,
    agreement_estimate,
    as_list,
    encode_pair,
    format_estimate,
    item_weights,
    kappa_estimate,
    warn_if_small,
)
from calibration.stats.interrater import InterAnnotatorReport, inter_annotator
from judgecards.metrics.stats import Estimate

__all__ = ["AgreementReport", "ClassScores", "calibrate"]


@dataclass(frozen=True)
class ClassScores:
    """The judge treated as a classifier of one label, against human labels.

    Attributes:
        label: the label.
        precision: share of the judge's uses of ``label`` where humans agree; ``nan`` if the
            judge never used it.
        recall: share of the human uses of ``label`` the judge matched; ``nan`` if humans never
            used it.
        f1: harmonic mean of precision and recall (0 when either is 0; ``nan`` when neither
            side used the label).
        support: number of items humans gave ``label``.
    """

    label: Hashable
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class AgreementReport:
    """Judge–human agreement on one label field.

    Attributes:
        n: number of items.
        labels: the label scale, in the order used by ``confusion`` and the weights.
        agreement: exact agreement rate.
        kappa: unweighted Cohen's kappa.
        linear_kappa: linear-weighted kappa (ordinal reports only, else ``None``).
        quadratic_kappa: quadratic-weighted kappa (ordinal reports only, else ``None``).
        confusion: counts, ``confusion[i][j]`` = items humans labelled ``labels[i]`` and the
            judge ``labels[j]``.
        per_class: precision, recall, F1 and support per label, in ``labels`` order.
        human_ceiling: agreement among the human raters on these items, when given.
    """

    n: int
    labels: tuple[Hashable, ...]
    agreement: Estimate
    kappa: Estimate
    linear_kappa: Estimate | None
    quadratic_kappa: Estimate | None
    confusion: tuple[tuple[int, ...], ...]
    per_class: tuple[ClassScores, ...]
    human_ceiling: InterAnnotatorReport | None = None

    @property
    def macro_f1(self) -> float:
        """Unweighted mean F1 over the labels that humans or the judge used."""
        used = [c.f1 for c in self.per_class if not math.isnan(c.f1)]
        return float(np.mean(used)) if used else math.nan

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-ready apart from ``nan`` and non-string labels)."""
        return {
            "n": self.n,
            "labels": list(self.labels),
            "agreement": self.agreement.to_dict(),
            "kappa": self.kappa.to_dict(),
            "linear_kappa": None if self.linear_kappa is None else self.linear_kappa.to_dict(),
            "quadratic_kappa": (
                None if self.quadratic_kappa is None else self.quadratic_kappa.to_dict()
            ),
            "confusion": [list(row) for row in self.confusion],
            "per_class": [
                {
                    "label": c.label,
                    "precision": c.precision,
                    "recall": c.recall,
                    "f1": c.f1,
                    "support": c.support,
                }
                for c in self.per_class
            ],
            "macro_f1": self.macro_f1,
            "human_ceiling": None if self.human_ceiling is None else self.human_ceiling.to_dict(),
        }

    def as_text(self) -> str:
        """Readable tables: headline measures (with the human ceiling), confusion, per class."""
        pct = round(self.agreement.level * 100)
        lines = [f"Judge vs human: {self.n} items ({pct}% CI)"]
        rows: list[tuple[str, Estimate | None]] = [
            ("agreement", self.agreement),
            ("Cohen's kappa", self.kappa),
            ("linear-weighted kappa", self.linear_kappa),
            ("quadratic-weighted kappa", self.quadratic_kappa),
        ]
        lines += [f"  {name:<26}{format_estimate(e)}" for name, e in rows if e is not None]
        ceiling = self.human_ceiling
        if ceiling is not None:  # the human ceiling, right under the judge's numbers
            n_pairs = len(ceiling.pairs)
            kappa_note = f"(mean over {n_pairs} rater pair{'s' * (n_pairs != 1)})"
            alpha_note = f"(Krippendorff, {ceiling.metric}, {len(ceiling.raters)} raters)"
            lines += [
                f"  {'human-human kappa':<26}{ceiling.mean_pairwise_kappa:.3f} {kappa_note}",
                f"  {'human-human alpha':<26}{format_estimate(ceiling.krippendorff_alpha)} "
                + alpha_note,
            ]
        names = [str(label) for label in self.labels]
        width = max([len(n) for n in names] + [9])
        lines += ["", "Confusion (rows = human, columns = judge)"]
        lines.append("  " + " " * width + "".join(f"  {n:>{width}}" for n in names))
        for name, row in zip(names, self.confusion, strict=True):
            lines.append(f"  {name:<{width}}" + "".join(f"  {c:>{width}}" for c in row))
        lines += [
            "",
            f"  {'label':<{width}}"
            + "".join(f"  {h:>9}" for h in ("precision", "recall", "F1", "support")),
        ]
        for name, c in zip(names, self.per_class, strict=True):
            lines.append(
                f"  {name:<{width}}  {c.precision:>9.3f}  {c.recall:>9.3f}  {c.f1:>9.3f}"
                f"  {c.support:>9}"
            )
        lines.append(f"  {'macro F1':<{width}}  {'':>9}  {'':>9}  {self.macro_f1:>9.3f}")
        return "\n".join(lines)


def calibrate(  # noqa: PLR0913  public API: keyword-only options
    judge: Labels,
    human: Labels,
    *,
    ordinal: bool = False,
    labels: Iterable[Hashable] | None = None,
    raters: Mapping[str, Labels] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
    sample_weight: Iterable[float] | None = None,
) -> AgreementReport:
    """Judge–human agreement report for one label field.

    Args:
        judge: the judge's label per item.
        human: the reference human label per item (e.g. the adjudicated or majority label).
        ordinal: the labels form a scale (1–5 axis, 1–10 rating, or an ordered verdict); adds
            linear- and quadratic-weighted kappa, and uses an ordinal Krippendorff's alpha for the
            ceiling.
        labels: the full scale in order, e.g. ``range(1, 6)``; defaults to the sorted observed
            labels. Needed for ordinal string labels and to show unused points of a scale.
        raters: individual human raters' labels on the same items (``{name: labels}``, ``None``
            for a skipped item) to compute the human ceiling with `inter_annotator`.
        level: confidence level of every interval.
        n_resamples: bootstrap resamples per interval.
        seed: bootstrap seed.
        sample_weight: a weight per item (``1/π`` for an audit drawn with known inclusion
            probabilities): agreement and every kappa are weighted; the confusion matrix and
            per-class scores still count the sampled items.

    Returns:
        An `AgreementReport`.

    Raises:
        ValueError: unequal lengths (judge, human and every rater), missing judge or human
            labels, or labels outside ``labels``.

    Warns:
        SmallSampleWarning: fewer than 30 items (once per call), or fewer than 30 items with
            two or more rater labels for the ceiling.
    """
    order, judge_codes, human_codes = encode_pair(judge, human, labels=labels)
    n = len(judge_codes)
    warn_if_small(n, "calibration report", stacklevel=2)
    boot: dict[str, Any] = {"level": level, "n_resamples": n_resamples, "seed": seed}
    item_weight = item_weights(sample_weight, n)
    k = len(order)
    weighted = (
        tuple(
            kappa_estimate(
                judge_codes, human_codes, k, weights=w, sample_weight=item_weight, **boot
            )
            for w in ("linear", "quadratic")
        )
        if ordinal
        else (None, None)
    )
    positions = list(range(k))
    confusion = confusion_matrix(human_codes, judge_codes, labels=positions)
    precision, recall, f1, support = precision_recall_fscore_support(
        human_codes, judge_codes, labels=positions, zero_division=np.nan
    )
    per_class = tuple(
        ClassScores(order[i], float(precision[i]), float(recall[i]), float(f1[i]), int(support[i]))
        for i in positions
    )
    ceiling = None
    if raters is not None:
        for name, rater_labels in raters.items():
            if len(as_list(rater_labels, f"labels of rater {name!r}")) != n:
                raise ValueError(f"rater {name!r} must have one entry per item ({n})")
        with warnings.catch_warnings():
            if n < MIN_ITEMS:  # already warned above; one warning per call is enough
                warnings.simplefilter("ignore", SmallSampleWarning)
            ceiling = inter_annotator(
                raters,
                metric="ordinal" if ordinal else "nominal",
                # the caller's scale if given; else the raters' own labels, which may include
                # one that neither the judge nor the reference label uses
                labels=None if labels is None else order,
                **boot,
            )
    return AgreementReport(
        n=n,
        labels=order,
        agreement=agreement_estimate(judge_codes, human_codes, sample_weight=item_weight, **boot),
        kappa=kappa_estimate(
            judge_codes, human_codes, k, weights=None, sample_weight=item_weight, **boot
        ),
        linear_kappa=weighted[0],
        quadratic_kappa=weighted[1],
        confusion=tuple(tuple(int(c) for c in row) for row in confusion),
        per_class=per_class,
        human_ceiling=ceiling,
    )
