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

Every measure warns with `SmallSampleWarning` below 30 items. Intervals come from
`judgecards.metrics.stats.bootstrap_ci` and are returned as `judgecards.metrics.stats.Estimate`.
"""

from calibration._core import SmallSampleWarning
from calibration.agreement import agreement, kappa
from calibration.interrater import (
    InterAnnotatorReport,
    RaterPair,
    fleiss_kappa,
    inter_annotator,
    krippendorff_alpha,
)
from calibration.pairwise import PairwiseAgreement, pairwise_agreement, pairwise_human_agreement
from calibration.report import AgreementReport, ClassScores, calibrate

__all__ = [
    "AgreementReport",
    "ClassScores",
    "InterAnnotatorReport",
    "PairwiseAgreement",
    "RaterPair",
    "SmallSampleWarning",
    "agreement",
    "calibrate",
    "fleiss_kappa",
    "inter_annotator",
    "kappa",
    "krippendorff_alpha",
    "pairwise_agreement",
    "pairwise_human_agreement",
]
