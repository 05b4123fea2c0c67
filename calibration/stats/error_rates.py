"""The pass/fail view: how often a two-valued judge catches what people flag, and what that does
to its rate.

Teams that judge with one binary judge per failure mode read it as two error rates against
human labels — TPR ("of the answers people failed, the judge failed 86%") and TNR ("of the
answers people passed, the judge passed 91%") — and correct the judge's own positive rate for
them (Rogan and Gladen, 1978). This module holds both:

* `judge_rates` — TPR and TNR, each an `Estimate` with a Wilson score interval (or the exact
  Clopper–Pearson one), and `JudgeRates.readiness`, the plain-words line with the user's
  thresholds.
* `rogan_gladen` — the share of ``positive`` among all items, ``(p + TNR − 1) / (TPR + TNR −
  1)`` with ``p`` the judge's positive rate on every item, with an interval that carries the
  error of the estimated TPR and TNR.

**The interval.** The delta method around the corrected share treats TPR and TNR as normal,
which fails exactly where judges live (rates near 1 with tens of labels: the ratio is skewed
and the estimate sits on the [0, 1] boundary). Instead TPR and TNR each get their Jeffreys
Beta posterior (Beta(k + ½, n − k + ½), whose central intervals are known to cover close to
nominal for binomial proportions, even at small n), draws are pushed through the Rogan–Gladen
formula with ``p`` fixed (the judge's rate over all items is known exactly: the target is the
share among these items, for which ``p = TPR·share + (1 − TNR)·(1 − share)`` holds exactly), clipped to [0, 1] as the point estimate is, and the interval is the
central ``1 − alpha`` range of the draws (a fixed-seed Monte Carlo, so the same inputs give the
same interval). Draws with TPR + TNR ≤ 1 (an uninformative judge) are kept at their clipped
value, which widens the interval as it should. Coverage was checked by simulation on LLMBar
(recorded GPT-4 and PaLM2 verdicts as the judge, gold labels as people; ``bench/
rogan_gladen_coverage.py``) and a smaller seeded version runs in the tests.

When the estimated TPR + TNR ≤ 1 the judge's verdict says nothing (or the opposite) about
people's, and the correction is undefined: `rogan_gladen` refuses with `ValueError` saying so.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from judgecards.metrics.stats import Estimate

__all__ = ["JudgeRates", "judge_rates", "rogan_gladen"]

_DRAWS = 20_000
_SEED = 20240521


@dataclass(frozen=True)
class JudgeRates:
    """TPR and TNR of a two-valued judge against people.

    Attributes:
        positive: the value counted as positive (e.g. ``"fail"``: what a judge should catch).
        tpr: of the items people called ``positive``, the share the judge called positive.
        tnr: of the items people called anything else, the share the judge did not.
        negative: the other value, when there is exactly one (``None`` otherwise).
        method: ``"wilson"`` or ``"exact"`` (Clopper–Pearson).
    """

    positive: Hashable
    tpr: Estimate
    tnr: Estimate
    negative: Hashable | None = None
    method: str = "wilson"

    @property
    def informative(self) -> bool:
        """TPR + TNR > 1: the judge's verdict carries information about people's."""
        return self.tpr.value + self.tnr.value > 1.0

    def meets(self, *, min_tpr: float | None = None, min_tnr: float | None = None) -> bool:
        """Whether each rate's lower bound reaches its threshold (``None``: not checked)."""
        return all(
            threshold is None or (not math.isnan(rate.low) and rate.low >= threshold)
            for rate, threshold in ((self.tpr, min_tpr), (self.tnr, min_tnr))
        )

    def readiness(
        self,
        *,
        min_tpr: float | None = None,
        min_tnr: float | None = None,
        noun: str = "answers",
    ) -> str:
        """The rates as people say them, and whether they clear the thresholds the user set.

        Example: ``of the answers people failed, the judge failed 86% [73, 94]; of the answers
        people passed, it passed 91% [84, 95] — ready: TPR ≥ 80% and TNR ≥ 80%, lower
        bounds at 95%``.
        """
        said = _said(self.positive)
        other = _said(self.negative) if self.negative is not None else f"did not {_verb(said)}"
        parts = [
            f"of the {noun} people {said}, the judge {said} {_percent(self.tpr)}",
            f"of the {noun} people {other}, it {other} {_percent(self.tnr)}",
        ]
        line = "; ".join(parts)
        wanted = [
            f"{name} ≥ {threshold:.0%}"
            for name, threshold in (("TPR", min_tpr), ("TNR", min_tnr))
            if threshold is not None
        ]
        if not wanted:
            return line
        verdict = "ready" if self.meets(min_tpr=min_tpr, min_tnr=min_tnr) else "not ready"
        return f"{line} — {verdict}: {' and '.join(wanted)} (lower bounds at {self.tpr.level:.0%})"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "positive": self.positive,
            "negative": self.negative,
            "method": self.method,
            "tpr": self.tpr.to_dict(),
            "tnr": self.tnr.to_dict(),
        }


def judge_rates(
    human: Sequence[Hashable],
    judge: Sequence[Hashable],
    *,
    positive: Hashable,
    alpha: float = 0.05,
    method: Literal["wilson", "exact"] = "wilson",
) -> JudgeRates:
    """TPR and TNR of a two-valued judge, with Wilson (or exact) intervals.

    Args:
        human: people's verdict per item (two values, e.g. ``"pass"``/``"fail"``; collapse a
            longer scale first, e.g. ``match`` vs the rest).
        judge: the judge's verdict on the same items.
        positive: the value that counts as positive (what the judge should catch).
        alpha: 1 − the confidence level of the intervals.
        method: ``"wilson"`` (score interval) or ``"exact"`` (Clopper–Pearson).

    Returns:
        A `JudgeRates`; a rate without items (no positive or no negative label) is ``nan``.

    Raises:
        ValueError: lengths differ, a verdict is missing (``None``), more than two values, or
            ``alpha`` outside (0, 1).
    """
    people, said = _two_valued(human, judge)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    values = set(people) | set(said)
    negatives = values - {positive}
    if len(negatives) > 1:
        raise ValueError(
            f"judge_rates needs a two-valued verdict: got {sorted(map(str, values))}; collapse "
            f"the others into one value first (positive is {positive!r})"
        )
    is_pos = np.array([v == positive for v in people], dtype=bool)
    judge_pos = np.array([v == positive for v in said], dtype=bool)
    tpr = _proportion(int((judge_pos & is_pos).sum()), int(is_pos.sum()), alpha, method)
    tnr = _proportion(int((~judge_pos & ~is_pos).sum()), int((~is_pos).sum()), alpha, method)
    negative = next(iter(negatives)) if negatives else None
    return JudgeRates(positive, tpr, tnr, negative, method)


def rogan_gladen(
    human: Sequence[Hashable],
    judge_on_labeled: Sequence[Hashable],
    judge_on_unlabeled: Sequence[Hashable],
    *,
    positive: Hashable,
    alpha: float = 0.05,
) -> Estimate:
    """The share of ``positive`` among all items, the judge's rate corrected for its errors.

    Args:
        human: people's verdict on the labelled items (a random sample of all items).
        judge_on_labeled: the judge's verdict on the same items.
        judge_on_unlabeled: the judge's verdict on every other item.
        positive: the value whose share is estimated.
        alpha: 1 − the confidence level.

    Returns:
        An `Estimate` (value clipped to [0, 1], ``n`` = all items) with the interval described
        in the module docstring.

    Raises:
        ValueError: as `judge_rates`, a missing verdict on an unlabelled item, no labelled item
            of either class, or TPR + TNR ≤ 1 (the correction is undefined: the judge tells
            nothing about people's verdict).
    """
    rates = judge_rates(human, judge_on_labeled, positive=positive, alpha=alpha)
    unlabeled = list(judge_on_unlabeled)
    missing = [i for i, v in enumerate(unlabeled) if v is None]
    if missing:
        raise ValueError(f"judge_on_unlabeled[{missing[0]}] is missing (None)")
    values = {*(v for v in human), *judge_on_labeled, *unlabeled}
    if len(values - {positive}) > 1:
        raise ValueError(f"rogan_gladen needs a two-valued verdict: got {sorted(map(str, values))}")
    if rates.tpr.n == 0 or rates.tnr.n == 0:
        raise ValueError(
            f"rogan_gladen needs labelled items of both kinds: {rates.tpr.n} labelled "
            f"{positive!r} and {rates.tnr.n} labelled otherwise"
        )
    if not rates.informative:
        raise ValueError(
            f"Rogan–Gladen refuses: TPR + TNR = {rates.tpr.value + rates.tnr.value:.3f} ≤ 1, so "
            f"the judge's verdict says nothing about people's (TPR {rates.tpr.value:.3f}, TNR "
            f"{rates.tnr.value:.3f}); use the human labels alone"
        )
    judged = [v == positive for v in (*judge_on_labeled, *unlabeled)]
    n_all, k_all = len(judged), int(sum(judged))
    k_tp = round(rates.tpr.value * rates.tpr.n)
    k_tn = round(rates.tnr.value * rates.tnr.n)
    value = _corrected(k_all / n_all, rates.tpr.value, rates.tnr.value)
    rng = np.random.default_rng(_SEED)
    draws = _corrected(
        k_all / n_all,
        rng.beta(k_tp + 0.5, rates.tpr.n - k_tp + 0.5, _DRAWS),
        rng.beta(k_tn + 0.5, rates.tnr.n - k_tn + 0.5, _DRAWS),
    )
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return Estimate(float(value), float(low), float(high), 1 - alpha, n_all)


def _corrected(p: Any, tpr: Any, tnr: Any) -> Any:
    """``(p + TNR − 1) / (TPR + TNR − 1)`` clipped to [0, 1]; a draw with TPR + TNR = 1 exactly
    (no information) goes to the end its numerator points at."""
    youden = np.asarray(tpr + tnr - 1.0, dtype=np.float64)
    numerator = np.asarray(p + tnr - 1.0, dtype=np.float64)
    zero = youden == 0.0
    ratio = numerator / np.where(zero, 1.0, youden)
    return np.clip(np.where(zero, np.where(numerator > 0, 1.0, 0.0), ratio), 0.0, 1.0)


def _proportion(k: int, n: int, alpha: float, method: str) -> Estimate:
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 1 - alpha, 0)
    from scipy import stats as scipy_stats

    interval = scipy_stats.binomtest(k, n).proportion_ci(
        confidence_level=1 - alpha, method="wilson" if method == "wilson" else "exact"
    )
    return Estimate(k / n, float(interval.low), float(interval.high), 1 - alpha, n)


def _two_valued(
    human: Sequence[Hashable], judge: Sequence[Hashable]
) -> tuple[list[Hashable], list[Hashable]]:
    people, said = list(human), list(judge)
    if len(people) != len(said):
        raise ValueError(f"human and judge must be equally long, got {len(people)} and {len(said)}")
    for name, values in (("human", people), ("judge", said)):
        missing = [i for i, v in enumerate(values) if v is None]
        if missing:
            raise ValueError(f"{name}[{missing[0]}] is missing (None): leave the item out")
    return people, said


def _percent(e: Estimate) -> str:
    if math.isnan(e.value):
        return "— (no such labels)"
    return f"{e.value:.0%} [{e.low * 100:.0f}, {e.high * 100:.0f}]"


def _said(value: Hashable | None) -> str:
    """A verdict as a verb in the past tense: ``fail`` → ``failed``, ``A`` → ``said A``."""
    text = str(value)
    verbs = {"fail": "failed", "pass": "passed", "yes": "said yes", "no": "said no"}
    return verbs.get(text.lower(), f"said {text}")


def _verb(said: str) -> str:
    return {"failed": "fail", "passed": "pass"}.get(said, said.replace("said", "say", 1))
