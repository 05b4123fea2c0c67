"""What `calibration.estimates` reports: one number estimated three ways, and how it reads.

The values (`Design`, `EstimateRow`, `EstimatesReport`) and their text table live here, apart
from the store reading in `calibration.estimates`, which re-exports them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from calibration.stats import CorrectedEstimate
from judgecards.metrics.stats import Estimate

__all__ = ["Design", "EstimateRow", "EstimatesReport", "Kind", "estimate_lines", "interval_notes"]

Kind = Literal["score", "verdict", "win_rate"]


@dataclass(frozen=True)
class Design:
    """How the labelled items of one field were chosen, as far as the store records it.

    Attributes:
        kind: ``uniform`` (every label from uniform audit samples), ``stratified`` (some from
            samples stratified by verdict: inverse-probability weights are used), ``weighted``
            (one uncertainty sample: each item weighted by its recorded 1/π) or ``assumed
            uniform`` (some labels have no recorded design, or designs are mixed).
        description: the same in words, naming the audits.
    """

    kind: Literal["uniform", "stratified", "weighted", "assumed uniform"]
    description: str

    @property
    def known(self) -> bool:
        """Whether every labelled item's chance of being labelled is recorded."""
        return self.kind != "assumed uniform"


@dataclass(frozen=True)
class EstimateRow:
    """One number, estimated three ways.

    Attributes:
        kind: ``score`` (mean of an axis), ``verdict`` (share of one verdict) or ``win_rate``.
        field: the axis, ``verdict`` or ``winner``.
        name: what is estimated, in words (``mean correctness``, ``share match``,
            ``gpt-4o vs llama``: the first model's win rate).
        result: the corrected, human-only and judge-only estimates (`CorrectedEstimate`).
        design: how the labelled items were chosen; decides weights and the stated assumption.
        weighted: whether inverse-probability weights were used.
    """

    kind: Kind
    field: str
    name: str
    result: CorrectedEstimate
    design: Design
    weighted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON data (``nan`` becomes ``None``)."""
        return {
            "kind": self.kind,
            "field": self.field,
            "name": self.name,
            **self.result.to_dict(),
            "labels_gained": _finite(self.result.labels_gained),
            "design": self.design.kind,
            "design_description": self.design.description,
            "weighted": self.weighted,
        }


@dataclass(frozen=True)
class EstimatesReport:
    """Corrected estimates of one card version judged by one model.

    Attributes:
        card: ``name@version``.
        model: the judge model.
        alpha: error level of every interval (``0.05``: 95% intervals).
        n_judged: successful results of the card version by the model.
        n_labeled: those with at least one human label used here.
        labelers: who labelled them.
        rows: every estimate, scores first, then verdict shares, then win rates.
        notes: assumptions and what could not be estimated, in words.
        n_comparisons: pairwise comparisons (each judged in both orders, so two of the
            ``n_judged`` results) the win rates are over.
    """

    card: str
    model: str
    alpha: float
    n_judged: int
    n_labeled: int
    labelers: tuple[str, ...]
    rows: tuple[EstimateRow, ...]
    notes: tuple[str, ...] = ()
    n_comparisons: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON data (``nan`` becomes ``None``)."""
        return {
            "card": self.card,
            "model": self.model,
            "level": 1 - self.alpha,
            "n_judged": self.n_judged,
            "n_labeled": self.n_labeled,
            "n_comparisons": self.n_comparisons,
            "labelers": list(self.labelers),
            "estimates": [row.to_dict() for row in self.rows],
            "notes": list(self.notes),
        }

    def as_text(self) -> str:
        """A table that leads with the corrected column and marks the judge-only one."""
        return "\n".join(estimate_lines(self))


def _finite(value: float) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else value


def _interval(e: Estimate) -> str:
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def interval_notes(report: EstimatesReport) -> list[str]:
    """Which interval each estimate reports and why, one line per reason (`calibration.
    corrected_estimate`'s ``interval="auto"``: the t one where the labels allow, the bounded
    one where they do not); the text table and the HTML report both print them."""
    reasons: dict[str, list[str]] = {}
    for row in report.rows:
        if row.result.interval_reason:
            reasons.setdefault(row.result.interval_reason, []).append(row.name)
    return [f"interval ({', '.join(names)}): {reason}" for reason, names in reasons.items()]


def estimate_lines(report: EstimatesReport, *, indent: str = "") -> list[str]:
    """The report's table, corrected column first; reused by ``audit report``."""
    level = round((1 - report.alpha) * 100)
    who = ", ".join(report.labelers)
    judged = f"{report.n_judged} judged items"
    if report.n_comparisons:
        judged = (
            f"{report.n_comparisons} comparisons judged in both orders ({report.n_judged} results)"
        )
    width = max([28, *(len(row.name) for row in report.rows)])
    lines = [
        f"{indent}Corrected estimates: {report.card} judged by {report.model} "
        f"({judged}, {report.n_labeled} labelled by {who}; {level}% intervals)",
        f"{indent}  corrected = the judge on every item minus its bias measured on the labelled "
        "items (PPI++); human only = the same interval without the judge; judge only is "
        "UNCORRECTED (biased); effective n = the human labels the human-only interval would "
        "need to be as narrow",
        f"{indent}  {'estimate':<{width}} {'corrected':<24} {'human only':<24} "
        f"{'judge only (uncorrected)':<26} {'effective n':>14}",
    ]
    for row in report.rows:
        r = row.result
        worth = "-" if math.isnan(r.effective_labels) else f"{r.effective_labels:.0f}"
        worth += f" (n {r.n_labeled})"
        lines.append(
            f"{indent}  {row.name:<{width}} {_interval(r.corrected):<24} {_interval(r.human_only):<24} "
            f"{_interval(r.judge_only):<26} {worth:>14}"
        )
    lines += [f"{indent}  {line}" for line in interval_notes(report)]
    designs = dict.fromkeys(row.design for row in report.rows)
    for design in designs:
        what = "labels" if design.known else "labels (ASSUMPTION)"
        lines.append(f"{indent}  {what}: {design.description}")
    if report.notes:
        lines += [f"{indent}  note: {note}" for note in report.notes]
    return lines
