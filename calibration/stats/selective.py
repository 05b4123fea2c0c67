"""Trust a judge only where it provably agrees with people: selective thresholds.

A judge is often right when it is sure (both answer orders agree, G-Eval puts most probability
on one score, k samples agree) and a coin flip otherwise. `selective_threshold` picks, on a
human-labelled calibration set, the lowest confidence at which the judge may decide alone, such
that with probability at least ``1 - delta`` its agreement with people on the items it decides is
at least ``target``; everything below goes to people. This is fixed-sequence testing as in
"Trust or Escalate" (Jung, Brahman and Choi, ICLR 2025):

1. candidate thresholds are the observed confidences (or ``thresholds`` given in advance), from
   most to least confident, leaving out those that trust too few items to pass even with no
   disagreement (with δ = 0.1 and target 0.9 that is fewer than 22: the top of a continuous
   confidence would otherwise be one item, fail, and end the scan);
2. at each, the trusted items (confidence ≥ threshold) give an exact one-sided Clopper–Pearson
   upper bound, at level ``1 - delta``, on the disagreement rate;
3. a threshold passes when that bound is ≤ ``1 - target``; the scan stops at the first failure
   and the last passing threshold is the answer.

Testing in a fixed order needs no multiple-testing correction, and it does not assume that
agreement rises with confidence: a threshold below a failing one is never tried, even when it
would pass (on LLMBar's adversarial sets weak judges' consistent verdicts are *worse* than
chance, and the test sees it). When the first threshold fails there is no threshold: the
result says so and trusts nothing; there is no fallback that would void the guarantee.

The guarantee is about new items from the same distribution as the calibration set; it says
nothing after the judge, the card or the kind of items changes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "SelectiveThreshold",
    "ThresholdTest",
    "cascade_stage_thresholds",
    "cascade_thresholds",
    "selective_threshold",
]


@dataclass(frozen=True)
class ThresholdTest:
    """One step of the fixed sequence: a candidate threshold and its test.

    Attributes:
        threshold: the candidate confidence; items at or above it are trusted.
        trusted: calibration items at or above it.
        disagreements: how many of those the judge got wrong.
        agreement_bound: lower confidence bound on agreement (1 − the Clopper–Pearson upper
            bound on disagreement) at level ``1 - delta``.
        passed: ``agreement_bound >= target``.
    """

    threshold: float
    trusted: int
    disagreements: int
    agreement_bound: float
    passed: bool


@dataclass(frozen=True)
class SelectiveThreshold:
    """The outcome of `selective_threshold`: a confidence threshold, or none.

    Attributes:
        threshold: the lowest confidence at which the judge decides alone; ``None`` when no
            threshold meets the target (escalate every item).
        target: the agreement the threshold guarantees on trusted items.
        delta: the guarantee holds with probability at least ``1 - delta``.
        coverage: share of calibration items the judge decides (0.0 without a threshold).
        agreement: observed agreement on those items (``nan`` without a threshold).
        agreement_bound: the lower confidence bound on agreement at the chosen threshold
            (``nan`` without one); at least ``target``.
        n: calibration items.
        tests: every test run, in order; the last one failed unless every threshold passed.
    """

    threshold: float | None
    target: float
    delta: float
    coverage: float
    agreement: float
    agreement_bound: float
    n: int
    tests: tuple[ThresholdTest, ...]

    @property
    def found(self) -> bool:
        """True when a threshold meets the target."""
        return self.threshold is not None

    def trusts(self, confidence: Sequence[float] | NDArray[Any]) -> NDArray[np.bool_]:
        """Which items the judge may decide alone (all ``False`` without a threshold).

        Args:
            confidence: the judge's confidence on new items, on the calibration scale.

        Returns:
            A boolean array: ``True`` where confidence ≥ threshold; the rest go to people.
        """
        values = _confidences(confidence)
        if self.threshold is None:
            return np.zeros(len(values), dtype=bool)
        return values >= self.threshold

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict (``nan`` becomes ``None``); the tests are left out."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "threshold": self.threshold,
            "target": self.target,
            "delta": self.delta,
            "coverage": self.coverage,
            "agreement": clean(self.agreement),
            "agreement_bound": clean(self.agreement_bound),
            "n": self.n,
        }

    def __str__(self) -> str:
        if self.threshold is None:
            return (
                f"no threshold: agreement ≥ {self.target:.0%} cannot be guaranteed "
                f"(δ = {self.delta}, n = {self.n}); escalate every item"
            )
        return (
            f"trust confidence ≥ {self.threshold:g}: {self.coverage:.0%} of items, agreement "
            f"{self.agreement:.3f} (≥ {self.agreement_bound:.3f} with probability "
            f"{1 - self.delta:.0%}; target {self.target:.0%}, n = {self.n})"
        )


def selective_threshold(
    confidence: Sequence[float] | NDArray[Any],
    agrees: Sequence[bool] | NDArray[Any],
    *,
    target: float,
    delta: float,
    thresholds: Sequence[float] | NDArray[Any] | None = None,
) -> SelectiveThreshold:
    """The lowest confidence at which the judge's agreement with people is guaranteed.

    Args:
        confidence: the judge's confidence on each calibration item (any finite numbers;
            larger means surer), e.g. 1.0 when both answer orders agree and 0.5 when not.
        agrees: whether the judge's verdict matched the human label on the same item.
        target: the agreement to guarantee on trusted items, in (0, 1), e.g. 0.85.
        delta: the allowed probability that the guarantee fails, in (0, 1), e.g. 0.1.
        thresholds: candidate thresholds fixed in advance (e.g. a grid of probabilities);
            ``None`` tries every observed confidence. Either way they are tested from the
            highest down, and those trusting too few items to ever pass are skipped.

    Returns:
        A `SelectiveThreshold`; its ``threshold`` is ``None`` when even the most confident
        items cannot be shown to meet ``target``.

    Raises:
        ValueError: lengths differ, no items, a confidence is not finite, ``agrees`` is not
            boolean/0-1, or ``target``/``delta`` outside (0, 1).
    """
    from scipy import stats as scipy_stats

    values = _confidences(confidence)
    right = np.asarray(agrees)
    if right.ndim != 1 or len(right) != len(values):
        raise ValueError(
            f"confidence and agrees must be flat and equally long, got {len(values)} and "
            f"{right.shape}"
        )
    if right.dtype != bool:
        if right.size and not np.isin(right, (0, 1)).all():
            bad = int(np.flatnonzero(~np.isin(right, (0, 1)))[0])
            raise ValueError(f"agrees[{bad}] is {right[bad].item()!r}: must be a boolean or 0/1")
        right = right.astype(bool)
    if len(values) == 0:
        raise ValueError("selective_threshold needs at least one calibration item")
    for name, value in (("target", target), ("delta", delta)):
        if not 0.0 < value < 1.0:
            raise ValueError(f"{name} must be in (0, 1), got {value}")

    order = np.argsort(-values, kind="stable")
    sorted_conf, wrong = values[order], ~right[order]
    if thresholds is None:
        candidates = np.unique(sorted_conf)[::-1]
    else:
        candidates = np.unique(_confidences(thresholds, "thresholds"))[::-1]
    # Trusted set at a threshold = every item at or above it (counts from the sorted values).
    trusted = np.searchsorted(-sorted_conf, -candidates, side="right")
    # A threshold that trusts fewer than this can never pass, even with no disagreement:
    # skipping it depends on the confidences only, not on the labels, so the guarantee stands.
    smallest = math.ceil(math.log(delta) / math.log(target) - 1e-9)
    keep = trusted >= smallest
    candidates, trusted = candidates[keep], trusted[keep]
    errors_before = np.concatenate([[0], np.cumsum(wrong)])
    disagreements = errors_before[trusted]
    # One-sided Clopper–Pearson upper bound on the disagreement rate at level 1 − δ.
    upper = np.where(
        disagreements < trusted,
        scipy_stats.beta.ppf(
            1.0 - delta, disagreements + 1, np.maximum(trusted - disagreements, 1)
        ),
        1.0,
    )
    tests: list[ThresholdTest] = []
    chosen: int | None = None
    for i, threshold in enumerate(candidates):
        passed = bool(1.0 - upper[i] >= target)
        tests.append(
            ThresholdTest(
                float(threshold),
                int(trusted[i]),
                int(disagreements[i]),
                float(1 - upper[i]),
                passed,
            )
        )
        if not passed:
            break
        chosen = i
    n = len(values)
    if chosen is None:
        return SelectiveThreshold(None, target, delta, 0.0, math.nan, math.nan, n, tuple(tests))
    kept, errors = int(trusted[chosen]), int(disagreements[chosen])
    return SelectiveThreshold(
        threshold=float(candidates[chosen]),
        target=target,
        delta=delta,
        coverage=kept / n,
        agreement=1.0 - errors / kept,
        agreement_bound=float(1.0 - upper[chosen]),
        n=n,
        tests=tuple(tests),
    )


def cascade_thresholds(
    confidences: Sequence[Sequence[float] | NDArray[Any]],
    agrees: Sequence[Sequence[bool] | NDArray[Any]],
    *,
    target: float,
    delta: float = 0.1,
) -> list[float | None]:
    """One threshold per judge of a cascade, each calibrated on the items it would see.

    A later judge of a cascade decides only what the earlier judges did not trust, a harder
    population than all labelled items; calibrated on all of them it falls below ``target``
    on what it actually decides far more often than δ. As in Trust or Escalate's
    ``cascaded_selective_evaluation`` (Jung, Brahman and Choi, ICLR 2025), judge j is
    therefore calibrated by `selective_threshold` only on the calibration items no earlier
    judge trusts (confidence ≥ that judge's threshold).

    Args:
        confidences: one array per judge, cheapest first, over the same labelled calibration
            items. ``nan`` marks an item the judge gave no usable judgment on (an error
            record): it never trusts it, so it passes to the next judge.
        agrees: per judge, whether its verdict matched the human label on each item.
        target: agreement to guarantee on what each judge decides, in (0, 1).
        delta: per judge, the allowed probability that its guarantee fails, in (0, 1).

    Returns:
        One threshold per judge; ``None`` where a judge cannot meet ``target`` on the items
        left to it (it then decides nothing, and the next judge sees the same items).

    Raises:
        ValueError: no judges, arrays of different lengths, no items, or a bad target/delta.
    """
    stages = cascade_stage_thresholds(confidences, agrees, target=target, delta=delta)
    return [stage.threshold for stage in stages]


def cascade_stage_thresholds(
    confidences: Sequence[Sequence[float] | NDArray[Any]],
    agrees: Sequence[Sequence[bool] | NDArray[Any]],
    *,
    target: float,
    delta: float = 0.1,
) -> tuple[SelectiveThreshold, ...]:
    """`cascade_thresholds` with each judge's whole test: its ``n`` is the items that reach
    it, its ``coverage`` and ``agreement`` are on those (what the cascades report per stage)."""
    if len(confidences) == 0 or len(confidences) != len(agrees):
        raise ValueError(
            f"cascade_thresholds needs one confidence and one agrees array per judge, got "
            f"{len(confidences)} and {len(agrees)}"
        )
    for name, value in (("target", target), ("delta", delta)):
        if not 0.0 < value < 1.0:
            raise ValueError(f"{name} must be in (0, 1), got {value}")
    values = [_stage_confidences(c, j) for j, c in enumerate(confidences)]
    n = len(values[0])
    if n == 0:
        raise ValueError("cascade_thresholds needs at least one calibration item")
    rights: list[NDArray[np.bool_]] = []
    for j, (judged, right) in enumerate(zip(values, agrees)):
        array = np.asarray(right)
        if array.shape != (n,) or len(judged) != n:
            raise ValueError(
                f"judge {j}: confidences and agrees must cover the same {n} items, got "
                f"{len(judged)} and {array.shape}"
            )
        if array.dtype != bool:
            if not np.isin(array, (0, 1)).all():
                bad = int(np.flatnonzero(~np.isin(array, (0, 1)))[0])
                raise ValueError(f"agrees[{j}][{bad}] must be a boolean or 0/1")
            array = array.astype(bool)
        rights.append(array)
    left = np.ones(n, dtype=bool)  # items no earlier judge trusts
    stages: list[SelectiveThreshold] = []
    for judged, right in zip(values, rights):
        if not left.any():
            stages.append(SelectiveThreshold(None, target, delta, 0.0, math.nan, math.nan, 0, ()))
            continue
        conf, usable = judged[left], np.isfinite(judged[left])
        # An unusable judgment is never trusted: it stays in the denominator (the judge sees
        # it) below every candidate threshold, which are the usable confidences only.
        floor = float(conf[usable].min()) - 1.0 if usable.any() else 0.0
        stage = selective_threshold(
            np.where(usable, conf, floor),
            right[left] & usable,
            target=target,
            delta=delta,
            thresholds=conf[usable],
        )
        stages.append(stage)
        if stage.threshold is not None:
            trusted = np.zeros(n, dtype=bool)
            trusted[left] = usable & (np.where(usable, conf, -np.inf) >= stage.threshold)
            left &= ~trusted
    return tuple(stages)


def _stage_confidences(values: Sequence[float] | NDArray[Any], judge: int) -> NDArray[np.float64]:
    """A judge's confidences; ``nan`` (no usable judgment) allowed, infinities not."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"confidences[{judge}] must hold numbers: {exc}") from exc
    if array.ndim != 1:
        raise ValueError(f"confidences[{judge}] must be flat, got shape {array.shape}")
    bad = np.flatnonzero(np.isinf(array))
    if bad.size:
        raise ValueError(f"confidences[{judge}][{bad[0]}] is infinite: use nan for no judgment")
    return array


def _confidences(
    values: Sequence[float] | NDArray[Any], name: str = "confidence"
) -> NDArray[np.float64]:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numbers: {exc}") from exc
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] is {array[bad[0]]}: must be a finite number")
    return array
