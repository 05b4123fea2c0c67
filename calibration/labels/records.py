"""What the calibration tables hold, as values: labels, audits, audit items, anchor sets,
alignment runs.

`calibration.labels.repository` reads and writes them; `calibration.labels` and `calibration.audits.audit`
work with them and re-export the public ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "AlignmentRun",
    "AnchorItem",
    "AnchorSet",
    "AuditItem",
    "AuditRecord",
    "Label",
    "NewLabel",
]


@dataclass(frozen=True)
class Label:
    """One stored human label.

    Attributes:
        id: row id.
        result_id: the stored result labelled.
        item_id: the caller's item id of that result.
        card: ``name@version`` of the result.
        model: the judge model of the result.
        labeler: who labelled.
        field: the label field (``verdict``, an axis, ``winner``).
        kind: ``verdict``, ``score`` or ``winner``.
        value: the label.
        note: the labeler's note on the row.
        audit_id: the audit the label was given in (``None``: imported on its own).
        created_at: when it was labelled (or imported), UTC.
    """

    id: int
    result_id: str
    item_id: str | None
    card: str
    model: str
    labeler: str
    field: str
    kind: str
    value: Any
    note: str | None
    audit_id: int | None
    created_at: datetime


@dataclass(frozen=True)
class NewLabel:
    """A label to store: a `Label` before it has a row id (and an audit, which the write sets)."""

    result_id: str
    item_id: str | None
    card: str
    model: str
    labeler: str
    field: str
    kind: str
    value: Any
    note: str | None
    created_at: str
    source: str | None = None


@dataclass(frozen=True)
class AuditRecord:
    """One audit as stored.

    Attributes:
        id: audit number (1, 2, ...).
        kind: ``sample`` (a spot-check of stored results), ``rerun`` (an anchor set re-judged)
            or ``escalated`` (items no judge of a `calibration.Cascade` was trusted to decide).
        card: ``name@version`` judged.
        card_hash: ``sha256:<hex>`` of the card the results were judged with.
        model: the judge model, ``provider:model``.
        seed: sampling seed (``None`` for re-runs).
        n_requested: sample size asked for.
        n: items in the audit.
        since: the lower bound on result time the sample was drawn with, if any.
        stratify: ``verdict`` when the sample was stratified.
        sheet: where the labelling sheet was written.
        anchor_set: the anchor set re-run (re-runs only).
        created_at: when the sample was drawn or the re-run made, UTC.
        n_labeled: cached headline: items with a human reference on the primary field.
        kappa: cached headline: kappa on the primary field (``None``: not labelled, or
            undefined).
    """

    id: int
    kind: Literal["sample", "rerun", "escalated"]
    card: str
    card_hash: str
    model: str
    seed: int | None
    n_requested: int | None
    n: int
    since: str | None
    stratify: str | None
    sheet: str | None
    anchor_set: str | None
    created_at: datetime
    n_labeled: int = 0
    kappa: float | None = None

    @property
    def card_name(self) -> str:
        """The card's name without its version."""
        return self.card.partition("@")[0]


@dataclass(frozen=True)
class AuditItem:
    """One result covered by an audit, with what the judge said when the audit was made.

    Attributes:
        position: 1, 2, ... in the audit's (shuffled) order.
        result_id: the stored result.
        item_id: the caller's item id.
        judge: ``{field: value}`` the judge gave (empty when a re-run's item failed).
        stratum: the verdict stratum it was drawn from (stratified samples).
        anchor_position: the anchor item it re-judges (re-runs).
        confidence: how sure the judge was (uncertainty samples; `calibration.stats.confidence`).
        inclusion_probability: its probability of being drawn (uncertainty samples); the
            audit's measures weight it by the inverse. ``None``: every item equally likely.
    """

    position: int
    result_id: str
    item_id: str | None
    judge: dict[str, Any]
    stratum: str | None = None
    anchor_position: int | None = None
    confidence: float | None = None
    inclusion_probability: float | None = None


@dataclass(frozen=True)
class AnchorSet:
    """A named, fixed set of human-labelled items, re-judged by `Audit.rerun`.

    Attributes:
        name: its name.
        card: the card *name*; a re-run uses that card's current version unless told otherwise.
        source_audit: the audit it was frozen from (its judge labels are run 0).
        description: free text.
        created_at: UTC.
        n: number of items.
    """

    name: str
    card: str
    source_audit: int
    description: str | None
    created_at: datetime
    n: int


@dataclass(frozen=True)
class AnchorItem:
    """One item of an anchor set.

    Attributes:
        position: 1, 2, ... within the set.
        item_id: the caller's item id.
        source_result_id: the result it was frozen from.
        inputs: the card inputs to re-judge with.
        judge: ``{field: value}`` of the source run (run 0).
        labels: ``{labeler: {field: value}}``.
    """

    position: int
    item_id: str | None
    source_result_id: str
    inputs: dict[str, Any]
    judge: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class AlignmentRun:
    """One stored `calibration.alignment` run.

    Attributes:
        id: row id.
        card: the card aligned, ``name@version``, and ``card_hash`` its file hash.
        label_set_hash: ``sha256:<hex>`` over the human labels the run split, so two runs on
            the same labels can be told apart from runs on new ones.
        model: the judge model.
        field: the label field kappa was measured on (verdict, else the first score axis;
            ``winner`` for a pairwise card).
        seed: the split's seed; ``k`` examples per example candidate.
        n_pool, n_dev, n_test: items (pairs, for a pairwise card) in the example pool, dev
            and test.
        candidates: ``[{"name", "kappa", "low", "high", "n", "errors"}]`` on dev, in the
            order they were scored (nan is stored as ``None``).
        chosen: the name of the candidate picked on dev.
        dev_kappa, dev_low, dev_high: its kappa on dev; ``test_*`` on test (``test_n`` items).
        new_card, new_card_hash, new_card_path: the card version written, or ``None`` when
            the card as is was best.
        created_at: when the run finished, UTC.
    """

    id: int
    card: str
    card_hash: str
    label_set_hash: str
    model: str
    field: str
    seed: int
    k: int
    n_pool: int
    n_dev: int
    n_test: int
    candidates: list[dict[str, Any]]
    chosen: str
    dev_kappa: float | None
    dev_low: float | None
    dev_high: float | None
    test_kappa: float | None
    test_low: float | None
    test_high: float | None
    test_n: int
    new_card: str | None
    new_card_hash: str | None
    new_card_path: str | None
    created_at: datetime
