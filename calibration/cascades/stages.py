"""What every cascade shares: its stages, which labels may calibrate them, its errors, and the
one cascade itself (`StagedCascade`), whatever unit it decides.

`calibration.cascades.cascade` (one item per judgment) and `calibration.cascades.pairwise` (pairs, each
judged in both orders) calibrate each judge the same way and fail the same way: the labels of
``escalated`` audits and of uncertainty samples are left out (those items were not drawn with
equal probability, so they would bias a threshold), several labelers count as their majority
(a tie gives no reference), a judge with fewer labels than `minimum_labels` stops the run
before any call, and a cascade in which no judge can meet the target calls nobody.

`StagedCascade` calibrates, walks the units down the judges, escalates, decides and records
once for both: an item and a pair differ only in how a judge judges them (`judgecards.units`)
and in what a cascade reads of them (`CascadeReading`: people's votes, a judgment's confidence,
its audit item and its recorded columns).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from calibration.labels import AuditItem, CalibrationRepository, Label, open_store
from calibration.stats import SelectiveThreshold, cascade_stage_thresholds
from judgecards.errors import AuditError
from judgecards.judging import item_id_of

if TYPE_CHECKING:
    from judgecards.cards import Card
    from judgecards.judging import Judge, Progress
    from judgecards.storage import Store
    from judgecards.units import Units

__all__ = [
    "CascadeReading",
    "CascadeStage",
    "DecisionRecord",
    "EarlierQueue",
    "Escalation",
    "RunRecord",
    "StageWalk",
    "StagedCascade",
    "calibrate_stages",
    "calibration_labels",
    "check_cascade",
    "earlier_queues",
    "escalate",
    "majority",
    "minimum_labels",
    "no_threshold_error",
    "stage_lines",
    "stage_record",
    "too_few_labels",
    "walk_stages",
]

Unit = TypeVar("Unit")
"""What a cascade judges at once: a `JudgeResult` (an item) or a `ComparisonResult` (a pair)."""
Decision = TypeVar("Decision")
Decided = TypeVar("Decided", bound="DecisionRecord")
Read = TypeVar("Read", contravariant=True)
Judgment = Callable[[Hashable], "tuple[Hashable | None, float] | None"]
"""A judge's judgment of a labelled unit by its key (see `calibrate_stages`' ``judgment``)."""


def minimum_labels(target: float, delta: float) -> int:
    """The fewest agreeing labelled items that can show agreement ≥ ``target`` at level 1 − δ.

    With n items and no disagreement the one-sided Clopper–Pearson bound is δ^(1/n), so n must
    be at least log δ / log target (15 for target 0.85 and δ 0.1). More are needed as soon as
    the judge gets any of them wrong.
    """
    return math.ceil(math.log(delta) / math.log(target) - 1e-9)


@dataclass(frozen=True)
class CascadeStage:
    """One judge of a cascade, as calibrated, and what it did in a run.

    Attributes:
        model: the judge model, ``provider:model``.
        selective: its calibrated threshold (``selective.threshold`` is ``None``: it decides
            nothing and is never called).
        n_labels: labelled results (or comparisons) its threshold was calibrated on: those no
            earlier judge trusts (`calibration.cascade_thresholds`).
        sent: items (or pairs) sent to it in the run (cached ones included).
        calls: judgments it made with a provider call (not served from the store or cache);
            a pair is two judgments, one per order.
        decided: items (or pairs) it decided.
    """

    model: str
    selective: SelectiveThreshold
    n_labels: int
    sent: int = 0
    calls: int = 0
    decided: int = 0

    @property
    def threshold(self) -> float | None:
        """Its confidence threshold, or ``None``."""
        return self.selective.threshold


@dataclass(frozen=True)
class EarlierQueue:
    """Escalated items a run found already in an earlier ``escalated`` audit: not queued again.

    Attributes:
        audit_id: that audit.
        waiting: items there that no one has labelled yet.
        labelled: items there people have labelled already.
    """

    audit_id: int
    waiting: int
    labelled: int

    def line(self, unit: str) -> str:
        """Its part of a summary."""
        n = self.waiting + self.labelled
        return (
            f"{n} {unit if n != 1 else unit.rstrip('s')} already in audit #{self.audit_id} "
            f"({self.waiting} waiting, {self.labelled} labelled): not queued again"
        )


class DecisionRecord:
    """What a decision of either cascade says of itself (`CascadeDecision`, `PairDecision`):
    whether people must decide, and the ``cascade`` entry written beside its output row."""

    decided_by: str | None
    stage: int | None
    threshold: float | None
    confidence: float | None
    audit_id: int | None

    @property
    def escalated(self) -> bool:
        """True when people must decide it."""
        return self.decided_by is None

    def record(self) -> dict[str, Any]:
        """The ``cascade`` entry of an output row: who decided, at what threshold."""
        return {
            "decided_by": self.decided_by or "human",
            "stage": self.stage,
            "threshold": self.threshold,
            "confidence": self.confidence,
            "audit_id": self.audit_id,
        }


class RunRecord:
    """What a run of either cascade says of itself (`CascadeRun`, `PairwiseCascadeRun`): its
    coverage, what went to people, and its summary lines; ``unit`` names what it decides."""

    unit: ClassVar[str] = "items"
    decisions: Sequence[DecisionRecord]
    stages: tuple[CascadeStage, ...]
    field: str
    target: float
    delta: float
    audit_id: int | None
    earlier: tuple[EarlierQueue, ...]

    @property
    def coverage(self) -> float:
        """Share of units some judge decided (``nan`` for none)."""
        if not self.decisions:
            return math.nan
        return sum(not d.escalated for d in self.decisions) / len(self.decisions)

    @property
    def escalated(self) -> int:
        """Units left to people (failed judgments included)."""
        return sum(d.escalated for d in self.decisions)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: the guarantee, the units (under their ``unit`` name), coverage (``None``
        for no units), what went to people and every stage (`stage_record`)."""
        coverage = self.coverage
        return {
            "target": self.target,
            "delta": self.delta,
            "field": self.field,
            self.unit: len(self.decisions),
            "coverage": None if math.isnan(coverage) else coverage,
            "escalated": self.escalated,
            "audit_id": self.audit_id,
            "earlier_audits": [
                {"audit_id": q.audit_id, "waiting": q.waiting, "labelled": q.labelled}
                for q in self.earlier
            ],
            "stages": [stage_record(stage, i) for i, stage in enumerate(self.stages)],
        }

    def summary(self) -> str:
        """Lines for a closing summary: the guarantee, coverage, and calls per judge."""
        return "\n".join(
            stage_lines(
                self.stages,
                field=self.field,
                target=self.target,
                delta=self.delta,
                coverage=self.coverage,
                escalated=self.escalated,
                audit_id=self.audit_id,
                unit=self.unit,
                earlier=self.earlier,
            )
        )


@dataclass(frozen=True)
class Escalation:
    """Where a run's escalated units went: ``audit_id`` the new audit (None: none needed),
    ``in_audit`` each unit's audit by its index, ``earlier`` the earlier audits that held some."""

    audit_id: int | None
    in_audit: dict[int, int]
    earlier: tuple[EarlierQueue, ...]


def escalate(
    repository: CalibrationRepository,
    *,
    card: str,
    card_hash: str,
    model: str,
    result_ids: Mapping[int, str],
    queue: Callable[[list[int]], int],
) -> Escalation:
    """Send the units at ``result_ids``' indices to people: those an earlier escalated audit
    already holds stay there (`earlier_queues`), the rest go to one new audit made by ``queue``
    (called with their indices, only if there are any)."""
    found, earlier = earlier_queues(
        repository, card=card, card_hash=card_hash, model=model, result_ids=result_ids.values()
    )
    in_audit = {i: found[rid] for i, rid in result_ids.items() if rid in found}
    new = [i for i in result_ids if i not in in_audit]
    audit_id = queue(new) if new else None
    if audit_id is not None:
        in_audit.update(dict.fromkeys(new, audit_id))
    return Escalation(audit_id, in_audit, earlier)


@dataclass(frozen=True)
class StageWalk(Generic[Unit]):
    """What sending units down a cascade's judges left (`walk_stages`).

    Attributes:
        stages: the stages with what each did (sent, calls, decided).
        decided: per unit index the stage that decided it, its judgment and confidence.
        last: per unit index the judgment and confidence of the last judge that saw it.
        made: every judgment, as (unit index, stage, judgment, confidence, decided it).
        remaining: indices no judge decided; to_people: those with a usable last judgment.
        queue_judge: the last judge called (its database holds the escalated audit).
    """

    stages: tuple[CascadeStage, ...]
    decided: dict[int, tuple[int, Unit, float]]
    last: dict[int, tuple[Unit, float]]
    made: tuple[tuple[int, int, Unit, float, bool], ...]
    remaining: tuple[int, ...]
    to_people: tuple[int, ...]
    queue_judge: Judge | None

    def escalate(
        self,
        *,
        queue: bool,
        card: Card,
        result_id: Callable[[Unit], str],
        queue_units: Callable[[Judge, list[Unit]], int],
    ) -> Escalation:
        """Send the units no judge decided to people (`escalate`), unless ``queue`` is off."""
        judge = self.queue_judge
        if not (queue and self.to_people and judge is not None):
            return Escalation(None, {}, ())
        return escalate(
            CalibrationRepository(open_store(judge.store)),
            card=card.ref,
            card_hash=card.hash,
            model=judge.model,
            result_ids={i: result_id(self.last[i][0]) for i in self.to_people},
            queue=lambda new: queue_units(judge, [self.last[i][0] for i in new]),
        )

    def decisions(
        self,
        judges: Sequence[Judge],
        escalation: Escalation,
        make: Callable[..., Decision],
        *,
        unit_id: Callable[[Unit], str | None],
        unseen_id: Callable[[int], str | None],
    ) -> tuple[Decision, ...]:
        """One decision per unit, in input order: ``make(id, judgment, decided_by, stage,
        threshold, confidence, audit_id)``, by the judge that decided it, else by people with
        the last judge's judgment (``unseen_id`` names a unit no judge saw)."""
        made: dict[int, Decision] = {
            i: make(
                unit_id(unit), unit, judges[stage].model, stage, self.stages[stage].threshold, conf
            )
            for i, (stage, unit, conf) in self.decided.items()
        }
        for i in self.remaining:
            seen = self.last.get(i)
            made[i] = make(
                unseen_id(i) if seen is None else unit_id(seen[0]),
                None if seen is None else seen[0],
                None,
                None,
                None,
                None if seen is None else seen[1],
                escalation.in_audit.get(i),
            )
        return tuple(made[i] for i in range(len(made)))

    def rows_by_store(
        self,
        judges: Sequence[Judge],
        row: Callable[[int, int, Unit, float, bool], dict[str, Any] | None],
    ) -> list[tuple[Store, list[dict[str, Any]]]]:
        """``row`` of every judgment the walk made (None: not recorded), grouped by the
        database of the judge that made it."""
        grouped: dict[int, tuple[Store, list[dict[str, Any]]]] = {}
        for i, stage, unit, conf, decides in self.made:
            recorded = row(i, stage, unit, conf, decides)
            if recorded is not None:
                store = judges[stage].store
                grouped.setdefault(id(store), (store, []))[1].append(recorded)
        return list(grouped.values())


def walk_stages(
    judges: Sequence[Judge],
    stages: Sequence[CascadeStage],
    count: int,
    *,
    judge_units: Callable[[Judge, list[int]], Sequence[Unit]],
    confidence: Callable[[Judge, Unit], float],
    usable: Callable[[Unit], bool],
    calls: Callable[[Sequence[Unit]], int],
) -> StageWalk[Unit]:
    """Send ``count`` units to the judges cheapest first: each judge with a threshold judges
    what is still undecided (``judge_units`` with their indices) and decides the units whose
    judgment is ``usable`` and whose confidence it is trusted at; a judge without a threshold
    is never called. The decisions tables are created before anything is paid for."""
    for judge, stage in zip(judges, stages):
        if stage.threshold is not None:
            open_store(judge.store)
    walked = list(stages)
    decided: dict[int, tuple[int, Unit, float]] = {}
    last: dict[int, tuple[Unit, float]] = {}
    made: list[tuple[int, int, Unit, float, bool]] = []
    remaining = list(range(count))
    queue_judge: Judge | None = None
    for index, (judge, stage) in enumerate(zip(judges, walked)):
        if stage.threshold is None or not remaining:
            continue
        units = judge_units(judge, remaining)
        scores = [confidence(judge, unit) for unit in units]
        passed: list[int] = []
        for i, unit, conf, trust in zip(remaining, units, scores, stage.selective.trusts(scores)):
            last[i] = (unit, conf)
            decides = bool(trust) and usable(unit)
            made.append((i, index, unit, conf, decides))
            if decides:
                passed.append(i)
                decided[i] = (index, unit, conf)
        walked[index] = CascadeStage(
            stage.model,
            stage.selective,
            stage.n_labels,
            sent=len(units),
            calls=calls(units),
            decided=len(passed),
        )
        done = set(passed)
        remaining = [i for i in remaining if i not in done]
        queue_judge = judge
    to_people = tuple(i for i in remaining if i in last and usable(last[i][0]))
    return StageWalk(
        tuple(walked), decided, last, tuple(made), tuple(remaining), to_people, queue_judge
    )


def earlier_queues(
    repository: CalibrationRepository,
    *,
    card: str,
    card_hash: str,
    model: str,
    result_ids: Iterable[str],
) -> tuple[dict[str, int], tuple[EarlierQueue, ...]]:
    """Which of ``result_ids`` an earlier escalated audit of this card version and judge holds.

    A re-run of a cascade judges an item again with the same result id, so an item it escalates
    again is found in the audit it went to before (the newest, if several): waiting there, it is
    not queued a second time; labelled there, not queued for a new label either.

    Returns:
        ``{result_id: audit_id}`` for the items found, and per audit how many wait and how many
        are labelled (in audit order).
    """
    wanted = set(result_ids)
    found: dict[str, int] = {}
    for audit in repository.audits(card=card, model=model):  # oldest first: the newest wins
        if audit.kind != "escalated" or audit.card_hash != card_hash:
            continue
        for item in repository.audit_items(audit.id):
            if item.result_id in wanted:
                found[item.result_id] = audit.id
    queues = []
    for audit_id in sorted(set(found.values())):
        labelled = {label.result_id for label in repository.labels(audit_id=audit_id)}
        mine = [rid for rid, aid in found.items() if aid == audit_id]
        done = sum(rid in labelled for rid in mine)
        queues.append(EarlierQueue(audit_id, len(mine) - done, done))
    return found, tuple(queues)


def check_cascade(judges: Sequence[Judge], target: float, delta: float) -> None:
    """`ValueError` for no judges, judges of different card versions, or a bad target/delta."""
    if not judges:
        raise ValueError("a cascade needs at least one judge")
    first = judges[0].card
    for judge in judges[1:]:
        if (judge.card.ref, judge.card.hash) != (first.ref, first.hash):
            raise ValueError(
                f"every judge of a cascade must use one card: {first.ref} and "
                f"{judge.card.ref} ({judge.card.hash[:15]}…) differ"
            )
    for name, value in (("target", target), ("delta", delta)):
        if not 0.0 < value < 1.0:
            raise ValueError(f"{name} must be in (0, 1), got {value}")


def calibration_labels(
    repository: CalibrationRepository, card: str, model: str, field: str
) -> list[Label]:
    """The labels of ``field`` on (card@version, model) that may calibrate a threshold.

    Labels given in ``escalated`` audits (items picked for being hard) and in uncertainty
    samples (unsure items drawn more often) are left out: unweighted, either biases the
    threshold.
    """
    skipped = {
        audit.id
        for audit in repository.audits(card=card, model=model)
        if audit.kind == "escalated"
        or any(i.inclusion_probability is not None for i in repository.audit_items(audit.id))
    }
    return [
        label
        for label in repository.labels(card=card, model=model)
        if label.field == field and label.audit_id not in skipped
    ]


def calibrate_stages(
    models: Sequence[str],
    votes: Sequence[Mapping[Hashable, Mapping[str, Hashable]]],
    judgment: Callable[[int, Hashable], tuple[Hashable | None, float] | None],
    *,
    card: str,
    field: str,
    target: float,
    delta: float,
    what: str,
) -> tuple[CascadeStage, ...]:
    """Every judge's stage, each calibrated only on the labelled units no earlier judge trusts.

    Args:
        models: the judges' models, cheapest first.
        votes: per judge, people's labels on its judgments, ``{unit key: {labeler: value}}``;
            a key (item or pair id) names the same unit for every judge. A judge is compared
            with the labels on its own judgment of a unit when there are any (their majority),
            else with those given on the other judges' judgments of it.
        judgment: ``(judge index, key)`` → what that judge said on the unit and its
            confidence (said ``None``: no usable judgment), or ``None`` when it never
            judged the unit (the unit is then left out: it cannot be sent down the cascade).
        card / field / target / delta: for the thresholds and the error messages.
        what: what was labelled (``results``, ``comparisons``), for the messages.

    Raises:
        AuditError: a judge judged fewer labelled units than `minimum_labels`, or fewer were
            judged by every judge (nothing is called before either).
    """
    pooled: dict[Hashable, dict[str, Hashable]] = {}
    for by_key in votes:
        for key, by_labeler in by_key.items():
            for labeler, value in by_labeler.items():
                pooled.setdefault(key, {}).setdefault(labeler, value)
    references = {}
    for key, by_labeler in pooled.items():
        reference, decided = majority(by_labeler.values())
        if decided:
            references[key] = reference  # a tie among labelers is no reference
    # A judge is compared with the labels on its own judgment where it has any (decided).
    own = [
        {key: ref for key, ref in ((k, majority(v.values())) for k, v in by_key.items()) if ref[1]}
        for by_key in votes
    ]
    seen = [{key: judgment(j, key) for key in references} for j in range(len(models))]
    for model, found in zip(models, seen):
        have = sum(value is not None for value in found.values())
        error = too_few_labels(field, card, model, target, delta, have, what=what)
        if error is not None:
            raise error
    common = [key for key in references if all(found[key] is not None for found in seen)]
    need = minimum_labels(target, delta)
    if len(common) < need:
        raise AuditError(
            f"the cascade needs at least {need} human labels of {field!r} on {what} of {card} "
            f"judged by every judge ({', '.join(models)}); {len(common)} of the "
            f"{len(references)} labelled are. Judge the labelled items with each model (results "
            "already stored are reused at no cost), or label more"
        )
    confidences: list[list[float]] = []
    agrees: list[list[bool]] = []
    for found, mine in zip(seen, own):
        said = [found[key] for key in common]
        confidences.append([math.nan if s is None or s[0] is None else s[1] for s in said])
        agrees.append(
            [
                s is not None and s[0] == (mine[k][0] if k in mine else references[k])
                for s, k in zip(said, common)
            ]
        )
    selections = cascade_stage_thresholds(confidences, agrees, target=target, delta=delta)
    return tuple(
        CascadeStage(model, selection, selection.n) for model, selection in zip(models, selections)
    )


def majority(values: Iterable[Hashable]) -> tuple[Hashable | None, bool]:
    """The most common value and whether it is the reference (``False``: the labelers tie)."""
    ranked = Counter(values).most_common(2)
    if not ranked:
        return None, False
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None, False
    return ranked[0][0], True


def too_few_labels(  # noqa: PLR0917  the numbers the error message names
    field: str, card: str, model: str, target: float, delta: float, have: int, *, what: str
) -> AuditError | None:
    """The error for a judge with fewer usable labels than `minimum_labels`, else ``None``.

    ``what`` names what was labelled (``results``, ``comparisons``) in the message.
    """
    need = minimum_labels(target, delta)
    if have >= need:
        return None
    return AuditError(
        f"the cascade needs at least {need} human labels of {field!r} on {what} of {card} "
        f"judged by {model} (target {target}, delta {delta}); it has {have}. Judge a random "
        f"sample with that model, then label it: judgecards audit sample --card {card} --model "
        f"{model} --n {max(need, 50)} --sheet SHEET, fill in the sheet, judgecards audit ingest "
        "SHEET --labeler NAME"
    )


def no_threshold_error(
    stages: Sequence[CascadeStage], card: str, field: str, target: float
) -> AuditError | None:
    """The error for a cascade in which no judge has a threshold, else ``None``."""
    if any(stage.threshold is not None for stage in stages):
        return None
    detail = "; ".join(f"{s.model}: {s.selective}" for s in stages)
    return AuditError(
        f"no judge of the cascade can guarantee agreement ≥ {target:.0%} on {card} ({field}); "
        f"nothing was judged. Label more results or lower the target. {detail}"
    )


def stage_lines(  # noqa: PLR0913  keyword-only summary facts
    stages: Sequence[CascadeStage],
    *,
    field: str,
    target: float,
    delta: float,
    coverage: float,
    escalated: int,
    audit_id: int | None,
    unit: str = "items",
    earlier: Sequence[EarlierQueue] = (),
) -> list[str]:
    """Lines for a closing summary: the guarantee, coverage, and calls per judge."""
    lines = [
        f"cascade:   agreement with people ≥ {target:.0%} on decided {unit} "
        f"({field}), per judge with probability ≥ {1 - delta:.0%}",
        f"coverage:  {coverage:.0%} decided by a judge, {escalated} to people"
        + (f" (audit #{audit_id})" if audit_id is not None else ""),
        *(f"           {queue.line(unit)}" for queue in earlier),
    ]
    for stage in stages:
        if stage.threshold is None:
            what = f"no threshold ({stage.n_labels} labels left to it): decides nothing, not called"
        else:
            sel = stage.selective
            what = (
                f"threshold {stage.threshold:.4g} ({stage.n_labels} labels left to it: trusted "
                f"on {sel.coverage:.0%}, agreement {sel.agreement:.3f} ≥ "
                f"{sel.agreement_bound:.3f}): {stage.sent} sent, {stage.calls} calls, "
                f"{stage.decided} decided"
            )
        lines.append(f"  {stage.model:<28} {what}")
    return lines


def stage_record(stage: CascadeStage, index: int) -> Mapping[str, Any]:
    """A stage as plain data (for JSON output): ``n_labels`` are the labelled units left to
    it by the earlier judges, ``coverage``/``agreement``/``agreement_bound`` its share of them
    trusted and its agreement there (``None`` without a threshold)."""
    calibrated = stage.selective.to_dict()
    return {
        "stage": index,
        "model": stage.model,
        "threshold": stage.threshold,
        "n_labels": stage.n_labels,
        "coverage": calibrated["coverage"],
        "agreement": calibrated["agreement"],
        "agreement_bound": calibrated["agreement_bound"],
        "sent": stage.sent,
        "calls": stage.calls,
        "decided": stage.decided,
    }


class CascadeReading(Protocol[Read]):
    """What a cascade reads of the units it decides, beyond judging them (`judgecards.units`)."""

    @property
    def what(self) -> str:
        """What people label (``results``, ``comparisons``), for the messages."""
        ...

    def votes(self, judge: Judge) -> tuple[dict[Hashable, dict[str, Hashable]], Judgment]:
        """People's labels on ``judge``'s units, ``{unit key: {labeler: value}}``, and that
        judge's judgment of a unit by key (`calibrate_stages`)."""
        ...

    def confidence(self, judge: Judge, unit: Read) -> float:
        """How sure ``judge`` was of ``unit`` (what its threshold is compared with)."""
        ...

    def audit_item(self, position: int, unit: Read) -> AuditItem:
        """``unit`` as an item of the ``escalated`` audit people decide it in."""
        ...

    def columns(self, unit: Read) -> dict[str, Any] | None:
        """``unit``'s own columns of its recorded decision (None: it was never stored)."""
        ...

    def save(self, store: Store, rows: Sequence[Mapping[str, Any]]) -> None:
        """Record decision rows in ``store``."""
        ...


class StagedCascade(Generic[Unit]):
    """Judges of one card from cheapest to strongest, each trusted above its own threshold, on
    any unit (`calibration.Cascade`: items; `calibration.PairwiseCascade`: pairs).

    Args:
        judges: the judges, already checked (`check_cascade`).
        reading: what the cascade reads of a unit.
        target / delta / field: the guarantee and the label field it is about.
    """

    def __init__(
        self,
        judges: Sequence[Judge],
        reading: CascadeReading[Unit],
        *,
        target: float,
        delta: float,
        field: str,
    ) -> None:
        self.judges = tuple(judges)
        self.card = judges[0].card
        self.target = target
        self.delta = delta
        self.field = field
        self._reading = reading
        self._stages: tuple[CascadeStage, ...] | None = None

    def calibrate(self) -> tuple[CascadeStage, ...]:
        """Each judge's threshold, calibrated only on the labelled units no earlier judge trusts.

        Nothing is called. A judge later in the cascade decides only what the earlier ones
        did not trust, a harder population than all labelled units, so it is calibrated on
        those units only (`calibration.cascade_thresholds`, as Trust or Escalate does); see
        `calibrate_stages` for how labels count.

        Raises:
            AuditError: a judge has judged fewer labelled units than `minimum_labels`, or
                fewer were judged by every judge (the message names the card, the model and
                how to label more), or no judge can meet the target.
        """
        ref = self.card.ref
        read = [self._reading.votes(judge) for judge in self.judges]
        stages = calibrate_stages(
            [judge.model for judge in self.judges],
            [votes for votes, _ in read],
            lambda index, key: read[index][1](key),
            card=ref,
            field=self.field,
            target=self.target,
            delta=self.delta,
            what=self._reading.what,
        )
        error = no_threshold_error(stages, ref, self.field, self.target)
        if error is not None:
            raise error
        self._stages = stages
        return stages

    @property
    def stages(self) -> tuple[CascadeStage, ...]:
        """The calibrated judges (calibrating on first use)."""
        return self._stages if self._stages is not None else self.calibrate()

    def decide(
        self,
        units: Sequence[Mapping[str, Any]],
        kind: Units[Unit],
        make: Callable[..., Decided],
        *,
        concurrency: int,
        progress: Progress | None,
        queue: bool,
    ) -> tuple[StageWalk[Unit], Escalation, tuple[Decided, ...]]:
        """Send ``units`` down the judges (judged as ``kind`` judges them), escalate the ones no
        judge trusts, make one decision per unit (``make``, as `StageWalk.decisions` calls it)
        and record every judgment made in the cascade tables.

        Raises:
            AuditError: from `calibrate`, before any call.
        """
        walk = walk_stages(
            self.judges,
            self.stages,
            len(units),
            judge_units=lambda judge, indices: kind.judge_many(
                judge, [units[i] for i in indices], concurrency=concurrency, progress=progress
            ),
            confidence=self._reading.confidence,
            usable=kind.usable,
            calls=kind.calls,
        )
        escalation = walk.escalate(
            queue=queue, card=self.card, result_id=kind.result_id, queue_units=self._queue
        )
        decisions = walk.decisions(
            self.judges,
            escalation,
            make,
            unit_id=kind.unit_id,
            unseen_id=lambda i: item_id_of(units[i]),
        )
        self._record(walk, decisions)
        return walk, escalation, decisions

    def _record(self, walk: StageWalk[Unit], decisions: Sequence[DecisionRecord]) -> None:
        """Every stored judgment the run made: did it decide its unit, who did, at what
        threshold (a unit left by a ``max_cost`` is not stored, so not recorded)."""
        now = datetime.now(timezone.utc).isoformat()

        def row(
            i: int, stage_index: int, unit: Unit, conf: float, decides: bool
        ) -> dict[str, Any] | None:
            columns = self._reading.columns(unit)
            if columns is None:
                return None
            decision = decisions[i]
            return {
                **columns,
                "card": self.card.ref,
                "card_hash": self.card.hash,
                "stage": stage_index,
                "threshold": walk.stages[stage_index].threshold,
                "confidence": conf,
                "trusted": int(decides),
                "decided_by": decision.decided_by or "human",
                "audit_id": decision.audit_id,
                "target": self.target,
                "delta": self.delta,
                "created_at": now,
            }

        for store, rows in walk.rows_by_store(self.judges, row):
            self._reading.save(store, rows)

    def _queue(self, judge: Judge, units: Sequence[Unit]) -> int:
        """One ``escalated`` audit of these units, as `Audit.sample` records a sample."""
        repository = CalibrationRepository(open_store(judge.store))
        items = [
            self._reading.audit_item(position, unit) for position, unit in enumerate(units, start=1)
        ]
        return repository.add_audit(
            {
                "kind": "escalated",
                "card": self.card.ref,
                "card_hash": self.card.hash,
                "model": judge.model,
                "seed": None,
                "n_requested": len(items),
                "n": len(items),
                "since": None,
                "stratify": None,
                "created_at": datetime.now(timezone.utc).isoformat(),
            },
            items,
        )
