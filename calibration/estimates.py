"""Corrected estimates from the results database: one card@version and judge model, with labels.

`calibration.ppi` corrects numbers given as arrays; this module finds those arrays in the store.
For a card version judged by one model, once people have labelled some of its results, it
reports three columns for each number (`estimate`, ``judgecards estimate``):

* **judge only** — the judge's own number over every judged item. Narrow, but it carries the
  judge's bias, and its interval ignores that bias: it is *uncorrected*.
* **human only** — the people's number over the labelled items alone. Unbiased, but wide.
* **corrected** — prediction-powered inference (PPI++): the judge over every item, minus its
  bias measured on the labelled items. Unbiased whatever the judge's errors, and narrower than
  the human-only interval when the judge helps; the *effective n* says how many human labels
  the human-only interval would need to be as narrow.

The numbers are the mean of each score axis, the share of each verdict, and for pairwise cards
the win rate of each model pair (a win 1, a tie ½, a loss 0; the judge's two-order outcome from
the ``comparisons`` table against the people's ``winner`` labels of either order, mapped back
to A/B naming). An item's human reference on a field is its labelers' majority; items on which
the labelers tie are left out, as in audits.

**How the labelled items were chosen matters.** The correction is unbiased when the labelled
items are a uniform random sample of the judged ones, or when every item's chance of being
labelled is known. Labels given in an audit sample record their design: a uniform sample is used
as is; a sample stratified by verdict weights each labelled item by its inverse inclusion
probability within its verdict (``judged in the stratum / labelled in the stratum``), the
weighted variant of `calibration.corrected_estimate`. Labels imported on their own (``labels
import``) or copied to anchor-set re-runs have no recorded design: they are *assumed* a uniform
sample, and the report says so.
"""

from __future__ import annotations

import math
import os
import warnings
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from calibration._core import MIN_ITEMS, SmallSampleWarning
from calibration._ppi_core import Tuning, clip_share, normal_estimate
from calibration.ppi import CorrectedEstimate, corrected_estimate
from calibration.records import AuditRecord, Label
from calibration.repository import CalibrationRepository
from judgecards.errors import EstimateError
from judgecards.metrics.stats import Estimate
from judgecards.store import Store

__all__ = [
    "Design",
    "EstimateRow",
    "EstimatesReport",
    "audit_estimates",
    "estimate",
    "estimate_lines",
]

Kind = Literal["score", "verdict", "win_rate"]
_POINTS = {"A": 1.0, "tie": 0.5, "B": 0.0}
_SWAP = {"A": "B", "B": "A", "tie": "tie"}


@dataclass(frozen=True)
class Design:
    """How the labelled items of one field were chosen, as far as the store records it.

    Attributes:
        kind: ``uniform`` (every label from uniform audit samples), ``stratified`` (some from
            samples stratified by verdict: inverse-probability weights are used) or
            ``assumed uniform`` (some labels have no recorded design).
        description: the same in words, naming the audits.
    """

    kind: Literal["uniform", "stratified", "assumed uniform"]
    description: str

    @property
    def known(self) -> bool:
        """Whether every labelled item's chance of being labelled is recorded."""
        return self.kind != "assumed uniform"


@dataclass(frozen=True)
class EstimateRow:
    """One number, estimated three ways.

    Attributes:
        kind: ``score`` (mean of an axis), ``verdict`` (share of one verdict) or ``win_rate``.
        field: the axis, ``verdict`` or ``winner``.
        name: what is estimated, in words (``mean correctness``, ``share match``,
            ``gpt-4o vs llama``: the first model's win rate).
        result: the corrected, human-only and judge-only estimates (`CorrectedEstimate`).
        design: how the labelled items were chosen; decides weights and the stated assumption.
        weighted: whether inverse-probability weights were used.
    """

    kind: Kind
    field: str
    name: str
    result: CorrectedEstimate
    design: Design
    weighted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON data (``nan`` becomes ``None``)."""
        return {
            "kind": self.kind,
            "field": self.field,
            "name": self.name,
            **self.result.to_dict(),
            "labels_gained": _finite(self.result.labels_gained),
            "design": self.design.kind,
            "design_description": self.design.description,
            "weighted": self.weighted,
        }


@dataclass(frozen=True)
class EstimatesReport:
    """Corrected estimates of one card version judged by one model.

    Attributes:
        card: ``name@version``.
        model: the judge model.
        alpha: error level of every interval (``0.05``: 95% intervals).
        n_judged: successful results of the card version by the model.
        n_labeled: those with at least one human label used here.
        labelers: who labelled them.
        rows: every estimate, scores first, then verdict shares, then win rates.
        notes: assumptions and what could not be estimated, in words.
    """

    card: str
    model: str
    alpha: float
    n_judged: int
    n_labeled: int
    labelers: tuple[str, ...]
    rows: tuple[EstimateRow, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON data (``nan`` becomes ``None``)."""
        return {
            "card": self.card,
            "model": self.model,
            "level": 1 - self.alpha,
            "n_judged": self.n_judged,
            "n_labeled": self.n_labeled,
            "labelers": list(self.labelers),
            "estimates": [row.to_dict() for row in self.rows],
            "notes": list(self.notes),
        }

    def as_text(self) -> str:
        """A table that leads with the corrected column and marks the judge-only one."""
        return "\n".join(estimate_lines(self))


def estimate(
    db: Store | str | os.PathLike[str],
    *,
    card: str,
    model: str,
    alpha: float = 0.05,
    tuning: Tuning = "ppi++",
    folds: int = 5,
    seed: int | None = 0,
) -> EstimatesReport:
    """Judge-only, human-only and corrected estimates for a card version and judge model.

    Args:
        db: a `Store` or the path of an existing results database (opened read-only: nothing
            is created or written).
        card: ``name@version``, or ``name`` for its newest version with results of ``model``.
        model: the judge model (``provider:model``).
        alpha: error level; intervals are at level ``1 - alpha``.
        tuning: ``"ppi++"`` (default), ``"ppi"`` or a fixed λ, as in `calibration.corrected_mean`.
        folds: cross-fitting folds for PPI++'s λ, as in `calibration.corrected_mean`.
        seed: seed of the fold assignment.

    Returns:
        An `EstimatesReport`: one `EstimateRow` per score axis, verdict and model pair that has
        at least 2 labelled and 1 unlabelled item; its notes say what was left out and why.

    Raises:
        EstimateError: no successful results of the card by the model, no human labels of them,
            too few labels to estimate anything, or ``alpha`` outside (0, 1).
        StoreError: the database cannot be opened or read.
    """
    if not 0.0 < alpha < 1.0:
        raise EstimateError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if isinstance(db, Store):
        return _estimate(db, card, model, alpha, tuning, folds, seed)
    with Store(db, read_only=True) as store:
        return _estimate(store, card, model, alpha, tuning, folds, seed)


def audit_estimates(
    store: Store, judges: Iterable[tuple[str, str]], *, alpha: float = 0.05, seed: int | None = 0
) -> tuple[list[EstimatesReport], list[str]]:
    """The estimates of each ``(card@version, judge model)`` in ``judges`` (for ``audit report``).

    Returns:
        The reports, and a note for each judge that has nothing to estimate (why, in words).
    """
    reports, notes = [], []
    for card, model in dict.fromkeys(judges):
        try:
            reports.append(estimate(store, card=card, model=model, alpha=alpha, seed=seed))
        except EstimateError as error:
            notes.append(f"no corrected estimates for {card} · {model}: {error}")
    return reports, notes


# --------------------------------------------------------------------------- assembling the arrays


@dataclass
class _Field:
    """One field's arrays: human and judge values of the labelled items, judge of the rest."""

    human: list[Any]
    judged_labeled: list[Any]
    judged_unlabeled: list[Any]
    weights: list[float] | None
    design: Design


def _estimate(
    store: Store,
    card: str,
    model: str,
    alpha: float,
    tuning: Tuning,
    folds: int,
    seed: int | None,
) -> EstimatesReport:
    ref = _resolve(store, card, model)
    results = [result for result, _ in store.results(card=ref, model=model, status="ok")]
    if not results:
        raise EstimateError(f"no successful results of {ref} judged by {model} in {store.path}")
    repository = CalibrationRepository(store)
    labels = repository.labels(card=ref, model=model)
    if not labels:
        raise EstimateError(
            f"no human labels of {ref} judged by {model} in {store.path}: label a sample first "
            "(judgecards audit sample / audit ingest, or judgecards labels import)"
        )
    audits = {a.id: a for a in repository.audits()}
    notes: list[str] = []
    # Escalated items were chosen *because* the judge was unsure: not a random sample, so they
    # cannot measure its bias on the rest. A result labelled only there is left out.
    sampled = [label for label in labels if not _escalated(label, audits)]
    if len(sampled) < len(labels):
        dropped = {label.result_id for label in labels} - {label.result_id for label in sampled}
        if dropped:
            notes.append(
                f"{len(dropped)} result(s) labelled only in escalation audits (items the judge "
                "was not trusted on) are not a random sample: left out of the correction"
            )
    labels = sampled
    if not labels:
        raise EstimateError(
            f"the human labels of {ref} judged by {model} all come from escalation audits, "
            "which are not a random sample; label a random sample (judgecards audit sample)"
        )
    references, ties, origins = _references(labels)
    fields: list[tuple[Kind, str, str, _Field, list[Hashable | None]]] = []

    verdict_of = {r.id: r.verdict for r in results}
    strata = {r.id: r.verdict or "(none)" for r in results}
    kinds = {(label.field, label.kind) for label in labels}
    score_axes = sorted(f for f, k in kinds if k == "score")
    if ("verdict", "verdict") in kinds:
        data = _field_arrays(
            "verdict", {r.id: r.verdict for r in results if r.verdict is not None},
            references, origins, audits, strata,
        )  # fmt: skip
        counts = Counter([*data.judged_labeled, *data.judged_unlabeled, *data.human])
        order = sorted(counts, key=lambda c: (-counts[c], str(c)))
        fields.append(("verdict", "verdict", "share", data, list(order)))
    for axis in score_axes:
        values = {r.id: r.scores[axis] for r in results if axis in r.scores}
        data = _field_arrays(axis, values, references, origins, audits, strata)
        fields.append(("score", axis, f"mean {axis}", data, [None]))

    rows: list[EstimateRow] = []
    for kind, name, title, data, order in fields:
        rows += _rows(kind, name, title, data, order, alpha, tuning, folds, seed, notes)
    if any(label.kind == "winner" for label in labels):
        rows += _win_rates(store, ref, model, references, origins, audits, notes, alpha, tuning, folds, seed)  # fmt: skip
    used = {rid for rid in references if rid in verdict_of}
    if not rows:
        raise EstimateError(
            f"too few human labels of {ref} judged by {model} to estimate anything: "
            + "; ".join(notes)
        )
    for field_name, n in sorted(ties.items()):
        notes.append(f"{n} item(s) left out of {field_name}: their labelers tied")
    stray = len({label.result_id for label in labels} - set(verdict_of))
    if stray:
        notes.append(f"{stray} labelled result(s) are not successful results: left out")
    return EstimatesReport(
        card=ref,
        model=model,
        alpha=alpha,
        n_judged=len(results),
        n_labeled=len(used),
        labelers=tuple(sorted({label.labeler for label in labels})),
        rows=tuple(rows),
        notes=tuple(dict.fromkeys(notes)),
    )


def _escalated(label: Label, audits: Mapping[int, AuditRecord]) -> bool:
    audit = audits.get(label.audit_id) if label.audit_id is not None else None
    return audit is not None and str(audit.kind) == "escalated"


def _resolve(store: Store, card: str, model: str) -> str:
    if "@" in card:
        return card
    versions = [
        ref for ref in store.card_refs(card, model=model) if ref.partition("@")[2].isdigit()
    ]
    if not versions:
        raise EstimateError(
            f"no successful results of card {card!r} judged by {model} in {store.path}"
        )
    return max(versions, key=lambda ref: int(ref.partition("@")[2]))


def _references(
    labels: Iterable[Label],
) -> tuple[dict[str, dict[str, Any]], Counter[str], dict[str, dict[str, set[int | None]]]]:
    """Each result's human reference per field (the labelers' majority), ties per field, and
    the audits its labels came from per field (``None``: outside any audit)."""
    votes: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    origins: dict[str, dict[str, set[int | None]]] = defaultdict(lambda: defaultdict(set))
    for label in labels:  # oldest first: a labeler's newest label of a field wins
        votes[label.result_id][label.field][label.labeler] = label.value
        origins[label.result_id][label.field].add(label.audit_id)
    references: dict[str, dict[str, Any]] = defaultdict(dict)
    ties: Counter[str] = Counter()
    for result_id, by_field in votes.items():
        for field_name, by_labeler in by_field.items():
            ranked = Counter(by_labeler.values()).most_common()
            if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
                ties[field_name] += 1
                continue
            references[result_id][field_name] = ranked[0][0]
    return dict(references), ties, {k: dict(v) for k, v in origins.items()}


def _field_arrays(
    name: str,
    judged: Mapping[str, Any],
    references: Mapping[str, Mapping[str, Any]],
    origins: Mapping[str, Mapping[str, set[int | None]]],
    audits: Mapping[int, AuditRecord],
    strata: Mapping[str, str],
) -> _Field:
    labeled = [rid for rid, value in judged.items() if name in references.get(rid, {})]
    unlabeled = [rid for rid in judged if name not in references.get(rid, {})]
    design = _design({a for rid in labeled for a in origins[rid][name]}, audits)
    weights = None
    if design.kind == "stratified":
        # Inverse inclusion probability within the verdict stratum: judged / labelled there.
        population = Counter(strata[rid] for rid in judged)
        sampled = Counter(strata[rid] for rid in labeled)
        weights = [population[strata[rid]] / sampled[strata[rid]] for rid in labeled]
    return _Field(
        human=[references[rid][name] for rid in labeled],
        judged_labeled=[judged[rid] for rid in labeled],
        judged_unlabeled=[judged[rid] for rid in unlabeled],
        weights=weights,
        design=design,
    )


def _design(audit_ids: set[int | None], audits: Mapping[int, AuditRecord]) -> Design:
    sampled = sorted(
        a for a in audit_ids if a is not None and a in audits and audits[a].kind == "sample"
    )
    unknown = len(audit_ids) - len(sampled)
    listed = ", ".join(f"#{a}" for a in sampled)
    if unknown:
        where = f" and audit samples {listed}" if sampled else ""
        return Design(
            "assumed uniform",
            "some labels were imported outside an audit sample (or copied to an anchor-set "
            f"re-run){where}: their selection is not recorded, so the labelled items are assumed "
            "a uniform random sample of the judged items",
        )
    if any(audits[a].stratify == "verdict" for a in sampled):
        return Design(
            "stratified",
            f"audit samples {listed}, stratified by verdict: each labelled item is weighted by "
            "judged / labelled items of its verdict (inverse inclusion probability)",
        )
    return Design("uniform", f"uniform random audit samples {listed}")


def _rows(
    kind: Kind,
    name: str,
    title: str,
    data: _Field,
    categories: Sequence[Hashable | None],
    alpha: float,
    tuning: Tuning,
    folds: int,
    seed: int | None,
    notes: list[str],
) -> list[EstimateRow]:
    n, rest = len(data.human), len(data.judged_unlabeled)
    if n < 2 or rest < 1:
        why = (
            f"{n} labelled item(s)"
            if n < 2
            else "every judged item is labelled (use the human numbers)"
        )
        notes.append(f"{name}: not estimated, {why}")
        return []
    if n < MIN_ITEMS:
        notes.append(
            f"{name}: {n} labelled items (fewer than {MIN_ITEMS}): normal intervals may undercover"
        )
    rows = []
    for category in categories:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallSampleWarning)  # said once, above
            result = corrected_estimate(
                data.human, data.judged_labeled, data.judged_unlabeled, category=category,
                alpha=alpha, tuning=tuning, folds=folds, seed=seed, weights=data.weights,
            )  # fmt: skip
        if data.weights is not None:
            # The weights describe how the labelled items were drawn; the judge's own number is
            # over every judged item, which needs no weights.
            result = replace(result, judge_only=_judge_only(data, category, alpha))
        label = title if category is None else f"{title} {category}"
        rows.append(EstimateRow(kind, name, label, result, data.design, data.weights is not None))
    return rows


def _win_rates(
    store: Store,
    ref: str,
    model: str,
    references: Mapping[str, Mapping[str, Any]],
    origins: Mapping[str, Mapping[str, set[int | None]]],
    audits: Mapping[int, AuditRecord],
    notes: list[str],
    alpha: float,
    tuning: Tuning,
    folds: int,
    seed: int | None,
) -> list[EstimateRow]:
    """Per model pair: the first model's win rate, judge (two-order outcome) against people."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in store.comparisons(card=ref, model=model, status="ok"):  # oldest first
        if row["model_a"] and row["model_b"] and row["model_a"] != row["model_b"]:
            latest[(row["first_result_id"], row["second_result_id"])] = row
    by_pair: dict[tuple[str, str], list[tuple[float, float | None, set[int | None]]]] = defaultdict(
        list
    )
    for (first, second), row in latest.items():
        human = references.get(first, {}).get("winner")
        if human is None and "winner" in references.get(second, {}):
            human = _SWAP[references[second]["winner"]]  # the second order shows B as "A"
        sources = origins.get(first, {}).get("winner", set()) | origins.get(second, {}).get(
            "winner", set()
        )
        pair = tuple(sorted((row["model_a"], row["model_b"])))
        flip = row["model_a"] != pair[0]
        judged = _POINTS[row["winner"]]
        people = None if human is None else _POINTS[human]
        if flip:
            judged = 1.0 - judged
            people = None if people is None else 1.0 - people
        by_pair[(pair[0], pair[1])].append((judged, people, sources))
    if not by_pair:
        notes.append(
            "winner: no stored comparisons with two model labels to estimate win rates from"
        )
    rows: list[EstimateRow] = []
    for (first_model, second_model), items in sorted(by_pair.items()):
        labeled = [(j, h) for j, h, _ in items if h is not None]
        data = _Field(
            human=[h for _, h in labeled],
            judged_labeled=[j for j, _ in labeled],
            judged_unlabeled=[j for j, h, _ in items if h is None],
            weights=None,
            design=_pair_design({a for _, h, s in items if h is not None for a in s}, audits),
        )
        name = f"{first_model} vs {second_model}"
        for found in _rows(
            "win_rate", "winner", name, data, [None], alpha, tuning, folds, seed, notes
        ):
            result = found.result
            clipped = replace(
                result,
                corrected=clip_share(result.corrected),
                human_only=clip_share(result.human_only),
                judge_only=clip_share(result.judge_only),
            )
            rows.append(replace(found, result=clipped))
    return rows


def _pair_design(audit_ids: set[int | None], audits: Mapping[int, AuditRecord]) -> Design:
    design = _design(audit_ids, audits)
    if design.kind == "stratified":
        # Audits sample order results by their own verdict, not comparisons by their outcome.
        return Design(
            "assumed uniform",
            f"{design.description.split(',')[0]} drew order results by verdict, not comparisons: "
            "the labelled comparisons are assumed a uniform random sample",
        )
    return design


def _judge_only(data: _Field, category: Hashable | None, alpha: float) -> Estimate:
    values = np.array(
        [
            float(v == category) if category is not None else float(v)
            for v in (*data.judged_labeled, *data.judged_unlabeled)
        ]
    )
    judged = normal_estimate(
        float(values.mean()), float(values.std() / math.sqrt(values.size)), alpha, values.size
    )
    return judged if category is None else clip_share(judged)


# --------------------------------------------------------------------------- rendering


def _finite(value: float) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else value


def _interval(e: Estimate) -> str:
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def estimate_lines(report: EstimatesReport, *, indent: str = "") -> list[str]:
    """The report's table, corrected column first; reused by ``audit report``."""
    level = round((1 - report.alpha) * 100)
    who = ", ".join(report.labelers)
    lines = [
        f"{indent}Corrected estimates: {report.card} judged by {report.model} "
        f"({report.n_judged} judged items, {report.n_labeled} labelled by {who}; {level}% intervals)",
        f"{indent}  corrected = the judge on every item minus its bias measured on the labelled "
        "items (PPI++); judge only is UNCORRECTED (biased); effective n = the human labels "
        "the human-only interval would need to be as narrow",
        f"{indent}  {'estimate':<28} {'corrected':<24} {'human only':<24} "
        f"{'judge only (uncorrected)':<26} {'effective n':>14}",
    ]
    for row in report.rows:
        r = row.result
        worth = "-" if math.isnan(r.effective_labels) else f"{r.effective_labels:.0f}"
        worth += f" (n {r.n_labeled})"
        lines.append(
            f"{indent}  {row.name:<28} {_interval(r.corrected):<24} {_interval(r.human_only):<24} "
            f"{_interval(r.judge_only):<26} {worth:>14}"
        )
    designs = dict.fromkeys(row.design for row in report.rows)
    for design in designs:
        what = "labels" if design.known else "labels (ASSUMPTION)"
        lines.append(f"{indent}  {what}: {design.description}")
    if report.notes:
        lines += [f"{indent}  note: {note}" for note in report.notes]
    return lines
