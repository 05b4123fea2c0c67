"""Running a jury: several `judgecards.Judge`s on the same items, aggregated per item.

`calibration.juries.jury` aggregates verdict matrices someone already has; `Jury` produces them. Its
judges (different models, cards, or both) share ONE bounded pool: every judge's batch is a
`Judge.ascore_many` given the same `asyncio.Semaphore`, so ``concurrency=8`` means eight calls in
flight across the whole jury, not eight per judge, and a slow judge's items queue behind the
others' instead of opening more connections (as both answer orders share one pool in
`judgecards.pairwise.compare`).

Aggregators (``method``):

* ``"majority"`` — one vote per judge, ties left undecided (`calibration.majority_vote`); the
  winning share is the item's confidence.
* ``"fitted"`` — weights fitted on human labels (`Jury.fit`, an L2 logistic model,
  `calibration.fit_jury`); the confidence is the probability of the chosen label. It can learn
  to ignore or invert a judge, and `calibration.evaluate_jury` says whether it beats the best
  judge alone — on LLMBar a naive majority of six judges (0.603) is far worse than GPT-4 alone
  (0.845).
* ``"dawid-skene"`` — no labels: each judge's confusion matrix estimated by EM over the batch
  (`calibration.juries.dawid_skene_model`); the confidence is the posterior of the chosen label.

Pairwise judges (cards with ``answer_a``/``answer_b``) judge each pair in both orders
(`judgecards.pairwise.acompare_many` on the same pool); each order is a vote of its own, so a
judge that contradicts itself across orders splits its vote, and the fitted jury weighs the two
orders separately (position bias is learnt, not assumed away). A jury is all pairwise or all
single-item.

A judge that fails on an item (an error record) is recorded in that item's ``results`` and
``errors`` and simply casts no vote; an item no judge answered has no verdict. Each run reports
per-judge reliability: agreement with the human labels and fitted weight (``fitted``), the EM
estimate of accuracy (``dawid-skene``), or agreement with the jury's decided items
(``majority``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from calibration.juries.dawid_skene_model import dawid_skene
from calibration.juries.jury import FittedJury, fit_jury, majority_vote
from judgecards.errors import WrongCardKind
from judgecards.judging import Judge
from judgecards.pairwise.comparisons import ComparisonResult
from judgecards.storage import JudgeResult
from judgecards.units import ITEMS, PairUnits, Units, is_pairwise

__all__ = ["Jury", "JuryMethod", "JuryRun", "JuryVerdict", "JurorReliability"]

JuryMethod = Literal["majority", "fitted", "dawid-skene"]
_METHODS = ("majority", "fitted", "dawid-skene")
# One judge's outcome on one item: a single judgment, or a pair judged in both orders.
Outcome = JudgeResult | ComparisonResult
# Agreement per judge, what it was measured against, and the fitted weights (fitted juries only).
_Measured = tuple[Mapping[str, float], str, Mapping[str, float] | None]


@dataclass(frozen=True)
class JuryVerdict:
    """The jury's decision on one item.

    Attributes:
        item_id: the item's ``id``, if it had one.
        verdict: the aggregated label; ``None`` when the votes tie (majority) or no judge
            gave a verdict.
        confidence: the winning vote share (majority) or the probability of ``verdict``
            (fitted, Dawid–Skene); 0.0 when there is no verdict.
        votes: vote → its verdict (``None`` when it failed or gave none); a vote is a judge's
            name, or for pairwise judges ``"<name> [A first]"`` and ``"<name> [B first]"``.
        results: every judge's `JudgeResult` (or, pairwise, `ComparisonResult`) for the item,
            in jury order, errors included.
        errors: judge name → error text, for the judges whose call failed on this item.
    """

    item_id: str | None
    verdict: Hashable | None
    confidence: float
    votes: dict[str, str | None]
    results: tuple[Outcome, ...]
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JurorReliability:
    """How far one judge of a run can be trusted, and how it was measured.

    Attributes:
        judge: the judge's name in the jury.
        answered: items it gave a verdict on.
        errors: items on which its call failed (error records).
        agreement: share of agreement with ``measured_against`` (``nan`` if nothing to compare).
        measured_against: ``"human labels"`` (fitted: the labels `Jury.fit` saw),
            ``"Dawid-Skene estimate"`` (EM's estimated accuracy over this batch), or
            ``"jury majority"`` (the items the majority decided).
        weight: the log-odds the fitted jury adds for this judge's vote (negative: it is
            inverted); ``None`` for the other methods.
    """

    judge: str
    answered: int
    errors: int
    agreement: float
    measured_against: str
    weight: float | None = None


@dataclass(frozen=True)
class JuryRun:
    """A jury's verdicts on a batch of items.

    Attributes:
        method: the aggregator used.
        judges: the judges' names, in jury order.
        items: one `JuryVerdict` per input item, in input order.
        reliability: one `JurorReliability` per judge, in jury order.
    """

    method: JuryMethod
    judges: tuple[str, ...]
    items: tuple[JuryVerdict, ...]
    reliability: tuple[JurorReliability, ...] = field(default=())

    @property
    def verdicts(self) -> list[Hashable | None]:
        """The aggregated verdict per item (``None`` where undecided)."""
        return [item.verdict for item in self.items]


class Jury:
    """Several judges on the same items, one bounded pool, one aggregated verdict per item.

    Args:
        judges: the jury's `judgecards.Judge`s (at least two): all on cards whose results carry
            a verdict, or all on pairwise cards (items are then pairs, as for
            `judgecards.compare_many`).
        method: ``"majority"``, ``"fitted"`` (call `fit` first) or ``"dawid-skene"``.
        names: a unique name per judge (default: its model, with the card when models repeat).
        regularization: inverse L2 strength of the fitted jury (scikit-learn's ``C``).

    Raises:
        ValueError: fewer than two judges, an unknown method, or names that are not unique.
        WrongCardKind: a judge's card has no verdict, or pairwise and single-item judges mixed.
    """

    def __init__(
        self,
        judges: Sequence[Judge],
        *,
        method: JuryMethod = "majority",
        names: Sequence[str] | None = None,
        regularization: float = 1.0,
    ) -> None:
        if method not in _METHODS:
            raise ValueError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
        self.judges = tuple(judges)
        if len(self.judges) < 2:
            raise ValueError(f"a jury needs at least two judges, got {len(self.judges)}")
        kinds = {_kind(judge) for judge in self.judges}
        if len(kinds) > 1:
            raise WrongCardKind(
                "a jury's judges must all be pairwise or all single-item: "
                + ", ".join(f"{j.card.ref} ({_kind(j)})" for j in self.judges)
            )
        self.pairwise = kinds == {"pairwise"}
        self.units: Units[Any] = PairUnits() if self.pairwise else ITEMS
        self.names = tuple(names) if names is not None else _default_names(self.judges)
        if len(self.names) != len(self.judges) or len(set(self.names)) != len(self.names):
            raise ValueError(f"names must be one unique name per judge, got {list(self.names)}")
        self.method: JuryMethod = method
        orders = self.units.orders
        # One column per vote: a judge, or a pairwise judge in each answer order.
        self.votes = tuple(name + order for name in self.names for order in orders)
        self._voters = tuple(name for name in self.names for _ in orders)
        self.regularization = regularization
        self.fitted: FittedJury | None = None

    def __repr__(self) -> str:
        return f"Jury({list(self.names)!r}, method={self.method!r})"

    def close(self) -> None:
        """Close every judge (their connections, and the databases they opened)."""
        for judge in self.judges:
            judge.close()

    def __enter__(self) -> Jury:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ fitting

    def fit(
        self,
        items: Iterable[Mapping[str, Any]],
        labels: Sequence[Hashable],
        *,
        concurrency: int = 8,
    ) -> Jury:
        """Judge human-labelled items with every judge and fit each judge's weight on them.

        Stored results are reused (the judges' caches), so fitting on items already judged costs
        no calls. Returns the jury itself, now able to run with ``method="fitted"``.

        Args:
            items: the labelled items (card inputs, optionally an ``id``).
            labels: the human verdict of each item, in the same order.
            concurrency: calls in flight across all judges.

        Raises:
            ValueError: ``labels`` and ``items`` differ in length or a label is missing (checked
                before any call), or the labels hold a single verdict.
        """
        rows = list(items)
        truth = list(labels)
        if len(truth) != len(rows):
            raise ValueError(f"{len(rows)} items but {len(truth)} labels")
        missing = [i for i, label in enumerate(truth) if label is None]
        if missing:
            raise ValueError(f"labels[{missing[0]}] is missing: every fitting item needs a label")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            results = asyncio.run(self._abatch(rows, concurrency))
        else:
            raise RuntimeError("fit() cannot run inside an event loop")
        self.fitted = fit_jury(
            self._matrix(results), truth, judges=self._voters, regularization=self.regularization
        )
        return self

    # ------------------------------------------------------------------ scoring

    def score_many(self, items: Iterable[Mapping[str, Any]], *, concurrency: int = 8) -> JuryRun:
        """Judge every item with every judge (at most ``concurrency`` calls in flight across the
        whole jury) and aggregate per item; results in input order.

        Raises:
            ValueError: ``method="fitted"`` before `fit` (checked before any call).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore_many(items, concurrency=concurrency))
        raise RuntimeError(
            "score_many() cannot run inside an event loop; use `await jury.ascore_many(...)`"
        )

    async def ascore_many(
        self, items: Iterable[Mapping[str, Any]], *, concurrency: int = 8
    ) -> JuryRun:
        """Async twin of `score_many`."""
        if self.method == "fitted" and self.fitted is None:
            raise ValueError("method='fitted' needs weights: call jury.fit(items, labels) first")
        rows = list(items)
        results = await self._abatch(rows, concurrency)
        return self._aggregate(rows, results)

    async def _abatch(
        self, rows: list[Mapping[str, Any]], concurrency: int
    ) -> list[tuple[Outcome, ...]]:
        """Every judge's results per item, through one shared semaphore."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        pool = asyncio.Semaphore(concurrency)
        per_judge: list[list[Outcome]] = await asyncio.gather(
            *(self.units.ajudge_many(judge, rows, pool=pool) for judge in self.judges)
        )
        return list(zip(*per_judge))

    def _matrix(self, results: list[tuple[Outcome, ...]]) -> list[list[str | None]]:
        """Items × votes: each judge's verdict, or each order's verdict (A/B naming)."""
        return [[cell for r in row for cell in self.units.verdicts(r)] for row in results]

    def _aggregate(
        self, rows: list[Mapping[str, Any]], results: list[tuple[Outcome, ...]]
    ) -> JuryRun:
        matrix = self._matrix(results)
        voted = np.array([any(v is not None for v in row) for row in matrix], dtype=bool)
        decided, confidence, measured = self._decide(matrix, voted)
        columns = {
            name: [c for c, v in enumerate(self._voters) if v == name] for name in self.names
        }
        answered = [
            sum(any(row[c] is not None for c in columns[n]) for row in matrix) for n in self.names
        ]
        failed = [sum(not row[j].ok for row in results) for j in range(len(self.names))]
        reliability = tuple(
            JurorReliability(
                judge=name,
                answered=answered[j],
                errors=failed[j],
                agreement=_judge_agreement(
                    measured[0], name, [self.votes[c] for c in columns[name]]
                ),
                measured_against=measured[1],
                weight=None if measured[2] is None else measured[2].get(name),
            )
            for j, name in enumerate(self.names)
        )
        verdicts = []
        for i, row in enumerate(results):
            label = decided[i] if voted[i] else None
            verdicts.append(
                JuryVerdict(
                    item_id=self.units.unit_id(row[0]),
                    verdict=label,
                    confidence=float(confidence[i]) if label is not None else 0.0,
                    votes=dict(zip(self.votes, matrix[i])),
                    results=row,
                    errors={name: _error(r) for name, r in zip(self.names, row) if not r.ok},
                )
            )
        return JuryRun(self.method, self.names, tuple(verdicts), reliability)

    def _decide(
        self, matrix: list[list[str | None]], voted: NDArray[np.bool_]
    ) -> tuple[list[Hashable | None], NDArray[np.float64], _Measured]:
        """Labels, confidences, and (agreement per judge, against what, fitted weights)."""
        n = len(matrix)
        observed = {v for row in matrix for v in row if v is not None}
        if not observed:
            return [None] * n, np.zeros(n), ({}, "jury majority", None)
        if self.method == "fitted":
            assert self.fitted is not None
            proba = self.fitted.predict_proba(matrix)
            labels: list[Hashable | None] = [self.fitted.classes[c] for c in proba.argmax(axis=1)]
            agreement = {r.judge: r.agreement for r in self.fitted.reliability}
            weights = {r.judge: r.weight for r in self.fitted.reliability}
            return labels, proba.max(axis=1), (agreement, "human labels", weights)
        if self.method == "dawid-skene" and len(observed) > 1:
            kept = [row for row, has in zip(matrix, voted) if has]
            fitted = dawid_skene(kept, judges=self.votes)
            labels = [None] * n
            confidence = np.zeros(n)
            for slot, i in enumerate(np.flatnonzero(voted)):
                labels[i] = fitted.labels[slot]
                confidence[i] = fitted.posteriors[slot].max()
            return labels, confidence, (fitted.reliability, "Dawid-Skene estimate", None)
        if len(observed) == 1:  # every vote the same label: EM and the vote agree on it
            (only,) = observed
            voters = {name: 1.0 for j, name in enumerate(self.votes) if any(r[j] for r in matrix)}
            return (
                [only if has else None for has in voted],
                np.ones(n),
                (voters, "jury majority", None),
            )
        vote = majority_vote(matrix, labels=sorted(observed, key=str))
        measured = {
            name: _share_equal([row[j] for row in matrix], vote.labels)
            for j, name in enumerate(self.votes)
        }
        return list(vote.labels), vote.confidence, (measured, "jury majority", None)


def _share_equal(said: list[str | None], decided: Sequence[Hashable | None]) -> float:
    """Agreement of one judge with the jury on the items both the judge and the jury decided."""
    both = [(s, d) for s, d in zip(said, decided) if s is not None and d is not None]
    return sum(s == d for s, d in both) / len(both) if both else float("nan")


def _kind(judge: Judge) -> str:
    """``"pairwise"`` or ``"single"``; `WrongCardKind` for a card without a verdict."""
    if is_pairwise(judge.card):
        return "pairwise"
    if judge.card.spec.verdict is None:
        raise WrongCardKind(
            f"{judge.card.ref} has no verdict for a jury to aggregate",
            file=judge.card.path,
            field="verdict",
        )
    return "single"


def _judge_agreement(measured: Mapping[str, float], name: str, votes: list[str]) -> float:
    """A judge's agreement: as measured for the judge, else the mean over its votes (orders)."""
    if name in measured:
        return float(measured[name])
    values = [measured[v] for v in votes if v in measured and not np.isnan(measured[v])]
    return float(np.mean(values)) if values else float("nan")


def _error(outcome: Outcome) -> str:
    if isinstance(outcome, ComparisonResult):
        failed = [o for o in (outcome.first_order, outcome.second_order) if o.status != "ok"]
        return "; ".join(f"{o.error_kind}: {o.error}" for o in failed) or str(outcome.error)
    return f"{outcome.error_kind}: {outcome.error}"


def _default_names(judges: tuple[Judge, ...]) -> tuple[str, ...]:
    models = [judge.model for judge in judges]
    names = [
        judge.model if models.count(judge.model) == 1 else f"{judge.model} ({judge.card.ref})"
        for judge in judges
    ]
    return tuple(
        name if names.count(name) == 1 else f"{name} #{i + 1}" for i, name in enumerate(names)
    )
