"""A cascade for pairwise comparisons: each pair goes to the cheapest judge trusted on it.

The pairwise twin of `calibration.cascades.cascade` ("Trust or Escalate", Jung, Brahman and Choi, ICLR
2025). Every judge — a pairwise card on one model — gets its own confidence threshold,
calibrated by `calibration.cascade_thresholds` on the human labels stored for the pairwise
card version, using only the labelled pairs no earlier judge trusts (matched by pair ``id``):
a labelled comparison agrees when the judge's two-order outcome
(A only if A won both orders, B only if B won both, else a tie) equals the labelers' majority
``winner``. People label the order results (an ``audit sample`` of a pairwise card draws them),
naming positions as that order showed them, so a label on the B-first result is mapped back.

A pair goes to the first judge, which judges it in both orders (`judgecards.compare_many`).
When that comparison's confidence (`comparison_confidence`) is below the judge's threshold, or
an order failed, the pair goes to the next judge, and so on. Pairs no judge trusts go to people:
one audit of kind ``escalated`` of the last judge's A-first results, whose sheet shows the
question and both answers with an empty ``winner`` column (``judgecards audit sheet`` /
``audit ingest``, and the label queue, work on it as on any pairwise audit).

Every comparison the cascade made is recorded in ``cascade_decisions`` (`calibration.
cascade_repository`): whether it decided its pair, which judge (or people) did, the threshold
and the confidence. The guarantee, the labels left out of calibration (escalated audits and
uncertainty samples) and the errors are those of `calibration.cascades.cascade`: with probability at
least ``1 - delta`` per judge, each judge agrees with people on at least ``target`` of the pairs
it decides; a judge without a threshold decides nothing and is never called; when no judge has
one, nothing is called and `AuditError` says so.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar

from calibration.cascades.repository import save_cascade_decisions
from calibration.cascades.stages import (
    CascadeStage,
    DecisionRecord,
    EarlierQueue,
    RunRecord,
    StageWalk,
    calibrate_stages,
    calibration_labels,
    check_cascade,
    no_threshold_error,
    stage_record,
    walk_stages,
)
from calibration.labels import AuditItem, CalibrationRepository, label_fields, open_store
from calibration.stats import judgment_confidence, order_consistency
from judgecards.errors import WrongCardKind
from judgecards.judging import item_id_of
from judgecards.pairwise.compare import ComparisonResult, compare_many

if TYPE_CHECKING:
    from judgecards.judging import Judge, Progress
    from judgecards.storage import Store

__all__ = ["PairDecision", "PairwiseCascade", "PairwiseCascadeRun", "comparison_confidence"]

_SWAP = {"A": "B", "B": "A", "tie": "tie"}


def comparison_confidence(
    first_verdict: str | None,
    second_verdict: str | None,
    order_confidence: tuple[float, float] | None = None,
) -> float:
    """How sure a judge was of a pair: both-order consistency, refined by the card's own.

    Args:
        first_verdict: the verdict of the order that showed A first, in A/B naming.
        second_verdict: the verdict of the order that showed B first, mapped to A/B naming.
        order_confidence: each order's own confidence (`judgment_confidence`, the G-Eval
            probability of its scores) when the card has score axes with logprobs.

    Returns:
        1.0 when both orders name the same winner, 0.5 when not (`order_consistency`); with
        ``order_confidence`` both above 0, that times ``(1 + min) / 2``, so within each group the
        surer pair ranks higher and a consistent pair never ranks below an inconsistent one.
        0.0 when an order has no verdict.
    """
    if first_verdict is None or second_verdict is None:
        return 0.0
    consistency = order_consistency(first_verdict, second_verdict)
    if order_confidence is None or min(order_confidence) <= 0.0:
        return consistency
    return consistency * (1.0 + min(order_confidence)) / 2.0


@dataclass(frozen=True)
class PairDecision(DecisionRecord):
    """Who decided one pair.

    Attributes:
        pair_id: the pair's ``id``, if it had one.
        comparison: the comparison of the judge that decided it, else of the last judge that
            saw it (``None`` only if no judge was called).
        decided_by: the model that decided it; ``None``: it went to people (or every judge's
            comparison failed: see ``comparison.status``).
        stage: that judge's position in the cascade (0 first), else ``None``.
        threshold: the threshold it passed, else ``None``.
        confidence: the deciding (or last) judge's confidence on it.
        audit_id: the ``escalated`` audit it is in for people (this run's, or the earlier one
            that already held it), else ``None``.
    """

    pair_id: str | None
    comparison: ComparisonResult | None
    decided_by: str | None
    stage: int | None
    threshold: float | None
    confidence: float | None
    audit_id: int | None = None

    def row(self) -> dict[str, Any] | None:
        """The comparison's output row (`ComparisonResult.to_row`) with ``cascade`` set."""
        if self.comparison is None:
            return None
        return {**self.comparison.to_row(), "cascade": self.record()}


@dataclass(frozen=True)
class PairwiseCascadeRun(RunRecord):
    """The outcome of `PairwiseCascade.run`.

    Attributes:
        decisions: one per pair, in input order.
        stages: every judge with its threshold, calls (single judgments, two per pair unless
            stored or cached) and decisions.
        target / delta: the guarantee: agreement ≥ target on decided pairs, per judge with
            probability ≥ 1 − delta.
        audit_id: the ``escalated`` audit this run made for the pairs people must decide, if
            any.
        made: every comparison any judge made, stage by stage (the untrusted ones were paid
            for too).
        earlier: escalated pairs already in an earlier escalated audit of this card version
            and judge (waiting or labelled there), per audit: not queued again.
    """

    decisions: tuple[PairDecision, ...]
    stages: tuple[CascadeStage, ...]
    target: float
    delta: float
    audit_id: int | None
    made: tuple[ComparisonResult, ...] = ()
    field: str = "winner"
    earlier: tuple[EarlierQueue, ...] = ()
    unit: ClassVar[str] = "pairs"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (coverage is ``None`` for no pairs)."""
        coverage = self.coverage
        return {
            "target": self.target,
            "delta": self.delta,
            "field": self.field,
            "pairs": len(self.decisions),
            "coverage": None if math.isnan(coverage) else coverage,
            "escalated": self.escalated,
            "audit_id": self.audit_id,
            "earlier_audits": [
                {"audit_id": q.audit_id, "waiting": q.waiting, "labelled": q.labelled}
                for q in self.earlier
            ],
            "stages": [stage_record(stage, i) for i, stage in enumerate(self.stages)],
        }


class PairwiseCascade:
    """Pairwise judges of one card from cheapest to strongest, each trusted above its threshold.

    Args:
        judges: `judgecards.Judge` objects of the same pairwise card version, in the order to
            try them.
        target: agreement with people to guarantee on the pairs each judge decides, in (0, 1).
        delta: allowed probability, per judge, that its guarantee fails, in (0, 1).

    Raises:
        ValueError: no judges, judges of different cards, a bad target or delta.
        WrongCardKind: the card is not a pairwise card (no ``answer_a``/``answer_b`` inputs or
            no ``winner``).
    """

    field = "winner"

    def __init__(self, judges: Sequence[Judge], *, target: float, delta: float = 0.1) -> None:
        check_cascade(judges, target, delta)
        card = judges[0].card
        fields = label_fields(card)
        inputs = card.spec.inputs
        if "answer_a" not in inputs or "answer_b" not in inputs or "winner" not in fields:
            raise WrongCardKind(
                f"a pairwise cascade needs a pairwise card (answer_a and answer_b inputs, a "
                f"winner); {card.ref} is not one: use calibration.Cascade",
                file=card.path,
                field="inputs",
            )
        self.judges = tuple(judges)
        self.card = card
        self.target = target
        self.delta = delta
        self._stages: tuple[CascadeStage, ...] | None = None

    def calibrate(self) -> tuple[CascadeStage, ...]:
        """Each judge's threshold, calibrated only on the labelled pairs no earlier judge trusts.

        Nothing is called. As in `calibration.Cascade.calibrate` (`cascade_thresholds`): a
        later judge decides only what the earlier ones left, so it is calibrated on those
        pairs only. A stored comparison counts when people labelled either of its order
        results (a label of the B-first result is mapped back to A/B naming), on any judge's
        comparison of the same pair (matched by pair ``id``); several labels count as their
        majority and a tie leaves the pair out. A pair counts once every judge has compared
        it; a failed comparison is no judgment (never trusted, passed on).

        Raises:
            AuditError: a judge compared fewer labelled pairs than `minimum_labels`, or fewer
                were compared by every judge, or no judge can meet the target.
        """
        ref = self.card.ref
        latest_by_judge: list[dict[Hashable, Mapping[str, Any]]] = []
        votes: list[dict[Hashable, dict[str, Hashable]]] = []
        for judge in self.judges:
            labels = calibration_labels(
                CalibrationRepository(judge.store), ref, judge.model, self.field
            )
            by_result: dict[str, dict[str, str]] = {}
            for label in labels:
                by_result.setdefault(label.result_id, {})[label.labeler] = str(label.value)
            latest: dict[Hashable, Mapping[str, Any]] = {}
            for stored in judge.store.comparisons(card=ref, model=judge.model):  # oldest first
                latest[_pair_key(stored)] = stored
            by_key: dict[Hashable, dict[str, Hashable]] = {}
            for key, row in latest.items():
                first, second = row["first_result_id"], row["second_result_id"]
                by_labeler: dict[str, Hashable] = {
                    who: _SWAP.get(value, value) for who, value in by_result.get(second, {}).items()
                }
                by_labeler.update(by_result.get(first, {}))  # both orders: the A-first one
                if by_labeler:
                    by_key[key] = by_labeler
            latest_by_judge.append(latest)
            votes.append(by_key)

        def judgment(index: int, key: Hashable) -> tuple[Hashable | None, float] | None:
            row = latest_by_judge[index].get(key)
            if row is None:
                return None
            if row["status"] != "ok":
                return None, 0.0
            store = self.judges[index].store
            first, second = row["first_result_id"], row["second_result_id"]
            confidence = comparison_confidence(
                row["first_verdict"],
                row["second_verdict"],
                self._order_confidence(store, first, second),
            )
            return row["winner"], confidence

        stages = calibrate_stages(
            [judge.model for judge in self.judges],
            votes,
            judgment,
            card=ref,
            field=self.field,
            target=self.target,
            delta=self.delta,
            what="comparisons",
        )
        error = no_threshold_error(stages, ref, self.field, self.target)
        if error is not None:
            raise error
        self._stages = stages
        return stages

    def _order_confidence(
        self, store: Store, first: str, second: str
    ) -> tuple[float, float] | None:
        """Both orders' G-Eval confidence, for a card with score axes (else ``None``: unread)."""
        if not self.card.score_axes:
            return None
        found = [store.get(result_id) for result_id in (first, second)]
        if found[0] is None or found[1] is None:
            return None
        return judgment_confidence(found[0][0]), judgment_confidence(found[1][0])

    def _confidence(self, judge: Judge, comparison: ComparisonResult) -> float:
        if not comparison.ok:
            return 0.0
        first, second = comparison.first_order, comparison.second_order
        return comparison_confidence(
            first.verdict,
            second.verdict,
            self._order_confidence(judge.store, first.result_id, second.result_id),
        )

    @property
    def stages(self) -> tuple[CascadeStage, ...]:
        """The calibrated judges (calibrating on first use)."""
        return self._stages if self._stages is not None else self.calibrate()

    def run(
        self,
        pairs: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 8,
        progress: Progress | None = None,
        queue: bool = True,
        model_a: str | None = None,
        model_b: str | None = None,
    ) -> PairwiseCascadeRun:
        """Judge pairs down the cascade, both orders each; pairs no judge trusts go to people.

        Args:
            pairs: as for `judgecards.compare_many`: ``answer_a``, ``answer_b``, the card's other
                inputs, optionally ``id``, ``model_a`` and ``model_b``.
            concurrency: calls in flight per judge (both orders share them).
            progress: passed to each judge's `compare_many` (called per single judgment).
            queue: record the escalated pairs as an ``escalated`` audit (in the database of the
                last judge that saw them); ``False`` only reports them. A pair an earlier
                escalated audit of this card version and judge already holds (waiting or
                labelled) is not queued again: its decision names that audit.
            model_a / model_b: labels of the compared models, as for `compare_many`.

        Raises:
            AuditError: from `calibrate`, before any call.
        """
        walk = walk_stages(
            self.judges,
            self.stages,
            len(pairs),
            judge_units=lambda judge, indices: compare_many(
                judge,
                [pairs[i] for i in indices],
                concurrency=concurrency,
                progress=progress,
                model_a=model_a,
                model_b=model_b,
            ),
            confidence=self._confidence,
            usable=lambda comparison: comparison.ok,
            calls=lambda comparisons: sum(
                not order.cached and order.status != "not_judged"
                for c in comparisons
                for order in (c.first_order, c.second_order)
            ),
        )
        escalation = walk.escalate(
            queue=queue,
            card=self.card,
            result_id=lambda c: c.first_order.result_id,
            queue_units=self._queue,
        )
        decisions = walk.decisions(
            self.judges,
            escalation,
            PairDecision,
            unit_id=lambda comparison: comparison.pair_id,
            unseen_id=lambda i: item_id_of(pairs[i]),
        )
        run = PairwiseCascadeRun(
            decisions,
            walk.stages,
            self.target,
            self.delta,
            escalation.audit_id,
            tuple(c for _, _, c, _, _ in walk.made),
            earlier=escalation.earlier,
        )
        self._record(run, walk)
        return run

    def _queue(self, judge: Judge, comparisons: Sequence[ComparisonResult]) -> int:
        """One ``escalated`` audit of these pairs: each as its A-first result, the judge's
        two-order outcome as what it said (so the audit's agreement is about the pair)."""
        repository = CalibrationRepository(open_store(judge.store))
        items = [
            AuditItem(
                position,
                c.first_order.result_id,
                None if c.pair_id is None else f"{c.pair_id}:AB",
                {"winner": c.winner},
            )
            for position, c in enumerate(comparisons, start=1)
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
                "created_at": _now(),
            },
            items,
        )

    def _record(self, run: PairwiseCascadeRun, walk: StageWalk[ComparisonResult]) -> None:
        """Every stored comparison the run made: did it decide its pair, who did, at what
        threshold (a comparison left by a ``max_cost`` is not stored, so not recorded)."""
        now = _now()

        def row(
            i: int, stage_index: int, comparison: ComparisonResult, conf: float, decides: bool
        ) -> dict[str, Any] | None:
            if comparison.status == "not_judged":
                return None
            decision = run.decisions[i]
            return {
                "comparison_id": comparison.id,
                "pair_id": comparison.pair_id,
                "card": self.card.ref,
                "card_hash": self.card.hash,
                "model": comparison.model,
                "stage": stage_index,
                "threshold": run.stages[stage_index].threshold,
                "confidence": conf,
                "trusted": int(decides),
                "decided_by": decision.decided_by or "human",
                "audit_id": decision.audit_id,
                "target": self.target,
                "delta": self.delta,
                "created_at": now,
            }

        for store, rows in walk.rows_by_store(self.judges, row):
            save_cascade_decisions(store, rows)


def _pair_key(row: Mapping[str, Any]) -> tuple[str, str]:
    """The pair a stored comparison is of: its pair id (the same for every judge), else its own
    A-first result (known to that judge only)."""
    pair_id = row.get("pair_id")
    return ("pair", str(pair_id)) if pair_id is not None else ("result", row["first_result_id"])


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()
