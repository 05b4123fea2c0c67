"""Judge–human agreement on categorical and ordinal labels: agreement rate and Cohen's kappa.

Both functions take the judge's labels and the human labels for the same items, in the same
order, and return an `Estimate` whose interval is a percentile bootstrap over items from
`judgecards.metrics.stats.bootstrap_ci` (the one bootstrap in the project).

Kappa is computed here from a confusion matrix with numpy rather than by calling
`sklearn.metrics.cohen_kappa_score` inside every resample (about 1.4 ms a call, so 3 s for 2,000
resamples). The tests check that the two agree, with and without weights, on random data.

Conventions shared by the whole `calibration` package:

* Labels are any hashable values (strings, ints, bools). They are ordered by ``labels`` when given,
  else by sorting the observed values. That order is what "linear" and "quadratic" weights measure
  distance in, so pass ``labels`` for ordinal string scales (``["low", "mid", "high"]``) and for
  numeric scales with unused points (``range(1, 6)``).
* A missing label (``None`` or NaN) is an error here; drop the item or map it to a label of its own
  (e.g. ``"unparsed"``) first. Inter-annotator measures accept missing labels.
* Fewer than 30 items warns with `SmallSampleWarning`: the interval is then wide and the
  percentile bootstrap tends to be too narrow.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from calibration.stats._core import (
    Labels,
    Weights,
    agreement_estimate,
    encode_pair,
    item_weights,
    kappa_estimate,
    warn_if_small,
)
from judgecards.metrics.stats import Estimate

__all__ = ["agreement", "kappa"]


def agreement(
    judge: Labels,
    human: Labels,
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
    sample_weight: Iterable[float] | None = None,
) -> Estimate:
    """Fraction of items on which the judge's label equals the human label.

    Args:
        judge: the judge's label for each item.
        human: the human label for the same items, in the same order.
        level: confidence level of the bootstrap interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed (``None`` for fresh randomness).
        sample_weight: a weight per item, e.g. ``1/π`` for items drawn with known inclusion
            probabilities π (`calibration.stats.uncertainty_sampling`): the weighted share estimates
            the agreement over the population sampled from (the weights are resampled with
            their items).

    Returns:
        An `Estimate` in [0, 1] with a percentile bootstrap interval over items; ``n`` is the
        number of items. With no items the value is ``nan``.

    Raises:
        ValueError: the sequences differ in length or contain a missing label, or a weight is
            not finite and positive.

    Warns:
        SmallSampleWarning: fewer than 30 items.
    """
    _, judge_codes, human_codes = encode_pair(judge, human)
    warn_if_small(len(judge_codes), "agreement", stacklevel=2)
    return agreement_estimate(
        judge_codes,
        human_codes,
        level=level,
        n_resamples=n_resamples,
        seed=seed,
        sample_weight=item_weights(sample_weight, len(judge_codes)),
    )


def kappa(
    judge: Labels,
    human: Labels,
    *,
    weights: Weights | None = None,
    labels: Iterable[Hashable] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
    sample_weight: Iterable[float] | None = None,
) -> Estimate:
    """Cohen's kappa between the judge and the humans, optionally weighted for ordinal labels.

    ``kappa = (p_o - p_e) / (1 - p_e)``, where ``p_o`` is the observed agreement and ``p_e`` the
    agreement expected if judge and humans labelled independently with their own label
    frequencies. 1 is perfect agreement, 0 chance level, negative worse than chance. Weighted
    kappa replaces "agree or not" by a disagreement weight ``|i - j|`` ("linear") or
    ``(i - j)**2`` ("quadratic"), where ``i`` and ``j`` are the positions of the two labels in
    ``labels``; so near misses on a 1–5 or 1–10 scale cost less than far ones. Values equal
    `sklearn.metrics.cohen_kappa_score` with the same ``labels`` and ``weights``.

    Edge cases (as scikit-learn): when both sides give every item one and the same label,
    ``p_e = 1`` and kappa is undefined, so the value is ``nan``; when only one side is constant the
    value is 0. If any bootstrap resample is undefined in this way (likely with rare labels and few
    items) the interval bounds are ``nan``: the data cannot support an interval.

    Args:
        judge: the judge's label for each item.
        human: the human label for the same items, in the same order.
        weights: ``None`` (unweighted), ``"linear"`` or ``"quadratic"``.
        labels: the full label scale in order, e.g. ``range(1, 6)``. Weighted kappa measures
            distance on this scale, so unused points still count. Defaults to the sorted
            observed labels. Every observed label must be in it.
        level: confidence level of the bootstrap interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed (``None`` for fresh randomness).
        sample_weight: a weight per item (e.g. ``1/π``, as for `agreement`); equals
            scikit-learn's ``sample_weight``.

    Returns:
        An `Estimate` in [-1, 1] (or ``nan``) with a percentile bootstrap interval over items.

    Raises:
        ValueError: unequal lengths, a missing label, a label outside ``labels``, or unknown
            ``weights``.

    Warns:
        SmallSampleWarning: fewer than 30 items.
    """
    order, judge_codes, human_codes = encode_pair(judge, human, labels=labels)
    warn_if_small(len(judge_codes), "kappa", stacklevel=2)
    return kappa_estimate(
        judge_codes,
        human_codes,
        len(order),
        weights=weights,
        level=level,
        n_resamples=n_resamples,
        seed=seed,
        sample_weight=item_weights(sample_weight, len(judge_codes)),
    )
