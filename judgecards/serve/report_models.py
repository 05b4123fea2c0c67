"""The JSON shape of ``GET /v1/audits/{id}/report`` (documented in ``/openapi.json``).

Built from the same values ``judgecards audit report --json`` and ``judgecards estimate --json``
print (`calibration.audits.report.AuditSummary`, `calibration.estimates.EstimatesReport`), with
every undefined number (``nan``) as ``null``.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field

from calibration.audits import AuditSummary, FieldAgreement
from calibration.estimates import EstimateRow, EstimatesReport
from judgecards.metrics.stats import Estimate

__all__ = ["AuditReportOut", "audit_report_out"]


class EstimateOut(BaseModel):
    """A value with its interval; ``null`` where undefined."""

    value: float | None
    low: float | None
    high: float | None
    level: float
    n: int


class FieldOut(BaseModel):
    """Judge vs people on one label field, beside the human ceiling."""

    field: str
    kind: str = Field(description="verdict, score or winner")
    n: int = Field(description="items with a judge label and a people's majority label")
    agreement: EstimateOut | None
    kappa: EstimateOut | None = Field(description="Cohen's kappa; quadratic-weighted for scores")
    weights: str | None
    labels: list[str] = Field(description="the scale, in the confusion matrix's order")
    confusion: list[list[int]] = Field(description="rows: people's label; columns: the judge's")
    human_ceiling_kappa: float | None = Field(
        description="mean Cohen's kappa between labelers (null: fewer than two labelers)"
    )
    krippendorff_alpha: EstimateOut | None
    ties: int = Field(description="items left out because their labelers tied")


class DisagreementOut(BaseModel):
    result_id: str
    item_id: str | None
    field: str
    judge: Any
    human: dict[str, Any]


class CorrectedOut(BaseModel):
    """One number three ways: corrected (report this), human only, judge only (uncorrected)."""

    kind: str
    field: str
    name: str
    corrected: EstimateOut
    human_only: EstimateOut
    judge_only: EstimateOut = Field(description="the judge's own number: UNCORRECTED, biased")
    effective_labels: float | None
    n_labeled: int
    design: str
    design_description: str


class AuditReportOut(BaseModel):
    """One audit measured against people, with the corrected estimates of its judge."""

    audit_id: int
    kind: str
    card: str
    model: str
    created_at: str
    n_items: int
    n_labeled: int
    labelers: list[str]
    primary: str | None = Field(description="the field the gate reads")
    kappa: EstimateOut | None
    agreement: EstimateOut | None
    fields: list[FieldOut]
    disagreements: list[DisagreementOut]
    estimates: list[CorrectedOut] = Field(
        description="corrected estimates (PPI++) of the card version and judge model"
    )
    estimates_note: str | None = Field(description="why there are no corrected estimates")


def _estimate(e: Estimate | None) -> EstimateOut | None:
    if e is None:
        return None

    def clean(x: float) -> float | None:
        return None if math.isnan(x) or math.isinf(x) else float(x)

    return EstimateOut(
        value=clean(e.value), low=clean(e.low), high=clean(e.high), level=e.level, n=e.n
    )


def _field(f: FieldAgreement) -> FieldOut:
    report, ceiling = f.report, f.ceiling
    ceiling_kappa = ceiling.mean_pairwise_kappa if ceiling is not None else math.nan
    return FieldOut(
        field=f.field,
        kind=f.kind,
        n=report.n if report else 0,
        agreement=_estimate(report.agreement) if report else None,
        kappa=_estimate(f.kappa),
        weights=f.weights,
        labels=[str(label) for label in report.labels] if report else [],
        confusion=[[int(c) for c in row] for row in report.confusion] if report else [],
        human_ceiling_kappa=None if math.isnan(ceiling_kappa) else ceiling_kappa,
        krippendorff_alpha=_estimate(ceiling.krippendorff_alpha) if ceiling else None,
        ties=f.ties,
    )


def _corrected(row: EstimateRow) -> CorrectedOut:
    r = row.result
    corrected, human, judge = (_estimate(e) for e in (r.corrected, r.human_only, r.judge_only))
    assert corrected is not None and human is not None and judge is not None
    effective = r.effective_labels
    return CorrectedOut(
        kind=row.kind,
        field=row.field,
        name=row.name,
        corrected=corrected,
        human_only=human,
        judge_only=judge,
        effective_labels=None if math.isnan(effective) else effective,
        n_labeled=r.n_labeled,
        design=row.design.kind,
        design_description=row.design.description,
    )


def audit_report_out(
    summary: AuditSummary, estimates: EstimatesReport | None, note: str | None
) -> AuditReportOut:
    """The response for one audit's summary and its judge's estimates."""
    a = summary.audit
    return AuditReportOut(
        audit_id=a.id,
        kind=a.kind,
        card=a.card,
        model=a.model,
        created_at=a.created_at.isoformat(),
        n_items=a.n,
        n_labeled=summary.n_labeled,
        labelers=list(summary.labelers),
        primary=summary.primary,
        kappa=_estimate(summary.kappa),
        agreement=_estimate(summary.agreement),
        fields=[_field(f) for f in summary.fields.values()],
        disagreements=[
            DisagreementOut(
                result_id=d.result_id,
                item_id=d.item_id,
                field=d.field,
                judge=d.judge,
                human=d.human,
            )
            for d in summary.disagreements
        ],
        estimates=[_corrected(row) for row in estimates.rows] if estimates else [],
        estimates_note=note,
    )
