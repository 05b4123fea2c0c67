"""Drawing an audit's spot-check sample: reproducible, optionally stratified by verdict.

Eligible results are put in result-id order and drawn with ``random.Random(seed)``, so the same
seed over the same stored results gives the same sample wherever and whenever it is run. With
``stratify="verdict"`` each verdict gets ``n * share`` items, rounded by largest remainder
(`largest_remainder`); the drawn items are then shuffled together, so a sheet's order gives
nothing away.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from calibration._core import MIN_ITEMS
from calibration.label_fields import LabelField
from calibration.records import AuditRecord
from judgecards.errors import AuditError
from judgecards.results import JudgeResult

__all__ = ["AuditSample", "Draw", "Stratify", "draw", "largest_remainder", "since_timestamp"]

Stratify = Literal["verdict"]


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
    """

    chosen: list[JudgeResult]
    card_hash: str
    population: int
    strata: dict[str, tuple[int, int]]
    notes: list[str]


def draw(
    candidates: Sequence[JudgeResult],
    *,
    n: int,
    seed: int,
    stratify: Stratify | None,
    ref: str,
    where: str = "",
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
    if stratify is None:
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
    return Draw(chosen, newest_hash, len(eligible), strata, notes)


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
