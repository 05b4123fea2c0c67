"""The pass/fail view of an audit: TPR, TNR, the readiness line and the corrected positive share.

`audit report` shows it for the primary field of an audit whenever that field is two-valued, as
practitioners read a binary judge (one per failure mode). Which verdicts count, and as what:

* a verdict with exactly two values (``pass``/``fail`` of the ``pass-fail`` card, or any other
  pair): the positive is ``fail`` when there is one, else the card's last value (its
  ``otherwise``, the outcome a judge is there to catch);
* a longer verdict scale with ``match`` among its values (the ``reference`` cards:
  ``match``/``partial_match``/``mismatch``) is collapsed to ``match`` against everything else,
  ``not_match``, which is the positive: a partial match is not a match;
* ``winner`` (pairwise A/B/tie) without ties: only items where both people and the judge named
  A or B count, and ``A`` is the positive;
* a score axis has no pass/fail view.

The positive can be chosen instead (``positive=``; ``audit report --positive``). The rates come
from `calibration.judge_rates`; the corrected share of the positive among every stored result
of the audited card version and judge model, from `calibration.rogan_gladen`, beside the PPI
corrected share that ``Corrected estimates`` reports for the same card version and model (over
all its labels, where the view uses this audit's). Audits whose items were not
drawn with equal probability (uncertainty samples, cascades' escalated items, anchor re-runs)
get the rates only: the corrected share needs a random sample of those results.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from calibration.stats.error_rates import JudgeRates, judge_rates, rogan_gladen
from judgecards.metrics.stats import Estimate

__all__ = ["NOT_MATCH", "PassFailView", "binary_labels", "pass_fail_view"]

NOT_MATCH = "not_match"


@dataclass(frozen=True)
class PassFailView:
    """One audit's primary field read as a binary judge.

    Attributes:
        field: the label field (``verdict`` or ``winner``).
        rule: how its values were made two (in words, for the output).
        rates: TPR and TNR with intervals.
        min_tpr / min_tnr: the user's thresholds for the readiness line (``None``: not set).
        corrected: the Rogan–Gladen share of the positive among every stored result of the
            card version and model (``None``: not computed, see ``note``).
        ppi: the corrected (PPI) share of the same verdict from the estimates of this card
            version and model, for comparison (``None``: not estimated there).
        note: why ``corrected`` is missing (refusal or design), else ``None``.
    """

    field: str
    rule: str
    rates: JudgeRates
    min_tpr: float | None = None
    min_tnr: float | None = None
    corrected: Estimate | None = None
    ppi: Estimate | None = None
    note: str | None = None

    @property
    def ready(self) -> bool | None:
        """Whether the rates' lower bounds clear the thresholds (``None``: none set)."""
        if self.min_tpr is None and self.min_tnr is None:
            return None
        return self.rates.meets(min_tpr=self.min_tpr, min_tnr=self.min_tnr)

    def readiness(self) -> str:
        """The plain-words line (`JudgeRates.readiness`) with the user's thresholds."""
        return self.rates.readiness(min_tpr=self.min_tpr, min_tnr=self.min_tnr)

    def lines(self) -> list[str]:
        """Its part of the text report."""
        r = self.rates
        lines = [
            f"  pass/fail view of {self.field} ({self.rule}; positive {r.positive!s}):",
            f"    TPR {_estimate(r.tpr)}   TNR {_estimate(r.tnr)}   ({r.method} intervals)",
            f"    {self.readiness()}",
        ]
        if self.corrected is not None:
            share = f"share of {r.positive!s} among {self.corrected.n} stored results"
            lines.append(
                f"    {share}: Rogan–Gladen {_estimate(self.corrected)}"
                + (
                    f"; PPI {_estimate(self.ppi)} (as in Corrected estimates)"
                    if self.ppi is not None
                    else ""
                )
            )
        if self.note:
            lines.append(f"    {self.note}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "field": self.field,
            "rule": self.rule,
            **self.rates.to_dict(),
            "min_tpr": self.min_tpr,
            "min_tnr": self.min_tnr,
            "ready": self.ready,
            "readiness": self.readiness(),
            "rogan_gladen": None if self.corrected is None else self.corrected.to_dict(),
            "ppi": None if self.ppi is None else self.ppi.to_dict(),
            "note": self.note,
        }


def binary_labels(
    kind: str, choices: Sequence[str], positive: Hashable | None = None
) -> tuple[str, Hashable, Any] | None:
    """How a field's values become two: ``(rule in words, positive, map)`` where ``map`` turns a
    value into its binary value or ``None`` (left out); ``None`` when the field has no pass/fail
    view (scores, a longer scale without ``match``)."""
    values = tuple(choices)
    if kind == "winner":

        def without_ties(value: Any) -> Any:
            return value if value in ("A", "B") else None

        return "A or B, ties left out", positive if positive is not None else "A", without_ties
    if kind != "verdict":
        return None
    if len(values) == 2:
        chosen = positive if positive is not None else ("fail" if "fail" in values else values[-1])
        return "two-valued", chosen, lambda value: value if value in values else None
    if "match" in values:

        def collapsed(value: Any) -> Any:
            if value not in values:
                return None
            return "match" if value == "match" else NOT_MATCH

        rule = f"match vs {NOT_MATCH} ({', '.join(v for v in values if v != 'match')})"
        return rule, positive if positive is not None else NOT_MATCH, collapsed
    return None


def pass_fail_view(  # noqa: PLR0913  keyword-only options of one field's view
    field: str,
    kind: str,
    choices: Sequence[str],
    pairs: Sequence[tuple[Any, Any]],
    *,
    unlabeled: Sequence[Any] | None,
    positive: Hashable | None = None,
    min_tpr: float | None = None,
    min_tnr: float | None = None,
    alpha: float = 0.05,
    ppi: Callable[[Hashable], Estimate | None] | None = None,
) -> PassFailView | None:
    """The view of one field from its (judge, people's reference) pairs; ``None`` without one.

    Args:
        field / kind / choices: the label field (`calibration.labels.fields.LabelField`).
        pairs: the audit's (judge value, people's majority) per labelled item.
        unlabeled: the judge's values on every other stored result of the card version and
            model, for the corrected share; ``None`` when the audit was not a random sample.
        positive: the positive value (default: see the module docstring).
        min_tpr / min_tnr: thresholds for the readiness line.
        alpha: 1 − the confidence level.
        ppi: the corrected (PPI) share of a verdict from the estimates, to show beside.
    """
    binary = binary_labels(kind, choices, positive)
    if binary is None:
        return None
    rule, chosen, to_binary = binary
    mapped = [(to_binary(j), to_binary(h)) for j, h in pairs]
    kept = [(j, h) for j, h in mapped if j is not None and h is not None]
    if not kept:
        return None
    human = [h for _, h in kept]
    judge = [j for j, _ in kept]
    try:
        rates = judge_rates(human, judge, positive=chosen, alpha=alpha)
    except ValueError:
        return None  # e.g. a chosen positive outside a two-valued field's values
    corrected = None
    note = None
    if unlabeled is None:
        note = "no corrected share: this audit is not a random sample of the stored results"
    else:
        rest = [v for v in (to_binary(u) for u in unlabeled) if v is not None]
        try:
            corrected = rogan_gladen(human, judge, rest, positive=chosen, alpha=alpha)
        except ValueError as error:
            note = f"no corrected share: {error}"
    beside = None if ppi is None or corrected is None else ppi(chosen)
    return PassFailView(field, rule, rates, min_tpr, min_tnr, corrected, beside, note)


def _estimate(e: Estimate | None) -> str:
    if e is None or e.value != e.value:
        return "-"
    return f"{e.value:.1%} [{e.low:.1%}, {e.high:.1%}] (n = {e.n})"
