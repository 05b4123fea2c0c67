"""Blind labelling queues: an audit served to people one item at a time.

Any audit (``audit sample``, a cascade's escalated items, the API or the page) is a queue. Its
settings (`QueueSettings`) say how many labels from different labelers each item asks for, how
long a served item is held for its labeler, who the queue is for, and whether the judge's
answer is offered after a label. An audit nobody configured is served with the defaults.

**Serving.** `LabelQueue.next` gives a labeler the item they already hold (a reload, or a resume
the next day, shows the same item), else the first item, in audit order, that they have neither
labelled nor skipped and that is still short of its labels once the labels given and *other*
labelers' live reservations are counted; that item is then reserved to them for
``reserve_seconds``. A lapsed reservation simply stops counting, so the item goes to the next
labeler who asks. Each decision is one ``BEGIN IMMEDIATE`` transaction (`QueueRepository`), so
concurrent labelers — threads or processes — never get the same last slot.

**Blind.** What a labeler is sent (`QueueItem`) holds the card's inputs, the label form and their
progress: never the judge's verdict, scores, reasons or reply, nor anyone else's labels. The
judge's answer (`LabelQueue.judge_answer`) is given only for an item the asking labeler has
already labelled. Why they differ (`REVEAL_REASONS`) is stored in ``label_reveals``, apart from
the labels, so it never reaches kappa.

**A label given before the reveal is the measurement.** Showing the judge's answer is recorded
(``queue_disclosures``, with the time). From then on ``undo`` refuses to retract that label; a
correction the labeler still wants to make is stored by `LabelQueue.revise` in
``label_revisions``, marked with when the answer was shown. Agreement, kappa, the corrected
estimates and the audit gate read ``labels`` only; they use revisions only when asked
(``CalibrationRepository.labels(revisions=True)``, ``audit report --with-revisions``).

**Only what was served.** A labeler may label an item only while it was served to them (they
hold it, or held it and nobody took it since their hold lapsed) and it is not already complete
with others' labels and holds; anything else is refused (``conflict``), so an item never gets
more labels than it asks for and no one opens a judge answer by labelling an item they were
never given.

**Pairwise sides.** For a card with a ``winner`` field, each (labeler, item) gets its answers in
an order drawn from HMAC-SHA256(queue secret, audit, result, labeler): the same labeler always
sees the same order, different labelers different ones. The order is stored (``queue_sides``)
when the item is served; the labeler's ``A`` / ``B`` are positions as shown and are mapped back
to the result's own A / B before storing, so the labels mean what the judge's do, and
`LabelQueue.position_preference` measures how often people pick the answer shown first.

**Labels** are written by `CalibrationRepository.add_labels` into ``labels`` with the audit id,
``source = "serve"`` and the labeler's name, exactly as ``labels import`` writes them, so
``audit report``, the gate and every calibration function read them unchanged. ``undo`` removes
the labeler's newest served label (never an imported sheet's) and gives that item back to them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Literal

from calibration.audits.queue_records import (
    DEFAULT_RESERVE_SECONDS,
    MAX_NOTE_CHARS,
    REVEAL_REASONS,
    JudgeAnswer,
    LabelQueueError,
    PositionPreference,
    Progress,
    QueueItem,
    QueueSettings,
    QueueSummary,
    checked_values,
    flipped,
    settings_of,
)
from calibration.audits.queue_repository import QueueRepository
from calibration.labels import (
    AuditRecord,
    CalibrationRepository,
    LabelField,
    NewLabel,
    label_fields,
    open_store,
)
from judgecards.cards import Card, load_card
from judgecards.errors import CardError, JudgecardsError, LabelImportError
from judgecards.schemas import RubricPolicy
from judgecards.storage import Store

__all__ = [
    "REVEAL_REASONS",
    "JudgeAnswer",
    "LabelQueue",
    "LabelQueueError",
    "PositionPreference",
    "Progress",
    "QueueItem",
    "QueueSettings",
    "QueueSummary",
]

CardsDir = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


class LabelQueue:
    """The labelling queues of one results database.

    Args:
        db: a `Store` or a database path (the calibration tables are created or migrated).
        cards_dir: extra card directories, to read user cards' inputs and label fields.
        clock: seconds since the epoch (tests pass their own to expire reservations).
    """

    def __init__(
        self,
        db: Store | str | os.PathLike[str] | None = None,
        *,
        cards_dir: CardsDir = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._owns_store = not isinstance(db, Store)
        self.store = open_store(db)
        self.calibration = CalibrationRepository(self.store)
        self.repository = QueueRepository(self.store)
        self.cards_dir = cards_dir
        self.clock = clock
        self._cards: dict[str, Card] = {}
        self._card_fields: dict[str, dict[str, LabelField]] = {}

    def __enter__(self) -> LabelQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database if this object opened it."""
        if self._owns_store:
            self.store.close()

    # ------------------------------------------------------------------ settings

    def open(
        self,
        audit_id: int,
        *,
        labels_wanted: int = 1,
        reserve_seconds: int = DEFAULT_RESERVE_SECONDS,
        labelers: Sequence[str] | None = None,
        reveal: bool = True,
    ) -> QueueSettings:
        """Set how an existing audit is served (again: new settings, the same pairwise sides)."""
        self._audit(audit_id)
        if labels_wanted < 1:
            raise LabelQueueError(
                f"labels_wanted must be at least 1, got {labels_wanted}",
                code="invalid",
                field="labels_wanted",
            )
        if reserve_seconds < 1:
            raise LabelQueueError(
                f"reserve_seconds must be at least 1, got {reserve_seconds}",
                code="invalid",
                field="reserve_seconds",
            )
        names = None if labelers is None else tuple(dict.fromkeys(labelers))
        with self.repository.transaction(f"open audit #{audit_id} for labelling") as tx:
            self.repository.save_queue(
                tx,
                {
                    "audit_id": audit_id,
                    "labels_wanted": labels_wanted,
                    "reserve_seconds": reserve_seconds,
                    "labelers": None if names is None else json.dumps(list(names)),
                    "reveal": int(reveal),
                    "secret": secrets.token_hex(32),
                    "created_at": _now(),
                },
            )
        return self.settings(audit_id)

    def create(  # noqa: PLR0913  public API: keyword-only options, as Audit.sample
        self,
        *,
        card: str,
        model: str,
        n: int = 50,
        seed: int | None = None,
        strategy: Literal["uniform", "stratified", "uncertainty"] | None = None,
        since: datetime | str | None = None,
        labels_wanted: int = 1,
        reserve_seconds: int = DEFAULT_RESERVE_SECONDS,
        labelers: Sequence[str] | None = None,
        reveal: bool = True,
    ) -> QueueSettings:
        """Draw a new audit exactly as `calibration.Audit.sample` does, and open it as a queue."""
        from calibration.audits.audit import Audit

        audit = Audit(self.store, cards_dir=self.cards_dir)
        sample = audit.sample(
            card=card, model=model, n=n, seed=seed, strategy=strategy, since=since
        )
        return self.open(
            sample.audit.id,
            labels_wanted=labels_wanted,
            reserve_seconds=reserve_seconds,
            labelers=labelers,
            reveal=reveal,
        )

    def want(self, audit_id: int, positions: Sequence[int], labels_wanted: int | None) -> None:
        """Ask some items for their own number of labels (``None``: back to the queue's)."""
        self._audit(audit_id)
        if labels_wanted is not None and labels_wanted < 1:
            raise LabelQueueError(
                f"labels_wanted must be at least 1, got {labels_wanted}",
                code="invalid",
                field="labels_wanted",
            )
        with self.repository.transaction(f"set the labels wanted in audit #{audit_id}") as tx:
            found = self.repository.want(tx, audit_id, positions, labels_wanted)
            if found != len(set(positions)):
                raise LabelQueueError(
                    f"audit #{audit_id} has no item at some of positions {sorted(positions)}",
                    code="not_found",
                    field="positions",
                )

    def settings(self, audit_id: int) -> QueueSettings:
        """An audit's queue settings (the defaults when it was never opened)."""
        row = self.repository.queue(audit_id)
        if row is None:
            self._audit(audit_id)
            return QueueSettings(audit_id)
        return settings_of(row)

    def queues(self, labeler: str | None = None, *, every: bool = False) -> list[QueueSummary]:
        """The queues that are for ``labeler`` (``every``: all of them), oldest first.

        Each carries ``labeler``'s progress where the queue is for them (else zeros).
        """
        configured = {row[0]: settings_of(row) for row in self.repository.queues()}
        summaries = []
        for record in self.calibration.audits():
            settings = configured.get(record.id, QueueSettings(record.id))
            mine = labeler is not None and settings.admits(labeler)
            if not (mine or every):
                continue
            progress = self._progress(settings, labeler) if mine and labeler else Progress(0, 0, 0)
            summaries.append(QueueSummary(record, settings, progress))
        return summaries

    # ------------------------------------------------------------------ labelling

    def next(self, audit_id: int, labeler: str) -> QueueItem | None:
        """The item this labeler works on now (reserved to them), or ``None`` when done."""
        settings = self._settings_for(audit_id, labeler)
        record = self._audit(audit_id)
        now = self.clock()
        with self.repository.transaction(f"serve an item of audit #{audit_id}") as tx:
            self._ensure_queue(tx, settings)
            position = self.repository.held(tx, audit_id, labeler, now)
            if position is None:
                position = self.repository.first_open(
                    tx, audit_id, labeler, settings.labels_wanted, now
                )
            if position is None:
                return None
            self.repository.reserve(
                tx, audit_id, position, labeler, until=now + settings.reserve_seconds
            )
            stored = self.repository.item(audit_id, position)
            assert stored is not None  # the position was just read in this transaction
            swapped = self._side(tx, settings, position, stored[0], labeler, record)
        return self._blind_item(record, settings, position, stored[0], labeler, swapped)

    def submit(
        self,
        audit_id: int,
        labeler: str,
        position: int,
        values: Mapping[str, Any],
        *,
        note: str | None = None,
    ) -> Progress:
        """Store a labeler's blind label of one item; every field of its form must be given.

        Pairwise ``winner`` values are positions as this labeler was shown them. Raises
        `LabelQueueError` (nothing stored) for an unknown item, a second label of the same
        item by the same labeler (``undo`` first), an item not served to them or given to
        others since, a missing or invalid value.
        """
        settings = self._settings_for(audit_id, labeler)
        record = self._audit(audit_id)
        stored = self._item(audit_id, position)
        result_id, item_id = stored[0], stored[1]
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise LabelQueueError(
                f"note must be at most {MAX_NOTE_CHARS} characters, got {len(note)}",
                code="invalid",
                field="note",
            )
        fields, _ = self._fields(record.card, self._inputs(result_id))
        checked = checked_values(fields, values)
        now_text = _now()
        now = self.clock()
        with self.repository.transaction(f"store a label in audit #{audit_id}") as tx:
            if self.repository.labelled(tx, audit_id, result_id, labeler):
                raise LabelQueueError(
                    f"{labeler} already labelled item {position} of audit #{audit_id} "
                    "(undo it to label it again)",
                    code="conflict",
                )
            served, taken, wanted = self.repository.serving(
                tx, audit_id, position, labeler, wanted=settings.labels_wanted, now=now
            )
            if not served:
                raise LabelQueueError(
                    f"item {position} of audit #{audit_id} was not served to {labeler}: label "
                    "the item POST /v1/audits/{id}/next gives you",
                    code="conflict",
                )
            if taken >= wanted:
                raise LabelQueueError(
                    f"{labeler}'s hold on item {position} of audit #{audit_id} lapsed and the "
                    "item went to another labeler; nothing was stored (ask for the next item)",
                    code="conflict",
                )
            self._ensure_queue(tx, settings)
            swapped = self._side(tx, settings, position, result_id, labeler, record)
            labels = [
                NewLabel(
                    result_id=result_id,
                    item_id=item_id,
                    card=record.card,
                    model=record.model,
                    labeler=labeler,
                    field=name,
                    kind=fields[name].kind,
                    value=flipped(value) if swapped and fields[name].kind == "winner" else value,
                    note=note or None,
                    created_at=now_text,
                    source="serve",
                )
                for name, value in checked.items()
            ]
            try:
                self.calibration.add_labels(labels, audit_id=audit_id, source="serve")
            except LabelImportError as error:
                raise LabelQueueError(str(error), code="conflict") from error
            self.repository.release(tx, audit_id, position, labeler)
        return self._progress(settings, labeler)

    def skip(self, audit_id: int, labeler: str, position: int) -> Progress:
        """Never serve this item to this labeler again; it goes to others at once."""
        settings = self._settings_for(audit_id, labeler)
        self._item(audit_id, position)
        with self.repository.transaction(f"skip an item of audit #{audit_id}") as tx:
            self.repository.skip(tx, audit_id, position, labeler, _now())
            self.repository.release(tx, audit_id, position, labeler)
        return self._progress(settings, labeler)

    def undo(self, audit_id: int, labeler: str) -> int:
        """Remove this labeler's newest served label in the queue and hold that item for them.

        Returns the item's position (`next` serves it again). Labels from an imported sheet are
        never undone here. Raises `LabelQueueError` (``conflict``) when there is nothing to undo
        or when the judge's answer on that item was already shown to them (use `revise`).
        """
        settings = self._settings_for(audit_id, labeler)
        now = self.clock()
        with self.repository.transaction(f"undo a label in audit #{audit_id}") as tx:
            result_id = self.repository.last_served_label(tx, audit_id, labeler)
            if result_id is None:
                raise LabelQueueError(
                    f"{labeler} has no label in audit #{audit_id} to undo", code="conflict"
                )
            position = self.repository.position_of(tx, audit_id, result_id)
            if self.repository.disclosed_at(tx, audit_id, position, labeler) is not None:
                raise LabelQueueError(
                    f"the judge's answer on item {position} of audit #{audit_id} was shown to "
                    f"{labeler}, so the label given before it stays; a correction is stored as "
                    f"a marked revision (POST /v1/audits/{audit_id}/items/{position}/revision), "
                    "which agreement and kappa do not use unless asked",
                    code="conflict",
                    field="position",
                )
            self.repository.delete_labels(tx, audit_id, result_id, labeler)
            self.repository.reserve(
                tx, audit_id, position, labeler, until=now + settings.reserve_seconds
            )
        return position

    def progress(self, audit_id: int, labeler: str) -> Progress:
        """A labeler's progress in one queue."""
        return self._progress(self._settings_for(audit_id, labeler), labeler)

    # ------------------------------------------------------------------ after the blind label

    def judge_answer(self, audit_id: int, labeler: str, position: int) -> JudgeAnswer:
        """The judge's labels of an item, only once this labeler's own label of it is stored.

        Raises `LabelQueueError` (``not_found``) before that, and always in a queue whose
        settings say ``reveal=False``: the same answer as for an item that does not exist, so
        nothing about the judge can be learnt by asking early. Showing it is recorded: from
        then on the labeler's label of the item stays (see `undo`, `revise`).
        """
        if not self._settings_for(audit_id, labeler).reveal:
            raise LabelQueueError(
                f"audit #{audit_id} does not show the judge's answers", code="not_found"
            )
        record = self._audit(audit_id)
        result_id, _, judge_json = self._item(audit_id, position)
        mine = {
            label.field: label.value
            for label in self.calibration.labels(audit_id=audit_id, labeler=labeler)
            if label.result_id == result_id
        }
        if not mine:
            raise LabelQueueError(
                f"no judge answer to show for item {position} of audit #{audit_id} before "
                f"{labeler}'s own label of it",
                code="not_found",
            )
        fields, _ = self._fields(record.card, self._inputs(result_id))
        with self.repository.transaction(f"show a judge answer in audit #{audit_id}") as tx:
            self.repository.disclose(
                tx, audit_id, position, labeler, result_id=result_id, at=_now()
            )
        swapped = bool(self.repository.side(audit_id, position, labeler))
        judge = {name: value for name, value in json.loads(judge_json).items() if name in fields}
        if swapped:
            judge = {n: flipped(v) if fields[n].kind == "winner" else v for n, v in judge.items()}
            mine = {n: flipped(v) if fields[n].kind == "winner" else v for n, v in mine.items()}
        differs = tuple(name for name in fields if name in judge and judge[name] != mine.get(name))
        return JudgeAnswer(position, judge, mine, differs)

    def revise(
        self,
        audit_id: int,
        labeler: str,
        position: int,
        values: Mapping[str, Any],
        *,
        note: str | None = None,
    ) -> int:
        """Store a labeler's correction of their label made after the judge's answer was shown.

        Kept in ``label_revisions``, marked with when the answer was shown; the blind label
        stays in ``labels`` and is what agreement and kappa read unless revisions are asked
        for. Every field of the form must be given. Returns how many values were stored.
        Raises `LabelQueueError`: ``conflict`` when the answer was not shown yet (``undo``
        and label again instead), ``invalid`` for a bad value.
        """
        settings = self._settings_for(audit_id, labeler)
        record = self._audit(audit_id)
        result_id, item_id, _ = self._item(audit_id, position)
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise LabelQueueError(
                f"note must be at most {MAX_NOTE_CHARS} characters", code="invalid", field="note"
            )
        fields, _ = self._fields(record.card, self._inputs(result_id))
        checked = checked_values(fields, values)
        with self.repository.transaction(f"revise a label in audit #{audit_id}") as tx:
            revealed_at = self.repository.disclosed_at(tx, audit_id, position, labeler)
            if revealed_at is None:
                raise LabelQueueError(
                    f"the judge's answer on item {position} of audit #{audit_id} was not shown "
                    f"to {labeler}: undo the label and label it again instead",
                    code="conflict",
                )
            swapped = self._side(tx, settings, position, result_id, labeler, record)
        created_at = _now()
        self.calibration.add_revisions(
            [
                {
                    "audit_id": audit_id,
                    "result_id": result_id,
                    "item_id": item_id,
                    "labeler": labeler,
                    "field": name,
                    "kind": fields[name].kind,
                    "value": flipped(value) if swapped and fields[name].kind == "winner" else value,
                    "note": note or None,
                    "revealed_at": revealed_at,
                    "created_at": created_at,
                }
                for name, value in checked.items()
            ]
        )
        return len(checked)

    def explain(
        self,
        audit_id: int,
        labeler: str,
        position: int,
        reason: str | None,
        *,
        note: str | None = None,
    ) -> None:
        """Store why this labeler's label differs from the judge's (``None``: it does not).

        Kept in ``label_reveals``, apart from the labels: kappa never sees it.
        """
        if reason is not None and reason not in REVEAL_REASONS:
            raise LabelQueueError(
                f"reason must be one of {', '.join(REVEAL_REASONS)} or null, got {reason!r}",
                code="invalid",
                field="reason",
            )
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise LabelQueueError(
                f"note must be at most {MAX_NOTE_CHARS} characters", code="invalid", field="note"
            )
        answer = self.judge_answer(audit_id, labeler, position)
        result_id = self._item(audit_id, position)[0]
        with self.repository.transaction(f"store a reveal in audit #{audit_id}") as tx:
            self.repository.save_reveal(
                tx,
                {
                    "audit_id": audit_id,
                    "position": position,
                    "labeler": labeler,
                    "result_id": result_id,
                    "judge": answer.judge,
                    "reason": reason,
                    "note": note,
                    "created_at": _now(),
                },
            )

    def position_preference(self, audit_id: int) -> PositionPreference:
        """People's first-position preference over this audit's served pairwise labels."""
        sides = self.repository.sides(audit_id)
        positions = {
            item.result_id: item.position for item in self.calibration.audit_items(audit_id)
        }
        counts: dict[str, list[int]] = {}
        for label in self.calibration.labels(audit_id=audit_id):
            swapped = sides.get((positions.get(label.result_id, -1), label.labeler))
            if label.kind != "winner" or swapped is None:
                continue
            shown = flipped(label.value) if swapped else label.value
            tally = counts.setdefault(label.labeler, [0, 0, 0])
            tally[("A", "B", "tie").index(shown)] += 1
        first = sum(t[0] for t in counts.values())
        second = sum(t[1] for t in counts.values())
        ties = sum(t[2] for t in counts.values())
        decided = first + second
        low = high = None
        if decided:
            from scipy.stats import binomtest  # Wilson's interval; scipy comes with scikit-learn

            interval = binomtest(first, decided).proportion_ci(method="wilson")
            low, high = float(interval.low), float(interval.high)
        return PositionPreference(
            first,
            second,
            ties,
            first / decided if decided else None,
            low,
            high,
            {name: (t[0], t[1], t[2]) for name, t in sorted(counts.items())},
        )

    # ------------------------------------------------------------------ internals

    def _audit(self, audit_id: int) -> AuditRecord:
        record = self.calibration.audit(audit_id)
        if record is None:
            raise LabelQueueError(f"no audit #{audit_id}", code="not_found", field="audit_id")
        return record

    def _settings_for(self, audit_id: int, labeler: str) -> QueueSettings:
        try:
            settings = self.settings(audit_id)
        except LabelQueueError:
            settings = None
        if settings is None or not settings.admits(labeler):
            # A queue that is not theirs looks like one that does not exist.
            raise LabelQueueError(f"no audit #{audit_id}", code="not_found", field="audit_id")
        return settings

    def _ensure_queue(self, tx: Any, settings: QueueSettings) -> None:
        """Give an audit served with the defaults its row (and so its pairwise secret)."""
        if self.repository.queue(settings.audit_id) is None:
            self.repository.save_queue(
                tx,
                {
                    "audit_id": settings.audit_id,
                    "labels_wanted": settings.labels_wanted,
                    "reserve_seconds": settings.reserve_seconds,
                    "labelers": None,
                    "reveal": int(settings.reveal),
                    "secret": secrets.token_hex(32),
                    "created_at": _now(),
                },
            )

    def _item(self, audit_id: int, position: int) -> tuple[str, str | None, str]:
        stored = self.repository.item(audit_id, position)
        if stored is None:
            raise LabelQueueError(
                f"audit #{audit_id} has no item {position}", code="not_found", field="position"
            )
        return stored

    def _inputs(self, result_id: str) -> dict[str, Any]:
        stored = self.store.get(result_id)
        if stored is None:
            raise LabelQueueError(
                f"result {result_id} is no longer stored", code="not_found", field="position"
            )
        return stored[1]

    def _card(self, ref: str) -> Card:
        if ref not in self._cards:
            try:
                self._cards[ref] = load_card(ref, cards_dir=self.cards_dir)
            except CardError as error:  # a user card gone from the cards directory
                raise LabelQueueError(
                    f"the audit's card {ref} cannot be loaded, so its items cannot be labelled: "
                    f"{error}",
                    code="invalid",
                ) from error
        return self._cards[ref]

    def _fields(
        self, ref: str, inputs: Mapping[str, Any]
    ) -> tuple[dict[str, LabelField], dict[str, str]]:
        """The item's label form: the card's label fields, or a rubric item's criteria."""
        card = self._card(ref)
        if ref not in self._card_fields:  # a JSON Schema walk: once per card, not per request
            self._card_fields[ref] = label_fields(card)
        fields = dict(self._card_fields[ref])
        hints: dict[str, str] = {}
        if not fields and "criteria" in card.spec.inputs:
            try:
                criteria = RubricPolicy().criteria_for(inputs.get("criteria"))
            except ValueError as error:
                raise LabelQueueError(
                    f"the item's criteria cannot be labelled: {error}", code="invalid"
                ) from error
            for criterion in criteria:
                name = criterion["name"]
                fields[name] = LabelField(
                    name, "score", minimum=criterion["scale_min"], maximum=criterion["scale_max"]
                )
                hints[name] = criterion["description"]
        return fields, hints

    def _side(  # noqa: PLR0917  one queue item's coordinates
        self,
        tx: Any,
        settings: QueueSettings,
        position: int,
        result_id: str,
        labeler: str,
        record: AuditRecord,
    ) -> bool:
        """Whether this labeler sees this pairwise item's answers swapped (stored once)."""
        try:
            fields, _ = self._fields(record.card, {})
        except JudgecardsError:
            return False
        if not any(spec.kind == "winner" for spec in fields.values()):
            return False
        known = self.repository.side(settings.audit_id, position, labeler)
        if known is not None:
            return known
        secret = self.repository.secret(settings.audit_id)
        message = f"{settings.audit_id}:{result_id}:{labeler}".encode()
        swapped = bool(hmac.new(secret.encode(), message, hashlib.sha256).digest()[0] & 1)
        self.repository.save_side(tx, settings.audit_id, position, labeler, swapped)
        return swapped

    def _blind_item(  # noqa: PLR0917  one queue item's coordinates
        self,
        record: AuditRecord,
        settings: QueueSettings,
        position: int,
        result_id: str,
        labeler: str,
        swapped: bool,
    ) -> QueueItem:
        card = self._card(record.card)
        stored = self._inputs(result_id)
        fields, hints = self._fields(record.card, stored)
        shown = [
            name
            for name in card.spec.inputs
            if name in stored and not (hints and name == "criteria")
        ]
        inputs = {name: stored[name] for name in shown}
        if swapped and "answer_a" in inputs and "answer_b" in inputs:
            inputs["answer_a"], inputs["answer_b"] = inputs["answer_b"], inputs["answer_a"]
        return QueueItem(
            record.id,
            position,
            record.card,
            inputs,
            tuple(fields.values()),
            hints,
            self._progress(settings, labeler),
            settings.reveal,
        )

    def _progress(self, settings: QueueSettings, labeler: str) -> Progress:
        audit_id = settings.audit_id
        return Progress(
            self.repository.done_count(audit_id, labeler),
            self.repository.open_count(audit_id, labeler, settings.labels_wanted, self.clock()),
            self.repository.skipped_count(audit_id, labeler),
        )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()
