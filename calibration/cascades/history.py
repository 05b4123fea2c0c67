"""The cascade runs a database remembers, rebuilt from their stored decisions.

A cascade stores one row per judgment it made (`calibration.cascades.repository`): the rows of
one run share its time, target and δ. From them this module states the guarantee a run put in
force: which judges, at which thresholds, decided what share of the run's items, and which
escalated audits hold the rest. A later run that judged the same item overwrites that item's
rows (the newest run counts), so an older run shows only the items no later run took over.

Counting items: every item a run did not decide went down to its last judge, so the run's items
are the ones some judge decided plus the undecided rows of that last judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from calibration.cascades.repository import cascade_decisions, cascade_result_decisions
from judgecards.storage import Store

__all__ = ["CascadeJudge", "StoredCascadeRun", "stored_cascade_runs"]


@dataclass(frozen=True)
class CascadeJudge:
    """One judge of a stored run.

    Attributes:
        model: the judge model.
        stage: its position in the cascade, 0 first.
        threshold: its calibrated confidence threshold.
        sent: items (or pairs) it judged in the run.
        decided: items (or pairs) it decided.
    """

    model: str
    stage: int
    threshold: float | None
    sent: int
    decided: int


@dataclass(frozen=True)
class StoredCascadeRun:
    """One cascade run as its stored decisions show it.

    Attributes:
        kind: ``items`` (``judgecards cascade ITEMS``) or ``pairs`` (``cascade A B``).
        card: ``name@version``.
        created_at: when the run recorded its decisions, UTC.
        target / delta: its guarantee: agreement with people ≥ target on what each judge
            decided, per judge with probability ≥ 1 − δ.
        judges: the judges it called, in cascade order.
        n: items (or pairs) it judged.
        escalated: of those, how many no judge decided (people must).
        audit_ids: the escalated audits holding them.
    """

    kind: Literal["items", "pairs"]
    card: str
    created_at: datetime
    target: float
    delta: float
    judges: tuple[CascadeJudge, ...]
    n: int
    escalated: int
    audit_ids: tuple[int, ...]

    def coverage(self, judge: CascadeJudge) -> float:
        """Share of the run's items that ``judge`` decided."""
        return judge.decided / self.n if self.n else 0.0

    def sentence(self) -> str:
        """The guarantee of this run, in words."""
        command = "cascade" if self.kind == "items" else "cascade A B"
        unit = self.kind
        judges = "; ".join(
            f"{j.model} (threshold {_number(j.threshold)}) decided {self.coverage(j):.0%}"
            for j in self.judges
        )
        audits = ", ".join(f"#{i}" for i in self.audit_ids)
        people = f"{self.escalated} {unit if self.escalated != 1 else unit.rstrip('s')} to people"
        people += f" (audit {audits})" if audits else ""
        return (
            f"Cascade of {self.created_at:%Y-%m-%d %H:%M} UTC ({command}, {self.n} {unit}): "
            f"agreement with people ≥ {self.target:.0%} on the {unit} each judge decided, per "
            f"judge with probability ≥ {1 - self.delta:.0%} (δ = {self.delta:g}). {judges}; "
            f"{people}."
        )


def stored_cascade_runs(
    store: Store, *, card: str | None = None, model: str | None = None
) -> list[StoredCascadeRun]:
    """The cascade runs stored for a card, rebuilt from their decision rows (both kinds), so a
    report can state the guarantee each run gave without the run's process.

    Args:
        store: the database the cascades wrote to.
        card: ``name`` or ``name@version``; None: every card.
        model: only runs in which this judge model took part; None: every run.

    Returns:
        The runs, oldest first.
    """
    runs = [
        *_runs("items", cascade_result_decisions(store, card=card)),
        *_runs("pairs", cascade_decisions(store, card=card)),
    ]
    chosen = [run for run in runs if model is None or any(j.model == model for j in run.judges)]
    return sorted(chosen, key=lambda run: (run.created_at, run.kind))


def _runs(
    kind: Literal["items", "pairs"], rows: Sequence[Mapping[str, Any]]
) -> list[StoredCascadeRun]:
    grouped: dict[tuple[str, str, float, float], list[Mapping[str, Any]]] = {}
    for row in rows:
        key = (row["card"], row["created_at"], row["target"], row["delta"])
        grouped.setdefault(key, []).append(row)
    runs = []
    for (card, created_at, target, delta), group in grouped.items():
        stages: dict[int, list[Mapping[str, Any]]] = {}
        for row in group:
            stages.setdefault(int(row["stage"]), []).append(row)
        judges = tuple(
            CascadeJudge(
                str(made[0]["model"]),
                stage,
                made[0]["threshold"],
                len(made),
                sum(bool(r["trusted"]) for r in made),
            )
            for stage, made in sorted(stages.items())
        )
        last = stages[max(stages)]
        escalated = sum(not r["trusted"] for r in last)
        audits = sorted({int(r["audit_id"]) for r in group if r["audit_id"] is not None})
        run = StoredCascadeRun(
            kind,
            str(card),
            datetime.fromisoformat(str(created_at)),
            float(target),
            float(delta),
            judges,
            sum(j.decided for j in judges) + escalated,
            escalated,
            tuple(audits),
        )
        runs.append(run)
    return runs


def _number(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"
