"""What the labelling queues hold and send, as values, and how a submitted label is checked.

`calibration.audits.queue` serves them; the router of ``judgecards serve`` turns them into JSON.
Nothing here holds what the judge said except `JudgeAnswer`, which is only built for a labeler
who has already stored their own label of the item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from calibration.audits.queue_repository import QueueRow
from calibration.labels import WINNERS, AuditRecord, LabelField
from judgecards.errors import AuditError

__all__ = [
    "DEFAULT_RESERVE_SECONDS",
    "MAX_NOTE_CHARS",
    "REVEAL_REASONS",
    "JudgeAnswer",
    "LabelQueueError",
    "PositionPreference",
    "Progress",
    "QueueItem",
    "QueueSettings",
    "QueueSummary",
    "checked_values",
    "flipped",
    "settings_of",
]

REVEAL_REASONS = ("judge_wrong", "i_slipped", "rubric_unclear")
"""Why a labeler's blind label differs from the judge's, asked after the reveal."""

DEFAULT_RESERVE_SECONDS = 900
MAX_NOTE_CHARS = 2000
ErrorCode = Literal["not_found", "conflict", "invalid", "missing"]


class LabelQueueError(AuditError):
    """A queue request that cannot be honoured; ``code`` and ``field`` say what and where.

    ``not_found``: no such audit or item for this labeler (a queue that is not theirs looks
    the same as one that does not exist); ``conflict``: already labelled, nothing to undo;
    ``invalid`` / ``missing``: a label value (``field`` names it). Nothing is written.
    """

    def __init__(self, message: str, *, code: ErrorCode, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


@dataclass(frozen=True)
class QueueSettings:
    """How an audit is served.

    Attributes:
        audit_id: the audit.
        labels_wanted: labels from different labelers each item asks for (an item may ask for
            its own number, `LabelQueue.want`).
        reserve_seconds: how long a served item is held for its labeler before others may get it.
        labelers: the labelers the queue is for; ``None``: every labeler.
        reveal: offer the judge's answer after each blind label and ask why they differ.
    """

    audit_id: int
    labels_wanted: int = 1
    reserve_seconds: int = DEFAULT_RESERVE_SECONDS
    labelers: tuple[str, ...] | None = None
    reveal: bool = True

    def admits(self, labeler: str) -> bool:
        """Whether the queue is for this labeler."""
        return self.labelers is None or labeler in self.labelers


@dataclass(frozen=True)
class Progress:
    """A labeler's progress in one queue: ``done`` of ``done + remaining`` (skips apart)."""

    done: int
    remaining: int
    skipped: int

    @property
    def total(self) -> int:
        return self.done + self.remaining


@dataclass(frozen=True)
class QueueItem:
    """What a labeler is sent: the card's inputs and the form, nothing the judge said.

    ``inputs`` are shown as text; for a pairwise card ``answer_a`` / ``answer_b`` are already in
    this labeler's order, and a ``winner`` of ``A`` means the answer shown first. ``hints``
    describe rubric criteria.
    """

    audit_id: int
    position: int
    card: str
    inputs: dict[str, Any]
    fields: tuple[LabelField, ...]
    hints: dict[str, str]
    progress: Progress
    reveal: bool


@dataclass(frozen=True)
class QueueSummary:
    """One queue as listed: the audit, its settings and the asking labeler's progress."""

    audit: AuditRecord
    settings: QueueSettings
    progress: Progress


@dataclass(frozen=True)
class JudgeAnswer:
    """The judge's labels of an item and the asking labeler's own, after their blind label.

    Pairwise winners are in the labeler's order (``A`` = shown first). ``differs`` names the
    fields where the two disagree.
    """

    position: int
    judge: dict[str, Any]
    yours: dict[str, Any]
    differs: tuple[str, ...]


@dataclass(frozen=True)
class PositionPreference:
    """How often people chose the answer shown first, over served pairwise labels.

    ``share_first`` is first / (first + second): 0.5 when people have no position bias;
    ``None`` with no decided vote. ``low`` / ``high``: its 95% Wilson interval.
    """

    first: int
    second: int
    ties: int
    share_first: float | None
    low: float | None = None
    high: float | None = None
    by_labeler: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def checked_values(fields: Mapping[str, LabelField], values: Mapping[str, Any]) -> dict[str, Any]:
    unknown = [name for name in values if name not in fields]
    if unknown:
        raise LabelQueueError(
            f"unknown label field {unknown[0]!r} (fields: {', '.join(fields)})",
            code="invalid",
            field=f"values.{unknown[0]}",
        )
    checked: dict[str, Any] = {}
    for name, spec in fields.items():
        try:
            value = spec.parse(values.get(name), text=False)
        except ValueError as error:
            raise LabelQueueError(
                f"{name}: {error}", code="invalid", field=f"values.{name}"
            ) from None
        if value is None:
            raise LabelQueueError(
                f"{name} is not labelled: give {spec.describe()}",
                code="missing",
                field=f"values.{name}",
            )
        checked[name] = value
    return checked


def flipped(value: Any) -> Any:
    return {"A": "B", "B": "A"}.get(value, value) if value in WINNERS else value


def settings_of(row: QueueRow) -> QueueSettings:
    labelers = None if row[3] is None else tuple(json.loads(row[3]))
    return QueueSettings(int(row[0]), int(row[1]), int(row[2]), labelers, bool(row[4]))
