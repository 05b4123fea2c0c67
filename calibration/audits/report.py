"""The values an audit report is made of, how they render, and the gate's decision.

`calibration.audits.audit.Audit` builds these (`Audit.summary`, `Audit.report`); this module holds no
store access or sampling. See `calibration.audits.audit` for the gate's rule and how the numbers are
computed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from calibration.estimates import EstimatesReport, estimate_lines
from calibration.stats import AgreementReport, InterAnnotatorReport, PassFailView, format_estimate
from judgecards.metrics.stats import Estimate

if TYPE_CHECKING:
    from calibration.labels import AuditRecord

__all__ = [
    "AnchorDrift",
    "AuditReport",
    "AuditSummary",
    "Disagreement",
    "FieldAgreement",
    "Flip",
    "gate_check",
    "GateCheck",
]


# --------------------------------------------------------------------------- report values


@dataclass(frozen=True)
class FieldAgreement:
    """Judge vs humans on one label field of one audit.

    Attributes:
        field: ``verdict``, a score axis or ``winner``.
        kind: ``verdict``, ``score`` or ``winner``.
        report: agreement, kappa (plus weighted kappas for scores), confusion, per class;
            ``None`` when no item has both a judge label and a human reference.
        ceiling: agreement among labelers on the items two or more of them labelled.
        ties: items left out because their labelers tied.
    """

    field: str
    kind: str
    report: AgreementReport | None
    ceiling: InterAnnotatorReport | None
    ties: int
    pairs: tuple[tuple[Any, Any], ...] = dataclass_field(default=(), repr=False)
    scale: tuple[Any, ...] | None = dataclass_field(default=None, repr=False)

    @property
    def kappa(self) -> Estimate | None:
        """Cohen's kappa; quadratic-weighted for score axes (near misses cost less)."""
        if self.report is None:
            return None
        if self.kind == "score":
            return self.report.quadratic_kappa
        return self.report.kappa

    @property
    def weights(self) -> Literal["quadratic"] | None:
        return "quadratic" if self.kind == "score" else None


@dataclass(frozen=True)
class Disagreement:
    """An item where at least one labeler's label differs from the judge's.

    Attributes:
        result_id: the stored result.
        item_id: the caller's item id.
        field: the label field.
        judge: the judge's label (``None``: the judge gave none, e.g. it failed on the item).
        human: each labeler's label.
    """

    result_id: str
    item_id: str | None
    field: str
    judge: Any
    human: dict[str, Any]


@dataclass(frozen=True)
class Flip:
    """An anchor item whose primary label changed from one run to the next."""

    position: int
    item_id: str | None
    before: Any
    after: Any


@dataclass(frozen=True)
class AnchorDrift:
    """A re-run compared with the previous run of the same anchor set, item by item.

    Attributes:
        anchor_set: the set.
        previous_audit: the previous run (the source audit for the first re-run).
        field: the label field compared.
        flip_rate: share of items, labelled by the judge in both runs, whose label changed.
        flips: those items.
        previous_kappa: the previous run's kappa against the anchor's human labels.
        delta_kappa: ``kappa(this run) - kappa(previous run)`` on the same items, with a paired
            bootstrap interval.
    """

    anchor_set: str
    previous_audit: int
    field: str
    flip_rate: Estimate
    flips: tuple[Flip, ...]
    previous_kappa: Estimate | None
    delta_kappa: Estimate | None


@dataclass(frozen=True)
class AuditSummary:
    """Everything the report says about one audit.

    Attributes:
        audit: the stored record.
        n_labeled: items with at least one human label.
        labelers: who labelled.
        primary: the field the gate reads (``None`` until something is labelled).
        fields: per label field, judge vs humans.
        disagreements: on the primary field.
        judge_errors: items the judge failed on (re-runs), left out of every measure.
        drift: for re-runs, the change since the previous run of the anchor set.
        baseline_id: the baseline audit of this audit's series.
        vs_baseline: ``kappa(this) - kappa(baseline)`` with an independent-samples bootstrap
            interval (``None`` for the baseline itself or when either kappa is missing).
        pass_fail: the primary field read as a binary judge (TPR, TNR, readiness, the
            corrected share; `calibration.stats.pass_fail`), when it is two-valued.
    """

    audit: AuditRecord
    n_labeled: int
    labelers: tuple[str, ...]
    primary: str | None
    fields: dict[str, FieldAgreement]
    disagreements: tuple[Disagreement, ...]
    judge_errors: int = 0
    drift: AnchorDrift | None = None
    baseline_id: int | None = None
    vs_baseline: Estimate | None = None
    pass_fail: PassFailView | None = None

    @property
    def kappa(self) -> Estimate | None:
        """Kappa on the primary field."""
        return None if self.primary is None else self.fields[self.primary].kappa

    @property
    def agreement(self) -> Estimate | None:
        """Agreement on the primary field."""
        if self.primary is None:
            return None
        report = self.fields[self.primary].report
        return None if report is None else report.agreement

    def to_dict(self) -> dict[str, Any]:
        """Plain data, JSON-ready (``nan`` becomes ``None``)."""
        data: dict[str, Any] = _clean(_summary_dict(self))
        return data

    def as_text(self, *, max_disagreements: int = 10) -> str:
        """The audit, its fields (with the human ceiling), re-run drift and disagreements."""
        return "\n".join(_summary_lines(self, max_disagreements))


@dataclass(frozen=True)
class GateCheck:
    """The gate's verdict on one series (card name and judge model).

    Attributes:
        card: card name.
        model: judge model.
        audit_id: the newest labelled audit, which is what is checked (``None``: none yet).
        baseline_id: the baseline it was compared with.
        passed: whether it passed.
        reasons: why, in words.
    """

    card: str
    model: str
    audit_id: int | None
    baseline_id: int | None
    passed: bool
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class AuditReport:
    """Audits over time, with the gate.

    Attributes:
        audits: oldest first.
        checks: one per series (card name, judge model).
        min_kappa: the threshold used.
        notes: warnings worth reading (small samples, unlabelled audits).
        estimates: corrected estimates (PPI++) of each audited card version and judge model
            with human labels (`calibration.estimates`).
    """

    audits: tuple[AuditSummary, ...]
    checks: tuple[GateCheck, ...]
    min_kappa: float
    notes: tuple[str, ...] = ()
    estimates: tuple[EstimatesReport, ...] = ()

    @property
    def passed(self) -> bool:
        """Every series passed (and there was something labelled to check)."""
        return bool(self.checks) and all(check.passed for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, JSON-ready (``nan`` becomes ``None``)."""
        data: dict[str, Any] = _clean(
            {
                "passed": self.passed,
                "min_kappa": self.min_kappa,
                "audits": [_summary_dict(s) for s in self.audits],
                "gate": [
                    {
                        "card": c.card,
                        "model": c.model,
                        "audit_id": c.audit_id,
                        "baseline_id": c.baseline_id,
                        "passed": c.passed,
                        "reasons": list(c.reasons),
                    }
                    for c in self.checks
                ],
                "notes": list(self.notes),
                "estimates": [e.to_dict() for e in self.estimates],
            }
        )
        return data

    def as_text(self, *, max_disagreements: int = 10) -> str:
        """Readable tables: corrected estimates first, then audits over time, each audit's fields
        and disagreements, the gate."""
        lines = []
        for report in self.estimates:
            lines += [*estimate_lines(report), ""]
        lines.append("Audits, oldest first (primary field; 95% bootstrap CI)")
        header = (
            f"  {'audit':<6} {'date':<10}  {'kind':<6}  {'card':<14} {'model':<24} {'n':>4}  "
            f"{'agreement':<22}  {'kappa':<22}  vs baseline"
        )
        lines.append(header)
        for s in self.audits:
            agreement = format_estimate(s.agreement) if s.agreement else "-"
            kappa = format_estimate(s.kappa) if s.kappa else "not labelled"
            n = s.kappa.n if s.kappa else 0
            if s.baseline_id == s.audit.id:
                versus = "baseline"
            elif s.vs_baseline is not None:
                versus = f"{s.vs_baseline.value:+.3f} [{s.vs_baseline.low:+.3f}, {s.vs_baseline.high:+.3f}] vs #{s.baseline_id}"
            else:
                versus = ""
            lines.append(
                f"  #{s.audit.id:<5} {s.audit.created_at.date().isoformat():<10}  {s.audit.kind:<6}  "
                f"{s.audit.card:<14} {s.audit.model:<24} {n:>4}  {agreement:<22}  {kappa:<22}  {versus}"
            )
        for s in self.audits:
            lines += ["", s.as_text(max_disagreements=max_disagreements)]
        lines += [
            "",
            (
                f"Gate: newest labelled audit per card and model; kappa >= {self.min_kappa:.2f} "
                "and not significantly below the baseline"
            ),
        ]
        for check in self.checks:
            status = "PASS" if check.passed else "FAIL"
            lines.append(f"  {status}  {check.card} · {check.model}: " + "; ".join(check.reasons))
        if not self.checks:
            lines.append("  FAIL  no labelled audit to check")
        if self.notes:
            lines += ["", "Notes:", *(f"  - {note}" for note in self.notes)]
        return "\n".join(lines)


# --------------------------------------------------------------------------- the gate and rendering


def gate_check(newest: AuditSummary, base: AuditSummary, min_kappa: float) -> GateCheck:
    """The gate on `newest`: kappa at least `min_kappa`, and no significant drop from `base`
    (the 95% interval of the change lies wholly below 0)."""
    kappa = newest.kappa
    assert kappa is not None
    reasons: list[str] = []
    passed = True
    what = f"audit #{newest.audit.id} ({newest.audit.card}, {newest.primary})"
    if math.isnan(kappa.value):
        passed = False
        reasons.append(
            f"{what}: kappa is undefined (every label identical on both sides), so it cannot pass"
        )
    elif kappa.value < min_kappa:
        passed = False
        reasons.append(f"{what}: kappa {kappa.value:.3f} < {min_kappa:.2f}")
    else:
        reasons.append(f"{what}: kappa {kappa.value:.3f} >= {min_kappa:.2f}")
    delta = newest.vs_baseline
    if newest.audit.id == base.audit.id:
        reasons.append("it is the baseline")
    elif delta is None or math.isnan(delta.high):
        reasons.append(f"no comparison with baseline #{base.audit.id} possible")
    elif delta.high < 0:
        passed = False
        reasons.append(
            f"significantly below baseline #{base.audit.id}: Δkappa {delta.value:+.3f} "
            f"[{delta.low:+.3f}, {delta.high:+.3f}]"
        )
    else:
        reasons.append(
            f"not significantly below baseline #{base.audit.id}: Δkappa {delta.value:+.3f} "
            f"[{delta.low:+.3f}, {delta.high:+.3f}]"
        )
    return GateCheck(
        newest.audit.card_name,
        newest.audit.model,
        newest.audit.id,
        base.audit.id,
        passed,
        tuple(reasons),
    )


def _clean(value: Any) -> Any:
    """``nan`` → ``None``, tuples → lists, recursively (for JSON)."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        return _clean(value.item())
    return value


def _estimate(e: Estimate | None) -> dict[str, Any] | None:
    return None if e is None else e.to_dict()


def _summary_dict(s: AuditSummary) -> dict[str, Any]:
    a = s.audit
    drift = s.drift
    return {
        "id": a.id,
        "kind": a.kind,
        "card": a.card,
        "card_hash": a.card_hash,
        "model": a.model,
        "seed": a.seed,
        "n": a.n,
        "since": a.since,
        "stratify": a.stratify,
        "sheet": a.sheet,
        "anchor_set": a.anchor_set,
        "created_at": a.created_at.isoformat(),
        "n_labeled": s.n_labeled,
        "labelers": list(s.labelers),
        "primary": s.primary,
        "kappa": _estimate(s.kappa),
        "agreement": _estimate(s.agreement),
        "baseline_id": s.baseline_id,
        "vs_baseline": _estimate(s.vs_baseline),
        "judge_errors": s.judge_errors,
        "pass_fail": None if s.pass_fail is None else s.pass_fail.to_dict(),
        "fields": {
            name: {
                "kind": f.kind,
                "ties": f.ties,
                "kappa": _estimate(f.kappa),
                "weights": f.weights,
                "report": None if f.report is None else f.report.to_dict(),
                "human_ceiling": None if f.ceiling is None else f.ceiling.to_dict(),
            }
            for name, f in s.fields.items()
        },
        "disagreements": [
            {
                "result_id": d.result_id,
                "item_id": d.item_id,
                "field": d.field,
                "judge": d.judge,
                "human": d.human,
            }
            for d in s.disagreements
        ],
        "drift": None
        if drift is None
        else {
            "anchor_set": drift.anchor_set,
            "previous_audit": drift.previous_audit,
            "field": drift.field,
            "flip_rate": _estimate(drift.flip_rate),
            "flips": [
                {"position": f.position, "item_id": f.item_id, "before": f.before, "after": f.after}
                for f in drift.flips
            ],
            "previous_kappa": _estimate(drift.previous_kappa),
            "delta_kappa": _estimate(drift.delta_kappa),
        },
    }


def _summary_lines(s: AuditSummary, max_disagreements: int) -> list[str]:
    a = s.audit
    origin = (
        f"anchor set {a.anchor_set}"
        if a.kind == "rerun"
        else "escalated by a cascade (not gated)"
        if a.kind == "escalated"
        else f"seed {a.seed}"
        + (f", since {a.since}" if a.since else "")
        + (", stratified by verdict" if a.stratify else "")
    )
    who = ", ".join(s.labelers) or "nobody yet"
    lines = [
        f"Audit #{a.id}  {a.kind}  {a.card} ({a.card_hash[:15]}…)  judge {a.model}  {a.created_at:%Y-%m-%d %H:%M} UTC",
        f"  {origin}; {a.n} items, {s.n_labeled} labelled by {who}"
        + (f"; judge failed on {s.judge_errors}" if s.judge_errors else ""),
    ]
    if s.fields:
        lines.append(
            f"  {'field':<16} {'n':>4}  {'agreement':<22}  {'kappa':<22}  {'weights':<9}  human ceiling"
        )
        for name, f in s.fields.items():
            n = f.report.n if f.report else 0
            agreement = format_estimate(f.report.agreement) if f.report else "-"
            kappa = format_estimate(f.kappa) if f.kappa else "-"
            ceiling = "-"
            if f.ceiling is not None:
                ceiling = f"kappa {f.ceiling.mean_pairwise_kappa:.3f} over {f.ceiling.n_items} items ({', '.join(f.ceiling.raters)})"
            tie_note = f"  ({f.ties} tied)" if f.ties else ""
            lines.append(
                f"  {name:<16} {n:>4}  {agreement:<22}  {kappa:<22}  {f.weights or 'none':<9}  {ceiling}{tie_note}"
            )
    if s.pass_fail is not None:
        lines += s.pass_fail.lines()
    drift = s.drift
    if drift is not None:
        lines.append(
            f"  vs previous run #{drift.previous_audit} of {drift.anchor_set}: flip rate "
            f"{format_estimate(drift.flip_rate)} ({len(drift.flips)} of {drift.flip_rate.n} {drift.field}s changed)"
        )
        before, delta = drift.previous_kappa, drift.delta_kappa
        if delta is not None and before is not None:
            lines.append(
                f"  kappa {before.value:.3f} -> {before.value + delta.value:.3f}: "
                f"Δ {delta.value:+.3f} [{delta.low:+.3f}, {delta.high:+.3f}] (paired)"
            )
        for flip in drift.flips[:max_disagreements]:
            lines.append(f"    flipped: item {flip.item_id}  {flip.before} -> {flip.after}")
    if s.disagreements:
        lines.append(f"  disagreements on {s.primary} ({len(s.disagreements)}), judge vs labelers:")
        for d in s.disagreements[:max_disagreements]:
            human = ", ".join(f"{who} {value}" for who, value in d.human.items())
            lines.append(
                f"    item {d.item_id or '-'} (result {d.result_id[:12]})  judge {d.judge}  vs  {human}"
            )
        if len(s.disagreements) > max_disagreements:
            lines.append(
                f"    … {len(s.disagreements) - max_disagreements} more (--json lists all)"
            )
    return lines
