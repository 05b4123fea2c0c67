"""Corrected estimates from the results database: one card@version and judge model, with labels.

`calibration.stats.ppi` corrects numbers given as arrays; this module finds those arrays in the store.
For a card version judged by one model, once people have labelled some of its results, it
reports three columns for each number (`estimate`, ``judgecards estimate``):

* **judge only** — the judge's own number over every judged item. Narrow, but it carries the
  judge's bias, and its interval ignores that bias: it is *uncorrected*.
* **human only** — the people's number over the labelled items alone. Unbiased, but wide.
* **corrected** — prediction-powered inference (PPI++): the judge over every item, minus its
  bias measured on the labelled items. Unbiased whatever the judge's errors, and narrower than
  the human-only interval when the judge helps; the *effective n* says how many human labels
  the human-only interval would need to be as narrow.

The number estimated is the one over the judged items themselves, a finite population: with
labels drawn uniformly (without replacement, as audits draw), the corrected and human-only
intervals carry the finite-population correction 1 − n/N, and a field whose every judged item
is labelled is reported exactly (zero width). Each estimate gets the interval that earns its
keep (`calibration.corrected_estimate`, ``interval="auto"``): the PPI++ small-sample t interval
where its labels allow (at least 50, and not too skewed for their number: Cochran's rule), and
where they do not, if the scale is known (shares and win rates lie in [0, 1]; a score axis on
the scale its card's schema gives, `calibration.estimates.scales`), the bounded (betting) interval,
valid for any number of labels. The report says which was used and why; its human-only column
is the same interval without the judge (λ = 0). Weighted designs keep the infinite-population
variance, which is conservative.

The numbers are the mean of each score axis, the share of each verdict, and for pairwise cards
the win rate of each model pair (a win 1, a tie ½, a loss 0; the judge's two-order outcome from
the ``comparisons`` table against the people's ``winner`` labels of either order, mapped back
to A/B naming).

**Every label counts, and the item is the sampling unit** (a cluster of its labels): an item's
human value on a field is the mean of its labelers' values (a score's mean, a verdict's share of
its labelers: two who disagree make it ½ each, a win rate's mean points). The estimate is over
items, as audits draw them, and its variance is taken between items, so labelers who disagree
widen the interval as they should. (The old rule dropped such items: 18 of 40 completeness
labels lost with two labelers.) The report notes how many items had labelers who disagree.

**How the labelled items were chosen matters.** The correction is unbiased when the labelled
items are a uniform random sample of the judged ones, or when every item's chance of being
labelled is known. Labels given in an audit sample record their design: a uniform sample is used
as is; a sample stratified by verdict weights each labelled item by its inverse inclusion
probability within its verdict (``judged in the stratum / labelled in the stratum``), the
weighted variant of `calibration.corrected_estimate`; an uncertainty sample (``audit sample
--strategy uncertainty``) records each item's inclusion probability π, and its items are weighted
by 1/π. Labels imported on their own (``labels import``) or copied to anchor-set re-runs have no
recorded design, and labels from several audits of different designs have no combined one: they
are *assumed* a uniform sample, and the report says so (``audit=`` restricts the estimate to one
audit's labels). Items escalated to people by a cascade were chosen for being hard, not at
random: their labels are left out.

The values reported and their table are in `calibration.estimates.report`.
"""

from __future__ import annotations

import math
import os
import warnings
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from calibration.estimates.report import Design, EstimateRow, EstimatesReport, Kind, estimate_lines
from calibration.estimates.scales import score_scales
from calibration.labels import AuditRecord, CalibrationRepository, Label
from calibration.stats import (
    MIN_ITEMS,
    SmallSampleWarning,
    Tuning,
    clip_share,
    corrected_estimate,
    normal_estimate,
)
from judgecards.errors import EstimateError
from judgecards.metrics.stats import Estimate
from judgecards.storage import Store

__all__ = [
    "Design",
    "EstimateRow",
    "EstimatesReport",
    "audit_estimates",
    "estimate",
    "estimate_lines",
]

_POINTS = {"A": 1.0, "tie": 0.5, "B": 0.0}
_SWAP = {"A": "B", "B": "A", "tie": "tie"}


def estimate(
    db: Store | str | os.PathLike[str],
    *,
    card: str,
    model: str,
    alpha: float = 0.05,
    tuning: Tuning = "ppi++",
    folds: int = 5,
    seed: int | None = 0,
    audit: int | None = None,
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
        audit: use only the labels given in this audit (one sampling design), not every label
            of the card version and model.

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
        return _estimate(db, card, model, alpha, tuning, folds, seed, audit)
    with Store(db, read_only=True) as store:
        return _estimate(store, card, model, alpha, tuning, folds, seed, audit)


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
    """One field's arrays: human and judge values of the labelled items, and the judge's values
    that estimate its population mean (the unlabelled items; every judged item when the
    labelled ones were drawn non-uniformly, see `_field_arrays`)."""

    human: list[Any]
    judged_labeled: list[Any]
    judged_unlabeled: list[Any]
    weights: list[float] | None
    design: Design
    scale: tuple[float, float] | None = None  # a score axis's (minimum, maximum), if known


def _estimate(  # noqa: PLR0917  one estimate's arrays, design and scale, from the store
    store: Store,
    card: str,
    model: str,
    alpha: float,
    tuning: Tuning,
    folds: int,
    seed: int | None,
    audit: int | None = None,
) -> EstimatesReport:
    ref = _resolve(store, card, model)
    if not store.results_page(card=ref, model=model, status="ok", limit=1):
        raise EstimateError(f"no successful results of {ref} judged by {model} in {store.path}")
    repository = CalibrationRepository(store)
    labels = repository.labels(card=ref, model=model, audit_id=audit)
    if not labels:
        within = f" in audit #{audit}" if audit is not None else ""
        raise EstimateError(
            f"no human labels of {ref} judged by {model}{within} in {store.path}: label a sample first "
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
    # Read only now: every score run asks, and most judges have no labels (a run's end must not
    # load every result it stored).
    results = [result for result, _ in store.results(card=ref, model=model, status="ok")]
    references, ties, origins = _references(labels)
    pi = _inclusion_probabilities(repository, {label.audit_id for label in labels}, audits)
    fields: list[tuple[Kind, str, str, _Field, list[Hashable | None]]] = []

    verdict_of = {r.id: r.verdict for r in results}
    strata = {r.id: r.verdict or "(none)" for r in results}
    kinds = {(label.field, label.kind) for label in labels}
    score_axes = sorted(f for f, k in kinds if k == "score")
    if ("verdict", "verdict") in kinds:
        data = _field_arrays(
            "verdict",
            {r.id: r.verdict for r in results if r.verdict is not None},
            references,
            origins,
            audits,
            strata,
            pi,
        )
        seen = [v for h in data.human for v in (_values(h))]
        counts = Counter([*data.judged_labeled, *data.judged_unlabeled, *seen])
        order = sorted(counts, key=lambda c: (-counts[c], str(c)))
        fields.append(("verdict", "verdict", "share", data, list(order)))
    scales = score_scales(ref, {r.card_hash for r in results}) if score_axes else {}
    for axis in score_axes:
        values = {r.id: r.scores[axis] for r in results if axis in r.scores}
        data = _field_arrays(axis, values, references, origins, audits, strata, pi)
        data.scale = scales.get(axis)
        fields.append(("score", axis, f"mean {axis}", data, [None]))

    rows: list[EstimateRow] = []
    n_comparisons = 0
    for kind, name, title, data, order in fields:
        rows += _rows(kind, name, title, data, order, alpha, tuning, folds, seed, notes)
    if any(label.kind == "winner" for label in labels):
        pairs, n_comparisons = _win_rates(
            store, ref, model, references, origins, audits, pi, notes, alpha, tuning, folds, seed
        )
        rows += pairs
    used = {rid for rid in references if rid in verdict_of}
    if not rows:
        raise EstimateError(
            f"too few human labels of {ref} judged by {model} to estimate anything: "
            + "; ".join(notes)
        )
    for field_name, n in sorted(ties.items()):
        notes.append(
            f"{field_name}: the labelers of {n} item(s) disagree; every label counts (an item's "
            "value is its labelers' mean, a verdict's share of them) and the item is the "
            "sampling unit"
        )
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
        n_comparisons=n_comparisons,
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


@dataclass(frozen=True)
class _Mixed:
    """The labels of an item whose labelers disagree: each value with its share of them."""

    shares: tuple[tuple[Any, float], ...]

    def share(self, category: Hashable) -> float:
        return sum(share for value, share in self.shares if value == category)

    def points(self) -> float:
        return sum(share * _POINTS[str(value)] for value, share in self.shares)

    def swapped(self) -> _Mixed:
        return _Mixed(tuple((_SWAP[str(value)], share) for value, share in self.shares))


def _references(
    labels: Iterable[Label],
) -> tuple[dict[str, dict[str, Any]], Counter[str], dict[str, dict[str, set[int | None]]]]:
    """Each result's human value per field (every label counts: the value its labelers agree
    on, else a score's mean or a `_Mixed` of their shares), how many items per field have
    labelers who disagree, and the audits its labels came from per field (``None``: none)."""
    votes: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    kinds: dict[str, str] = {}
    origins: dict[str, dict[str, set[int | None]]] = defaultdict(lambda: defaultdict(set))
    for label in labels:  # oldest first: a labeler's newest label of a field wins
        votes[label.result_id][label.field][label.labeler] = label.value
        kinds[label.field] = label.kind
        origins[label.result_id][label.field].add(label.audit_id)
    references: dict[str, dict[str, Any]] = defaultdict(dict)
    disagree: Counter[str] = Counter()
    for result_id, by_field in votes.items():
        for field_name, by_labeler in by_field.items():
            counts = Counter(by_labeler.values())
            if len(counts) == 1:
                references[result_id][field_name] = next(iter(counts))
                continue
            disagree[field_name] += 1
            if kinds[field_name] == "score":
                values = [float(v) for v in by_labeler.values()]
                references[result_id][field_name] = sum(values) / len(values)
                continue
            ordered = sorted(counts.items(), key=lambda vc: str(vc[0]))
            total = len(by_labeler)
            references[result_id][field_name] = _Mixed(tuple((v, c / total) for v, c in ordered))
    return dict(references), disagree, {k: dict(v) for k, v in origins.items()}


def _field_arrays(  # noqa: PLR0917  one field's rows and the design they were labelled under
    name: str,
    judged: Mapping[str, Any],
    references: Mapping[str, Mapping[str, Any]],
    origins: Mapping[str, Mapping[str, set[int | None]]],
    audits: Mapping[int, AuditRecord],
    strata: Mapping[str, str],
    pi: Mapping[int, Mapping[str, float]],
) -> _Field:
    labeled = [rid for rid, value in judged.items() if name in references.get(rid, {})]
    unlabeled = [rid for rid in judged if name not in references.get(rid, {})]
    sources = {a for rid in labeled for a in origins[rid][name]}
    design = _design(sources, audits, pi)
    weights = None
    if design.kind == "weighted":
        (audit_id,) = sources
        assert audit_id is not None
        weights = [1.0 / pi[audit_id][rid] for rid in labeled]
    if design.kind == "stratified":
        # Inverse inclusion probability within the verdict stratum: judged / labelled there.
        population = Counter(strata[rid] for rid in judged)
        sampled = Counter(strata[rid] for rid in labeled)
        weights = [population[strata[rid]] / sampled[strata[rid]] for rid in labeled]
    # With a non-uniform design the unlabelled items are not a uniform sample either (an
    # uncertainty audit leaves the confident items behind), so the judge's mean is taken over
    # every judged item: the model-assisted difference estimator of survey sampling,
    # mean(f over all) + weighted mean(y - f over the labelled), unbiased under the design.
    rest = list(judged) if weights is not None else unlabeled
    return _Field(
        human=[references[rid][name] for rid in labeled],
        judged_labeled=[judged[rid] for rid in labeled],
        judged_unlabeled=[judged[rid] for rid in rest],
        weights=weights,
        design=design,
    )


def _inclusion_probabilities(
    repository: CalibrationRepository,
    audit_ids: Iterable[int | None],
    audits: Mapping[int, AuditRecord],
) -> dict[int, dict[str, float]]:
    """Per uncertainty-sampled audit, each item's recorded inclusion probability π."""
    found: dict[int, dict[str, float]] = {}
    for audit_id in audit_ids:
        if audit_id is None or audit_id not in audits or audits[audit_id].kind != "sample":
            continue
        pi = {
            item.result_id: float(p)
            for item in repository.audit_items(audit_id)
            if (p := getattr(item, "inclusion_probability", None)) is not None
        }
        if pi:
            found[audit_id] = pi
    return found


def _design(
    audit_ids: set[int | None],
    audits: Mapping[int, AuditRecord],
    pi: Mapping[int, Mapping[str, float]],
) -> Design:
    sampled = sorted(
        a for a in audit_ids if a is not None and a in audits and audits[a].kind == "sample"
    )
    unknown = len(audit_ids) - len(sampled)
    listed = ", ".join(f"#{a}" for a in sampled)
    if not unknown and any(a in pi for a in sampled):
        if len(sampled) == 1:
            return Design(
                "weighted",
                f"uncertainty audit sample {listed}: each labelled item is weighted by 1/π, "
                "its recorded inclusion probability",
            )
        return Design(
            "assumed uniform",
            f"labels come from audit samples with different designs ({listed}), whose combined "
            "inclusion probabilities are not recorded, so the labelled items are assumed a "
            "uniform random sample (estimate from one audit's labels with --audit ID)",
        )
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


def _rows(  # noqa: PLR0913, PLR0917  one report row's arrays, design and options, from the store
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
    n, rest = len(data.human), len(data.judged_unlabeled) - (len(data.human) if data.weights else 0)
    # Unweighted, the labelled items are a sample without replacement of the judged ones and
    # the target is the mean over those: a finite population (1 − n/N; every item labelled is
    # a census, exact). Weighted designs keep the infinite-population variance (conservative).
    finite = data.weights is None
    if n < 2 or (rest < 1 and not finite):
        why = (
            f"{n} labelled item(s)"
            if n < 2
            else "every judged item is labelled (use the human numbers)"
        )
        notes.append(f"{name}: not estimated, {why}")
        return []
    if n < MIN_ITEMS:
        notes.append(
            f"{name}: {n} labelled items (fewer than {MIN_ITEMS}): the intervals may undercover"
        )
    rows = []
    for category in categories:
        human, judged, rest_judged = data.human, data.judged_labeled, data.judged_unlabeled
        if category is not None:  # per item: the category's share of its labelers (1 or 0)
            human = [_share(h, category) for h in human]
            judged = [float(v == category) for v in judged]
            rest_judged = [float(v == category) for v in rest_judged]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallSampleWarning)  # said once, above
            result = corrected_estimate(
                human,
                judged,
                rest_judged,
                alpha=alpha,
                tuning=tuning,
                folds=folds,
                seed=seed,
                weights=data.weights,
                finite_population=finite,
                bounds=_bounds(kind, category, data, finite),
            )
        if category is not None:
            result = replace(
                result,
                corrected=clip_share(result.corrected),
                human_only=clip_share(result.human_only),
                judge_only=clip_share(result.judge_only),
            )
        if data.weights is not None:
            # The weights describe how the labelled items were drawn; the judge's own number is
            # over every judged item, which needs no weights.
            result = replace(result, judge_only=_judge_only(data.judged_unlabeled, category, alpha))
        label = title if category is None else f"{title} {category}"
        rows.append(EstimateRow(kind, name, label, result, data.design, data.weights is not None))
    return rows


def _values(human: Any) -> list[Any]:
    return [v for v, _ in human.shares] if isinstance(human, _Mixed) else [human]


def _share(human: Any, category: Hashable) -> float:
    return human.share(category) if isinstance(human, _Mixed) else float(human == category)


def _bounds(
    kind: Kind, category: Hashable | None, data: _Field, finite: bool
) -> tuple[float, float] | None:
    """A share or a win rate lies in [0, 1], and a score axis on its card's scale, so its
    interval can be the bounded one, which holds for any number of labels and does not collapse
    when the judge happened to be right on every labelled item. A score axis whose card (as
    judged) is not found, or with a human score off its scale, keeps the t interval."""
    if not finite:
        return None
    if category is not None or kind == "win_rate":
        return (0.0, 1.0)
    if data.scale is not None and all(
        data.scale[0] <= float(h) <= data.scale[1] for h in data.human
    ):
        return data.scale
    return None


def _win_rates(  # noqa: PLR0913, PLR0917  one report's win-rate arrays, design and options, from the store
    store: Store,
    ref: str,
    model: str,
    references: Mapping[str, Mapping[str, Any]],
    origins: Mapping[str, Mapping[str, set[int | None]]],
    audits: Mapping[int, AuditRecord],
    pi: Mapping[int, Mapping[str, float]],
    notes: list[str],
    alpha: float,
    tuning: Tuning,
    folds: int,
    seed: int | None,
) -> tuple[list[EstimateRow], int]:
    """Per model pair: the first model's win rate, judge (two-order outcome) against people;
    and how many comparisons they are over."""
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
            other = references[second]["winner"]  # the second order shows B as "A"
            human = other.swapped() if isinstance(other, _Mixed) else _SWAP[other]
        sources = origins.get(first, {}).get("winner", set()) | origins.get(second, {}).get(
            "winner", set()
        )
        pair = tuple(sorted((row["model_a"], row["model_b"])))
        flip = row["model_a"] != pair[0]
        judged = _POINTS[row["winner"]]
        people = None if human is None else _points(human)
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
            design=_pair_design({a for _, h, s in items if h is not None for a in s}, audits, pi),
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
    return rows, len(latest)


def _points(human: Any) -> float:
    return human.points() if isinstance(human, _Mixed) else _POINTS[human]


def _pair_design(
    audit_ids: set[int | None],
    audits: Mapping[int, AuditRecord],
    pi: Mapping[int, Mapping[str, float]],
) -> Design:
    design = _design(audit_ids, audits, pi)
    if design.kind in ("stratified", "weighted"):
        # Audits draw order results by their verdict or confidence, not comparisons by outcome.
        listed = ", ".join(f"#{a}" for a in sorted(a for a in audit_ids if a is not None))
        return Design(
            "assumed uniform",
            f"audit samples {listed} drew order results, not comparisons: the labelled "
            "comparisons are assumed a uniform random sample",
        )
    return design


def _judge_only(judged: Sequence[Any], category: Hashable | None, alpha: float) -> Estimate:
    values = np.array([float(v == category) if category is not None else float(v) for v in judged])
    estimate = normal_estimate(
        float(values.mean()), float(values.std() / math.sqrt(values.size)), alpha, values.size
    )
    return estimate if category is None else clip_share(estimate)
