"""The report's numbers, read from one results database by the functions the commands use.

Nothing here computes a measure of its own: the audits over time, their fields, the human
ceiling, the disagreements and the gate are `calibration.audits.audit.Audit.report` (what ``judgecards
audit report`` prints); the corrected estimates are `calibration.estimates.corrected`
(``judgecards estimate``); win rates and position bias are `judgecards.pairwise.pairwise_report`
over the stored two-order outcomes; ratings are `judgecards.pairwise.stored.rankable_comparisons`
(``judgecards rank``); tokens and cost are `judgecards.Store.cost_totals` (``judgecards cost
--by day``). The same seeds and resample counts as those commands give the same numbers, which
the tests check. What this module adds is the grouping: one `JudgeReport` per card@version and
judge model with stored results, and the words for what could not be measured and why.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from calibration.audits import Audit, AuditSummary, GateCheck
from calibration.cascades import StoredCascadeRun, stored_cascade_runs
from calibration.estimates import EstimatesReport, estimate
from calibration.stats import SmallSampleWarning
from judgecards.errors import AuditError, EstimateError, RankingError, ReportError
from judgecards.pairwise.ratings import Ratings
from judgecards.pairwise.report import PairwiseReport, pairwise_report
from judgecards.pairwise.rules import PairOutcome
from judgecards.pairwise.stored import rankable_comparisons
from judgecards.storage import Store

__all__ = [
    "CostRow",
    "Distribution",
    "JudgeReport",
    "PairwiseSection",
    "Report",
    "ShownDisagreement",
    "build_report",
    "stored_judges",
]

_INPUT_CHARS = 600  # of each input shown beside a disagreement: enough to read, not a dump
_CASCADES_SHOWN = 5  # newest cascade runs stated in the guarantee


@dataclass(frozen=True)
class Distribution:
    """How often the judge gave each value of one field (``verdict`` or a score axis)."""

    field: str
    counts: tuple[tuple[str, int], ...]

    @property
    def total(self) -> int:
        return sum(count for _, count in self.counts)


@dataclass(frozen=True)
class CostRow:
    """One UTC day of a judge's results: what ``judgecards cost --by day`` prints for it.

    ``cost_usd`` is ``None`` when any result's cost is unknown (``known_cost_usd`` then holds the
    known part), never a partial sum shown as the total.
    """

    day: str
    results: int
    cached: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    known_cost_usd: float
    unknown_cost_results: int


@dataclass(frozen=True)
class ShownDisagreement:
    """A disagreement of the newest labelled audit, with the item's inputs to read (shortened)."""

    result_id: str
    item_id: str | None
    field: str
    judge: Any
    human: dict[str, Any]
    inputs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class PairwiseSection:
    """A pairwise judge's comparisons.

    Attributes:
        overall: every decided comparison of this judge, for its position bias (position
            consistency, first-position preference).
        pairs: one report per labelled model pair (``A``/``B`` for comparisons without labels),
            each judged pair counted once with its latest labelling.
        ratings: Bradley–Terry ratings as ``judgecards rank`` fits them, or ``None``.
        ratings_note: why there are no ratings.
    """

    overall: PairwiseReport
    pairs: tuple[PairwiseReport, ...]
    ratings: Ratings | None
    ratings_note: str | None


@dataclass(frozen=True)
class JudgeReport:
    """Everything the report says about one card@version judged by one model.

    Attributes:
        card: ``name@version``.
        model: the judge model.
        n_results: stored results (``n_errors`` of them error records).
        estimates: corrected estimates (PPI++), or ``None`` (``estimates_note`` says why).
        audits: the audits of this card version and model, oldest first, as ``audit report
            --card CARD --model MODEL`` computes them.
        gate: that report's gate for this series, or ``None`` before any labelled audit.
        audit_notes: its notes (small samples, unlabelled audits).
        disagreements: those of the newest labelled audit, with the items' inputs.
        pairwise: comparisons by this judge, or ``None``.
        distributions: the judge's verdicts and each score axis over every successful result.
        costs: tokens and cost per UTC day.
        guarantee: the agreement guarantee in force, in words.
        cascades: the cascade runs this judge took part in, from their stored decisions
            (`calibration.cascades.history`), oldest first; the guarantee states them.
    """

    card: str
    model: str
    n_results: int
    n_errors: int
    estimates: EstimatesReport | None
    estimates_note: str | None
    audits: tuple[AuditSummary, ...]
    gate: GateCheck | None
    audit_notes: tuple[str, ...]
    disagreements: tuple[ShownDisagreement, ...]
    pairwise: PairwiseSection | None
    distributions: tuple[Distribution, ...]
    costs: tuple[CostRow, ...]
    guarantee: str
    cascades: tuple[StoredCascadeRun, ...] = ()

    @property
    def slug(self) -> str:
        """A stable anchor for this section (``card`` and ``model`` as they are, escaped later)."""
        return f"{self.card}|{self.model}"

    @property
    def labelled_audits(self) -> tuple[AuditSummary, ...]:
        """Audits with a kappa, oldest first (escalated audits excluded, as the gate does)."""
        return tuple(s for s in self.audits if s.kappa is not None and s.audit.kind != "escalated")

    @property
    def latest(self) -> AuditSummary | None:
        """The newest labelled audit: the one the gate checks."""
        labelled = self.labelled_audits
        return labelled[-1] if labelled else None


@dataclass(frozen=True)
class Report:
    """A report over one database.

    Attributes:
        db: the database path.
        generated_at: when it was built, UTC.
        judges: one section per card@version and judge model, by card then model.
        min_kappa: the gate's threshold.
        level: confidence level of every interval.
        n_resamples: bootstrap resamples per interval.
        seed: bootstrap seed.
    """

    db: str
    generated_at: datetime
    judges: tuple[JudgeReport, ...]
    min_kappa: float
    level: float = 0.95
    n_resamples: int = 2000
    seed: int = 0
    notes: tuple[str, ...] = field(default=())


def build_report(
    store: Store,
    *,
    card: str | None = None,
    model: str | None = None,
    min_kappa: float = 0.6,
    n_resamples: int = 2000,
    seed: int = 0,
    max_disagreements: int = 20,
    cards_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
) -> Report:
    """The report of every card@version and judge model with stored results (or those chosen).

    Args:
        store: the database, opened for writing: the calibration tables are created or
            migrated as ``audit report`` does (nothing else is written).
        card: ``name`` (every version) or ``name@version``.
        model: only this judge model.
        min_kappa: the gate's threshold.
        n_resamples: bootstrap resamples for every interval (``audit report --resamples``).
        seed: bootstrap seed (the commands use 0).
        max_disagreements: disagreements shown with their inputs per judge.
        cards_dir: extra card directories, for the label fields of user cards.

    Raises:
        ReportError: no stored results match ``card`` and ``model``.
    """
    judges = stored_judges(store, card=card, model=model)
    if not judges:
        scope = " ".join(part for part in (card, model) if part)
        raise ReportError(f"no stored results{' of ' + scope if scope else ''} in {store.path}")
    sections = []
    with Audit(store, cards_dir=cards_dir, n_resamples=n_resamples) as audits:
        for ref, judge_model in judges:
            sections.append(
                _judge_report(
                    store,
                    audits,
                    ref,
                    judge_model,
                    min_kappa=min_kappa,
                    seed=seed,
                    n_resamples=n_resamples,
                    max_disagreements=max_disagreements,
                )
            )
    return Report(
        db=str(store.path),
        generated_at=datetime.now(timezone.utc),
        judges=tuple(sections),
        min_kappa=min_kappa,
        n_resamples=n_resamples,
        seed=seed,
    )


def stored_judges(
    store: Store, *, card: str | None = None, model: str | None = None
) -> list[tuple[str, str]]:
    """``(card@version, judge model)`` pairs with stored results (of ``card``, ``model``), sorted."""
    pairs = []
    for row in store.cost_totals("model", card=card, model=model, since=None):
        for card_row in store.cost_totals("card", card=card, model=row[0], since=None):
            pairs.append((str(card_row[0]), str(row[0])))
    return sorted(pairs)


def _judge_report(
    store: Store,
    audits: Audit,
    ref: str,
    model: str,
    *,
    min_kappa: float,
    seed: int,
    n_resamples: int,
    max_disagreements: int,
) -> JudgeReport:
    counts: dict[str, Counter[str]] = {}
    n_results = n_errors = 0
    for result, _ in store.results(card=ref, model=model):
        n_results += 1
        if result.status != "ok":
            n_errors += 1
            continue
        if result.verdict is not None:
            counts.setdefault("verdict", Counter())[result.verdict] += 1
        for axis, value in result.scores.items():
            counts.setdefault(axis, Counter())[_label(value)] += 1
    distributions = tuple(
        Distribution(name, tuple(sorted(counter.items(), key=lambda kv: _order(kv[0]))))
        for name, counter in counts.items()
    )
    estimates: EstimatesReport | None = None
    estimates_note: str | None = None
    try:
        estimates = estimate(store, card=ref, model=model, seed=seed)
    except EstimateError as error:
        estimates_note = str(error)
    summaries: tuple[AuditSummary, ...] = ()
    gate: GateCheck | None = None
    notes: tuple[str, ...] = ()
    if audits.audits(card=ref, model=model):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SmallSampleWarning)  # the notes say it once
                report = audits.report(card=ref, model=model, min_kappa=min_kappa, seed=seed)
        except AuditError as error:  # pragma: no cover - audits were just listed
            notes = (str(error),)
        else:
            summaries = report.audits
            gate = report.checks[0] if report.checks else None
            notes = tuple(n for n in report.notes if not n.startswith("no corrected estimates"))
    latest = next(
        (s for s in reversed(summaries) if s.kappa is not None and s.audit.kind != "escalated"),
        None,
    )
    shown = _disagreements(store, latest, max_disagreements) if latest else ()
    costs = tuple(
        CostRow(
            str(day),
            results,
            cached or 0,
            inputs or 0,
            outputs or 0,
            None if unknown else float(known),
            float(known),
            unknown or 0,
        )
        for day, results, cached, inputs, outputs, known, unknown in store.cost_totals(
            "day", card=ref, model=model, since=None
        )
    )
    cascades = tuple(stored_cascade_runs(store, card=ref, model=model))
    return JudgeReport(
        card=ref,
        model=model,
        n_results=n_results,
        n_errors=n_errors,
        estimates=estimates,
        estimates_note=estimates_note,
        audits=summaries,
        gate=gate,
        audit_notes=notes,
        disagreements=shown,
        pairwise=_pairwise(store, ref, model, seed=seed, n_resamples=n_resamples),
        distributions=distributions,
        costs=costs,
        guarantee=_guarantee(summaries, cascades),
        cascades=cascades,
    )


def _disagreements(
    store: Store, summary: AuditSummary, limit: int
) -> tuple[ShownDisagreement, ...]:
    shown = []
    for d in summary.disagreements[:limit]:
        found = store.get(d.result_id)
        inputs = found[1] if found else {}
        shown.append(
            ShownDisagreement(
                d.result_id,
                d.item_id,
                d.field,
                d.judge,
                dict(d.human),
                tuple((str(k), _short(v)) for k, v in inputs.items()),
            )
        )
    return tuple(shown)


def _pairwise(
    store: Store, ref: str, model: str, *, seed: int, n_resamples: int
) -> PairwiseSection | None:
    rows = store.comparisons(card=ref, model=model, status="ok")
    if not rows:
        return None
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:  # oldest first: each judged pair once, with its latest labelling
        key = (row["first_result_id"], row["second_result_id"])
        latest.pop(key, None)
        latest[key] = row
    decided = [r for r in latest.values() if r["first_verdict"] and r["second_verdict"]]
    options: dict[str, Any] = {"seed": seed, "n_resamples": n_resamples}
    overall = pairwise_report(
        [PairOutcome.from_orders(r["first_verdict"], r["second_verdict"]) for r in decided],
        **options,
    )
    groups: dict[tuple[str, str], list[PairOutcome]] = {}
    for r in decided:
        names = (r["model_a"] or "A", r["model_b"] or "B")
        outcome = PairOutcome.from_orders(r["first_verdict"], r["second_verdict"])
        groups.setdefault(names, []).append(outcome)
    pairs = tuple(
        pairwise_report(outcomes, model_a=a, model_b=b, **options)
        for (a, b), outcomes in sorted(groups.items())
    )
    ratings: Ratings | None = None
    note: str | None = None
    try:
        # `judgecards rank`'s defaults: Bradley–Terry, ties half, 1000 resamples, seed 0.
        ratings = rankable_comparisons(store, card=ref, judge_model=model).rate(
            "bt", bootstrap=1000, seed=seed
        )
    except (RankingError, ValueError) as error:
        note = str(error)
    return PairwiseSection(overall, pairs, ratings, note)


def _guarantee(summaries: Sequence[AuditSummary], cascades: Sequence[StoredCascadeRun]) -> str:
    if cascades:
        shown = cascades[-_CASCADES_SHOWN:]
        earlier = len(cascades) - len(shown)
        return " ".join(
            [
                "Agreement guarantee in force, from the stored decisions of each cascade run "
                "this judge took part in (escalated items are left out of the gate):",
                *(run.sentence() for run in shown),
                *([f"({earlier} earlier run(s) not shown.)"] if earlier else []),
            ]
        )
    escalated = [s.audit.id for s in summaries if s.audit.kind == "escalated"]
    if not escalated:
        return (
            "No agreement guarantee is in force: no cascade (judgecards cascade) escalated items "
            "of this judge to people, so nothing bounds its agreement with people beyond what "
            "its audits measure."
        )
    listed = ", ".join(f"#{i}" for i in escalated)
    return (
        "A cascade (judgecards cascade) judged with this model and escalated items it was not "
        f"trusted on to people (audit {listed}). Each judge it trusted agreed with people at "
        "least at the run's target with probability at least 1 - delta on the items it decided; "
        "the run stored no decisions (it predates them), so its target is not known, and the "
        "escalated items are left out of the gate."
    )


def _label(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _order(label: str) -> tuple[int, float | str]:
    try:
        return (0, float(label))
    except ValueError:
        return (1, label)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _INPUT_CHARS else text[:_INPUT_CHARS] + " …"
