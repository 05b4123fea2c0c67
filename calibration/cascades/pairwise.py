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

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from calibration.cascades.repository import save_cascade_decisions
from calibration.cascades.stages import (
    CascadeStage,
    DecisionRecord,
    EarlierQueue,
    Judgment,
    RunRecord,
    StagedCascade,
    calibration_labels,
    check_cascade,
)
from calibration.labels import AuditItem, CalibrationRepository, label_fields
from calibration.stats import judgment_confidence, order_consistency
from judgecards.errors import WrongCardKind
from judgecards.pairwise.comparisons import ComparisonResult
from judgecards.units import PairUnits, is_pairwise

if TYPE_CHECKING:
    from judgecards.cards import Card
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


class PairwiseCascade(StagedCascade[ComparisonResult]):
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
        if not is_pairwise(card) or "winner" not in label_fields(card):
            raise WrongCardKind(
                f"a pairwise cascade needs a pairwise card (answer_a and answer_b inputs, a "
                f"winner); {card.ref} is not one: use calibration.Cascade",
                file=card.path,
                field="inputs",
            )
        super().__init__(judges, _PairReading(card), target=target, delta=delta, field="winner")

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
        walk, escalation, decisions = self.decide(
            pairs,
            PairUnits(model_a, model_b),
            PairDecision,
            concurrency=concurrency,
            progress=progress,
            queue=queue,
        )
        return PairwiseCascadeRun(
            decisions,
            walk.stages,
            self.target,
            self.delta,
            escalation.audit_id,
            tuple(c for _, _, c, _, _ in walk.made),
            earlier=escalation.earlier,
        )


class _PairReading:
    """What the cascade reads of a pair: people's ``winner`` on either order result of a stored
    comparison (matched across judges by pair ``id``); a comparison's confidence."""

    what = "comparisons"

    def __init__(self, card: Card) -> None:
        self.card = card

    def votes(self, judge: Judge) -> tuple[dict[Hashable, dict[str, Hashable]], Judgment]:
        """A label of the B-first result is mapped back to A/B naming; one on the A-first result
        wins for the same labeler."""
        ref = self.card.ref
        labels = calibration_labels(CalibrationRepository(judge.store), ref, judge.model, "winner")
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

        def judgment(key: Hashable) -> tuple[Hashable | None, float] | None:
            row = latest.get(key)
            if row is None:
                return None
            if row["status"] != "ok":
                return None, 0.0
            confidence = comparison_confidence(
                row["first_verdict"],
                row["second_verdict"],
                self._order_confidence(
                    judge.store, row["first_result_id"], row["second_result_id"]
                ),
            )
            return row["winner"], confidence

        return by_key, judgment

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

    def confidence(self, judge: Judge, unit: ComparisonResult) -> float:
        if not unit.ok:
            return 0.0
        first, second = unit.first_order, unit.second_order
        return comparison_confidence(
            first.verdict,
            second.verdict,
            self._order_confidence(judge.store, first.result_id, second.result_id),
        )

    def audit_item(self, position: int, unit: ComparisonResult) -> AuditItem:
        """The pair as its A-first result, the judge's two-order outcome as what it said (so
        the audit's agreement is about the pair)."""
        item_id = None if unit.pair_id is None else f"{unit.pair_id}:AB"
        return AuditItem(position, unit.first_order.result_id, item_id, {"winner": unit.winner})

    def columns(self, unit: ComparisonResult) -> dict[str, Any] | None:
        if unit.status == "not_judged":
            return None
        return {"comparison_id": unit.id, "pair_id": unit.pair_id, "model": unit.model}

    def save(self, store: Store, rows: Sequence[Mapping[str, Any]]) -> None:
        save_cascade_decisions(store, rows)


def _pair_key(row: Mapping[str, Any]) -> tuple[str, str]:
    """The pair a stored comparison is of: its pair id (the same for every judge), else its own
    A-first result (known to that judge only)."""
    pair_id = row.get("pair_id")
    return ("pair", str(pair_id)) if pair_id is not None else ("result", row["first_result_id"])
