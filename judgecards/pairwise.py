"""A/B report statistics over two-order pairwise judgments.

Every pair of answers is judged twice: once with A shown first (``first_order``) and once with B
shown first (``second_order``, already mapped back to the A/B naming). `resolve_pair` turns the two
verdicts into one outcome — A only if A won in both orders, B only if B won in both, otherwise a
tie (FastChat's rule) — and is the single implementation of that rule in judgecards.

`pairwise_report` summarises many such outcomes from A's point of view: wins, losses, ties, the
win-rate with and without ties, bootstrap intervals, an exact sign test, and the two position-bias
indicators (position consistency and first-position preference).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from judgecards.bias import PairwiseVerbosity, self_preference_warning, verbosity_bias_pairwise
from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = [
    "VERDICTS",
    "PairOutcome",
    "PairwiseReport",
    "Verdict",
    "first_position_preference",
    "pairwise_report",
    "position_consistency",
    "resolve_pair",
]

Verdict = Literal["A", "B", "tie"]
"""A pairwise verdict in A/B naming: ``"A"`` won, ``"B"`` won, or ``"tie"``."""

VERDICTS: tuple[Verdict, ...] = ("A", "B", "tie")


def resolve_pair(first_order: Verdict, second_order: Verdict) -> Verdict:
    """Combine the verdicts of the two presentation orders into one outcome.

    Args:
        first_order: the verdict with A shown first.
        second_order: the verdict with B shown first, mapped back to A/B naming.

    Returns:
        ``"A"`` only if both verdicts are ``"A"``, ``"B"`` only if both are ``"B"``, otherwise
        ``"tie"`` (an explicit tie in either order, or the two orders disagreeing).

    Raises:
        ValueError: a verdict outside ``{"A", "B", "tie"}``.
    """
    for name, value in (("first_order", first_order), ("second_order", second_order)):
        if value not in VERDICTS:
            raise ValueError(f"{name} must be one of {VERDICTS}, got {value!r}")
    return first_order if first_order == second_order else "tie"


@dataclass(frozen=True)
class PairOutcome:
    """One comparison judged in both orders.

    Attributes:
        winner: the resolved outcome; must equal ``resolve_pair(first_order, second_order)``.
        first_order: the judge's verdict with A shown first.
        second_order: the judge's verdict with B shown first, mapped back to A/B naming.

    Build one with `PairOutcome.from_orders` to have ``winner`` computed.

    Raises:
        ValueError: a verdict outside ``{"A", "B", "tie"}`` or a ``winner`` inconsistent with
            the two orders.
    """

    winner: Verdict
    first_order: Verdict
    second_order: Verdict

    def __post_init__(self) -> None:
        expected = resolve_pair(self.first_order, self.second_order)
        if self.winner != expected:
            raise ValueError(
                f"winner {self.winner!r} is inconsistent with the two orders "
                f"({self.first_order!r}, {self.second_order!r}), which resolve to {expected!r}"
            )

    @classmethod
    def from_orders(cls, first_order: Verdict, second_order: Verdict) -> PairOutcome:
        """The outcome of two verdicts, with ``winner`` from `resolve_pair`."""
        return cls(resolve_pair(first_order, second_order), first_order, second_order)

    @property
    def position_consistent(self) -> bool:
        """Whether the judge gave the same verdict in both orders (a tie in both counts)."""
        return self.first_order == self.second_order


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
            f"{_fmt_estimate(self.first_position_preference)}  {pct}; 0.5 = no bias; "
            f"{decided} single judgments ({self.single_ties} ties left out)"
        )
        rows = [
            ("wins / losses / ties", f"{self.wins} / {self.losses} / {self.ties}"),
            ("win-rate (ties dropped)", f"{_fmt_estimate(self.win_rate)}  {pct}, n={decisive}"),
            (
                "win-rate (ties = half)",
                f"{_fmt_estimate(self.win_rate_ties_half)}  {pct}, n={self.n}",
            ),
            ("sign test (two-sided)", sign),
            ("position consistency", f"{_fmt_estimate(self.position_consistency)}  {pct}"),
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


def pairwise_report(
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


def _fmt_estimate(estimate: Estimate) -> str:
    if math.isnan(estimate.value):
        return "n/a"
    if math.isnan(estimate.low):
        return f"{estimate.value:.3f}"
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"
