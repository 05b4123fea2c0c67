"""Calibration of LLM judges against human labels.

Measures (this package's public names, all with bootstrap confidence intervals):

* `agreement`, `kappa` — judge vs human on one label field; `kappa` takes
  ``weights="linear"|"quadratic"`` and the full ``labels`` scale for ordinal scores.
* `calibrate` — an `AgreementReport` with agreement, kappa (weighted when ordinal), confusion
  matrix, per-class precision/recall/F1 (`ClassScores`) and, given individual raters, the human
  ceiling.
* `pairwise_agreement`, `pairwise_human_agreement` — A/B/tie verdicts with and without ties, per
  vote, as the MT-Bench paper reports them (`PairwiseAgreement`).
* `inter_annotator`, `fleiss_kappa`, `krippendorff_alpha` — agreement among human raters
  (`InterAnnotatorReport`, `RaterPair`).

Human labels and drift audits:

* `import_labels`, `export_labels`, `read_labels` — human labels of stored results as CSV or
  JSONL, validated row by row (`LabelImportError`, `LabelImportReport`).
* `Audit` — spot-check samples, labelling sheets, ingest, the report with its CI gate
  (`AuditReport`, `AuditSummary`), anchor sets (`AnchorSet`) and their re-runs.
* `latest_calibration` — a card version's latest calibration for a judge model
  (`CalibrationStatus`); `warn_if_uncalibrated` warns (`UncalibratedJudgeWarning`) for a judge
  that has none, as the command line does once per run.

Every measure warns with `SmallSampleWarning` below 30 items. Intervals come from
`judgecards.metrics.stats.bootstrap_ci` and are returned as `judgecards.metrics.stats.Estimate`.
`AuditError` and `LabelImportError` are defined in `judgecards.errors`, in the one exception tree
under `judgecards.JudgecardsError`. The calibration tables' SQL is all in `calibration.repository`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names are imported on first use (PEP 562): the command line imports `calibration.status` on
# every run, and that must not pay for numpy, scipy and scikit-learn. To add a name,
# add it here (and to the TYPE_CHECKING imports below); `__all__` lists the same names, sorted.
_EXPORTS: dict[str, str] = {
    "AgreementReport": "calibration.report",
    "AnchorSet": "calibration.records",
    "Audit": "calibration.audit",
    "AuditError": "judgecards.errors",
    "AuditReport": "calibration.audit_report",
    "AuditSummary": "calibration.audit_report",
    "CalibrationStatus": "calibration.status",
    "ClassScores": "calibration.report",
    "InterAnnotatorReport": "calibration.interrater",
    "LabelImportError": "judgecards.errors",
    "LabelImportReport": "calibration.labels",
    "PairwiseAgreement": "calibration.pairwise",
    "RaterPair": "calibration.interrater",
    "SmallSampleWarning": "calibration._core",
    "agreement": "calibration.agreement",
    "calibrate": "calibration.report",
    "export_labels": "calibration.labels",
    "fleiss_kappa": "calibration.interrater",
    "import_labels": "calibration.labels",
    "inter_annotator": "calibration.interrater",
    "kappa": "calibration.agreement",
    "krippendorff_alpha": "calibration.interrater",
    "latest_calibration": "calibration.status",
    "pairwise_agreement": "calibration.pairwise",
    "pairwise_human_agreement": "calibration.pairwise",
    "read_labels": "calibration.labels",
    "warn_if_uncalibrated": "calibration.status",
}

__all__ = [
    "AgreementReport",
    "AnchorSet",
    "Audit",
    "AuditError",
    "AuditReport",
    "AuditSummary",
    "CalibrationStatus",
    "ClassScores",
    "InterAnnotatorReport",
    "LabelImportError",
    "LabelImportReport",
    "PairwiseAgreement",
    "RaterPair",
    "SmallSampleWarning",
    "agreement",
    "calibrate",
    "export_labels",
    "fleiss_kappa",
    "import_labels",
    "inter_annotator",
    "kappa",
    "krippendorff_alpha",
    "latest_calibration",
    "pairwise_agreement",
    "pairwise_human_agreement",
    "read_labels",
    "warn_if_uncalibrated",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'calibration' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
    from calibration._core import SmallSampleWarning
    from calibration.agreement import agreement, kappa
    from calibration.audit import Audit
    from calibration.audit_report import AuditReport, AuditSummary
    from calibration.interrater import (
        InterAnnotatorReport,
        RaterPair,
        fleiss_kappa,
        inter_annotator,
        krippendorff_alpha,
    )
    from calibration.labels import (
        LabelImportReport,
        export_labels,
        import_labels,
        read_labels,
    )
    from calibration.pairwise import PairwiseAgreement, pairwise_agreement, pairwise_human_agreement
    from calibration.records import AnchorSet
    from calibration.report import AgreementReport, ClassScores, calibrate
    from calibration.status import CalibrationStatus, latest_calibration, warn_if_uncalibrated
    from judgecards.errors import AuditError, LabelImportError
