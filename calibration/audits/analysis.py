"""The measures of audits: judge–human agreement per field, the human ceiling, drift of re-runs.

`calibration.audits.audit.Audit` reads and writes; this module only computes, from what the repository
holds. Human reference label: an item's label on a field is the labelers' majority; an item on
which its labelers tie has no reference on that field and is left out of the judge–human numbers
(it still counts in the inter-human ceiling). Intervals are percentile bootstraps over items
(`judgecards.metrics.stats.bootstrap_ci`). Two audits are different samples, so the change in
kappa between them resamples each independently (`independent_delta`); an anchor set's re-runs
share items, so their change is a paired bootstrap (`AuditMeasures.drift`). In an audit drawn by
uncertainty sampling every item carries its inclusion probability π, and agreement and kappa
weight it by ``1/π`` (`calibration.stats.uncertainty_sampling`), so they estimate the population's
values; the change between two audits and the disagreements listed stay unweighted.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from calibration.audits.report import AnchorDrift, AuditSummary, Disagreement, FieldAgreement, Flip
from calibration.labels import (
    AnchorSet,
    AuditItem,
    AuditRecord,
    CalibrationRepository,
    Label,
    LabelField,
)
from calibration.stats import (
    MIN_ITEMS,
    SmallSampleWarning,
    calibrate,
    inter_annotator,
    kappa_from_codes,
    label_order,
    to_codes,
    weight_matrix,
)
from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = ["AuditMeasures", "finite", "humans_by_result", "primary_order"]

FieldsOf = Callable[[str, Sequence[Label]], dict[str, LabelField]]


class AuditMeasures:
    """Summaries of stored audits.

    Args:
        repository: where the audits, items, labels and anchor sets are.
        fields_of: the label fields of a card ref (given the labels, for a card that cannot be
            loaded any more).
        anchor_of: an anchor set by name.
        level: confidence level of every interval.
        n_resamples: bootstrap resamples per interval.
    """

    def __init__(
        self,
        repository: CalibrationRepository,
        *,
        fields_of: FieldsOf,
        anchor_of: Callable[[str], AnchorSet],
        level: float,
        n_resamples: int,
    ) -> None:
        self.repository = repository
        self.fields_of = fields_of
        self.anchor_of = anchor_of
        self.level = level
        self.n_resamples = n_resamples

    def summaries(
        self,
        records: Sequence[AuditRecord],
        *,
        seed: int | None,
        primary_only: bool = False,
        revisions: bool = False,
    ) -> tuple[list[AuditSummary], list[str]]:
        """One summary per audit, and notes on audits without labels or with few.

        ``revisions``: use labels corrected after the judge's answer was shown (default: the
        blind labels only).
        """
        notes: list[str] = []
        summaries = []
        with warnings.catch_warnings():
            # The report states small samples once per audit instead of once per measure.
            warnings.simplefilter("ignore", SmallSampleWarning)
            for record in records:
                summary = self.summarise(
                    record, seed=seed, primary_only=primary_only, revisions=revisions
                )
                summaries.append(summary)
                kappa = summary.kappa
                if summary.n_labeled == 0:
                    notes.append(
                        f"audit #{record.id} has no human labels yet (sheet: {record.sheet or 'not written'})"
                    )
                elif kappa is not None and kappa.n < MIN_ITEMS:
                    notes.append(
                        f"audit #{record.id}: {kappa.n} labelled items (fewer than {MIN_ITEMS}); its intervals are wide"
                    )
        return summaries, notes

    def summarise(
        self,
        record: AuditRecord,
        *,
        seed: int | None,
        primary_only: bool = False,
        revisions: bool = False,
    ) -> AuditSummary:
        """The audit's measures; ``primary_only`` stops at the primary field (the cached headline)."""
        items = self.repository.audit_items(record.id)
        weighted = any(item.inclusion_probability is not None for item in items)
        labels = self.repository.labels(audit_id=record.id, revisions=revisions)
        humans = humans_by_result(labels)
        fields = self.fields_of(record.card, labels)
        results: dict[str, FieldAgreement] = {}
        for name in primary_order(fields) if primary_only else list(fields):
            spec = fields[name]
            if primary_only and any(f.report is not None for f in results.values()):
                break
            pairs, weights, ties, rated = _field_pairs(name, items, humans)
            scale = _scale(
                spec, [v for pair in pairs for v in pair] + [v for r in rated for v in r.values()]
            )
            report = None
            if pairs:
                report = calibrate(
                    [j for j, _ in pairs],
                    [h for _, h in pairs],
                    ordinal=spec.ordinal,
                    labels=scale,
                    level=self.level,
                    n_resamples=self.n_resamples,
                    seed=seed,
                    sample_weight=weights if weighted else None,
                )
            ceiling = None
            raters = sorted({who for r in rated for who in r})
            if len(raters) >= 2 and not primary_only:
                ceiling = inter_annotator(
                    {who: [r.get(who) for r in rated] for who in raters},
                    metric="ordinal" if spec.ordinal else "nominal",
                    labels=scale,
                    weights="quadratic" if spec.ordinal else None,
                    level=self.level,
                    n_resamples=self.n_resamples,
                    seed=seed,
                )
            if report is not None or ceiling is not None:
                results[name] = FieldAgreement(
                    name, spec.kind, report, ceiling, ties, tuple(pairs), scale
                )
        primary = next(
            (
                name
                for name in primary_order(fields)
                if name in results and results[name].report is not None
            ),
            None,
        )
        disagreements = []
        if primary is not None:
            for item in items:
                human = {
                    who: values[primary]
                    for who, values in sorted(humans.get(item.result_id, {}).items())
                    if primary in values
                }
                said = item.judge.get(primary)
                if human and any(value != said for value in human.values()):
                    disagreements.append(
                        Disagreement(item.result_id, item.item_id, primary, said, human)
                    )
        summary = AuditSummary(
            audit=record,
            n_labeled=sum(1 for item in items if item.result_id in humans),
            labelers=tuple(sorted({label.labeler for label in labels})),
            primary=primary,
            fields=results,
            disagreements=tuple(disagreements),
            judge_errors=sum(1 for item in items if not item.judge)
            if record.kind == "rerun"
            else 0,
        )
        if record.kind == "rerun" and record.anchor_set and not primary_only:
            summary = replace(summary, drift=self.drift(record, summary, seed=seed))
        return summary

    def drift(
        self, record: AuditRecord, summary: AuditSummary, *, seed: int | None
    ) -> AnchorDrift | None:
        """Flip rate and paired change in kappa against the previous run of the anchor set."""
        assert record.anchor_set is not None
        anchor = self.anchor_of(record.anchor_set)
        items = {item.position: item for item in self.repository.anchor_items(anchor.name)}
        previous = self.repository.previous_rerun(anchor.name, record.id)
        if previous is not None:
            previous_id = previous
            before = _by_anchor_position(self.repository.audit_items(previous_id))
        else:
            previous_id = anchor.source_audit
            before = {position: item.judge for position, item in items.items()}
        after = _by_anchor_position(self.repository.audit_items(record.id))
        fields = self.fields_of(record.card, [])
        name = summary.primary or next(iter(primary_order(fields)), None)
        if name is None:
            return None
        flips: list[Flip] = []
        changed: list[float] = []
        triples: list[tuple[Any, Any, Any]] = []
        for position in sorted(after):
            old, new = before.get(position, {}).get(name), after[position].get(name)
            if old is None or new is None:
                continue
            changed.append(float(old != new))
            if old != new:
                item_id = items[position].item_id if position in items else None
                flips.append(Flip(position, item_id, old, new))
            labels = items[position].labels if position in items else {}
            votes = {who: values[name] for who, values in labels.items() if name in values}
            reference, tied = _majority(votes.values()) if votes else (None, True)
            if not tied:
                triples.append((old, new, reference))
        flip_rate = bootstrap_ci(
            np.array(changed), level=self.level, n_resamples=self.n_resamples, seed=seed
        )
        previous_kappa = delta = None
        if triples:
            spec = fields.get(name, LabelField(name, "verdict"))
            weights: Literal["quadratic"] | None = "quadratic" if spec.ordinal else None
            observed = [v for t in triples for v in t]
            order = label_order(observed, _scale(spec, observed))
            old_codes, new_codes, human_codes = (
                to_codes([t[i] for t in triples], order) for i in range(3)
            )
            w = weight_matrix(len(order), weights)
            previous_kappa = bootstrap_ci(
                old_codes,
                human_codes,
                statistic=lambda a, b: kappa_from_codes(a, b, w),
                level=self.level,
                n_resamples=self.n_resamples,
                seed=seed,
            )
            delta = bootstrap_ci(
                new_codes,
                old_codes,
                human_codes,
                statistic=lambda a, b, c: kappa_from_codes(a, c, w) - kappa_from_codes(b, c, w),
                level=self.level,
                n_resamples=self.n_resamples,
                seed=seed,
            )
        return AnchorDrift(
            anchor.name, previous_id, name, flip_rate, tuple(flips), previous_kappa, delta
        )

    def delta_vs(
        self, current: AuditSummary, base: AuditSummary, *, seed: int | None
    ) -> Estimate | None:
        """``kappa(current) - kappa(base)`` on the primary field, independent bootstrap."""
        if current.primary is None or current.primary != base.primary:
            return None
        new, old = current.fields[current.primary], base.fields[base.primary]
        if not new.pairs or not old.pairs:
            return None
        return independent_delta(
            new.pairs,
            old.pairs,
            scale=new.scale,
            weights=new.weights,
            level=self.level,
            n_resamples=self.n_resamples,
            seed=seed,
        )


def _by_anchor_position(items: Iterable[AuditItem]) -> dict[int, dict[str, Any]]:
    return {item.anchor_position: item.judge for item in items if item.anchor_position is not None}


def humans_by_result(labels: Iterable[Label]) -> dict[str, dict[str, dict[str, Any]]]:
    """``result_id -> labeler -> field -> value`` of human labels."""
    humans: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    for label in labels:
        humans[label.result_id][label.labeler][label.field] = label.value
    return {k: {who: dict(v) for who, v in by.items()} for k, by in humans.items()}


def _field_pairs(
    name: str, items: Sequence[AuditItem], humans: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> tuple[list[tuple[Any, Any]], list[float], int, list[dict[str, Any]]]:
    """One field's (judge, people's majority) pairs and their 1/π weights (used when the audit
    was uncertainty-sampled), the items left out for a tied majority, and the labels by labeler
    of every item two or more people labelled (for the inter-annotator ceiling)."""
    pairs: list[tuple[Any, Any]] = []
    weights: list[float] = []
    ties = 0
    rated: list[dict[str, Any]] = []
    for item in items:
        by_labeler = {
            who: values[name]
            for who, values in humans.get(item.result_id, {}).items()
            if name in values
        }
        if len(by_labeler) >= 2:
            rated.append(by_labeler)
        if not by_labeler or name not in item.judge:
            continue
        reference, tied = _majority(by_labeler.values())
        if tied:
            ties += 1
            continue
        pairs.append((item.judge[name], reference))
        weights.append(1.0 / (item.inclusion_probability or 1.0))
    return pairs, weights, ties, rated


def _majority(values: Iterable[Any]) -> tuple[Any, bool]:
    """The most common value and whether it is tied with another."""
    ranked = Counter(values).most_common()
    if not ranked:
        return None, True
    tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
    return ranked[0][0], tied


def primary_order(fields: Mapping[str, LabelField]) -> list[str]:
    """Field names in the order the primary field is chosen: verdict, winner, score axes."""
    kinds = {"verdict": 0, "winner": 1, "score": 2}
    return sorted(
        fields, key=lambda name: (kinds.get(fields[name].kind, 3), list(fields).index(name))
    )


def _scale(spec: LabelField, observed: Sequence[Any]) -> tuple[Any, ...] | None:
    """The card's scale, extended by any observed value outside it (e.g. from an older version)."""
    base = spec.scale
    if base is None:
        return None
    extra = [v for v in dict.fromkeys(observed) if v not in base]
    try:
        extra.sort()
    except TypeError:
        pass
    return (*base, *extra)


def independent_delta(
    new: Sequence[tuple[Any, Any]],
    old: Sequence[tuple[Any, Any]],
    *,
    scale: Sequence[Any] | None,
    weights: Literal["quadratic"] | None,
    level: float,
    n_resamples: int,
    seed: int | None,
) -> Estimate:
    """``kappa(new) - kappa(old)`` for two independent samples, percentile bootstrap."""
    order = label_order([v for pair in (*new, *old) for v in pair], scale)
    w = weight_matrix(len(order), weights)
    nj, nh = to_codes([j for j, _ in new], order), to_codes([h for _, h in new], order)
    oj, oh = to_codes([j for j, _ in old], order), to_codes([h for _, h in old], order)
    value = kappa_from_codes(nj, nh, w) - kappa_from_codes(oj, oh, w)
    rng = np.random.default_rng(seed)
    diffs = np.empty(n_resamples)
    for b in range(n_resamples):
        i = rng.integers(0, len(nj), len(nj))
        k = rng.integers(0, len(oj), len(oj))
        diffs[b] = kappa_from_codes(nj[i], nh[i], w) - kappa_from_codes(oj[k], oh[k], w)
    finite = diffs[np.isfinite(diffs)]
    if finite.size == 0 or math.isnan(value):
        return Estimate(value, math.nan, math.nan, level, len(nj))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Estimate(value, float(low), float(high), level, len(nj))


def finite(value: float | None) -> float | None:
    """``None`` for a missing or NaN number (as the headline columns store it)."""
    return None if value is None or math.isnan(value) else value
