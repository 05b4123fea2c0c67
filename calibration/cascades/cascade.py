"""A cascade of judges, cheap to strong, each trusted only where its agreement is guaranteed.

"Trust or Escalate" (Jung, Brahman and Choi, ICLR 2025): every judge gets its own confidence
threshold, calibrated by `calibration.cascade_thresholds` on the human labels stored for the
card version — a calibration item agrees when the judge's answer on the label field equals the
labelers' majority — using only the labelled items no earlier judge trusts, since those are the
items it will decide (calibrated on all of them, a later judge fell below target on what it
decided far more often than δ). Items are matched across judges by their ``id``. An item goes to the first judge; when that judge's
confidence (`calibration.stats.confidence.judgment_confidence`) is below its threshold, or its
result is an error record, the item goes to the next judge, and so on. Items no judge trusts go
to people: they become one audit of kind ``escalated`` (the newest result of each, by the last
judge that saw it), ready for ``judgecards audit sheet`` and ``audit ingest``. A re-run that
escalates an item an earlier escalated audit already holds (waiting or labelled) points at that
audit instead of queueing it again. Every result a run made is recorded in ``cascade_results``
(`calibration.cascades.repository`), which is what the report states the guarantee from.

With probability at least ``1 - delta`` *per judge*, that judge agrees with people on at least
``target`` of the items it decides, so the items the cascade decides meet the target too (a
mix of shares each ≥ target); with m judges the joint probability is at least ``1 - m·delta``.
A judge without a threshold decides nothing and is not called (there is no fallback that would
break the guarantee); when no judge has one, nothing is called and `AuditError` says so.

Calibration labels come from samples in which every item was equally likely (``audit sample``,
``labels import``). Labels given in an ``escalated`` audit are left out, since those items were
chosen for being hard, and so are those of an uncertainty sample (``audit sample --strategy
uncertainty``), which draws unsure items more often: either would bias the thresholds.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from calibration.audits import humans_by_result, primary_order
from calibration.cascades.repository import save_cascade_result_decisions
from calibration.cascades.stages import (
    CascadeStage,
    DecisionRecord,
    EarlierQueue,
    Judgment,
    RunRecord,
    StagedCascade,
    calibration_labels,
    check_cascade,
    minimum_labels,
)
from calibration.labels import (
    AuditItem,
    CalibrationRepository,
    LabelField,
    judge_labels,
    label_fields,
)
from calibration.stats import judgment_confidence
from judgecards.storage import JudgeResult
from judgecards.units import ITEMS

if TYPE_CHECKING:
    from judgecards.judging import Judge, Progress
    from judgecards.storage import Store

__all__ = ["Cascade", "CascadeDecision", "CascadeRun", "CascadeStage", "minimum_labels"]


@dataclass(frozen=True)
class CascadeDecision(DecisionRecord):
    """Who decided one item.

    Attributes:
        item_id: the item's ``id``, if it had one.
        result: the result of the judge that decided it, else of the last judge that saw it
            (``None`` only if no judge was called).
        decided_by: the model that decided it; ``None``: it went to people (or every judge
            returned an error record: see ``result.status``).
        stage: that judge's position in the cascade (0 first), else ``None``.
        threshold: the threshold it passed, else ``None``.
        confidence: the deciding (or last) judge's confidence on it.
        audit_id: the ``escalated`` audit it is in for people (this run's, or the earlier one
            that already held it), else ``None``.
    """

    item_id: str | None
    result: JudgeResult | None
    decided_by: str | None
    stage: int | None
    threshold: float | None
    confidence: float | None
    audit_id: int | None = None

    def annotated(self) -> JudgeResult | None:
        """The result with ``output["cascade"]`` set to `record` (the stored row is unchanged)."""
        if self.result is None:
            return None
        output = {**(self.result.output or {}), "cascade": self.record()}
        return self.result.model_copy(update={"output": output})


@dataclass(frozen=True)
class CascadeRun(RunRecord):
    """The outcome of `Cascade.run`.

    Attributes:
        decisions: one per item, in input order.
        stages: every judge with its threshold, calls and decisions.
        field: the label field the guarantee is about.
        target / delta: the guarantee: agreement ≥ target on decided items, per judge with
            probability ≥ 1 − delta.
        audit_id: the ``escalated`` audit this run made for the items people must decide, if
            any.
        earlier: escalated items already in an earlier escalated audit of this card version
            and judge (waiting or labelled there), per audit: not queued again.
    """

    decisions: tuple[CascadeDecision, ...]
    stages: tuple[CascadeStage, ...]
    field: str
    target: float
    delta: float
    audit_id: int | None
    earlier: tuple[EarlierQueue, ...] = ()


class Cascade(StagedCascade[JudgeResult]):
    """Judges of one card from cheapest to strongest, each trusted above its own threshold.

    Args:
        judges: `judgecards.Judge` objects of the same card version, in the order to try them.
        target: agreement with people to guarantee on the items each judge decides, in (0, 1).
        delta: allowed probability, per judge, that its guarantee fails, in (0, 1).
        field: the label field agreement is about; default the card's primary field (its
            verdict, else its first score axis).

    Raises:
        ValueError: no judges, judges of different cards, a bad target/delta or field.
    """

    def __init__(
        self,
        judges: Sequence[Judge],
        *,
        target: float,
        delta: float = 0.1,
        field: str | None = None,
    ) -> None:
        check_cascade(judges, target, delta)
        first = judges[0].card
        fields = label_fields(first)
        order = [name for name in primary_order(fields) if fields[name].kind != "winner"]
        if field is None:
            if not order:
                raise ValueError(f"{first.ref} has no verdict or score axis to cascade on")
            field = order[0]
        elif field not in order:
            raise ValueError(f"{first.ref} has no field {field!r} (fields: {', '.join(order)})")
        super().__init__(
            judges, _ItemReading(fields, field), target=target, delta=delta, field=field
        )
        self.fields = fields

    def run(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 8,
        progress: Progress | None = None,
        queue: bool = True,
    ) -> CascadeRun:
        """Judge items down the cascade; record the ones no judge trusts as an audit for people.

        Args:
            items: mappings of the card's inputs, optionally with an ``id`` (as for
                `Judge.score_many`).
            concurrency: calls in flight per judge.
            progress: passed to each judge's `score_many`.
            queue: record the escalated items as an ``escalated`` audit (in the database of
                the last judge that saw them); ``False`` only reports them. An item an earlier
                escalated audit of this card version and judge already holds (waiting or
                labelled) is not queued again: its decision names that audit.

        Every result the run made is recorded in ``cascade_results`` (`calibration.
        cascade_repository`): whether it decided its item, who did, the threshold, the
        confidence, the audit, the target and δ; a result's newest run is the one that counts.

        Raises:
            AuditError: from `calibrate`, before any call.
        """
        walk, escalation, decisions = self.decide(
            items,
            ITEMS,
            CascadeDecision,
            concurrency=concurrency,
            progress=progress,
            queue=queue,
        )
        return CascadeRun(
            decisions,
            walk.stages,
            self.field,
            self.target,
            self.delta,
            escalation.audit_id,
            escalation.earlier,
        )


@dataclass(frozen=True)
class _ItemReading:
    """What the cascade reads of an item: the labels of its results on ``field``, matched
    across judges by item ``id``; a result's confidence on ``field``."""

    fields: Mapping[str, LabelField]
    field: str
    what: str = "results"

    def votes(self, judge: Judge) -> tuple[dict[Hashable, dict[str, Hashable]], Judgment]:
        ref = judge.card.ref
        labels = calibration_labels(
            CalibrationRepository(judge.store), ref, judge.model, self.field
        )
        by_key: dict[Hashable, dict[str, Hashable]] = {}
        for result_id, by_labeler in humans_by_result(labels).items():
            found = judge.store.result_ref(result_id)
            key = _key(result_id, None if found is None else found[0])
            for labeler, values in by_labeler.items():
                by_key.setdefault(key, {})[labeler] = values[self.field]

        def judgment(key: Hashable) -> tuple[Hashable | None, float] | None:
            kind, name = cast("tuple[str, str]", key)
            if kind == "result":
                ids = [name]
            else:
                ids = judge.store.result_ids(item_id=name, card=ref, model=judge.model)
            stored = judge.store.get(ids[-1]) if ids else None
            if stored is None or stored[0].model != judge.model:
                return None
            result = stored[0]
            if result.status != "ok":
                return None, 0.0
            said = judge_labels(self.fields, result).get(self.field)
            return said, judgment_confidence(result, self.field)

        return by_key, judgment

    def confidence(self, judge: Judge, unit: JudgeResult) -> float:
        return judgment_confidence(unit, self.field)

    def audit_item(self, position: int, unit: JudgeResult) -> AuditItem:
        return AuditItem(position, unit.id, unit.item_id, judge_labels(self.fields, unit))

    def columns(self, unit: JudgeResult) -> dict[str, Any] | None:
        if unit.status == "not_judged":
            return None  # never stored
        return {"result_id": unit.id, "item_id": unit.item_id, "model": unit.model}

    def save(self, store: Store, rows: Sequence[Mapping[str, Any]]) -> None:
        save_cascade_result_decisions(store, rows)


def _key(result_id: str, item_id: str | None) -> tuple[str, str]:
    """The unit a label is about: the item (matched across judges by its id), else the one
    result (a result without an item id is known to its own judge only)."""
    return ("result", result_id) if item_id is None else ("item", item_id)
