"""Drawing an audit's spot-check sample: reproducible, uniform, stratified or uncertainty-led.

Eligible results are put in result-id order and drawn with ``random.Random(seed)``, so the same
seed over the same stored results gives the same sample wherever and whenever it is run. With
``stratify="verdict"`` each verdict gets ``n * share`` items, rounded by largest remainder
(`largest_remainder`); the drawn items are then shuffled together, so a sheet's order gives
nothing away. With a ``confidence`` per result (the ``uncertainty`` strategy) the items the judge
was least sure of are drawn more often, each with a known inclusion probability
(`calibration.stats.uncertainty_sampling`), recorded so the audit's measures can weight by its inverse.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from calibration.labels import AuditItem, AuditRecord, LabelField, judge_labels
from calibration.stats import MIN_ITEMS, draw_pps, inclusion_probabilities
from judgecards.errors import AuditError
from judgecards.storage import JudgeResult

__all__ = [
    "AuditSample",
    "Draw",
    "Strategy",
    "Stratify",
    "checked_stratify",
    "draw",
    "largest_remainder",
    "since_timestamp",
]

Stratify = Literal["verdict"]
Strategy = Literal["uniform", "stratified", "uncertainty"]


@dataclass(frozen=True)
class AuditSample:
    """What `Audit.sample` drew.

    Attributes:
        audit: the new audit.
        population: results eligible for the sample.
        strata: per verdict, ``(eligible, drawn)``.
        sheet: the labelling sheet written, if any.
        fields: the label columns the labelers fill in.
        notes: anything the user should know (a short sample, results from an edited card).
    """

    audit: AuditRecord
    population: int
    strata: dict[str, tuple[int, int]]
    sheet: Path | None
    fields: dict[str, LabelField]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Draw:
    """A drawn sample.

    Attributes:
        chosen: the results drawn, in sheet order.
        card_hash: the card text they were all judged with (the newest such).
        population: results eligible for the sample.
        strata: per verdict, ``(eligible, drawn)``.
        notes: anything the user should know (a short sample, results of an older card text).
        weights: per chosen result id, ``(confidence, inclusion probability)`` (uncertainty
            samples only).
    """

    chosen: list[JudgeResult]
    card_hash: str
    population: int
    strata: dict[str, tuple[int, int]]
    notes: list[str]
    weights: dict[str, tuple[float, float]] | None = None

    def audit_items(self, fields: Mapping[str, LabelField], *, stratified: bool) -> list[AuditItem]:
        """The audit's items in sheet order: what the judge said, its verdict stratum
        (``stratified``), and in an uncertainty sample its confidence and inclusion probability."""
        weights = self.weights or {}
        return [
            AuditItem(
                position,
                r.id,
                r.item_id,
                judge_labels(dict(fields), r),
                r.verdict if stratified else None,
                confidence=weights[r.id][0] if r.id in weights else None,
                inclusion_probability=weights[r.id][1] if r.id in weights else None,
            )
            for position, r in enumerate(self.chosen, start=1)
        ]


def checked_stratify(stratify: str | None, strategy: str | None) -> Stratify | None:
    """The ``stratify`` that ``stratify``/``strategy`` ask for (``"verdict"`` or ``None``).

    Raises:
        AuditError: an unknown value, or ``stratify="verdict"`` with another strategy.
    """
    if stratify not in (None, "verdict"):
        raise AuditError(f"stratify must be 'verdict', got {stratify!r}")
    if strategy not in (None, "uniform", "stratified", "uncertainty"):
        raise AuditError(
            f"strategy must be 'uniform', 'stratified' or 'uncertainty', got {strategy!r}"
        )
    if stratify is not None and strategy not in (None, "stratified"):
        raise AuditError(f"stratify='verdict' contradicts strategy={strategy!r}")
    return "verdict" if stratify is not None or strategy == "stratified" else None


def draw(
    candidates: Sequence[JudgeResult],
    *,
    n: int,
    seed: int,
    stratify: Stratify | None,
    ref: str,
    where: str = "",
    confidence: Callable[[JudgeResult], float] | None = None,
) -> Draw:
    """Draw up to ``n`` of ``candidates`` (stored successful results, oldest first).

    Only results judged with the card text of the newest one are eligible, should an unreleased
    card have been edited in between.

    Args:
        candidates: the stored results of ``ref`` and the audited model, oldest first.
        n: sample size (all eligible results when fewer).
        seed: sampling seed.
        stratify: ``"verdict"`` for a proportional stratified sample.
        ref: ``name@version``, for the notes.
        where: how the candidates were restricted (`` since ...``), for the notes.
        confidence: how sure the judge was of a result, in [0, 1]; given, the sample is drawn
            by `calibration.stats.uncertainty_sampling` (``stratify`` must be ``None``).
    """
    notes: list[str] = []
    newest_hash = candidates[-1].card_hash
    eligible = sorted((r for r in candidates if r.card_hash == newest_hash), key=lambda r: r.id)
    if len(eligible) < len(candidates):
        notes.append(
            f"{len(candidates) - len(eligible)} result(s) were judged with an earlier text of "
            f"{ref} and were not sampled"
        )
    rng = random.Random(seed)
    groups: dict[str, list[JudgeResult]] = defaultdict(list)
    for result in eligible:
        groups[result.verdict or "(none)"].append(result)
    weights = None
    if confidence is not None:
        sure = [float(confidence(r)) for r in eligible]
        pi = inclusion_probabilities(sure, n)
        chosen = [eligible[i] for i in draw_pps(pi, seed=seed)]
        by_id = {r.id: (c, float(p)) for r, c, p in zip(eligible, sure, pi)}
        weights = {r.id: by_id[r.id] for r in chosen}
        if len(set(sure)) == 1:
            notes.append(
                "every result has the same confidence (no G-Eval logprobs?): the uncertainty "
                "sample is a uniform one"
            )
    elif stratify is None:
        chosen = rng.sample(eligible, min(n, len(eligible)))
    else:
        quotas = largest_remainder({k: len(v) for k, v in groups.items()}, min(n, len(eligible)))
        chosen = []
        for stratum in sorted(groups):
            chosen += rng.sample(groups[stratum], quotas[stratum])
        rng.shuffle(chosen)
    drawn = Counter(r.verdict or "(none)" for r in chosen)
    strata = {k: (len(v), drawn.get(k, 0)) for k, v in sorted(groups.items())}
    if len(chosen) < n:
        notes.append(
            f"only {len(chosen)} eligible result(s){where}: the audit has {len(chosen)}, not {n}"
        )
    if len(chosen) < MIN_ITEMS:
        notes.append(
            f"{len(chosen)} items is fewer than {MIN_ITEMS}: kappa's interval will be wide"
        )
    return Draw(chosen, newest_hash, len(eligible), strata, notes, weights)


def since_timestamp(since: datetime | str | None) -> str | None:
    """A UTC ISO timestamp comparable with stored ``created_at`` (naive means UTC)."""
    if since is None or since == "":
        return None
    if isinstance(since, str):
        try:
            since = datetime.fromisoformat(since.strip())
        except ValueError:
            raise AuditError(
                f"since must be an ISO date or date-time (2025-06-01, 2025-06-01T12:00), got {since!r}"
            ) from None
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return since.astimezone(timezone.utc).isoformat()


def largest_remainder(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Split ``n`` over strata in proportion to their sizes (Hamilton's method).

    Floors first, then one more to the strata with the largest fractional parts, ties to the
    stratum that sorts first.
    """
    total = sum(sizes.values())
    exact = {k: n * size / total for k, size in sizes.items()}
    quotas = {k: math.floor(v) for k, v in exact.items()}
    left = n - sum(quotas.values())
    for k in sorted(exact, key=lambda k: (-(exact[k] - quotas[k]), k))[:left]:
        quotas[k] += 1
    return quotas
