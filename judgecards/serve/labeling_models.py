"""Request and response bodies of the labelling routes (`judgecards.serve.labeling`).

What a labeler token can fetch is only what these models carry: an item's inputs and form, a
queue's size and the labeler's own progress. The judge's answer (`JudgeAnswerOut`) is built
only after the asking labeler's own label of the item is stored.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calibration.audits import (
    MAX_NOTE_CHARS,
    JudgeAnswer,
    PositionPreference,
    Progress,
    QueueItem,
    QueueSummary,
)

__all__ = [
    "AnchorOut",
    "AuditIn",
    "FieldOut",
    "ItemOut",
    "JudgeAnswerOut",
    "LabelIn",
    "LabelOut",
    "NextOut",
    "PositionPreferenceOut",
    "ProgressOut",
    "QueueOut",
    "QueuesOut",
    "QueueSettingsIn",
    "RevealIn",
    "RevisionIn",
    "RevisionOut",
    "SkipIn",
    "UndoOut",
]

_Name = Annotated[str, Field(min_length=1, max_length=200)]
_Note = Annotated[str, Field(max_length=MAX_NOTE_CHARS)]


class ProgressOut(BaseModel):
    """A labeler's progress in one queue: ``done`` of ``total``; skipped items apart."""

    done: int
    remaining: int
    skipped: int
    total: int

    @classmethod
    def of(cls, progress: Progress) -> ProgressOut:
        return cls(
            done=progress.done,
            remaining=progress.remaining,
            skipped=progress.skipped,
            total=progress.total,
        )


class AnchorOut(BaseModel):
    """The words the card gives to one point of a score scale."""

    value: int
    words: str


class FieldOut(BaseModel):
    """One field of the label form."""

    name: str
    kind: Literal["verdict", "score", "winner"]
    choices: list[str] = Field(description="Allowed values of a verdict or winner, in order.")
    minimum: float | None = None
    maximum: float | None = None
    hint: str | None = Field(
        default=None, description="What the field means (a rubric criterion's description)."
    )
    anchors: list[AnchorOut] = Field(
        default_factory=list,
        description="The card's words for points of a score scale, low to high.",
    )


class ItemOut(BaseModel):
    """An item to label: the card's inputs as text, and its form. Nothing the judge said.

    For a pairwise card ``answer_a`` / ``answer_b`` are in this labeler's order and a winner
    of ``A`` means the answer shown first.
    """

    audit_id: int
    position: int
    card: str
    inputs: dict[str, Any]
    fields: list[FieldOut]
    reveal: bool = Field(description="Whether the judge's answer is offered after the label.")

    @classmethod
    def of(cls, item: QueueItem) -> ItemOut:
        return cls(
            audit_id=item.audit_id,
            position=item.position,
            card=item.card,
            inputs=item.inputs,
            fields=[
                FieldOut(
                    name=spec.name,
                    kind=spec.kind,
                    choices=list(spec.choices),
                    minimum=spec.minimum,
                    maximum=spec.maximum,
                    hint=item.hints.get(spec.name) or spec.description,
                    anchors=[AnchorOut(value=v, words=w) for v, w in spec.anchors],
                )
                for spec in item.fields
            ],
            reveal=item.reveal,
        )


class NextOut(BaseModel):
    """The item to label now (held for this labeler), or ``null`` when the queue is done."""

    item: ItemOut | None
    progress: ProgressOut


class QueueOut(BaseModel):
    """One queue. ``model``, ``labelers`` and the audit's cached kappa are for admins only."""

    audit_id: int
    card: str
    n: int
    kind: str
    created_at: str
    labels_wanted: int
    reserve_seconds: int
    reveal: bool
    progress: ProgressOut | None = Field(description="The asking labeler's own progress.")
    model: str | None = None
    labelers: list[str] | None = None
    kappa: float | None = None
    n_labeled: int | None = None

    @classmethod
    def of(cls, summary: QueueSummary, *, admin: bool, mine: bool) -> QueueOut:
        audit, settings = summary.audit, summary.settings
        return cls(
            audit_id=audit.id,
            card=audit.card,
            n=audit.n,
            kind=audit.kind,
            created_at=audit.created_at.isoformat(),
            labels_wanted=settings.labels_wanted,
            reserve_seconds=settings.reserve_seconds,
            reveal=settings.reveal,
            progress=ProgressOut.of(summary.progress) if mine else None,
            model=audit.model if admin else None,
            labelers=list(settings.labelers) if admin and settings.labelers is not None else None,
            kappa=audit.kappa if admin else None,
            n_labeled=audit.n_labeled if admin else None,
        )


class QueuesOut(BaseModel):
    queues: list[QueueOut]


class QueueSettingsIn(BaseModel):
    """How an audit is served."""

    model_config = ConfigDict(extra="forbid")

    labels_wanted: int = Field(default=1, ge=1, le=50, description="Labels per item.")
    reserve_seconds: int = Field(
        default=900, ge=10, le=7 * 86400, description="How long a served item is held."
    )
    labelers: list[_Name] | None = Field(
        default=None, max_length=500, description="Who the queue is for (null: every labeler)."
    )
    reveal: bool = Field(default=True, description="Offer the judge's answer after a label.")


class AuditIn(QueueSettingsIn):
    """A new audit drawn like ``judgecards audit sample``, served as a queue."""

    card: _Name = Field(description="NAME or NAME@VERSION")
    model: _Name = Field(description="The judge model whose stored results are sampled.")
    n: int = Field(default=50, ge=1, le=100_000)
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1)
    strategy: Literal["uniform", "stratified", "uncertainty"] | None = None


class LabelIn(BaseModel):
    """One labeler's blind label of one item: every field of the item's form.

    ``values`` maps field names to values: a verdict's name, an integer score, or for pairwise
    ``"A"`` / ``"B"`` / ``"tie"`` as the answers were SHOWN to this labeler (mapped back by the
    server). The labeler is the token's name; ``source`` is ``serve``.
    """

    model_config = ConfigDict(extra="forbid")

    audit_id: int = Field(ge=1)
    position: int = Field(ge=1)
    values: dict[_Name, Any] = Field(max_length=100)
    note: _Note | None = None


class LabelOut(BaseModel):
    progress: ProgressOut


class SkipIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    position: int = Field(ge=1)


class UndoOut(BaseModel):
    """The item whose label was removed; the next ``next`` serves it again."""

    position: int
    progress: ProgressOut


class JudgeAnswerOut(BaseModel):
    """After the blind label: what the judge said, what you said, where they differ."""

    position: int
    judge: dict[str, Any]
    yours: dict[str, Any]
    differs: list[str]

    @classmethod
    def of(cls, answer: JudgeAnswer) -> JudgeAnswerOut:
        return cls(
            position=answer.position,
            judge=answer.judge,
            yours=answer.yours,
            differs=list(answer.differs),
        )


class RevealIn(BaseModel):
    """Why the blind label differs from the judge's (``null``: it does not, or no reason)."""

    model_config = ConfigDict(extra="forbid")

    reason: Literal["judge_wrong", "i_slipped", "rubric_unclear"] | None = None
    note: _Note | None = None


class RevisionIn(BaseModel):
    """A correction of one's label made after the judge's answer was shown: every field.

    Stored apart from the blind label (which stays) and marked as coming after the reveal;
    agreement and kappa use it only when asked (``audit report --with-revisions``).
    """

    model_config = ConfigDict(extra="forbid")

    values: dict[_Name, Any] = Field(max_length=100)
    note: _Note | None = None


class RevisionOut(BaseModel):
    position: int
    stored: int = Field(description="Values stored as revisions (one per field).")
    revised_after_reveal: Literal[True] = True


class PositionPreferenceOut(BaseModel):
    """People's first-position preference over an audit's served pairwise labels.

    ``share_first`` = first / (first + second), 0.5 without position bias (``null`` with no
    decided vote); ``low`` / ``high`` its 95% Wilson interval; ``by_labeler`` each person's
    ``[first, second, ties]``.
    """

    first: int
    second: int
    ties: int
    share_first: float | None
    low: float | None
    high: float | None
    by_labeler: dict[str, list[int]]

    @classmethod
    def of(cls, preference: PositionPreference) -> PositionPreferenceOut:
        return cls(
            first=preference.first,
            second=preference.second,
            ties=preference.ties,
            share_first=preference.share_first,
            low=preference.low,
            high=preference.high,
            by_labeler={name: list(counts) for name, counts in preference.by_labeler.items()},
        )
