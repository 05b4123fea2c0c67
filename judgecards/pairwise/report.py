"""The A/B report over pairs judged in both orders.

`pairwise_report` summarises many two-order outcomes (`judgecards.pairwise.rules.PairOutcome`)
from A's point of view: wins, losses, ties, the win-rate with and without ties, bootstrap
intervals, an exact sign test, and the two position-bias indicators (position consistency and
first-position preference). `comparison_report` builds it from `ComparisonResult` records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from judgecards.judging import PairwiseVerbosity, self_preference_warning, verbosity_bias_pairwise
from judgecards.metrics.stats import Estimate, bootstrap_ci
from judgecards.pairwise.rules import PairOutcome

if TYPE_CHECKING:
    from judgecards.pairwise.comparisons import ComparisonResult

__all__ = [
    "PairwiseReport",
    "comparison_report",
    "first_position_preference",
    "pairwise_report",
    "position_consistency",
]


def position_consistency(outcomes: Sequence[PairOutcome]) -> float:
    """Fraction of comparisons whose two verdicts agree (``first_order == second_order``).

    Two ties agree. This is LLMBar's "positional agreement" (``equal``) and FastChat's
    consistency rate. ``nan`` for no outcomes.
    """
    if not outcomes:
        return math.nan
    return sum(o.position_consistent for o in outcomes) / len(outcomes)


def first_position_preference(outcomes: Sequence[PairOutcome]) -> float:
    """Share of non-tie single judgments that picked whichever answer was shown first.

    Each comparison holds two single judgments: in ``first_order`` the first-shown answer is A, so
    the judge chose first when it said ``"A"``; in ``second_order`` the first-shown answer is B,
    so it chose first when it said ``"B"``. Tie verdicts pick neither position and are left out
    of numerator and denominator. 0.5 means no preference, 1.0 a judge that always picks the first
    answer, 0.0 one that always picks the second. ``nan`` when every single judgment is a tie.
    """
    first, decided = _position_counts(outcomes)
    total = int(decided.sum())
    return int(first.sum()) / total if total else math.nan


@dataclass(frozen=True)
class PairwiseReport:
    """Statistics of an A/B comparison, from A's point of view.

    Attributes:
        model_a: display name of A.
        model_b: display name of B.
        n: number of comparisons (pairs judged in both orders).
        wins: comparisons A won (A preferred in both orders).
        losses: comparisons B won.
        ties: the rest (an explicit tie in either order, or the orders disagreeing).
        win_rate: ``wins / (wins + losses)``, ties dropped. The interval resamples the decisive
            comparisons; ``value`` is ``nan`` when there are none, and ``n`` is their number.
        win_rate_ties_half: ``(wins + ties / 2) / n``; the interval resamples all comparisons.
        sign_test_p: two-sided exact binomial test of wins against losses with p = 1/2, ties
            dropped (`scipy.stats.binomtest`); ``nan`` when there are no decisive comparisons.
        position_consistency: share of comparisons whose two verdicts agree (see
            `position_consistency`); interval over comparisons.
        first_position_preference: share of non-tie single judgments that chose the answer shown
            first (see `first_position_preference`); 0.5 = unbiased. The interval resamples
            comparisons (both judgments of a pair stay together), so ``n`` counts comparisons.
        single_judgments: ``2 * n``.
        single_ties: single judgments that were ties (excluded from the preference rate).
        level: confidence level of the intervals.
        verbosity: length-bias diagnostics when answer lengths were given, else ``None``.
        self_preference: the self-preference warning when the judge's family matches a compared
            model's, else ``None``.
    """

    model_a: str
    model_b: str
    n: int
    wins: int
    losses: int
    ties: int
    win_rate: Estimate
    win_rate_ties_half: Estimate
    sign_test_p: float
    position_consistency: Estimate
    first_position_preference: Estimate
    single_judgments: int
    single_ties: int
    level: float
    verbosity: PairwiseVerbosity | None = field(default=None)
    self_preference: str | None = field(default=None)

    @property
    def single_tie_rate(self) -> float:
        """Share of single judgments that were ties (``nan`` for no comparisons)."""
        return self.single_ties / self.single_judgments if self.single_judgments else math.nan

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict for ``--json`` (``nan`` becomes ``None``)."""
        return {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "n": self.n,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "win_rate": self.win_rate.to_dict(),
            "win_rate_ties_half": self.win_rate_ties_half.to_dict(),
            "sign_test_p": _json_float(self.sign_test_p),
            "position_consistency": self.position_consistency.to_dict(),
            "first_position_preference": self.first_position_preference.to_dict(),
            "single_judgments": self.single_judgments,
            "single_ties": self.single_ties,
            "single_tie_rate": _json_float(self.single_tie_rate),
            "level": self.level,
            "verbosity": self.verbosity.to_dict() if self.verbosity is not None else None,
            "self_preference": self.self_preference,
        }

    def as_text(self) -> str:
        """A fixed-width summary for the terminal."""
        pct = f"{round(self.level * 100)}% CI"
        decided = self.single_judgments - self.single_ties
        decisive = self.wins + self.losses
        sign = f"p = {_fmt_p(self.sign_test_p)}  ({self.wins} vs {self.losses}, ties dropped)"
        preference = (
            f"{_fmt_estimate(self.first_position_preference, pct)}; 0.5 = no bias; "
            f"{decided} single judgments ({self.single_ties} ties left out)"
        )
        rows = [
            ("wins / losses / ties", f"{self.wins} / {self.losses} / {self.ties}"),
            ("win-rate (ties dropped)", f"{_fmt_estimate(self.win_rate, pct)}, n={decisive}"),
            (
                "win-rate (ties = half)",
                f"{_fmt_estimate(self.win_rate_ties_half, pct)}, n={self.n}",
            ),
            ("sign test (two-sided)", sign),
            ("position consistency", _fmt_estimate(self.position_consistency, pct)),
            ("first-position preference", preference),
        ]
        if self.verbosity is not None:
            v, c = self.verbosity, self.verbosity.correlation
            longer = (
                f"{_fmt(v.longer_wins_rate)}  of {v.decisive_unequal} decisive pairs of "
                f"unequal length (p = {_fmt_p(v.longer_wins_p)})"
            )
            correlation = (
                f"Spearman {_fmt(c.spearman)} (p = {_fmt_p(c.spearman_p)}), "
                f"Pearson {_fmt(c.pearson)} (p = {_fmt_p(c.pearson_p)}), n={c.n}"
            )
            rows += [("longer answer wins", longer), ("length diff vs preference", correlation)]
        title = f"{self.model_a} (A) vs {self.model_b} (B): {self.n} comparisons in both orders"
        lines = [title, *(f"  {label:<28}{text}" for label, text in rows)]
        if self.self_preference is not None:
            lines.append(f"  warning: {self.self_preference}")
        return "\n".join(lines)


def pairwise_report(  # noqa: PLR0913  public API: keyword-only options
    outcomes: Sequence[PairOutcome],
    *,
    level: float = 0.95,
    seed: int | None = 0,
    n_resamples: int = 2000,
    model_a: str = "A",
    model_b: str = "B",
    len_a: Sequence[float] | None = None,
    len_b: Sequence[float] | None = None,
    judge_model: str | None = None,
) -> PairwiseReport:
    """Summarise two-order pairwise outcomes from A's point of view.

    Args:
        outcomes: one `PairOutcome` per comparison.
        level: confidence level of the bootstrap intervals.
        seed: bootstrap seed (``None`` for fresh randomness).
        n_resamples: bootstrap resamples per interval.
        model_a: display name of A (also checked for self-preference).
        model_b: display name of B (likewise).
        len_a: lengths of A's answers, parallel to ``outcomes`` (any unit: characters, tokens).
            Given together with ``len_b``, the report carries `verbosity_bias_pairwise`.
        len_b: lengths of B's answers.
        judge_model: the judge's model string; when given, ``self_preference`` carries
            `self_preference_warning` for ``model_a`` and ``model_b``.

    Returns:
        A `PairwiseReport`. Undefined rates are ``nan`` (e.g. no decisive comparisons); an empty
        ``outcomes`` gives a report of zeros and ``nan``.

    Raises:
        ValueError: only one of ``len_a``/``len_b`` given, or their lengths differ from
            ``outcomes``.
    """
    n = len(outcomes)
    winners = [o.winner for o in outcomes]
    wins, losses = winners.count("A"), winners.count("B")
    ties = n - wins - losses

    def interval(*samples: np.ndarray, statistic: Callable[..., float] | None = None) -> Estimate:
        return bootstrap_ci(
            *samples, statistic=statistic, level=level, n_resamples=n_resamples, seed=seed
        )

    decisive = np.array([1.0 if w == "A" else 0.0 for w in winners if w != "tie"])
    win_rate = interval(decisive)
    scores = np.array([{"A": 1.0, "B": 0.0, "tie": 0.5}[w] for w in winners])
    win_rate_ties_half = interval(scores)

    if wins + losses:
        from scipy.stats import binomtest

        sign_p = float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)
    else:
        sign_p = math.nan

    consistent = np.array([1.0 if o.position_consistent else 0.0 for o in outcomes])
    consistency = interval(consistent)
    first, decided = _position_counts(outcomes)
    if n and not decided.sum():  # every single judgment a tie: no position was ever chosen
        preference = Estimate(math.nan, math.nan, math.nan, level, n)
    else:
        preference = interval(first, decided, statistic=_ratio)

    verbosity = None
    if (len_a is None) != (len_b is None):
        raise ValueError("give both len_a and len_b, or neither")
    if len_a is not None and len_b is not None:
        if len(len_a) != n or len(len_b) != n:
            raise ValueError(
                f"len_a/len_b must have one entry per outcome ({n}), got {len(len_a)}/{len(len_b)}"
            )
        verbosity = verbosity_bias_pairwise(len_a, len_b, winners)
    self_preference = (
        self_preference_warning(judge_model, [model_a, model_b]) if judge_model else None
    )

    return PairwiseReport(
        model_a=model_a,
        model_b=model_b,
        n=n,
        wins=wins,
        losses=losses,
        ties=ties,
        win_rate=win_rate,
        win_rate_ties_half=win_rate_ties_half,
        sign_test_p=sign_p,
        position_consistency=consistency,
        first_position_preference=preference,
        single_judgments=2 * n,
        single_ties=2 * n - int(decided.sum()),
        level=level,
        verbosity=verbosity,
        self_preference=self_preference,
    )


def comparison_report(
    comparisons: Sequence[ComparisonResult],
    *,
    judge_model: str | None = None,
    level: float = 0.95,
    seed: int | None = 0,
    n_resamples: int = 2000,
) -> PairwiseReport:
    """The A/B report (`judgecards.pairwise.pairwise_report`) over decided comparisons.

    Failed comparisons are left out (count them from ``status``). The verbosity check uses the
    answers' lengths in characters. The self-preference warning checks the judge model against
    every label of A and B (per-pair labels included).
    """
    decided = [c for c in comparisons if c.outcome is not None]
    labels_a = list(dict.fromkeys(c.model_a for c in decided if c.model_a))
    labels_b = list(dict.fromkeys(c.model_b for c in decided if c.model_b))
    report = pairwise_report(
        [c.outcome for c in decided if c.outcome is not None],
        level=level,
        seed=seed,
        n_resamples=n_resamples,
        model_a=labels_a[0] if len(labels_a) == 1 else "A",
        model_b=labels_b[0] if len(labels_b) == 1 else "B",
        len_a=[c.len_a for c in decided],
        len_b=[c.len_b for c in decided],
    )
    if judge_model and (labels_a or labels_b):
        report = replace(
            report, self_preference=self_preference_warning(judge_model, [*labels_a, *labels_b])
        )
    return report


def _position_counts(outcomes: Sequence[PairOutcome]) -> tuple[np.ndarray, np.ndarray]:
    """Per comparison: judgments that chose the first-shown answer, and non-tie judgments (0–2)."""
    first = np.array(
        [(o.first_order == "A") + (o.second_order == "B") for o in outcomes], dtype=float
    )
    decided = np.array(
        [(o.first_order != "tie") + (o.second_order != "tie") for o in outcomes], dtype=float
    )
    return first, decided


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> float:
    total = float(np.sum(denominator))
    return float(np.sum(numerator)) / total if total else math.nan


def _json_float(value: float) -> float | None:
    return None if math.isnan(value) else value


def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def _fmt_p(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:.2e}" if value < 1e-4 else f"{value:.4f}"


def _fmt_estimate(estimate: Estimate, pct: str) -> str:
    """The value and its interval; an interval that is not defined is said so, never left blank."""
    if math.isnan(estimate.value):
        return "n/a"
    if math.isnan(estimate.low):
        why = " (n ≤ 1)" if estimate.n <= 1 else ""
        return f"{estimate.value:.3f}  {pct} n/a{why}"
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]  {pct}"
