"""The latest calibration of a card version for a judge model, read cheaply.

The command line (``score``, ``compare``, ``eval``) asks once per run whether the card@version was
ever checked against human labels for the judge model (`warn_if_uncalibrated`, which library
users call explicitly: `judgecards.Judge` itself does not depend on this package), and
``judgecards cards list`` shows the answer per card version. Both must
stay fast and must work on a database that has never seen the calibration package, so this module
imports nothing heavy until asked (the store's sqlite-utils loads pandas when it is installed), runs one indexed query (`CalibrationRepository.headlines`) over the
headline the audit code caches on each ``audits`` row (kappa, n, date), and treats missing tables
as "never calibrated".

"Calibrated" means: some audit of that card@version and model (a spot-check sample or an
anchor-set re-run) has at least one human label. Calibration is per card version and judge
model: another model's audit says nothing about this one. When the newest labelled audit of
the pair has a kappa below `GATE_MIN_KAPPA` (the gate's default, `judgecards audit report`) or
an undefined one, the judge failed its calibration: `warn_if_uncalibrated` warns about that too
and ``cards list`` says so. (The gate's other test, a significant fall from the baseline audit,
needs a bootstrap: only `judgecards audit report` runs it.)
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgecards.errors import UncalibratedJudgeWarning

if TYPE_CHECKING:
    from judgecards.judging import Judge
    from judgecards.storage import Store

__all__ = [
    "GATE_MIN_KAPPA",
    "CalibrationStatus",
    "calibrations",
    "latest_calibration",
    "warn_if_uncalibrated",
]

GATE_MIN_KAPPA = 0.6
"""The audit gate's default threshold on the newest audit's kappa (``audit report --min-kappa``)."""


@dataclass(frozen=True)
class CalibrationStatus:
    """The newest labelled audit of one card version with one judge model.

    Attributes:
        card: ``name@version``.
        model: the judge model, ``provider:model``.
        audit_id: the audit the numbers come from.
        field: the label field the kappa is over (``verdict`` for cards with verdicts).
        kappa: judge–human Cohen's kappa on ``field``; ``None`` when undefined (every label
            identical on both sides).
        kappa_low: lower bound of its 95% bootstrap interval (``None`` when undefined).
        kappa_high: upper bound (``None`` when undefined).
        agreement: share of items where judge and humans agree on ``field``.
        n: items with a human reference label on ``field``.
        date: when the audit's sample was drawn (or the re-run made), UTC.
    """

    card: str
    model: str
    audit_id: int
    field: str
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    agreement: float | None
    n: int
    date: datetime

    def describe(self) -> str:
        """``kappa 0.812 [0.701, 0.903] n=50, 2025-06-01, openai:gpt-4o (audit #3)``."""
        return f"{self._kappa()} n={self.n}, {self.date.date().isoformat()}, {self.model} (audit #{self.audit_id})"

    def fails_gate(self, min_kappa: float = GATE_MIN_KAPPA) -> bool:
        """Whether this audit's kappa is below the gate's ``min_kappa`` or undefined."""
        return self.kappa is None or self.kappa < min_kappa

    def verdict(self) -> str:
        """One line for ``cards list``: this model's calibration, passed or failed, e.g.
        ``openai:gpt-4o: calibrated, kappa 0.812 [0.701, 0.903] n=50, 2025-06-01 (audit #3)``."""
        measured = (
            f"{self._kappa()} n={self.n}, {self.date.date().isoformat()} (audit #{self.audit_id})"
        )
        if self.fails_gate():
            return (
                f"{self.model}: FAILED calibration, {measured}: below the gate's kappa "
                f"{GATE_MIN_KAPPA:.2f} (judgecards audit report)"
            )
        return f"{self.model}: calibrated, {measured}"

    def _kappa(self) -> str:
        if self.kappa is None:
            return "kappa undefined"
        if self.kappa_low is None or self.kappa_high is None:
            return f"kappa {self.kappa:.3f}"
        return f"kappa {self.kappa:.3f} [{self.kappa_low:.3f}, {self.kappa_high:.3f}]"


def latest_calibration(store: Store, *, card: str, model: str) -> CalibrationStatus | None:
    """The newest labelled audit of a card version with a judge model, or ``None``.

    One indexed query and no computation, cheap enough for every `Judge` construction.

    Args:
        store: the results database; it need not have the calibration tables.
        card: ``name@version``.
        model: the judge model, ``provider:model``.

    Returns:
        A `CalibrationStatus`, or ``None`` when that card version was never calibrated for
        that model (or the calibration tables do not exist yet).
    """
    from calibration.labels import CalibrationRepository

    rows = CalibrationRepository(store).headlines(card=card, model=model)
    return _status(rows[0]) if rows else None


def warn_if_uncalibrated(judge: Judge, *, stacklevel: int = 2) -> CalibrationStatus | None:
    """Warn when a judge's card version was never calibrated for its model, or its newest audit
    for that model failed the gate's kappa (`GATE_MIN_KAPPA`); mock judges never warn.

    Call it once per run (the command line does): `judgecards.Judge` does not check by itself, so
    that the core never depends on this package.

    Args:
        judge: the judge about to be used; its own store is queried.
        stacklevel: passed to `warnings.warn`, so the warning points at the caller.

    Returns:
        The latest `CalibrationStatus` (a failed one after warning `UncalibratedJudgeWarning`),
        or ``None`` after warning it (``None`` without a warning or a query for a mock judge).
    """
    if judge.is_mock:
        return None  # synthetic scores: nothing to calibrate
    status = latest_calibration(judge.store, card=judge.card.ref, model=judge.model)
    if status is None:
        warnings.warn(
            f"{judge.card.ref} has never been calibrated against human labels for {judge.model}; "
            "see `judgecards audit sample`",
            UncalibratedJudgeWarning,
            stacklevel=stacklevel + 1,
        )
    elif status.fails_gate():
        warnings.warn(
            f"{judge.card.ref} failed its latest calibration for {judge.model}: "
            f"{status.describe()}, below the gate's kappa {GATE_MIN_KAPPA:.2f}; its judgments "
            "disagree with people's: see `judgecards audit report`",
            UncalibratedJudgeWarning,
            stacklevel=stacklevel + 1,
        )
    return status


def calibrations(
    source: Store | str | os.PathLike[str], *, card: str | None = None
) -> list[CalibrationStatus]:
    """The latest calibration of every (card version, model) pair, newest first.

    Returns:
        One `CalibrationStatus` per pair; ``[]`` when nothing was calibrated.

    Args:
        source: an open `Store`, or a database path, which is then opened read-only, so
            listing never creates or migrates a database (a missing file gives ``[]``).
        card: only this ``name@version``.
    """
    from calibration.labels import CalibrationRepository
    from judgecards.storage import Store

    if isinstance(source, Store):
        rows = CalibrationRepository(source).headlines(card=card)
    else:
        if not Path(source).is_file():
            return []
        with Store(source, read_only=True) as store:
            rows = CalibrationRepository(store).headlines(card=card)
    latest: dict[tuple[str, str], CalibrationStatus] = {}
    for row in rows:
        status = _status(row)
        latest.setdefault((status.card, status.model), status)
    return list(latest.values())


def _status(row: tuple[Any, ...]) -> CalibrationStatus:
    audit_id, card, model, field, kappa, low, high, agreement, n, created_at = row
    return CalibrationStatus(
        card=card,
        model=model,
        audit_id=int(audit_id),
        field=field or "",
        kappa=kappa,
        kappa_low=low,
        kappa_high=high,
        agreement=agreement,
        n=int(n or 0),
        date=datetime.fromisoformat(created_at),
    )
